"""The high-availability runs of docs/ha.md, full length: a real 3-node
MariaDB Galera cluster, HAProxy and three Placement API servers on this
machine (Debian's packages, installed when missing), then

  multi     every API server writing through its own node, clients claiming,
            deleting and rewriting providers (acceptance 1 of issue 29);
  failover  a single writer through HAProxy, the active node SIGKILLed under
            load and started again (acceptance 2);
  api       an API server SIGKILLed behind HAProxy under load (acceptance 3).

Each prints what it measured as JSON (the answers by kind and status, the
aborts Galera made, the books of every node). The exit status is 1 when a
run found a fault: a 409 or 5xx other than the 503 of a switch, books that
do not balance, nodes that disagree, a full state transfer.

  .venv/bin/python scripts/galera_run.py                      # all three, 60 s each
  .venv/bin/python scripts/galera_run.py multi --seconds 20 --clients 20
"""
import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests import ha_scenarios  # noqa: E402

RUNS = {'multi': ha_scenarios.multi_writer, 'failover': ha_scenarios.node_failover,
        'api': ha_scenarios.api_server_killed}


def faults(result):
    """What is wrong in a run's result (empty when nothing)."""
    found = [f'{node}: {problems}' for node, problems in result['problems'].items() if problems]
    if not result['nodes_agree']:
        found.append('the nodes hold different allocations')
    for kind, counts in result['by_kind'].items():
        for status, count in counts.items():
            if str(status).startswith('409') or (str(status).startswith('5') and
                                                 result['scenario'] == 'multi-writer'):
                found.append(f'{kind}: {count} x {status}')
    if 'failed_statuses' in result and result['scenario'].startswith('single'):
        found += [f'{count} x {status} in the switch' for status, count
                  in result['failed_statuses'].items() if status != '503']
        if result['rejoin_full_transfers']:
            found.append('the rejoined node needed a full state transfer')
    return found


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('runs', nargs='*', metavar='run', help=f"some of {', '.join(RUNS)} (all)")
    parser.add_argument('--seconds', type=float, default=60)
    parser.add_argument('--clients', type=int, default=10)
    parser.add_argument('--base-port', type=int, default=23400)
    parser.add_argument('--workers', type=int, default=2, help="gunicorn workers per API server")
    args = parser.parse_args(argv)
    unknown = set(args.runs) - set(RUNS)
    if unknown:
        parser.error(f"unknown runs {', '.join(sorted(unknown))}: choose from {', '.join(RUNS)}")
    failed = False
    with tempfile.TemporaryDirectory(prefix='placement-ha-') as base:
        deployment = ha_scenarios.Deployment(base, base_port=args.base_port,
                                             workers=args.workers)
        try:
            deployment.start(clients=args.clients)
            for name in args.runs or list(RUNS):
                result = RUNS[name](deployment, seconds=args.seconds, clients=args.clients)
                result['faults'] = faults(result)
                failed |= bool(result['faults'])
                print(json.dumps(result, indent=1, default=str), flush=True)
        finally:
            deployment.stop()
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
