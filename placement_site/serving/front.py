"""The front's configuration, and whether a server answers: scripts/serve.sh's
helpers (python -m placement_site.serving), standard library only."""
import grp
import http.client
import os
import pwd
import re
import socket
import sys
import time
from pathlib import Path

from placement_site.serving import OPERATOR_PATHS
from placement_site.serving import OPERATOR_PREFIXES

TEMPLATE = Path(__file__).with_name('nginx.conf.template')


def nginx_conf(*, run_dir, listen, max_body_size):
    """The template filled in: paths under `run_dir`, `listen` (host:port),
    the body limit and the operator pool's paths."""
    host, _, port = listen.rpartition(':')
    if ':' in host and not host.startswith('['):
        host = f'[{host}]'   # an IPv6 address
    routes = [f'        ~^{re.escape(prefix)} operator;' for prefix in OPERATOR_PREFIXES]
    routes += [f'        {path} operator;' for path in OPERATOR_PATHS]
    values = {
        'RUN': str(run_dir),
        'LISTEN': f'{host}:{port}',
        'MAX_BODY_SIZE': str(max_body_size),
        'TOO_LARGE': str(max_body_size + 1),
        'OPERATOR_MAP': '\n'.join(routes),
        # As root, nginx's workers would be `nobody`, who cannot reach the
        # sockets: they run as the pools do.
        'USER': (f'user {pwd.getpwuid(os.geteuid()).pw_name} {grp.getgrgid(os.getegid()).gr_name};'
                 if os.geteuid() == 0 else ''),
    }
    text = TEMPLATE.read_text()
    for name, value in values.items():
        text = text.replace(f'@{name}@', value)
    left = re.findall(r'@[A-Z_]+@', text)
    if left:
        raise ValueError(f'{TEMPLATE}: no value for {", ".join(sorted(set(left)))}')
    return text


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout):
        super().__init__('localhost', timeout=timeout)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.path)


def _connection(address, timeout):
    if address.startswith('unix:'):
        return _UnixConnection(address[len('unix:'):], timeout)
    host, _, port = address.removeprefix('http://').rstrip('/').rpartition(':')
    host = host.strip('[]')
    # A wildcard listen address is reached on the loopback.
    host = {'0.0.0.0': '127.0.0.1', '': '127.0.0.1', '::': '::1'}.get(host, host)
    return http.client.HTTPConnection(host, int(port), timeout=timeout)


def answers(address, timeout=5):
    connection = _connection(address, timeout)
    try:
        connection.request('GET', '/')
        return connection.getresponse().status == 200
    except OSError:
        return False
    finally:
        connection.close()


def _running(pid):
    try:
        state = Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ('Z', 'X')


def wait(addresses, *, pids, seconds):
    deadline = time.monotonic() + seconds
    waiting = list(addresses)
    while waiting:
        waiting = [address for address in waiting if not answers(address)]
        if not waiting:
            return 0
        gone = [pid for pid in pids if not _running(pid)]
        if gone or time.monotonic() > deadline:
            why = f'process {", ".join(map(str, gone))} exited' if gone else f'{seconds} s passed'
            print(f'serve: no answer from {", ".join(waiting)} ({why})', file=sys.stderr)
            return 1
        time.sleep(0.2)
    return 0
