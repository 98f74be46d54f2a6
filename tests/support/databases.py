"""A new, empty database on the server the tests use, for processes of
their own (a db sync, a deployed service): its URL, dropped afterwards."""
import os
from contextlib import contextmanager

from django.db import connection


@contextmanager
def empty_database(tmp_path, name='scratch'):
    """The URL of a new database: on SQLite a file in tmp_path; on
    PostgreSQL and MariaDB a database `<name>_<pid>` beside the test
    database, created through a connection of its own."""
    vendor, params = connection.vendor, connection.settings_dict
    if vendor == 'sqlite':
        yield f'sqlite:///{tmp_path / f"{name}.sqlite3"}'
        return
    database = f'{name}_{os.getpid()}'
    raw = connection.get_new_connection(connection.get_connection_params())
    if vendor == 'postgresql':
        raw.autocommit = True   # CREATE DATABASE runs outside a transaction

    def admin(sql):
        with raw.cursor() as cursor:
            if vendor == 'postgresql':
                cursor.execute('SELECT pg_terminate_backend(pid) FROM pg_stat_activity '
                               'WHERE datname = %s AND pid <> pg_backend_pid()', [database])
            cursor.execute(sql)
    admin(f'DROP DATABASE IF EXISTS {database}')
    admin(f'CREATE DATABASE {database}')
    scheme = 'postgresql' if vendor == 'postgresql' else 'mysql'
    try:
        yield (f'{scheme}://{params["USER"]}:{params["PASSWORD"]}@{params["HOST"]}:'
               f'{params["PORT"]}/{database}')
    finally:
        admin(f'DROP DATABASE IF EXISTS {database}')
        raw.close()
