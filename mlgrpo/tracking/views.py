"""Saved views of an experiment in the MLflow UI: per-language dashboards that open ready.

A view is an experiment tag `mlflow.sharedViewState.<key>` whose value is the envelope
{name, createdAt, updatedAt, state}; `state` is the run page's own UI state as JSON (here always
deflate-compressed, "deflate;<base64>", as the UI itself reads it), and the UI applies it when the page
is opened with `?viewStateShareKey=<key>`. This is no documented API (mlflow#9604): the shape below is
the one the pinned MLflow 3.17.2 UI reads (its bundle, mlflow/server/js/build: the envelope parser, the
UI-state keys it keeps, the chart card classes), and tests/tracking/test_views_browser.py loads every
view in headless Chromium against a real `mlflow server` and finds its charts.

What a view holds: runs grouped by their `arm` tag with the mean over seeds (groupBy average), child
runs listed under their arm (the parent sits apart, under "Additional runs"), a few named sections of
charts in our order (isAccordionReordered), one chart per language so a chart's lines are the arms.
The UI adds a chart for every metric no card names, so every other metric of the experiment gets a
deleted (hidden) card, in no section: a view shows only what it is about.

Pure functions (keys in, JSON out) plus `write_views`, which reads the runs and sets the tags.
"""

from __future__ import annotations

import base64
import json
import time
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

TAG_PREFIX = "mlflow.sharedViewState."
MAX_TAG_CHARS = 20_000  # MLflow's limit on an experiment tag value
GROUP_TAG = "arm"
RUNS_PAGE = "#/experiments/{id}/runs?workflowType=machine_learning"  # the runs, not 3.17's GenAI traces page
AGGREGATES = ("macro", "worst", "gap")
# Held-out metrics shown per language, in this order, when logged; others follow by name.
EVAL_ORDER = ("reward/total", "exact_match", "pass_at_1", "chrf", "bleu", "language_consistency")
EVAL_SKIP = ("length_chars", "length_tokens", "collapse", "kl_ref", "change/")
DIAGNOSTICS = (
    ("Optimisation", ("train/loss", "train/grad_norm", "train/entropy", "train/clip_ratio/region_mean", "train/kl",
                      "train/learning_rate")),
    ("Advantages and groups", ("train/frac_reward_zero_std", "train/adv/abs_mean", "train/adv/zero_std_groups",
                               "train/adv/inter_group_var", "train/nonfinite_loss_steps")),
    ("PPO critic", ("train/ppo/value_loss", "train/ppo/explained_variance", "train/ppo/value_clipfrac",
                    "train/ppo/kl_penalty", "train/ppo/value_mean", "train/ppo/returns_mean")),
)
COST = (("Throughput, memory and time", ("system/samples_per_sec", "system/tokens_per_sec", "system/peak_memory_mb",
                                         "train/summary/runtime", "train/step_time", "train/completions/mean_length")),)
TRAIN_SMOOTHING = 60  # the UI's smoothing slider (0-100): per-step rewards of 4 prompts jump more than arms differ


@dataclass(frozen=True)
class Section:
    title: str
    keys: tuple[str, ...]
    smooth: bool = False


@dataclass(frozen=True)
class View:
    key: str  # the share key: tag mlflow.sharedViewState.<key>, URL ?viewStateShareKey=<key>
    name: str
    sections: tuple[Section, ...]

    def keys(self) -> list[str]:
        return [k for s in self.sections for k in s.keys]


@dataclass(frozen=True)
class ViewLink:
    name: str
    url: str


# --------------------------------------------------------------------------- which charts


