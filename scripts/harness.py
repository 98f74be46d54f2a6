"""What the scripts that drive a running Placement share (scale_bench,
soak, adoption_check) and the tests that start servers of their own: a free
port, a request's headers and body as the API wants them and one request
sent, a server process started, waited for and stopped, and readers of a
server's processes in /proc. Standard library only; imported as `harness`
by the scripts (their directory is on sys.path) and as `scripts.harness`
by the tests."""
import http.client
import json
import os
import signal
import socket
import subprocess
import time


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


# ---- a server's process ----

def start_server(argv, log_path, *, env=None, cwd=None):
    """A server process in a session of its own (so that stop_server()
    reaches its workers too), its output into log_path."""
    with open(log_path, 'wb') as log:
        return subprocess.Popen(argv, env=env, cwd=cwd, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)


def wait_until_up(process, port, log_path, seconds, interval=0.5):
    """Until GET / on 127.0.0.1:port answers 200; RuntimeError with the end
    of the log when the process exits first or `seconds` pass."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f'the server exited ({process.returncode}); '
                               f'{log_path} ends:\n{_tail(log_path)}')
        try:
            if send(port, 'GET', '/', timeout=10)[0].status == 200:
                return
        except OSError:  # not listening yet, or still starting
            pass
        time.sleep(interval)
    raise RuntimeError(f'the server did not answer within {seconds} s; '
                       f'{log_path} ends:\n{_tail(log_path)}')


def _tail(path, size=3000):
    with open(path, errors='replace') as f:
        return f.read()[-size:]


def stop_server(process, timeout=20):
    """SIGTERM (gunicorn's graceful stop), then SIGKILL to the session
    start_server() gave it after `timeout` seconds; the seconds it took (0
    when it had exited already)."""
    if process is None or process.poll() is not None:
        return 0.0
    started = time.monotonic()
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    return time.monotonic() - started


# ---- /proc ----

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


def _stat(pid):
    """The fields of /proc/<pid>/stat after the command: state, ppid, ..."""
    with open(f'/proc/{pid}/stat') as f:
        # pid (comm) state ppid ...: comm may hold spaces.
        return f.read().rsplit(')', 1)[1].split()


def _parent(pid):
    return int(_stat(pid)[1])


def cpu_seconds(pid):
    """User and system CPU time the process has used so far, or None."""
    try:
        fields = _stat(pid)
        return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')
    except (OSError, IndexError, ValueError):
        return None


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
