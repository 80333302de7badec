"""One invocation of `mlgrpo run`, whatever executes its runs (worker processes, or the ranks of a
distributed launch): the output folder checked, the MLflow parent and child runs opened, and at the end
the summary, the comparison report and the parent run's status.

    check_output -> open_runs (store probed, tiny models built, parent + child runs, finished ones skipped)
    ... the runs ... -> close_parent (summary, report logged on the parent run, parent status, exit code)
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from mlgrpo import __version__
from mlgrpo.errors import UserError
from mlgrpo.experiments.progress import ProgressBoard


def git_commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=5,
                             cwd=Path(__file__).resolve().parent)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def world_size() -> int:
    """Processes in this launch (WORLD_SIZE, set by torchrun and accelerate launch; 1 for a plain command)."""
    try:
        return int(os.environ.get("WORLD_SIZE", "1"))
    except ValueError:
        raise UserError(f"WORLD_SIZE must be a whole number, got {os.environ['WORLD_SIZE']!r}") from None


def system_tags() -> dict[str, str]:
    """Hardware and library versions, for the report's setup section."""
    import platform
    from importlib.metadata import PackageNotFoundError, version

    import torch

    tags = {"system.cpus": str(os.cpu_count()), "system.world_size": str(world_size()),
            "system.platform": platform.platform(terse=True), "system.python": platform.python_version(),
            "system.gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"}
    for package in ("torch", "transformers", "trl", "accelerate", "peft", "mlflow"):
        try:
            tags[f"versions.{package}"] = version(package)
        except PackageNotFoundError:
            tags[f"versions.{package}"] = "not installed"
    return tags


def print_plan(runs, stream) -> None:
    for run in runs:
        print(f"{run.run_name}  (algorithm {run.algorithm.name}, config {run.config_hash})", file=stream)
    print(f"{len(runs)} runs; dry run: nothing trained", file=stream)


def check_output(folder: Path, min_free_mb: int) -> None:
    """Before anything is created: the run folder can be written, and its disk has room (a UserError if not)."""
    import shutil
    import tempfile

    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".mlgrpo-write-check-"):
            pass
    except OSError as exc:
        raise UserError(f"cannot write run outputs to {folder}: {exc.strerror or exc}; set run.output_dir to a "
                        "writable folder") from None
    free_mb = shutil.disk_usage(folder).free / 2**20
    if free_mb < min_free_mb:
        raise UserError(f"only {free_mb:.0f} MB free on the disk of {folder}, and run.min_free_mb is {min_free_mb}: "
                        "free some space, point run.output_dir elsewhere, or lower run.min_free_mb")


def output_root(experiment) -> Path:
    return Path(experiment.run_settings.output_dir or Path("runs") / experiment.name)


def open_runs(experiment, path, runs, tracking_uri, board: ProgressBoard, indexed: bool, build=None):
    """(uri, parent run, [(plan index, run, child run id)] still to do): the store probed (fail fast), tiny
    models built (by `build`, default: here), a parent run for this invocation and a child run per arm x seed, finished ones skipped."""
    from mlgrpo.tracking import Tracker, resolve_tracking_uri

    uri = resolve_tracking_uri(tracking_uri, experiment.tracking.uri)
    tracker = Tracker.open(uri, experiment.tracking_experiment)
    (build or prepare_models)(runs, board.stream)
    common_tags = {"mlgrpo.version": __version__, "git.commit": git_commit(), "experiment.file": str(path),
                   **system_tags()}
    parent = tracker.start_parent(f"{experiment.name}-{time.strftime('%Y%m%d-%H%M%S')}", common_tags,
                                  {"runs": len(runs), "arms": ",".join(experiment.arms),
                                   "seeds": ",".join(map(str, experiment.seeds))})
    parent.log_text(experiment.resolved_yaml(), "experiment.resolved.yaml")
    full_plan = experiment.plan()
    pending = []
    for index, run in enumerate(runs):
        identity = {"arm": run.arm, "seed": str(run.seed), "config_hash": run.config_hash}
        tags = {**common_tags, **identity, "algorithm": run.algorithm.name,
                "languages": ",".join(run.data.languages)}
        child, state = tracker.child_run(parent, identity, run.run_name, tags, run.flat_params)
        if state == "new":  # sent now, before a worker process writes to the same run
            child.log_text(run_yaml(run), "config.resolved.yaml")
            child.flush(timeout_s=tracker.policy.setup_timeout_s)
        if state == "finished":
            board.skipped(run.run_name, "finished earlier")
            continue
        pending.append((full_plan.index(run) if indexed else index, run, child.run_id))
    return uri, parent, pending


def run_yaml(run) -> str:
    """One run's full configuration (its arm resolved, with the seed), as the child run's artifact."""
    import yaml

    document = {"arm": run.arm, "seed": run.seed, "config_hash": run.config_hash, **run.resolved}
    return yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=120)


