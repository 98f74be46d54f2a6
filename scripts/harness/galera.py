"""A throw-away MariaDB Galera cluster on one machine, with HAProxy in front
of it as kolla-ansible deploys it, for the high-availability tests
(tests/system/test_galera.py) and runs (scripts/bench/ha.py; docs/ha.md).

Each node is Debian's mariadbd with galera-4, in a private directory under
/tmp with its own ports (`base + 10 * i`: SQL, then Galera's replication,
incremental transfer (IST), full transfer (SST) and the health check). The
first node bootstraps the cluster; the others join it with an rsync SST.
Durability is traded for speed as in scripts/dev/mariadb-test-server.sh.

A stopped or killed node is started again from the position it recovered
(`mariadbd --wsrep-recover`), so it catches up by IST from a peer's write-set
cache instead of a full copy: what an operator must do too (docs/ha.md).

The health check answers HTTP 200 while its node is Synced and 503
otherwise, as kolla's clustercheck does; HAProxy (Debian's haproxy) sends
every connection to the first node while it is up and to a backup when it is
not."""
import os
import re
import shutil
import signal
import subprocess
import threading
from http.server import BaseHTTPRequestHandler
from http.server import ThreadingHTTPServer
from pathlib import Path

from scripts.harness.process import Process
from scripts.harness.process import alive
from scripts.harness.process import wait_for

PROVIDER = '/usr/lib/galera/libgalera_smm.so'
# Commands (or files) and the Debian packages that bring them: the servers,
# what the rsync SST script runs, and socat for HAProxy's admin socket.
PACKAGES = {'mariadbd': 'mariadb-server', PROVIDER: 'galera-4', 'rsync': 'rsync',
            'haproxy': 'haproxy', 'lsof': 'lsof', 'ss': 'iproute2', 'socat': 'socat'}
SYNCED = 4   # wsrep_local_state of a node in sync
USER, PASSWORD = 'placement', 'placement'


def _driver():
    """MySQLdb, imported when a node is first asked (scripts/ci/galera-tests.sh
    installs it; the suite on SQLite collects this module without it)."""
    import MySQLdb
    return MySQLdb


def install():
    """Debian's packages for the cluster and the proxy, where missing."""
    missing = sorted({package for command, package in PACKAGES.items()
                      if not (Path(command).exists() or shutil.which(command)
                              or Path('/usr/sbin', command).exists())})
    if missing:
        env = {**os.environ, 'DEBIAN_FRONTEND': 'noninteractive'}
        subprocess.run(['apt-get', 'update', '-qq'], check=True, env=env, capture_output=True)
        subprocess.run(['apt-get', 'install', '-y', '-qq', *missing], check=True, env=env,
                       capture_output=True)


def available():
    """Can this machine run the cluster (packages present or installable)?"""
    try:
        install()
    except (OSError, subprocess.CalledProcessError):
        return False
    return True


