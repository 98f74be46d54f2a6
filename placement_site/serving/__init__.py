"""How the service is served (scripts/serve.sh, docs/serving.md): nginx in
front, reading whole requests and buffering answers, and two gunicorn pools
behind it on Unix sockets. The operator pool (one process, a few threads,
under nice) answers the operator paths below; the API pool answers the
Placement API that schedulers call, so a heavy page never makes a claim
wait. Each pool's processes carry PLACEMENT_SERVING_POOL (`api` or
`operator`; unset: one pool serves everything, as FRONT=none does).

Also the one rule for a request's client address, behind the front or not.
Nothing here needs Django's settings at import: scripts/serve.sh renders
nginx's configuration with it before any server starts."""
import functools
import ipaddress

# Paths the operator pool answers: the dashboards, the admin, sign-in, static
# files, the API docs, the scrape, the capacity reads and explain. Every
# other path, unknown ones included, is the Placement API's.
OPERATOR_PREFIXES = ('/ui/', '/admin/', '/accounts/', '/static/', '/api/', '/explain/')
OPERATOR_PATHS = ('/metrics', '/capacity', '/capacity/trends', '/capacity/what-if',
                  '/favicon.ico')
POOLS = ('api', 'operator')

# The header the front sets to the client's address, overwriting whatever a
# client sent under that name (nginx: proxy_set_header X-Real-IP $remote_addr).
CLIENT_ADDRESS_HEADER = 'HTTP_X_REAL_IP'
# PLACEMENT_TRUSTED_PROXIES' word for "a peer on a Unix socket": gunicorn gives
# such a peer an empty REMOTE_ADDR, and only the front reaches the sockets
# (their directory is its owner's alone).
UNIX_PEER = 'unix'


def is_operator_path(path):
    return path in OPERATOR_PATHS or path.startswith(OPERATOR_PREFIXES)


def client_address(request):
    """The address of the client that sent `request`: the connection's
    (REMOTE_ADDR), or, when the connection is the trusted front's
    (PLACEMENT_TRUSTED_PROXIES), the X-Real-IP the front set. A client-sent
    X-Real-IP or X-Forwarded-For counts nowhere else. The /metrics access
    rule, sign-in throttling and the request log all read it here."""
    if request is None:
        return ''
    peer = request.META.get('REMOTE_ADDR') or ''
    if _from_front(peer):
        return request.META.get(CLIENT_ADDRESS_HEADER) or peer
    return peer


def _from_front(peer):
    from django.conf import settings
    trusted = tuple(settings.PLACEMENT_TRUSTED_PROXIES)
    if not trusted:
        return False
    if not peer:
        return UNIX_PEER in trusted
    try:
        address = ipaddress.ip_address(peer)
    except ValueError:
        return False
    return any(address in network for network in trusted_networks(trusted))


@functools.lru_cache(maxsize=8)
def trusted_networks(trusted):
    """The networks PLACEMENT_TRUSTED_PROXIES names (besides `unix`); a
    value that is not one stops the server at start (settings read it)."""
    networks = []
    for item in trusted:
        if item == UNIX_PEER:
            continue
        try:
            networks.append(ipaddress.ip_network(item, strict=False))
        except ValueError:
            raise ValueError(f'PLACEMENT_TRUSTED_PROXIES: {item!r} is neither {UNIX_PEER!r} nor '
                             'an address or network such as 10.0.0.5 or 10.0.0.0/24')
    return tuple(networks)
