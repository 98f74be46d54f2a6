"""The adoption check (docs/adoption-check.md): can OpenStack Placement's
books be taken over, and does ours then answer as it did?

For each backend (PostgreSQL, MariaDB) it
1. creates a source database on the test server and runs the real
   openstack-placement 16.0.0 on it (placement-manage db sync, gunicorn);
2. fills it through the REST API with a seeded cloud (nested compute trees,
   sharing DISK_GB and IPV4_ADDRESS pools, custom classes and traits,
   consumers of several types, churn so generations are not all 1);
3. records a client's prepared writes (an inventory PUT and an allocation
   PUT, each with the generation the old service gave);
4. imports the source into a fresh database of ours
   (manage.py import_placement), timed, and starts our server beside the
   old one;
5. sends every GET of a list built from the source's own answers to both
   servers and compares status, headers and bodies;
6. sends the prepared writes to ours.

    .venv/bin/python -m scripts.bench.adoption [--backend postgresql|mariadb]...
        [--providers 1000] [--seed 14] [--threads 4] [--json OUT] [--keep]
        [--self-check]

--self-check compares the real Placement with a second real Placement on the
same database instead of ours (checks the harness itself). Exit status 0
when every answer is identical and the writes succeed, 1 otherwise.
Runs in our .venv (requests, and the drivers psycopg2 and MySQLdb). The
steps' parts are beside this module (servers, cloud, checks, compare,
report); it runs them per backend and is the command line. The database
servers are scripts/dev/pg-test-server.sh's and mariadb-test-server.sh's
unless --server-url names one; the real Placement's venv is
scripts/dev/placement-venv.sh's.
"""
import argparse
import json
import random
import shutil
import sys
import tempfile
import time
import traceback

from scripts.bench.adoption import log
from scripts.bench.adoption.checks import get_requests
from scripts.bench.adoption.checks import prepare_writes
from scripts.bench.adoption.checks import send_writes
from scripts.bench.adoption.cloud import Cloud
from scripts.bench.adoption.cloud import Filler
from scripts.bench.adoption.compare import compare_all
from scripts.bench.adoption.report import passed
from scripts.bench.adoption.report import print_report
from scripts.bench.adoption.report import summary
from scripts.bench.adoption.servers import Backend
from scripts.bench.adoption.servers import Servers


class Run:
    """One backend: the steps above, its report and its clean-up."""

    def __init__(self, args, kind):
        self.args, self.kind = args, kind
        self.workdir = tempfile.mkdtemp(prefix=f'adoption-{kind}-')
        self.src_db = f'{args.db_prefix}_src'
        self.our_db = f'{args.db_prefix}_ours'
        self.servers = Servers(self.workdir, self.src_db, self.our_db)
        self.report = {'backend': kind, 'providers_requested': args.providers, 'seed': args.seed}

    def run(self):
        args, kind, servers = self.args, self.kind, self.servers
        backend = Backend(kind, args.server_url)
        log(f'{kind}: source database {self.src_db} on {backend.parts.hostname}:'
            f'{backend.parts.port}')
        backend.recreate(self.src_db)
        source = servers.start_placement(backend, 'placement', db_sync=True)
        log(f'{kind}: filling {source.base} with about {args.providers} providers')
        cloud = Cloud(args.providers, args.seed)
        filler = Filler(source, cloud, args.threads)
        started = time.time()
        filler.fill()
        self.report['fill_seconds'] = round(time.time() - started, 1)
        self.report['fill_requests'] = dict(filler.requests)
        self.report['rows'] = backend.row_counts(self.src_db)
        self.report['generations_above_1'] = backend.generations(self.src_db)
        writes = prepare_writes(source, cloud, filler.consumers)

        if args.self_check:
            log(f'{kind}: self-check: a second real Placement on the same database')
            ours = servers.start_placement(backend, 'placement-twin')
            self.report['import_seconds'] = None
        else:
            log(f'{kind}: importing into {self.our_db}')
            servers.import_into_ours(backend, self.report)
            log(f'{kind}: imported in {self.report["import_seconds"]} s')
            ours = servers.start_ours(backend)

        reqs, n_providers, n_consumers = get_requests(source, cloud, random.Random(args.seed))
        roots = {p['uuid']: p['root_provider_uuid'] for p in source.expect(
            'GET', '/resource_providers').json()['resource_providers']}
        log(f'{kind}: comparing {len(reqs)} GETs ({n_providers} providers, '
            f'{n_consumers} consumers)')
        started = time.time()
        results = compare_all(source, ours, reqs, args.threads, roots)
        self.report['compare_seconds'] = round(time.time() - started, 1)
        self.report['providers'], self.report['consumers'] = n_providers, n_consumers
        self.report.update(summary(results))
        if args.self_check:
            self.report['writes'] = []
        else:
            self.report['writes'] = send_writes(ours, writes)
        return self.report

    def cleanup(self):
        self.servers.stop()
        if not self.args.keep:
            try:
                backend = Backend(self.kind, self.args.server_url)
                backend.drop(self.src_db)
                backend.drop(self.our_db)
            except Exception as exc:      # the report matters more than the cleanup
                log(f'cleanup: {exc}')
            shutil.rmtree(self.workdir, ignore_errors=True)
        else:
            log(f'kept databases {self.src_db}, {self.our_db} and {self.workdir}')


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m scripts.bench.adoption',
                                     description=__doc__.split('\n\n')[0])
    parser.add_argument('--backend', action='append', choices=['postgresql', 'mariadb'])
    parser.add_argument('--providers', type=int, default=1000)
    parser.add_argument('--seed', type=int, default=14)
    parser.add_argument('--threads', type=int, default=4)
    parser.add_argument('--db-prefix', default='adopt',
                        help='databases <prefix>_src and <prefix>_ours (dropped afterwards)')
    parser.add_argument('--server-url',
                        help='a database URL on the server to use (its user creates and drops '
                             'databases) instead of the test server script; one backend only')
    parser.add_argument('--json', help='write the full report (every difference) here')
    parser.add_argument('--keep', action='store_true', help='keep databases and logs')
    parser.add_argument('--self-check', action='store_true',
                        help='compare Placement with a second Placement (tests the harness)')
    args = parser.parse_args(argv)
    reports = []
    for kind in args.backend or ['postgresql', 'mariadb']:
        run = Run(args, kind)
        try:
            report = run.run()
        except Exception as exc:       # reported with the rest, then the next backend
            traceback.print_exc()
            report = dict(run.report, error=f'{type(exc).__name__}: {exc}')
        finally:
            run.cleanup()
        print_report(report)
        reports.append(report)
    if args.json:
        with open(args.json, 'w') as f:
            json.dump(reports, f, indent=1)
    return 0 if all(passed(r) for r in reports) else 1


if __name__ == '__main__':
    sys.exit(main())
