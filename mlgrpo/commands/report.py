"""`mlgrpo report EXPERIMENT`: the comparison report of an experiment, read from MLflow.

    mlgrpo report experiments/quickstart.yaml
    mlgrpo report quickstart --tracking-uri http://127.0.0.1:5000 --out reports/quickstart/

Parses arguments, calls mlgrpo.reports.build, prints where the files are; no statistics of its own.
"""

from __future__ import annotations

import sys
from pathlib import Path

from mlgrpo.errors import UserError


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "report", help="write the comparison report (HTML, Markdown, PNG, CSV) of an experiment from MLflow",
        description="Read every run of an experiment from MLflow and write report.html (self-contained), "
        "report.md, figures as PNG, tables as CSV and a blind A/B sheet for human evaluation. It opens on the "
        "answer: each arm against the baseline per language and macro / worst / gap, as a forest plot, a table "
        "coloured by verdict and the verdict in words; then setup, curves, final metrics, stability, convergence, "
        "cost and sample outputs side by side.")
    parser.add_argument("experiment", help="an experiment YAML file, or the name of an MLflow experiment")
    parser.add_argument("--tracking-uri", help="MLflow tracking URI (default: tracking.uri in the file, then "
                        "MLFLOW_TRACKING_URI, then sqlite:///mlflow.db in the working directory)")
    parser.add_argument("--out", metavar="DIR", help="folder for the report (default: reports/<experiment>/)")
    parser.set_defaults(handler=handle)


def resolve_source(source: str, tracking_uri: str | None):
    """(tracking URI, MLflow experiment name, report settings) for a YAML file (its `report:` section, so
    that a changed threshold needs no re-run) or an experiment name (None: the settings the run logged)."""
    from mlgrpo.tracking import resolve_tracking_uri

    path = Path(source)
    if path.suffix in (".yaml", ".yml"):
        if not path.is_file():
            raise UserError(f"{source}: no such experiment file")
        from mlgrpo.experiments import load_experiment

        experiment = load_experiment(str(path))
        return (resolve_tracking_uri(tracking_uri, experiment.tracking.uri), experiment.tracking_experiment,
                experiment.report)
    return resolve_tracking_uri(tracking_uri, None), source, None


def _require_store(uri: str) -> None:
    """A report only reads: opening a SQLite store that is not there would create an empty one."""
    from mlgrpo.tracking.uris import sqlite_path

    db = sqlite_path(uri)
    if db is not None and not db.exists():
        raise UserError(f"no MLflow store at {db}: run the experiment first (mlgrpo run ...), or point --tracking-uri "
                        "(or MLFLOW_TRACKING_URI) at the store its runs went to")


def handle(args) -> int:
    from mlgrpo.reports.build import write_report

    uri, name, settings = resolve_source(args.experiment, args.tracking_uri)
    _require_store(uri)
    files = write_report(uri, name, out=args.out, settings=settings,
                         progress=lambda message: print(f"report: {message}", file=sys.stderr, flush=True))
    print(f"report written to {files.folder}/", file=sys.stderr)
    print(f"  {files.html}\n  {files.markdown}\n  {len(files.tables)} tables (CSV), {len(files.figures)} figures (PNG)",
          file=sys.stderr)
    if files.blind_sheet:
        print(f"  blind A/B sheet for raters {files.blind_sheet}; its key, kept out of the report folder: "
              f"{files.blind_key}", file=sys.stderr)
    return 0