class Node:
    def __init__(self, cluster, index):
        self.cluster, self.index = cluster, index
        self.name = f'node{index + 1}'
        self.port = cluster.base_port + 10 * index
        self.gcomm_port, self.ist_port = self.port + 1, self.port + 2
        self.sst_port, self.check_port = self.port + 3, self.port + 4
        self.dir = cluster.dir / self.name
        self.data = self.dir / 'data'
        self.socket = self.dir / 'mariadb.sock'
        self.log = self.dir / 'server.log'
        self.process = None

    @property
    def url(self):
        return f'mysql://{USER}:{PASSWORD}@127.0.0.1:{self.port}/placement'

    def config(self):
        """The node's my.cnf: Galera's required settings and private ports."""
        peers = ','.join(f'127.0.0.1:{n.gcomm_port}' for n in self.cluster.nodes)
        provider_options = ';'.join([
            f'gmcast.listen_addr=tcp://127.0.0.1:{self.gcomm_port}',
            f'ist.recv_addr=127.0.0.1:{self.ist_port}',
            'gcache.size=256M',
            # A node that left is noticed after 2 s of silence (Galera's
            # default: 5 s), and until then the others' commits wait.
            'evs.keepalive_period=PT0.5S', 'evs.inactive_check_period=PT0.5S',
            'evs.suspect_timeout=PT2S', 'evs.inactive_timeout=PT4S',
        ])
        return '\n'.join([
            '[mariadbd]',
            f'datadir={self.data}', f'socket={self.socket}', f'port={self.port}',
            'bind-address=127.0.0.1', f'pid-file={self.dir}/mariadb.pid',
            f'log-error={self.log}', 'user=mysql',
            'character-set-server=utf8mb4', 'max-connections=300',
            'innodb-buffer-pool-size=128M', 'innodb-flush-log-at-trx-commit=0',
            'innodb-doublewrite=0',
            # What Galera requires.
            'binlog-format=ROW', 'default-storage-engine=InnoDB', 'innodb-autoinc-lock-mode=2',
            'wsrep-on=ON', f'wsrep-provider={PROVIDER}',
            f'wsrep-cluster-name=placement-{self.cluster.base_port}',
            f'wsrep-cluster-address=gcomm://{peers}',
            f'wsrep-node-name={self.name}', f'wsrep-node-address=127.0.0.1:{self.gcomm_port}',
            f'wsrep-provider-options="{provider_options}"',
            'wsrep-sst-method=rsync', f'wsrep-sst-receive-address=127.0.0.1:{self.sst_port}',
            'wsrep-slave-threads=2', '',
        ])

    def _mariadbd(self, *args):
        return [shutil.which('mariadbd') or '/usr/sbin/mariadbd',
                f'--defaults-file={self.dir}/my.cnf', *args]

    def prepare(self):
        self.dir.mkdir(parents=True)
        (self.dir / 'my.cnf').write_text(self.config())
        subprocess.run(['mariadb-install-db', f'--defaults-file={self.dir}/my.cnf',
                        '--auth-root-authentication-method=normal', '--skip-test-db'],
                       check=True, capture_output=True, timeout=120)
        if os.geteuid() == 0:
            subprocess.run(['chown', '-R', 'mysql', str(self.dir)], check=True)

    def start(self, *, bootstrap=False, wait=True):
        """Start mariadbd; after a stop or kill from the position recovered
        from its files, so that a peer can send what it missed by IST."""
        args = ['--wsrep-new-cluster'] if bootstrap else []
        position = self.recover() if (self.data / 'grastate.dat').exists() else None
        if position:
            args.append(f'--wsrep-start-position={position}')
        self.process = Process(self._mariadbd(*args), self.dir / 'stdout.log',
                               name=f'{self.name} (mariadbd)').start()
        if wait:
            self.wait_synced()

    def recover(self):
        """`uuid:seqno` of the last write set the node committed, as
        `mariadbd --wsrep-recover` finds it (what grastate.dat says when the
        node stopped cleanly)."""
        state = (self.data / 'grastate.dat').read_text()
        uuid = re.search(r'uuid:\s*(\S+)', state).group(1)
        seqno = int(re.search(r'seqno:\s*(-?\d+)', state).group(1))
        if seqno >= 0:
            return f'{uuid}:{seqno}'
        recovery = self.dir / 'recover.log'
        subprocess.run(self._mariadbd('--wsrep-recover', f'--log-error={recovery}'),
                       capture_output=True, timeout=120)
        found = re.findall(r'Recovered position:?\s*(\S+:-?\d+)', recovery.read_text())
        return found[-1] if found else None

    def kill(self):
        """SIGKILL: the node crashes, whatever it was doing."""
        if self.running():
            self.process.kill()

    def stop(self):
        """A clean shutdown (grastate.dat keeps the position)."""
        if self.process is not None:
            self.process.stop(timeout=60)

    def running(self):
        return self.process is not None and self.process.running()

    def connect(self, **kwargs):
        return _driver().connect(host='127.0.0.1', port=self.port, user='root',
                               connect_timeout=3, **kwargs)

    def sql(self, statement, *params, db=None):
        """Rows of one statement, run as root in autocommit."""
        conn = self.connect(**({'db': db} if db else {}))
        try:
            conn.autocommit(True)
            cursor = conn.cursor()
            cursor.execute(statement, params or None)
            return cursor.fetchall()
        finally:
            conn.close()

    def status(self, name):
        rows = self.sql('SHOW GLOBAL STATUS LIKE %s', name)
        return rows[0][1] if rows else None

    def synced(self):
        try:
            return int(self.status('wsrep_local_state')) == SYNCED and \
                self.status('wsrep_cluster_status') == 'Primary'
        except _driver().Error:
            return False

    def wait_synced(self, timeout=180):
        try:
            self.process.wait_until(self.synced, f'{self.name} to be synced', timeout)
        except (RuntimeError, TimeoutError) as exc:
            raise type(exc)(f'{exc}\n{self.log} ends:\n{self.log_tail()}') from None

    def log_tail(self, lines=30):
        try:
            return '\n'.join(self.log.read_text(errors='replace').splitlines()[-lines:])
        except OSError:
            return ''

    def log_size(self):
        return self.log.stat().st_size if self.log.exists() else 0

    def transfers(self, since=0):
        """(full state transfers, incremental ones) this node received, from
        its log after byte `since`."""
        with open(self.log, 'rb') as log:
            log.seek(since)
            text = log.read().decode(errors='replace')
        # The SST script runs for either: "rsync SST" copies the data
        # directory, "rsync IST" only lets the write sets through.
        return (len(re.findall(r'\w+ SST completed on joiner', text)),
                len(re.findall(r'\w+ IST completed on joiner', text)))


