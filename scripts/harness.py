"""What the scripts that drive a running Placement share (scale_bench,
soak, adoption_check): a free port, a request's headers and body as the API
wants them, and readers of a server's processes in /proc."""
import json
import os
import socket


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def api_request(body=None, version=None, token='admin'):
    """(headers, encoded body or None) of an API request at `version`
    ('1.39'; None: no microversion header), with a noauth2 token."""
    headers = {'X-Auth-Token': token, 'Accept': 'application/json'}
    if version:
        headers['OpenStack-API-Version'] = f'placement {version}'
    if body is None:
        return headers, None
    return {**headers, 'Content-Type': 'application/json'}, json.dumps(body).encode()


def memory_mib(pid, keys=('VmRSS', 'RssAnon', 'RssFile', 'RssShmem')):
    """{key: MiB} of the process's /proc status lines `keys` (VmRSS, VmHWM,
    RssAnon: the heap, RssFile and RssShmem: mapped files shared with the
    master and other workers), or None when it is gone."""
    fields = {}
    try:
        with open(f'/proc/{pid}/status') as status:
            for line in status:
                key, _, value = line.partition(':')
                if key in keys:
                    fields[key] = int(value.split()[0]) / 1024
    except OSError:
        return None
    return fields or None


def _parent(pid):
    with open(f'/proc/{pid}/stat') as f:
        # pid (comm) state ppid ...: comm may hold spaces.
        return int(f.read().rsplit(')', 1)[1].split()[1])


def children(pid):
    """The process's children (a gunicorn master's workers), by pid."""
    try:
        with open(f'/proc/{pid}/task/{pid}/children') as f:
            return sorted(int(p) for p in f.read().split())
    except OSError:
        found = []
        for entry in os.listdir('/proc'):
            if entry.isdigit():
                try:
                    if _parent(entry) == pid:
                        found.append(int(entry))
                except (OSError, IndexError, ValueError):
                    continue
        return sorted(found)