def mark_run(uri: str, path: str, run_id: str, status: str) -> None:
    """End the child run `run_id` with `status` (a run that will not be executed, or whose process died)."""
    from mlgrpo.experiments import load_experiment
    from mlgrpo.tracking import Tracker

    Tracker.open(uri, load_experiment(path).tracking_experiment).attach(run_id).finish(status)


def close_parent(parent, outcomes: list[dict], stream, report: tuple[str, str] | None = None) -> int:
    """Prints the summary, writes the comparison report (from MLflow, logged as the parent run's "report"
    artifact) when `report` = (experiment file, tracking URI) is given, marks the parent run by its
    children's outcomes; the exit code."""
    failed = [o for o in outcomes if o["status"] != "FINISHED"]
    print_summary(outcomes, stream)
    if report is not None and not any(o["status"] == "KILLED" for o in failed):
        write_and_log_report(parent, *report, stream)
    parent.finish("FAILED" if any(o["status"] == "FAILED" for o in failed) else ("KILLED" if failed else "FINISHED"))
    return 130 if any(o["status"] == "KILLED" for o in failed) else (1 if failed else 0)


def write_and_log_report(parent, path: str, uri: str, stream) -> None:
    """The comparison report of every run so far, then the MLflow UI's saved views; a report that cannot be
    written is said, not fatal: the training is done and tracked, and `mlgrpo report` can write it later."""
    from mlgrpo.reports.build import write_report

    print("writing the comparison report ...", file=stream, flush=True)
    try:
        from mlgrpo.experiments import load_experiment

        experiment = load_experiment(path)
        name = experiment.tracking_experiment
        parent.flush()
        files = write_report(uri, name, settings=experiment.report)
    except Exception as exc:  # noqa: BLE001 - the runs are safe in MLflow whatever went wrong here
        why = str(exc) if isinstance(exc, UserError) else f"{type(exc).__name__}: {exc}"
        print(f"report not written: {why}; run `mlgrpo report {path}` later", file=stream, flush=True)
        return
    parent.log_artifact(files.folder, "report")
    print(f"report: {files.html} (and report.md, figures, tables; also in MLflow as the parent run's "
          f"'report' artifact)", file=stream, flush=True)
    if files.blind_key:
        print(f"blind A/B sheet for raters: {files.blind_sheet}; its key, kept out of the report and of MLflow: "
              f"{files.blind_key}", file=stream, flush=True)
    write_views_for(uri, name, stream)


def write_views_for(uri: str, experiment_name: str, stream) -> None:
    """The MLflow UI's saved views of the experiment (mlgrpo.tracking.views); a refusal is said, not fatal."""
    from mlgrpo.tracking.views import write_views

    try:
        _, views, warnings = write_views(uri, experiment_name)
    except Exception as exc:  # noqa: BLE001 - the runs and the report are safe whatever went wrong here
        warnings, views = [f"{type(exc).__name__}: {exc}"], []
    for warning in warnings:
        print(f"MLflow views: {warning}", file=stream, flush=True)
    if views:
        print(f"MLflow views: {', '.join(v.name for v in views)} (mlgrpo ui prints their links)", file=stream,
              flush=True)


def prepare_models(runs, stream) -> None:
    """Build each tiny model, convert each GGUF model, and build the language-ID model every run's language
    consistency reads, once, here, before workers start (they would otherwise race to build them)."""
    from mlgrpo.langid.trained import scorer
    from mlgrpo.models.loading import classify_spec, resolve

    for spec in sorted({run.model.policy for run in runs}):
        kind = classify_spec(spec)[0]
        if kind == "tiny":
            print(f"model {spec}: building or re-using the tiny base model", file=stream, flush=True)
            resolve(spec)
        elif kind in ("packaged", "gguf"):
            print(f"model {spec}: converting or re-using its safetensors folder", file=stream, flush=True)
            resolve(spec)
    scorer()  # prints its own progress when it has to build


def print_summary(outcomes: list[dict], stream) -> None:
    """Per run and language: the held-out exact match at step 0 and at the end."""
    rows = [o for o in outcomes if o.get("eval_start") and o.get("eval_end")]
    if not rows:
        return
    print("\nheld-out exact match per language (step 0 -> end):", file=stream)
    for o in sorted(rows, key=lambda o: o["run"]):
        start, end = o["eval_start"]["per_language"], o["eval_end"]["per_language"]
        cells = [f"{lang} {start[lang].get('exact_match', float('nan')):.2f}->{end[lang].get('exact_match', float('nan')):.2f}"
                 for lang in sorted(end)]
        print(f"  {o['run']:<28} " + "  ".join(cells), file=stream)
