"""The browser-facing guards of the request pipeline (placement_site.middleware)
and the security log's one-line records (placement_site.log_filters)."""
import io
import logging

import pytest
from django.test import Client

from tests.support.api import new_uuid

NO_STORE = {'no-store', 'no-cache', 'private', 'must-revalidate', 'max-age=0'}


def cache_control(response):
    return {part.strip() for part in response.get('Cache-Control', '').split(',') if part.strip()}


def test_signed_in_pages_and_exports_are_not_kept_by_browsers_or_proxies(staff, api):
    api.create_provider('cn1')
    for path in ('/ui/', '/ui/providers/', '/ui/providers/?export=csv', '/ui/usage/?export=json',
                 '/ui/pools/', '/api/docs/'):
        response = staff.get(path)
        assert response.status_code == 200, path
        assert cache_control(response) >= NO_STORE, path
    # This site's files are the same for everyone: cacheable as before.
    assert 'no-store' not in cache_control(staff.get('/favicon.ico'))
    # The API answers as Placement does, session or not.
    assert cache_control(api.request('GET', '/resource_providers', version='1.15')) == {'no-cache'}


@pytest.mark.parametrize('accept, guarded', [('text/html', True), ('application/json', False)])
def test_an_api_error_page_a_browser_gets_is_neither_sniffed_nor_framed(db, accept, guarded):
    response = Client().get(f'/resource_providers/{new_uuid()}', HTTP_ACCEPT=accept)
    assert response.status_code == 401
    headers = {name: response.get(name) for name in (
        'X-Content-Type-Options', 'X-Frame-Options', 'Content-Security-Policy')}
    if guarded:
        assert headers['X-Content-Type-Options'] == 'nosniff'
        assert headers['X-Frame-Options'] == 'DENY'
        assert "frame-ancestors 'none'" in headers['Content-Security-Policy']
    else:   # Placement's JSON answers carry none of the browser headers
        assert headers == dict.fromkeys(headers)


@pytest.fixture
def security_log():
    """What the security log's configured handler writes."""
    handler, = [handler for handler in logging.getLogger('django.security').handlers
                if handler.name == 'console_one_line']   # settings.LOGGING's, not pytest's
    written = io.StringIO()
    previous = handler.setStream(written)
    yield written
    handler.setStream(previous)


def test_a_foreign_host_or_an_oversized_body_is_one_log_line(db, settings, security_log):
    settings.ALLOWED_HOSTS = ['localhost']
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    client = Client(HTTP_HOST='localhost', raise_request_exception=False)
    assert client.get('/accounts/login/', HTTP_HOST='evil.example').status_code == 400
    assert client.post('/accounts/login/', {'username': 'a' * 2000}).status_code == 400
    lines = security_log.getvalue().splitlines()
    assert [line.split()[3] for line in lines] == [
        'django.security.DisallowedHost', 'django.security.RequestDataTooBig']
    assert 'Traceback' not in security_log.getvalue()
