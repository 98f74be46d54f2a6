"""A throw-away RabbitMQ broker for the notification tests: Debian's
rabbitmq-server (apt-get install rabbitmq-server; scripts/ci/test-setup.sh
installs it) run as the current user from a temporary directory, on free ports, with
a node name of its own, so it never touches a system broker."""
import json
import os
import shutil
import socket
import subprocess
from pathlib import Path

import kombu
from amqp.exceptions import NotFound

from scripts.harness.process import Process
from scripts.harness.process import free_port
from scripts.harness.process import wait_for

BIN = Path('/usr/lib/rabbitmq/bin')
START_TIMEOUT = 90


class Broker:

    def __init__(self, base):
        self.base = Path(base)
        self.port = free_port()
        self.node = f'placement-test-{os.getpid()}-{self.port}@localhost'
        self.process = None
        (self.base / 'enabled_plugins').write_text('[].\n')
        self.env = {
            **os.environ,
            'HOME': str(self.base),  # the Erlang cookie lives here
            'RABBITMQ_NODENAME': self.node,
            'RABBITMQ_NODE_IP_ADDRESS': '127.0.0.1',
            'RABBITMQ_NODE_PORT': str(self.port),
            'RABBITMQ_DIST_PORT': str(free_port()),
            'RABBITMQ_MNESIA_BASE': str(self.base / 'mnesia'),
            'RABBITMQ_LOG_BASE': str(self.base / 'log'),
            'RABBITMQ_PID_FILE': str(self.base / 'rabbitmq.pid'),
            'RABBITMQ_ENABLED_PLUGINS_FILE': str(self.base / 'enabled_plugins'),
            'RABBITMQ_CONFIG_FILE': str(self.base / 'rabbitmq'),
        }

    @staticmethod
    def installed():
        return (BIN / 'rabbitmq-server').exists()

    @property
    def url(self):
        """The oslo.messaging transport URL."""
        return f'rabbit://guest:guest@127.0.0.1:{self.port}/'

    def _ctl(self, *args, timeout=START_TIMEOUT):
        return subprocess.run([str(BIN / 'rabbitmqctl'), '-n', self.node, *args], env=self.env,
                              capture_output=True, text=True, timeout=timeout, check=False)

    def start(self):
        self.process = Process([BIN / 'rabbitmq-server'], self.base / 'server.out',
                               env=self.env).start()
        # rabbitmqctl's own wait: until the node has booted, not only listens.
        waited = self._ctl('wait', self.env['RABBITMQ_PID_FILE'],
                           '--timeout', str(START_TIMEOUT))
        if waited.returncode != 0:
            self.kill()
            raise RuntimeError(f'rabbitmq-server did not start:\n{waited.stdout}{waited.stderr}\n'
                               + self.process.log_tail())

    def stop(self):
        """Stop the broker as an outage would: it accepts nothing until
        start() again (its data directory is kept)."""
        self._ctl('stop')
        if self.process is not None:
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
            self.process = None
        wait_for(self._closed, 'nothing to listen on the broker\'s port any more', timeout=10,
                 interval=0.2)

    def _closed(self):
        with socket.socket() as s:
            return s.connect_ex(('127.0.0.1', self.port)) != 0

    def kill(self):
        if self.process is not None:
            self.process.kill()
            self.process = None

    def drain(self, queue='notifications.info'):
        """Every message waiting in `queue`, oldest first, as the
        oslo.messaging 2.0 envelope's message (a dict)."""
        messages = []
        with kombu.Connection(f'amqp://guest:guest@127.0.0.1:{self.port}//') as connection:
            channel = connection.default_channel
            while True:
                try:
                    message = channel.basic_get(queue, no_ack=True)
                except NotFound:  # nothing was ever sent since the broker started
                    return messages
                if message is None:
                    return messages
                envelope = json.loads(message.body)
                messages.append(json.loads(envelope['oslo.message']))

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.base, ignore_errors=True)
