"""Server processes for the tools and the tests, started, waited for and
stopped one way: a free port; wait_for(), until a condition holds or time
runs out; Process, a command started in a session of its own with its
output in a log file, waited for until it answers (the end of its log in the
error when it exits first or does not answer in time) and stopped; and
readers of a process in /proc. Standard library only."""
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

from scripts.harness import api


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def wait_for(condition, what, timeout=30, interval=0.1, *, ignore=(OSError,)):
    """Until condition() is true. An exception of a kind in `ignore` (a
    connection refused, a server still starting) counts as not yet; after
    `timeout` seconds a TimeoutError says what was waited for and the last
    such exception."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            if condition():
                return
        except ignore as exc:
            last = exc
        if time.monotonic() > deadline:
            raise TimeoutError(f'timed out after {timeout} s waiting for {what}'
                               + (f' (last: {type(last).__name__}: {last})' if last else ''))
        time.sleep(interval)


class ProcessExited(RuntimeError):
    """The process waited for exited first."""


class Process:
    """A command run as a server: started in a session of its own (so that
    stop() and kill() reach its children too), its output appended to
    `log`; the caller waits for it and stops it."""

    def __init__(self, argv, log, *, env=None, cwd=None, name=None):
        self.argv, self.log_path = [str(a) for a in argv], Path(log)
        self.env, self.cwd = env, cwd
        self.name = name or Path(self.argv[0]).name
        self.process = None

    def start(self):
        with open(self.log_path, 'ab') as log:  # the child keeps its own copy
            self.process = subprocess.Popen(self.argv, env=self.env, cwd=self.cwd,
                                            stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, start_new_session=True)
        return self

    @property
    def pid(self):
        return self.process.pid

    def running(self):
        return self.process is not None and self.process.poll() is None

    def wait(self, timeout=None):
        """Until the process exits (subprocess.TimeoutExpired after
        `timeout` seconds); its exit status."""
        return self.process.wait(timeout)

    def wait_until(self, condition, what, timeout, interval=0.2):
        """Until condition() holds (an OSError counting as not yet);
        ProcessExited when the process exits first, TimeoutError after
        `timeout` seconds, each with the end of its log."""
        def ready():
            if self.process.poll() is not None:
                raise ProcessExited(f'{self.name} exited ({self.process.returncode}) before '
                                    f'{what}; {self.log_path} ends:\n{self.log_tail()}')
            return condition()
        try:
            wait_for(ready, what, timeout, interval)
        except TimeoutError as exc:
            raise TimeoutError(f'{self.name}: {exc}; {self.log_path} ends:\n'
                               f'{self.log_tail()}') from None
        return self

    def wait_answering(self, url, timeout, interval=0.2):
        """Until GET `url` answers 200."""
        return self.wait_until(lambda: api.answers(url), f'{url} to answer', timeout, interval)

    def stop(self, timeout=20, sig=signal.SIGTERM):
        """`sig` to the process (SIGTERM: gunicorn's graceful stop), then
        SIGKILL to its session after `timeout` seconds; the seconds it took
        (0 when it had exited already)."""
        if not self.running():
            return 0.0
        started = time.monotonic()
        self.process.send_signal(sig)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
        return time.monotonic() - started

    def kill(self):
        """SIGKILL to the process and its session: it crashes, whatever it
        was doing."""
        if self.process is None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait()

    def log(self):
        try:
            return self.log_path.read_text(errors='replace')
        except OSError:
            return ''

    def log_tail(self, size=3000):
        return self.log()[-size:]


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


def alive(pid):
    """Is the process still running (neither gone nor a zombie)?"""
    try:
        return _stat(pid)[0] != 'Z'
    except (OSError, IndexError):
        return False


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
