"""What only the tests use: a throw-away RabbitMQ broker (broker), a real
Keystone and its admin API (keystone), a PostgreSQL primary with its
streaming replica (replicas), reading the dashboards' HTML (pages) and the
browser tests' helpers (browser). What the tools in scripts/ use too (a
server process started, waited for and stopped; Placement under gunicorn;
the Galera cluster; the loads) is scripts/harness/, which imports nothing
from here."""
