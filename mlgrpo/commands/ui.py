"""`mlgrpo ui`: the MLflow UI for the store experiments were logged to, on this machine.

    mlgrpo ui [--tracking-uri URI] [--port 5000] [--host 127.0.0.1] [--experiment NAME]

Starts `mlflow server` for the store (same resolution as `mlgrpo run`: flag, MLFLOW_TRACKING_URI,
./mlflow.db), waits until it answers, prints the URL (with the experiment's page when named) and
serves until Ctrl-C, which stops the server's whole process group. A remote tracking server is
refused: it has its own UI. Parses arguments and prints; the work is in mlgrpo.tracking.server.
"""

from __future__ import annotations

import argparse
import signal
import sys


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "ui",
        help="open the MLflow UI on the local store (per-language charts of runs)",
        description="Serve the MLflow UI for a local MLflow store (SQLite file or folder) on this machine. "
        "Search charts for e.g. 'train/reward/' to see one chart per language; each run's plots/ artifacts "
        "draw all languages on one chart.",
    )
    parser.add_argument("--tracking-uri", help="store to serve (default: MLFLOW_TRACKING_URI, else ./mlflow.db)")
    parser.add_argument("--port", type=int, default=5000, help="port (default: 5000; 0: any free port)")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to bind (default: 127.0.0.1; the UI has no login, so think before "
                        "binding 0.0.0.0)")
    parser.add_argument("--experiment", metavar="NAME", help="print the URL of this experiment's page")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from mlgrpo.tracking.server import LOOPBACK, MlflowServer, check_servable, experiment_id, ui_url
    from mlgrpo.tracking.uris import mask_uri, resolve_tracking_uri

    uri = resolve_tracking_uri(args.tracking_uri, None)
    check_servable(uri)
    experiment = experiment_id(uri, args.experiment) if args.experiment else None
    if args.host not in LOOPBACK:
        print(f"mlgrpo ui: warning: binding {args.host}: anyone who can reach this port can read and delete runs",
              file=sys.stderr)
    server = MlflowServer(uri, host=args.host, port=args.port)
    print(f"starting the MLflow UI for {mask_uri(uri)} (server log: {server.log_path})", file=sys.stderr, flush=True)
    # `kill` or a closed terminal stops the server too, as Ctrl-C does (it runs in its own session).
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _interrupt)
    server.start()
    try:
        server.wait_ready()
        print(f"MLflow UI: {ui_url(server, experiment)}  (Ctrl-C stops it)", flush=True)
        code = server.process.wait()
        print(f"mlgrpo ui: the MLflow server exited with code {code}; log: {server.log_path}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("stopping the MLflow UI", file=sys.stderr, flush=True)
        server.stop()
        server.log_path.unlink(missing_ok=True)  # kept only when the server failed
        return 0
    finally:
        server.stop()


def _interrupt(signum, frame):
    raise KeyboardInterrupt