def plan_views(metric_keys: Iterable[str], languages: Sequence[str]) -> list[View]:
    """The views an experiment's metrics support (a view or section with no logged metric is left out).

    >>> [v.name for v in plan_views(["train/reward/en", "train/reward/macro", "system/samples_per_sec"], ["en"])]
    ['Reward by language', 'Macro / worst / gap', 'Cost']
    """
    have = set(metric_keys)
    per_language = list(languages) + ["macro", "worst", "gap"]

    def section(title, keys, smooth=False):
        return Section(title, tuple(k for k in keys if k in have), smooth)

    evals = _eval_metrics(have, languages)
    views = [
        View("mlgrpo-reward-by-language", "Reward by language", (
            section("Reward (train) per language, mean over seeds", [f"train/reward/{x}" for x in per_language], True),
            section("Held-out reward per language", [f"eval/reward/total/{x}" for x in per_language]),
            section("Held-out reward: change since step 0", [f"eval/change/reward/total/{x}" for x in per_language]),
        )),
        View("mlgrpo-held-out-by-language", "Held-out metrics by language", tuple(
            section(f"Held-out {metric} per language", [f"eval/{metric}/{x}" for x in languages])
            for metric in evals if metric != "reward/total")),
        View("mlgrpo-macro-worst-gap", "Macro / worst / gap", (
            section("Reward (train): macro and worst language", [f"train/reward/{x}" for x in AGGREGATES], True),
            *(section(f"Held-out {metric}: macro, worst language, gap", [f"eval/{metric}/{x}" for x in AGGREGATES])
              for metric in evals),
        )),
        View("mlgrpo-diagnostics", "PPO and GRPO diagnostics", (
            *(section(title, keys, True) for title, keys in DIAGNOSTICS),
            section("Drift from the initial policy (held-out KL)", [f"eval/kl_ref/{x}" for x in per_language]),
        )),
        View("mlgrpo-cost", "Cost", tuple(section(title, keys) for title, keys in COST)),
    ]
    out = []
    for view in views:
        sections = tuple(s for s in view.sections if s.keys)
        if sections:
            out.append(View(view.key, view.name, sections))
    return out


def _eval_metrics(have: set[str], languages: Sequence[str]) -> list[str]:
    """Held-out metrics logged per language ("exact_match", "reward/total"), EVAL_ORDER first."""
    found = {key[len("eval/"):key.rfind("/")] for key in have
             if key.startswith("eval/") and key.rsplit("/", 1)[-1] in languages}
    found = {m for m in found if m == "reward/total" or not m.startswith(EVAL_SKIP + ("reward/",))}  # no components
    return [m for m in EVAL_ORDER if m in found] + sorted(found - set(EVAL_ORDER))


# --------------------------------------------------------------------------- the UI's state


def view_state(view: View, all_keys: Iterable[str], stepped: set[str], groups: int = 10) -> dict:
    """The run page's UI state for `view`: its sections and charts, every other key hidden, runs grouped.

    `stepped`: keys logged at a step above 0 (drawn as lines over steps; the others, logged once, as bars,
    the UI's own rule). `groups`: how many groups (arms) each chart draws.
    """
    sections, cards = [], []
    for i, section in enumerate(view.sections):
        uuid = f"{view.key}-s{i}"
        sections.append({"uuid": uuid, "name": section.title, "display": True, "isReordered": True,
                         "deleted": False, "isGenerated": False, "columns": 2, "cardHeight": 320})
        for j, key in enumerate(section.keys):
            cards.append(_card(f"{uuid}-c{j}", uuid, key, key in stepped, section.smooth, groups))
    hidden = f"{view.key}-hidden"
    shown = set(view.keys())
    for j, key in enumerate(sorted(set(all_keys) - shown)):
        cards.append({"uuid": f"{hidden}-c{j}", "type": "LINE" if key in stepped else "BAR", "metricKey": key,
                      "metricSectionId": hidden, "deleted": True, "isGenerated": False})
    return {
        "compareRunCharts": cards, "compareRunSections": sections, "isAccordionReordered": True,
        "groupBy": {"aggregateFunction": "average", "groupByKeys": [{"mode": "tag", "groupByData": GROUP_TAG}]},
        "useGroupedValuesInCharts": True, "hideEmptyCharts": True, "runsHiddenMode": "SHOW_ALL",
        "globalLineChartConfig": {"xAxisKey": "step", "lineSmoothness": 0, "selectedXAxisMetricKey": ""},
        "chartsSearchFilter": "", "viewMaximized": False, "runListHidden": False,
    }


def _card(uuid: str, section: str, key: str, stepped: bool, smooth: bool, groups: int) -> dict:
    base = {"uuid": uuid, "metricSectionId": section, "metricKey": key, "deleted": False, "isGenerated": False,
            "runsCountToCompare": max(10, groups)}
    if not stepped:
        return {**base, "type": "BAR"}
    return {**base, "type": "LINE", "lineSmoothness": TRAIN_SMOOTHING if smooth else 0,
            "useGlobalLineSmoothing": False, "xAxisKey": "step", "useGlobalXaxisKey": True,
            "selectedXAxisMetricKey": "", "scaleType": "linear", "xAxisScaleType": "linear", "range": {},
            "displayPoints": not smooth, "yAxisKey": "metric", "yAxisExpressions": [], "ignoreOutliers": False}


