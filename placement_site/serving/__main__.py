"""scripts/serve.sh's helpers (placement_site.serving.front):

    python -m placement_site.serving nginx-conf --run-dir D --listen HOST:PORT --max-body-size N
        nginx's configuration for the front, on standard output;
    python -m placement_site.serving wait [--pids P ...] [--seconds S] ADDRESS ...
        until GET / answers 200 at every ADDRESS (unix:/path or http://host:port),
        exit 1 when one of the pids exits first or S seconds pass."""
import argparse
import sys
from pathlib import Path

from placement_site.serving import front


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m placement_site.serving')
    commands = parser.add_subparsers(dest='command', required=True)
    conf = commands.add_parser('nginx-conf')
    conf.add_argument('--run-dir', required=True, type=Path)
    conf.add_argument('--listen', required=True)
    conf.add_argument('--max-body-size', required=True, type=int)
    waiting = commands.add_parser('wait')
    waiting.add_argument('--pids', nargs='*', type=int, default=[])
    waiting.add_argument('--seconds', type=float, default=60)
    waiting.add_argument('addresses', nargs='+')
    args = parser.parse_args(argv)
    if args.command == 'nginx-conf':
        sys.stdout.write(front.nginx_conf(run_dir=args.run_dir.resolve(), listen=args.listen,
                                          max_body_size=args.max_body_size))
        return 0
    return front.wait(args.addresses, pids=args.pids, seconds=args.seconds)


if __name__ == '__main__':
    sys.exit(main())
