"""`mlgrpo server`: the tracking server every node of a cluster writes to.

    mlgrpo server --backend-store-uri postgresql://USER@DBHOST/mlflow --artifacts-destination DIR|s3://...
                  [--host 0.0.0.0] [--port 5000]

`mlflow server` with artifacts served through it (--serve-artifacts: nodes upload and download metrics,
reports and views over HTTP and need no shared folder), in its own process group, until Ctrl-C. Binding an
address other machines reach requires credentials: MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD
(MLflow's basic-auth app; every node sets the same two variables, which MLflow's client sends). The
password and the database URI travel in the server's environment, never on its command line or in a log.
Parses arguments and prints; the work is in mlgrpo.tracking.server.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys

STORE_VAR = "MLFLOW_BACKEND_STORE_URI"  # mlflow server's own variable for the same setting


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "server", help="start the shared tracking server (MLflow on a database, artifacts served)",
        description="Start the MLflow tracking server that every node of a cluster writes to: runs in a "
        "database (PostgreSQL for many writers), artifacts served through the server. Binding an address other "
        "than 127.0.0.1 needs MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD set.",
    )
    parser.add_argument("--backend-store-uri", metavar="URI", default=os.environ.get(STORE_VAR),
                        required=not os.environ.get(STORE_VAR),
                        help=f"where runs are stored, e.g. postgresql://mlflow@db-host:5432/mlflow (default: "
                        f"{STORE_VAR}; keep a password out of the command line: PGPASSWORD or {STORE_VAR})")
    parser.add_argument("--artifacts-destination", required=True, metavar="DIR_OR_URL",
                        help="where the server keeps artifacts (a folder on the server, or s3://, gs://, ...)")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=5000, help="port (default: 5000; 0: any free port)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from mlgrpo.errors import UserError
    from mlgrpo.tracking.server import LOOPBACK, PASSWORD_VAR, USER_VAR, MlflowServer, credentials_from_env
    from mlgrpo.tracking.uris import mask_uri, sqlite_path

    db = sqlite_path(args.backend_store_uri)
    if db is not None and not db.parent.is_dir():
        raise UserError(f"folder {db.parent} of --backend-store-uri does not exist")
    credentials = credentials_from_env()
    server = MlflowServer(args.backend_store_uri, host=args.host, port=args.port,
                          artifacts_destination=args.artifacts_destination, credentials=credentials)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _interrupt)
    server.start()  # refuses a non-loopback address without credentials
    try:
        server.wait_ready(timeout_s=180)
        reach = server.url if args.host in LOOPBACK else server.url.replace("127.0.0.1", "<this machine's address>")
        login = f" and {USER_VAR} / {PASSWORD_VAR} as set here" if credentials else ""
        print(f"tracking server for {mask_uri(args.backend_store_uri)}, artifacts in {args.artifacts_destination} "
              f"(log: {server.log_path})\non every node: export MLFLOW_TRACKING_URI={reach}{login}", flush=True)
        code = server.process.wait()
        print(f"mlgrpo server: the MLflow server exited with code {code}; log: {server.log_path}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("stopping the tracking server", file=sys.stderr, flush=True)
        return 0
    finally:
        server.stop()


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt
