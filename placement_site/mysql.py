"""What MySQL and MariaDB need from our migrations to behave as PostgreSQL.

Names, traits, resource classes, uuids and project ids are compared byte for
byte in the API: 'cn1' is not 'CN1' nor 'cn1 ' nor 'cñ1'. MySQL's default
collations fold case and accents and ignore trailing spaces, so our tables
get a binary, no-pad collation instead (docs/mariadb.md).
"""
from django.db import migrations

# Binary and NO PAD: 'a' and 'a ' are two names, as on PostgreSQL.
MARIADB_COLLATION = 'utf8mb4_nopad_bin'
MYSQL_COLLATION = 'utf8mb4_0900_bin'


def binary_collation(connection):
    return MARIADB_COLLATION if connection.mysql_is_mariadb else MYSQL_COLLATION


def binary_collation_for(app_label, tables=None):
    """A migration operation giving every table of the app (as the migration
    history has it then), or those of `tables` alone, utf8mb4 with the
    binary collation; nothing elsewhere. Later migrations that create
    tables of that app add it again (for the new tables: converting the
    others again would rewrite them all)."""
    def convert(apps, schema_editor):
        connection = schema_editor.connection
        if connection.vendor != 'mysql':
            return
        collation = binary_collation(connection)
        for model in apps.get_app_config(app_label).get_models(include_auto_created=True):
            if model._meta.proxy or not model._meta.managed:
                continue
            if tables is not None and model._meta.db_table not in tables:
                continue
            schema_editor.execute(
                f'ALTER TABLE {schema_editor.quote_name(model._meta.db_table)} '
                f'CONVERT TO CHARACTER SET utf8mb4 COLLATE {collation}')
    # DDL cannot run inside a transaction on MySQL.
    return migrations.RunPython(convert, migrations.RunPython.noop, atomic=False, elidable=False)
