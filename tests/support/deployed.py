"""The service as a deployment serves it (uWSGI, Apache), checked over HTTP
at the prefix it is served under: the version document, a provider created
with its Location and links under the prefix (as Placement's are), an error
body, the static files and a dashboards page naming them."""
import json
import urllib.request

from scripts.harness import api


def check_serves(port, prefix=''):
    response, body, _ = api.send(port, 'GET', f'{prefix}/')
    assert response.status == 200 and json.loads(body)['versions'][0]['max_version'] == '1.39'
    response, body, _ = api.send(port, 'POST', f'{prefix}/resource_providers', {'name': 'cn1'},
                                 version='1.20')
    assert response.status == 200, body
    assert response.getheader('Location').startswith(
        f'http://127.0.0.1:{port}{prefix}/resource_providers/')
    response, body, _ = api.send(port, 'GET', f'{prefix}/resource_providers', version='1.39')
    assert response.status == 200
    [provider] = json.loads(body)['resource_providers']
    assert provider['name'] == 'cn1'
    assert provider['links'][0]['href'] == f'{prefix}/resource_providers/{provider["uuid"]}'
    response, body, _ = api.send(port, 'GET', f'{prefix}/resource_providers/nope',
                                 version='1.39')
    assert response.status == 404 and json.loads(body)['errors'][0]['status'] == 404
    with urllib.request.urlopen(f'http://127.0.0.1:{port}{prefix}/static/img/favicon.svg',
                                timeout=10) as answer:
        assert answer.status == 200 and b'<svg' in answer.read()
    with urllib.request.urlopen(f'http://127.0.0.1:{port}{prefix}/accounts/login/',
                                timeout=10) as answer:
        assert f'href="{prefix}/static/css/placement.css"' in answer.read().decode()
