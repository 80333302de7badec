"""`mlgrpo run X.yaml`: train and evaluate every run of a comparison, tracked in MLflow."""

from __future__ import annotations


def register(sub) -> None:
    parser = sub.add_parser(
        "run",
        help="run a comparison: every arm x seed of an experiment file",
        description="Train and evaluate every run (arm x seed) of an experiment YAML, log them to MLflow, "
        "and print a per-language summary. Running the same file again skips finished runs and resumes "
        "interrupted ones.",
    )
    parser.add_argument("experiment", help="experiment YAML file, e.g. experiments/quickstart.yaml")
    parser.add_argument("--tracking-uri", help="MLflow tracking URI (default: tracking.uri in the file, "
                        "then MLFLOW_TRACKING_URI, then sqlite:///mlflow.db in the working directory)")
    parser.add_argument("--only", action="append", metavar="ARM", help="run only this arm (repeatable)")
    parser.add_argument("--seeds", type=_seeds, help="comma-separated seeds to run, e.g. 0,1")
    parser.add_argument("--workers", type=_workers, help="parallel worker processes ('auto' or a number)")
    parser.add_argument("--dry-run", action="store_true", help="print the runs and exit without training")
    parser.set_defaults(handler=handle)


def _seeds(text: str) -> list[int]:
    import argparse

    try:
        return [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--seeds takes comma-separated integers, got {text!r}") from None


def _workers(text: str):
    import argparse

    if text == "auto":
        return text
    if text.isdigit() and int(text) >= 1:
        return int(text)
    raise argparse.ArgumentTypeError(f"--workers takes 'auto' or a number >= 1, got {text!r}")


def handle(args) -> int:
    from mlgrpo.experiments.runner import run_experiment

    return run_experiment(args.experiment, tracking_uri=args.tracking_uri, only=args.only, seeds=args.seeds,
                          dry_run=args.dry_run, workers=args.workers)