class HealthCheck:
    """kolla's clustercheck, one HTTP port per node: 200 while the node is
    Synced in a Primary component, 503 otherwise."""

    def __init__(self, nodes):
        self.servers = []
        for node in nodes:
            server = ThreadingHTTPServer(('127.0.0.1', node.check_port), _check_handler(node))
            server.daemon_threads = True
            threading.Thread(target=server.serve_forever, daemon=True).start()
            self.servers.append(server)

    def stop(self):
        for server in self.servers:
            server.shutdown()
            server.server_close()


def _check_handler(node):
    class Check(BaseHTTPRequestHandler):
        def do_GET(self):
            synced = node.synced()
            self.send_response(200 if synced else 503)
            self.send_header('Content-Type', 'text/plain')
            self.end_headers()
            self.wfile.write(b'Galera node is %s.\n' % (b'synced' if synced else b'not synced'))

        do_OPTIONS = do_GET

        def log_message(self, *args):
            pass

        def handle(self):
            try:
                super().handle()
            except ConnectionError:
                pass  # HAProxy hangs up once it has read the status
    return Check


class Proxy:
    """Debian's haproxy with kolla-ansible's shape: the database behind one
    TCP frontend (the first node active, the others backup, the Galera
    health check), and optionally HTTP API servers behind a second one."""

    def __init__(self, directory, nodes, db_port, *, api_port=None, api_servers=()):
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.db_port, self.api_port = db_port, api_port
        self.nodes, self.api_servers = nodes, list(api_servers)
        self.process = None

    @property
    def db_url(self):
        return f'mysql://{USER}:{PASSWORD}@127.0.0.1:{self.db_port}/placement'

    @property
    def api_url(self):
        return f'http://127.0.0.1:{self.api_port}'

    def config(self):
        lines = [
            'global', '    maxconn 4000',
            f'    stats socket {self.dir}/admin.sock mode 600 level admin',
            'defaults', '    log global', '    retries 3', '    timeout connect 2s',
            '    timeout check 2s', '    timeout http-request 30s', '    timeout queue 30s',
            '',
            # kolla-ansible's database frontend: TCP, long timeouts and TCP
            # keepalives, one active server, the others backup, checked by
            # clustercheck on a port of its own. Checks every second, down
            # after two failures (kolla: every 2 s, after five), a connection
            # the server refuses marking it down at once, and the sessions of
            # a server that goes down (or of the backups, when the active one
            # comes back) cut, so that clients reconnect to the one writer.
            'listen mariadb', f'    bind 127.0.0.1:{self.db_port}', '    mode tcp',
            '    option clitcpka', '    timeout client 3600s',
            '    option srvtcpka', '    timeout server 3600s',
            '    option httpchk',
        ]
        for i, node in enumerate(self.nodes):
            lines.append(
                f'    server {node.name} 127.0.0.1:{node.port} check port {node.check_port} '
                'inter 1s rise 2 fall 2 observe layer4 error-limit 1 on-error mark-down '
                'on-marked-down shutdown-sessions on-marked-up shutdown-backup-sessions'
                + (' backup' if i else ''))
        if self.api_port:
            lines += [
                '', 'listen placement_api', f'    bind 127.0.0.1:{self.api_port}',
                '    mode http', '    balance roundrobin', '    option httpchk GET /',
                # A request its server refused the connection for goes to another.
                '    option redispatch 1',
                '    timeout client 60s', '    timeout server 60s', '    option http-server-close',
            ]
            for server in self.api_servers:
                lines.append(f'    server api-{server.port} 127.0.0.1:{server.port} check inter 1s '
                             'rise 2 fall 2 observe layer4 error-limit 1 on-error mark-down')
        return '\n'.join(lines) + '\n'

    def start(self):
        path = self.dir / 'haproxy.cfg'
        path.write_text(self.config())
        subprocess.run(['haproxy', '-c', '-q', '-f', str(path)], check=True, capture_output=True)
        self.process = Process(['haproxy', '-db', '-f', path], self.dir / 'haproxy.log').start()
        self.process.wait_until(lambda: self.server_states().get(self.nodes[0].name) == 'UP',
                                'HAProxy to see the first node up', timeout=30)

    def server_states(self):
        """{server name: UP, DOWN, ...} as HAProxy sees them now."""
        answer = subprocess.run(['socat', '-', f'UNIX-CONNECT:{self.dir}/admin.sock'],
                                input='show stat\n', capture_output=True, text=True, timeout=5)
        states = {}
        for line in answer.stdout.splitlines():
            fields = line.split(',')
            if len(fields) > 17 and fields[1] not in ('FRONTEND', 'BACKEND', 'svname'):
                states[fields[1]] = fields[17]
        return states

    def stop(self):
        if self.process is not None:
            self.process.stop(timeout=20)


