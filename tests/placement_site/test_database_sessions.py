"""What every database session is set up with (placement_site.config), on
the database the suite runs on."""
import pytest
from django.db import connection


@pytest.mark.django_db
def test_postgresql_sessions_run_without_jit():
    """JIT compiling a dashboard's plan costs more than running it
    (docs/performance.md)."""
    if connection.vendor != 'postgresql':
        pytest.skip('PostgreSQL only')
    with connection.cursor() as cursor:
        cursor.execute('SHOW jit')
        assert cursor.fetchone()[0] == 'off'
