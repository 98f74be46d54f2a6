"""Django's MySQL/MariaDB backend, and on a Galera cluster written through
several nodes, causal reads outside transactions only.

With WSREP_SYNC_WAIT (the URL's ?wsrep_sync_wait=N), a read made outside a
transaction, such as a view reading the generation a client just wrote
through another node, first waits until this node has applied every write
the cluster committed before it. Transactions run without the wait: their
writes are certified against every write committed meanwhile and rerun when
they read something stale (placement_site.retries.retried_write), and
MariaDB 10.11 with wsrep_sync_wait set inside write transactions that fire
triggers answered "Trigger ... has an error in its body" on some nodes
until restarted (docs/ha.md). The switch rides on the statement that turns
autocommit on or off, so it costs no round trip."""
from django.db.backends.mysql import base


class DatabaseWrapper(base.DatabaseWrapper):
    def _set_autocommit(self, autocommit):
        wait = self.settings_dict.get('WSREP_SYNC_WAIT')
        if not wait:
            return super()._set_autocommit(autocommit)
        with self.wrap_database_errors, self.connection.cursor() as cursor:
            cursor.execute(f'SET SESSION autocommit = {int(autocommit)}, '
                           f'wsrep_sync_wait = {int(wait) if autocommit else 0}')
