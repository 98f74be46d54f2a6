"""What only the tests use, one module a kind of help:
- api: the API over Django's test client, and Placement's error answers
- factories: providers and allocations written for a test
- state: the database's state around a test step (rows, queries)
- admin: a changelist's rows, a read-only admin's refusals
- metrics: GET /metrics parsed
- concurrency: many writers at once over HTTP
- orphans: an orphaned cloud for the audit
- environment: a process's environment without what placement.conf sets
- deployed: the service as uWSGI or Apache serves it, checked over HTTP
- databases: a new, empty database beside the test database
- broker: a throw-away RabbitMQ broker
- keystone: a real Keystone and its admin API
- replicas: a PostgreSQL primary with its streaming replica
- pages: reading the dashboards' HTML
- browser: the browser tests' helpers
What the tools in scripts/ use too (a server process started, waited for
and stopped; Placement under gunicorn; the Galera cluster; the loads; the
API's headers) is scripts/harness/, which imports nothing from here."""
