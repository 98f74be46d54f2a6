"""The Placement API spoken to as the tools and tests do: a request's
headers and body (noauth2's admin token, a microversion), one request sent
on a connection of its own, and whether a URL answers. Standard library
only."""
import http.client
import json
import time
import urllib.parse

LATEST = '1.39'


def api_request(body=None, version=None, token='admin'):
    """(headers, encoded body or None) of an API request at `version`
    ('1.39'; None: no microversion header), with a noauth2 token."""
    headers = {'X-Auth-Token': token, 'Accept': 'application/json'}
    if version:
        headers['OpenStack-API-Version'] = f'placement {version}'
    if body is None:
        return headers, None
    return {**headers, 'Content-Type': 'application/json'}, json.dumps(body).encode()


# An admin's request at the latest microversion (for requests.request(headers=...)).
HEADERS = api_request(version=LATEST)[0]


def send(port, method, path, body=None, version=None, token='admin', *, host='127.0.0.1',
         timeout=60):
    """One API request (as api_request builds it) on a connection of its own:
    (response, its body, seconds from sending to having read the whole
    answer). The response is read: its status and headers are there."""
    headers, data = api_request(body, version, token)
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        started = time.perf_counter()
        conn.request(method, path, body=data, headers=headers)
        response = conn.getresponse()
        raw = response.read()
        return response, raw, time.perf_counter() - started
    finally:
        conn.close()


def answers(url, timeout=10):
    """Does GET `url` answer 200? (An OSError when nothing listens yet.)"""
    parts = urllib.parse.urlsplit(url)
    response = send(parts.port or 80, 'GET', parts.path or '/', host=parts.hostname,
                    timeout=timeout)[0]
    return response.status == 200
