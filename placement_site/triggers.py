"""The database triggers our bookkeeping keeps (Inventory.used, the books'
change log, the tree stamps): each engine's statements run on one
connection, and the condition that a watched column changed, written once
per engine."""


def install(connection, builders, what, *args):
    """Run the statements builders[vendor](*args) gives for the
    connection's engine; an engine we have no triggers for is refused."""
    build = builders.get(connection.vendor)
    if build is None:
        raise NotImplementedError(f'{what} has no triggers for {connection.vendor}')
    with connection.cursor() as cursor:
        for sql in build(*args):
            cursor.execute(sql)


def changed(vendor, columns, old='OLD', new='NEW'):
    """SQL: one of `columns` differs between the row's old and new values
    (NULL to a value counts)."""
    if vendor == 'mysql':
        return 'NOT (' + ' AND '.join(f'{new}.{c} <=> {old}.{c}' for c in columns) + ')'
    differs = 'IS NOT' if vendor == 'sqlite' else 'IS DISTINCT FROM'
    return ' OR '.join(f'{old}.{c} {differs} {new}.{c}' for c in columns)
