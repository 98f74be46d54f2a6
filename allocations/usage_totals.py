"""Inventory.used, the sum of the allocations against an inventory, kept by
the database itself.

A trigger on inventories recounts `used` from the allocations whenever an
inventory row is written, and triggers on allocations make the inventory
row they count against recount. So the total is right whatever writes the
rows (the API's services, the admin, a cascade, a bulk COPY, a test
fixture), in any order (an inventory created after its allocations, as a
reshape may do, counts them), and an Inventory saved with a stale `used`
cannot overwrite it. Capacity checks then read one column instead of
summing allocations for every inventory they look at.

Concurrent writers stay correct: allocation writes lock their providers
first, and the recount runs in the writing transaction, after its own rows.

SQLite rebuilds a table to alter it, dropping its triggers: a migration
that alters `inventories` or `allocations` must call install() again. On
MySQL/MariaDB with binary logging on, creating triggers takes SUPER or
log_bin_trust_function_creators=1 (docs/mariadb.md).
"""
from placement_site import triggers

# The recount of one inventory row, `row` being NEW or OLD.
_SUM = ('COALESCE((SELECT SUM(a.used) FROM allocations a '
        'WHERE a.resource_provider_id = {row}.resource_provider_id '
        'AND a.resource_class_id = {row}.resource_class_id), 0)')
_SAME_KEY = ('resource_provider_id = {row}.resource_provider_id '
             'AND resource_class_id = {row}.resource_class_id')

_POSTGRESQL = [
    f'''CREATE OR REPLACE FUNCTION inventory_used_recount() RETURNS trigger
        LANGUAGE plpgsql AS $$
        BEGIN
            NEW.used := {_SUM.format(row='NEW')};
            RETURN NEW;
        END $$''',
    'DROP TRIGGER IF EXISTS inventories_used ON inventories',
    '''CREATE TRIGGER inventories_used BEFORE INSERT OR UPDATE ON inventories
        FOR EACH ROW EXECUTE FUNCTION inventory_used_recount()''',
    # Touching the inventory row is enough: inventories_used recounts it.
    f'''CREATE OR REPLACE FUNCTION allocation_changes_inventory_used() RETURNS trigger
        LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP <> 'INSERT' THEN
                UPDATE inventories SET used = used WHERE {_SAME_KEY.format(row='OLD')};
            END IF;
            IF TG_OP <> 'DELETE' THEN
                UPDATE inventories SET used = used WHERE {_SAME_KEY.format(row='NEW')};
            END IF;
            RETURN NULL;
        END $$''',
    'DROP TRIGGER IF EXISTS allocations_inventory_used ON allocations',
    '''CREATE TRIGGER allocations_inventory_used AFTER INSERT OR UPDATE OR DELETE ON allocations
        FOR EACH ROW EXECUTE FUNCTION allocation_changes_inventory_used()''',
]


def _sqlite():
    """SQLite triggers cannot assign NEW: they update the row after it is
    written, only when the count is wrong (a trigger does not fire itself)."""
    statements = []
    for event in ('INSERT', 'UPDATE'):
        name = f'inventories_used_{event.lower()}'
        statements += [f'DROP TRIGGER IF EXISTS {name}', f'''
            CREATE TRIGGER {name} AFTER {event} ON inventories
            WHEN NEW.used IS NOT {_SUM.format(row='NEW')}
            BEGIN
                UPDATE inventories SET used = {_SUM.format(row='NEW')} WHERE id = NEW.id;
            END''']
    for event, rows in (('INSERT', ['NEW']), ('DELETE', ['OLD']), ('UPDATE', ['OLD', 'NEW'])):
        name = f'allocations_inventory_used_{event.lower()}'
        recounts = ''.join(f'UPDATE inventories SET used = {_SUM.format(row=row)} '
                           f'WHERE {_SAME_KEY.format(row=row)};' for row in rows)
        statements += [f'DROP TRIGGER IF EXISTS {name}',
                       f'CREATE TRIGGER {name} AFTER {event} ON allocations BEGIN {recounts} END']
    return statements


def _mysql():
    """MySQL and MariaDB: a trigger per event (no INSERT OR UPDATE); the
    inventories' BEFORE triggers assign NEW as PostgreSQL's function does, and
    the allocations' triggers touch the inventory rows so that those recount."""
    statements = []
    for event in ('INSERT', 'UPDATE'):
        name = f'inventories_used_{event.lower()}'
        statements += [f'DROP TRIGGER IF EXISTS {name}',
                       f'CREATE TRIGGER {name} BEFORE {event} ON inventories FOR EACH ROW '
                       f'SET NEW.used = {_SUM.format(row="NEW")}']
    for event, rows in (('INSERT', ['NEW']), ('DELETE', ['OLD']), ('UPDATE', ['OLD', 'NEW'])):
        name = f'allocations_inventory_used_{event.lower()}'
        touches = ''.join(f'UPDATE inventories SET used = used WHERE {_SAME_KEY.format(row=row)};'
                          for row in rows)
        statements += [f'DROP TRIGGER IF EXISTS {name}',
                       f'CREATE TRIGGER {name} AFTER {event} ON allocations FOR EACH ROW '
                       f'BEGIN {touches} END']
    return statements


def install(connection):
    """Create (or replace) the triggers and recount every inventory."""
    triggers.install(connection, {'postgresql': lambda: _POSTGRESQL, 'sqlite': _sqlite,
                                  'mysql': _mysql}, 'Inventory.used')
    with connection.cursor() as cursor:
        cursor.execute(f'UPDATE inventories SET used = {_SUM.format(row="inventories")}')


def miscounted(connection):
    """(inventory id, used, the allocations' sum) of every inventory whose
    `used` is not the sum of its allocations: empty unless something is
    broken."""
    with connection.cursor() as cursor:
        cursor.execute(f'SELECT id, used, {_SUM.format(row="inventories")} FROM inventories '
                       f'WHERE used <> {_SUM.format(row="inventories")} ORDER BY id')
        return list(cursor.fetchall())


# The usage dashboards group allocations by their consumer's owners: a
# change of owner changes the books' version (providers.change_log) as an
# allocation does.
OWNERS_WATCHED = {'consumers': ('project_id', 'user_id', 'consumer_type_id')}
