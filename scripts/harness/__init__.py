"""What the tools in scripts/ and the tests share, and only that: no module
here imports the tests or another tool.

- process: a free port, waiting for a condition, a process started in a
  session of its own, waited for and stopped (its log shown when it fails),
  and readers of a process in /proc;
- api: a Placement API request's headers and body, and one request sent;
- placement: our Placement served by gunicorn as scripts/run.sh's pools
  serve it, migrated, on a free port;
- galera: a MariaDB Galera cluster with HAProxy in front of it;
- loads: clients claiming against Placement, and the books read back from
  the database.
"""
