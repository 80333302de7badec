"""`mlgrpo ui`: the MLflow UI for the store experiments were logged to, on this machine.

    mlgrpo ui [--tracking-uri URI] [--port 5000] [--host 127.0.0.1] [--experiment NAME]

Starts `mlflow server` for the store (same resolution as `mlgrpo run`: flag, MLFLOW_TRACKING_URI,
./mlflow.db), waits until it answers, prints links and serves until Ctrl-C, which stops the server's
whole process group. Before it starts, each experiment's saved views are written (mlgrpo.tracking.views:
"Reward by language", "Held-out metrics by language", "Macro / worst / gap", "PPO and GRPO diagnostics",
"Cost", runs grouped by arm with the mean over seeds); the first line links the first view of the named
experiment (or of the only one), and a line per view follows. Where MLflow refuses a view, a warning
says so and the plain runs page is linked. A remote tracking server is refused: it has its own UI.
Parses arguments and prints; the work is in mlgrpo.tracking.server and mlgrpo.tracking.views.
"""

from __future__ import annotations

import argparse
import signal
import sys


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "ui",
        help="open the MLflow UI on the local store (per-language charts of runs)",
        description="Serve the MLflow UI for a local MLflow store (SQLite file or folder) on this machine, "
        "with saved views per experiment that open ready: one chart per language whose lines are the arms "
        "(mean over seeds), macro / worst / gap, PPO and GRPO diagnostics, cost.",
    )
    parser.add_argument("--tracking-uri", help="store to serve (default: MLFLOW_TRACKING_URI, else ./mlflow.db)")
    parser.add_argument("--port", type=int, default=5000, help="port (default: 5000; 0: any free port)")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to bind (default: 127.0.0.1; the UI has no login, so think before "
                        "binding 0.0.0.0)")
    parser.add_argument("--experiment", metavar="NAME",
                        help="link this experiment's views first (default: every experiment with mlgrpo runs)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from mlgrpo.tracking.server import LOOPBACK, MlflowServer, check_servable, experiment_id
    from mlgrpo.tracking.uris import mask_uri, resolve_tracking_uri
    from mlgrpo.tracking.views import mlgrpo_experiments, write_views

    uri = resolve_tracking_uri(args.tracking_uri, None)
    check_servable(uri)
    if args.experiment:
        experiment_id(uri, args.experiment)  # a UserError naming the experiments there when it is not one
    views = [(name, *write_views(uri, name)) for name in ([args.experiment] if args.experiment
                                                           else mlgrpo_experiments(uri))]
    for name, _, _, warnings in views:
        for warning in warnings:
            print(f"mlgrpo ui: warning: experiment {name!r}: {warning}; its plain runs page is linked instead",
                  file=sys.stderr)
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
        print(links(server.url, views), flush=True)
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


def links(base: str, views: list) -> str:
    """"MLflow UI: <first view>  (Ctrl-C stops it)", then each experiment's views and its runs page."""
    from mlgrpo.tracking.views import view_url

    first = base
    if len(views) == 1:
        _, experiment, written, _ = views[0]
        first = view_url(base, experiment, written[0].key if written else None)
    lines = [f"MLflow UI: {first}  (Ctrl-C stops it)"]
    for name, experiment, written, _ in views:
        lines.append(f"experiment {name!r}: runs grouped by arm, each line the mean over its seeds")
        width = max([len(v.name) for v in written] + [len("all runs")])
        lines += [f"  {v.name:<{width}}  {view_url(base, experiment, v.key)}" for v in written]
        lines.append(f"  {'all runs':<{width}}  {view_url(base, experiment)}")
    return "\n".join(lines)


def _interrupt(signum, frame):
    raise KeyboardInterrupt
