#!/usr/bin/env bash
# The high-availability tests (tests/system/test_galera.py, docs/ha.md): a real
# 3-node MariaDB Galera cluster, HAProxy and three API servers started here
# from Debian's packages (installed when missing), about two minutes. The
# full-length runs: .venv/bin/python -m scripts.bench.ha (after this once).
# Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/ci/test-setup.sh
DATABASE_URL=mysql://driver@127.0.0.1/driver scripts/dev/mysql-driver.sh
PLACEMENT_GALERA_TESTS=1 exec scripts/test.sh -n 0 tests/system/test_galera.py "$@"
