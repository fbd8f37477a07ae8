"""``python -m stele serve DB [--port 8080] [--host 127.0.0.1]``: the database in a web page."""

import argparse
import sys

from . import SteleError, serve


def main(argv: "list[str] | None" = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m stele", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    s = commands.add_parser(
        "serve", help="look at a database in a web page (read-only, beside a live writer)"
    )
    s.add_argument("db", help="the database folder")
    s.add_argument("--port", type=int, default=8080, help="port (0: any free port)")
    s.add_argument(
        "--host",
        default="127.0.0.1",
        help="address; anything but loopback is reachable from other machines",
    )
    s.add_argument("--workers", type=int, default=4, help="requests answered at once")
    s.add_argument(
        "--time-limit", type=float, default=1.0, help="seconds of work per request"
    )
    args = parser.parse_args(argv)
    try:
        serve(
            args.db,
            port=args.port,
            host=args.host,
            workers=args.workers,
            time_limit=args.time_limit,
        )
    except SteleError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print("stopped", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
