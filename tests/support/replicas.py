"""A throw-away PostgreSQL primary with a streaming replica for the read
replica and resilience tests (the Placement servers in front of them:
scripts/harness/placement.py).

The primary is initdb'd with wal_level=replica and trust authentication
(replication included); the replica is a pg_basebackup -R of it, started
hot_standby on the next port (synchronous when asked: a commit returns once
the replica has flushed it). Both run from Debian's PostgreSQL (as the
postgres user when we are root, as scripts/dev/pg-test-server.sh does), from a
directory under /tmp that stop() removes. The resilience tests also crash
and restart the primary and promote the replica."""
import os
import shutil
import subprocess
from pathlib import Path

import psycopg2

from scripts.harness import process
from scripts.harness.loads import read_books


def wait_for(condition, what, timeout=30):
    """process.wait_for, a server still starting (a psycopg2.Error) counting
    as not yet."""
    process.wait_for(condition, what, timeout, ignore=(OSError, psycopg2.Error))


def postgres_bin():
    """Debian's newest PostgreSQL bin directory, or None."""
    found = sorted(Path('/usr/lib/postgresql').glob('*/bin/initdb'),
                   key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0)
    return found[-1].parent if found else None


class Cluster:
    """A primary on `port` and its replica on `port + 1` (none when
    replica=False)."""

    def __init__(self, port=25460, base=None, *, replica=True, synchronous=False):
        self.bin = postgres_bin()
        self.primary_port = port
        self.replica_port = port + 1
        self.base = Path(base or f'/tmp/placement-replica-test-{port}')
        self.primary_dir = self.base / 'primary'
        self.replica_dir = self.base / 'replica'
        self.replica, self.synchronous = replica, synchronous
        self._started = {}  # data directory -> (port, options) of its server

    def url(self, port):
        return f'postgresql://placement:placement@127.0.0.1:{port}/placement'

    @property
    def primary_url(self):
        return self.url(self.primary_port)

    @property
    def replica_url(self):
        return self.url(self.replica_port)

    def _run(self, *args, **kwargs):
        command = [str(a) for a in args]
        if os.geteuid() == 0:
            command = ['runuser', '-u', 'postgres', '--', *command]
        return subprocess.run(command, check=True, capture_output=True, text=True,
                              timeout=kwargs.pop('timeout', 60), **kwargs)

    def _pg_ctl(self, data, *args):
        return self._run(self.bin / 'pg_ctl', '-D', data, *args)

    def start(self):
        self.stop()
        self.base.mkdir(parents=True)
        if os.geteuid() == 0:
            shutil.chown(self.base, 'postgres')
        self._run(self.bin / 'initdb', '-D', self.primary_dir, '-U', 'postgres', '--auth=trust')
        with open(self.primary_dir / 'pg_hba.conf', 'a') as hba:
            hba.write('host replication all 127.0.0.1/32 trust\n')
        self.start_server(self.primary_dir, self.primary_port,
                          '-c wal_level=replica -c max_wal_senders=5')
        self.sql(self.primary_port, "CREATE ROLE placement LOGIN SUPERUSER PASSWORD 'placement'",
                 dbname='postgres')
        self.sql(self.primary_port, 'CREATE DATABASE placement OWNER placement', dbname='postgres')
        if not self.replica:
            return
        self._run(self.bin / 'pg_basebackup', '-h', '127.0.0.1', '-p', self.primary_port,
                  '-U', 'postgres', '-D', self.replica_dir, '-R', '-X', 'stream', '-c', 'fast')
        self.start_replica()
        if self.synchronous:
            # Only now: with no standby connected a synchronous commit waits.
            self.sql(self.primary_port, "ALTER SYSTEM SET synchronous_standby_names = '*'",
                     dbname='postgres')
            self.sql(self.primary_port, 'SELECT pg_reload_conf()', dbname='postgres')
            wait_for(lambda: self.sql(
                self.primary_port, "SELECT count(*) FROM pg_stat_replication "
                "WHERE sync_state = 'sync'", dbname='postgres')[0][0] == 1,
                'the replica to become synchronous')

    def start_server(self, data, port, options=''):
        self._started[data] = (port, options)
        self._pg_ctl(data, '-l', data.parent / f'{data.name}.log', '-w', '-o',
                     f'-p {port} -k {self.base} -c listen_addresses=127.0.0.1 -c fsync=off '
                     f'-c full_page_writes=off -c max_connections=100 {options}', 'start')

    def start_replica(self):
        self.start_server(self.replica_dir, self.replica_port, '-c hot_standby=on')

    def stop_replica(self):
        self._pg_ctl(self.replica_dir, '-m', 'fast', '-w', 'stop')

    def stop_primary(self, mode='immediate'):
        """Immediate: a crash, every session cut and recovery at the next start."""
        self._pg_ctl(self.primary_dir, '-m', mode, '-w', 'stop')

    def start_primary(self):
        """Start the stopped primary again, as it was started first."""
        self.start_server(self.primary_dir, *self._started[self.primary_dir])

    def promote_replica(self):
        """The replica becomes a primary, accepting writes on its own port."""
        self._pg_ctl(self.replica_dir, '-w', 'promote')

    def accepts_connections(self, port):
        try:
            self.sql(port, 'SELECT 1', dbname='postgres')
        except psycopg2.Error:
            return False
        return True

    def stop(self):
        """Stop both servers and remove their files."""
        for data in (self.replica_dir, self.primary_dir):
            if (data / 'postmaster.pid').exists():
                try:
                    self._pg_ctl(data, '-m', 'immediate', '-w', 'stop')
                except subprocess.CalledProcessError:
                    pass
        shutil.rmtree(self.base, ignore_errors=True)

    # ---- talking to the servers directly ----

    def connect(self, port, dbname='placement'):
        """A connection as postgres to the server on `port`."""
        return psycopg2.connect(host='127.0.0.1', port=port, user='postgres', dbname=dbname,
                                connect_timeout=5)

    def books(self, port=None):
        """What the server on `port` (the primary's) holds: loads.Books."""
        return read_books(self.connect(port or self.primary_port))

    def sql(self, port, sql, *params, dbname='placement'):
        """Rows of one statement, run as postgres in autocommit."""
        conn = self.connect(port, dbname)
        try:
            conn.autocommit = True
            with conn.cursor() as cursor:
                cursor.execute(sql, params or None)
                return cursor.fetchall() if cursor.description else None
        finally:
            conn.close()

    def replica_sql(self, sql, *params):
        return self.sql(self.replica_port, sql, *params)

    def primary_sql(self, sql, *params):
        return self.sql(self.primary_port, sql, *params)

    def pause_replay(self):
        """Stop applying WAL on the replica (it keeps receiving it)."""
        self.replica_sql('SELECT pg_wal_replay_pause()')
        wait_for(lambda: self.replica_sql('SELECT pg_get_wal_replay_pause_state()')[0][0]
                 == 'paused', 'replay to pause')

    def resume_replay(self):
        self.replica_sql('SELECT pg_wal_replay_resume()')

    def wait_caught_up(self, timeout=30):
        """Until the replica has replayed everything the primary has written."""
        target = self.primary_sql('SELECT pg_current_wal_lsn()::text')[0][0]
        wait_for(lambda: self.replica_sql(
            'SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn', target)[0][0],
            'the replica to catch up', timeout)