class Cluster:
    """`size` Galera nodes on ports from `base_port`, under `directory`
    (one the mysql user can reach: not a private temporary directory)."""

    def __init__(self, base_port=23400, size=3, directory=None):
        self.base_port = base_port
        self.dir = Path(directory or f'/tmp/placement-galera-{base_port}')
        self.nodes = []
        self.nodes = [Node(self, i) for i in range(size)]
        self.check = None

    def start(self):
        install()
        self.stop()
        for node in self.nodes:
            node.prepare()
        first, *others = self.nodes
        first.start(bootstrap=True)
        first.sql(f"""CREATE USER IF NOT EXISTS '{USER}'@'127.0.0.1' IDENTIFIED BY '{PASSWORD}'""")
        first.sql(f"GRANT ALL PRIVILEGES ON *.* TO '{USER}'@'127.0.0.1' WITH GRANT OPTION")
        first.sql('CREATE DATABASE IF NOT EXISTS placement')
        for node in others:  # one at a time: each needs a donor
            node.start()
        self.check = HealthCheck(self.nodes)
        return self

    def stop(self):
        """Stop every node and remove the cluster's files."""
        if self.check is not None:
            self.check.stop()
            self.check = None
        for node in reversed(self.nodes):
            node.kill()
        _kill_leftovers(self.dir)
        shutil.rmtree(self.dir, ignore_errors=True)

    def wait_synced(self, timeout=180):
        for node in self.nodes:
            node.wait_synced(timeout)
        # Every node has applied every write set (wsrep_last_committed agrees).
        wait_for(lambda: len({node.status('wsrep_last_committed') for node in self.nodes}) == 1,
                 'the nodes to agree', timeout=timeout)

    def size(self):
        return int(self.nodes[0].status('wsrep_cluster_size'))


def _kill_leftovers(directory):
    """mariadbd and rsync processes of an earlier run in `directory`."""
    try:
        found = subprocess.run(['pgrep', '-f', str(directory)], capture_output=True, text=True)
    except OSError:
        return
    pids = [pid for pid in map(int, found.stdout.split()) if pid != os.getpid()]
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    wait_for(lambda: not any(alive(pid) for pid in pids), f'the leftovers in {directory} to die',
             timeout=10, interval=0.05)