def envelope(name: str, state: dict, now_ms: int | None = None, created_ms: int | None = None) -> str:
    """The tag value: {name, createdAt, updatedAt, state} with the state deflated as the UI reads it
    (zlib, which is pako's default format, then base64 after "deflate;")."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    packed = zlib.compress(json.dumps(state, separators=(",", ":")).encode("utf-8"), 9)
    text = "deflate;" + base64.b64encode(packed).decode("ascii")
    return json.dumps({"name": name, "createdAt": created_ms or now_ms, "updatedAt": now_ms, "state": text})


def read_envelope(value: str) -> tuple[str, dict]:
    """(name, state) of a tag value written by `envelope` (or a plain-JSON state)."""
    outer = json.loads(value)
    text = outer["state"]
    if text.startswith("deflate;"):
        text = zlib.decompress(base64.b64decode(text[len("deflate;"):])).decode("utf-8")
    return outer["name"], json.loads(text)


def view_url(base_url: str, experiment_id: str, key: str | None = None) -> str:
    url = base_url.rstrip("/") + "/" + RUNS_PAGE.format(id=experiment_id)
    return url + f"&compareRunsMode=CHART&viewStateShareKey={key}" if key else url


# --------------------------------------------------------------------------- the installed UI


def ui_supports_views() -> str | None:
    """None when the installed MLflow UI reads saved views as written here, else why not (a bundle
    without the share key, the tag prefix or compressed states)."""
    import mlflow

    bundles = sorted((Path(mlflow.__file__).parent / "server" / "js" / "build" / "static" / "js").glob("main.*.js"))
    if not bundles:
        return f"no MLflow UI bundle in mlflow {mlflow.__version__}"
    text = bundles[0].read_text(encoding="utf-8", errors="replace")
    missing = [marker for marker in ("viewStateShareKey", TAG_PREFIX, '"deflate;"') if marker not in text]
    if missing:
        return f"the MLflow {mlflow.__version__} UI does not know {', '.join(missing)}"
    return None


# --------------------------------------------------------------------------- writing


def write_views(uri: str, experiment_name: str) -> tuple[str, list[View], list[str]]:
    """Set the view tags of experiment `experiment_name` from its child runs' metrics.

    Returns (experiment id, views written, warnings). A view MLflow refuses (value too long, a store that
    rejects the tag) is a warning and left out: the plain runs page still works.
    """
    from mlflow import MlflowClient
    from mlflow.exceptions import MlflowException

    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name(experiment_name)
    if experiment is None:
        return "", [], [f"no experiment {experiment_name!r}"]
    why = ui_supports_views()
    if why:
        return experiment.experiment_id, [], [f"saved views not written: {why}"]
    runs = client.search_runs([experiment.experiment_id], "tags.`mlgrpo.role` = 'child'", max_results=1000)
    keys, stepped, languages, arms = set(), set(), {}, set()
    for run in runs:
        for metric in run.to_proto().data.metrics:
            keys.add(metric.key)
            if metric.step >= 1 and "/summary/" not in metric.key:  # end-of-run totals: a bar per arm, not a dot
                stepped.add(metric.key)
        languages.update(dict.fromkeys(x for x in run.data.tags.get("languages", "").split(",") if x))
        arms.add(run.data.tags.get(GROUP_TAG))
    written, warnings = [], []
    for view in plan_views(keys, list(languages)):
        tag = TAG_PREFIX + view.key
        state = view_state(view, keys, stepped, groups=len(arms))
        old = experiment.tags.get(tag)
        if old is not None and _same_state(old, state):
            written.append(view)
            continue
        value = envelope(view.name, state)
        if len(value) > MAX_TAG_CHARS:
            warnings.append(f"view {view.name!r} needs {len(value)} characters, more than MLflow's {MAX_TAG_CHARS}")
            continue
        try:
            client.set_experiment_tag(experiment.experiment_id, tag, value)
        except MlflowException as exc:
            warnings.append(f"view {view.name!r} refused by MLflow: {str(exc).splitlines()[0][:200]}")
            continue
        written.append(view)
    return experiment.experiment_id, written, warnings


def _same_state(value: str, state: dict) -> bool:
    try:
        return read_envelope(value)[1] == state
    except (ValueError, KeyError, zlib.error):
        return False


def mlgrpo_experiments(uri: str, limit: int = 20) -> list[str]:
    """Names of the experiments in the store that hold mlgrpo runs, most recently created first."""
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    names = []
    for experiment in client.search_experiments(order_by=["creation_time DESC"], max_results=200):
        if client.search_runs([experiment.experiment_id], "tags.`mlgrpo.role` = 'child'", max_results=1):
            names.append(experiment.name)
        if len(names) == limit:
            break
    return names
