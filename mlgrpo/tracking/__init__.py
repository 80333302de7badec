"""Tracking: experiments, runs, metrics, artifacts and datasets in MLflow, and the local MLflow UI.

The only package in mlgrpo that imports mlflow (tests/tracking/test_borders.py keeps it so).
It knows how results are named and stored, not how they are produced: nothing of models, tokenizers,
rewards or advantage math; trainers reach it through TrackingCallback, the runner through Tracker.

    uris      which store (CLI > YAML > MLFLOW_TRACKING_URI > ./mlflow.db), masking credentials, fail-fast probe
    names     metric names (<split>/<metric>/<lang>) and per-language macro / worst aggregates
    params    a config flattened into params and tags, within MLflow's limits, secrets masked
    outbox    buffered writes, a background sender, retry while the store is away, spill to disk
    run       RunHandle: writing to one run
    store     Tracker: experiment, parent and child runs, resume by identity
    callback  TrackingCallback for Hugging Face / TRL trainers
    plots     per-language figures; datasets: data used by a run; server: a local `mlflow server`
    views     saved views of the MLflow UI: per-language charts grouped by arm, opened by a link

Importing this package is cheap: names, URIs and params load here; the parts that import mlflow,
transformers or matplotlib load when first used (`from mlgrpo.tracking import Tracker`).
"""

from __future__ import annotations

import importlib

from mlgrpo.tracking.names import aggregates, clean_name, direction, generations_table, metric_name, tracked_metrics
from mlgrpo.tracking.outbox import FlushPolicy
from mlgrpo.tracking.params import flatten_params
from mlgrpo.tracking.uris import mask_text, mask_uri, resolve_tracking_uri

_LAZY = {
    "Tracker": "mlgrpo.tracking.store",
    "RunHandle": "mlgrpo.tracking.run",
    "TrackingCallback": "mlgrpo.tracking.callback",
    "log_language_plots": "mlgrpo.tracking.plots",
    "log_comparison_plots": "mlgrpo.tracking.plots",
    "log_records": "mlgrpo.tracking.datasets",
    "MlflowServer": "mlgrpo.tracking.server",
    "write_views": "mlgrpo.tracking.views",
}

__all__ = [
    "FlushPolicy", "aggregates", "clean_name", "direction", "flatten_params", "generations_table", "mask_text",
    "mask_uri", "metric_name", "resolve_tracking_uri", "tracked_metrics", *_LAZY,
]


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'mlgrpo.tracking' has no attribute {name!r}")
