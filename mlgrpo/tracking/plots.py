"""Per-language charts of a run's metric histories, logged as PNG artifacts under plots/.

The MLflow UI draws one chart per metric key; these figures put the languages of one metric on one
chart (one line per language, aggregates dashed), and, for a comparison, one panel per language
with one line per run, so that arms can be read side by side language by language.

    log_language_plots(child, ["train/reward/", "eval/exact_match/"])       # on each child run
    log_comparison_plots(parent, {"grpo s0": id0, "ppo s0": id1}, ["eval/exact_match/"], languages)

Figures are made with matplotlib's object API (matplotlib.figure.Figure, rendered by Agg when saved):
no pyplot, so no global figure state and no display backend. Colours are fixed per language.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from matplotlib.figure import Figure

from mlgrpo.tracking.names import AGGREGATES
from mlgrpo.tracking.run import RunHandle

History = Sequence[tuple[int, float]]
_AGGREGATE_STYLE = {"macro": ("black", "--"), "worst": ("tab:red", ":"), "all": ("grey", "-.")}
_PALETTE = ("tab:blue", "tab:orange", "tab:green", "tab:purple", "tab:brown", "tab:pink", "tab:olive",
            "tab:cyan", "navy", "darkgoldenrod", "teal", "indigo", "firebrick", "darkkhaki", "slategrey")


def plot_file(prefix: str, kind: str = "languages") -> str:
    """plots/<kind>/train_reward.png for "train/reward/"."""
    return f"plots/{kind}/{prefix.strip('/').replace('/', '_')}.png"


def _colour(name: str, languages: Sequence[str]) -> str:
    index = list(languages).index(name) if name in languages else sum(map(ord, name))
    return _PALETTE[index % len(_PALETTE)]


def language_figure(series: Mapping[str, History], title: str) -> Figure:
    """One axis; a line per language (solid) and per aggregate (macro / worst / all, dashed)."""
    languages = sorted(n for n in series if n not in AGGREGATES)
    figure = Figure(figsize=(7, 4))
    axis = figure.add_subplot()
    for name in [*languages, *(a for a in AGGREGATES if a in series)]:
        steps, values = zip(*series[name]) if series[name] else ((), ())
        colour, style = _AGGREGATE_STYLE.get(name, (_colour(name, languages), "-"))
        axis.plot(steps, values, style, color=colour, label=name, linewidth=1.6 if name in AGGREGATES else 1.2)
    axis.set_title(title)
    axis.set_xlabel("step")
    axis.grid(alpha=0.3)
    axis.legend(loc="best", fontsize="small", ncol=2 if len(series) > 6 else 1)
    return figure


def comparison_figure(per_run: Mapping[str, Mapping[str, History]], languages: Sequence[str], title: str) -> Figure:
    """A panel per language (shared y axis), a line per run; per_run: run label -> language -> history."""
    columns = min(3, max(1, len(languages)))
    rows = math.ceil(len(languages) / columns)
    figure = Figure(figsize=(4.2 * columns, 3.2 * rows))
    axes = figure.subplots(rows, columns, sharex=True, sharey=True, squeeze=False).ravel()
    for axis, language in zip(axes, languages):
        for i, (label, series) in enumerate(per_run.items()):
            history = series.get(language, ())
            if history:
                steps, values = zip(*history)
                axis.plot(steps, values, color=_PALETTE[i % len(_PALETTE)], label=label, linewidth=1.2)
        axis.set_title(language)
        axis.grid(alpha=0.3)
    for axis in axes[len(languages):]:
        axis.set_visible(False)
    axes[0].legend(loc="best", fontsize="small")
    figure.suptitle(title)
    return figure


def _series(client, run_id: str, prefix: str, keys: Sequence[str]) -> dict[str, list[tuple[int, float]]]:
    """Last path part -> (step, value) history, for the keys directly under prefix."""
    out = {}
    for key in keys:
        rest = key[len(prefix):]
        if key.startswith(prefix) and rest and "/" not in rest:
            out[rest] = sorted((m.step, m.value) for m in client.get_metric_history(run_id, key))
    return out


def log_language_plots(handle: RunHandle, metric_prefixes: Sequence[str]) -> dict[str, str | None]:
    """A language_figure per prefix from the run's own history. Returns prefix -> artifact file, or None
    where the run has no metric under that prefix (nothing is drawn for it)."""
    keys = handle.metric_keys()
    logged: dict[str, str | None] = {}
    for prefix in metric_prefixes:
        prefix = prefix.rstrip("/") + "/"
        series = _series(handle.client, handle.run_id, prefix, keys)
        logged[prefix] = plot_file(prefix) if series else None
        if series:
            handle.log_figure(language_figure(series, f"{prefix.rstrip('/')} ({handle.run_name})"), plot_file(prefix))
    return logged


def log_comparison_plots(parent: RunHandle, runs: Mapping[str, str], metric_prefixes: Sequence[str],
                         languages: Sequence[str]) -> dict[str, str | None]:
    """On the parent run: per prefix, a panel per language with a line per child run (label -> run id).
    Returns prefix -> artifact file, or None where no run has that metric."""
    logged: dict[str, str | None] = {}
    for prefix in metric_prefixes:
        prefix = prefix.rstrip("/") + "/"
        keys = [prefix + language for language in languages]
        per_run = {label: _series(parent.client, run_id, prefix, keys) for label, run_id in runs.items()}
        found = any(per_run.values())
        logged[prefix] = plot_file(prefix, "compare") if found else None
        if found:
            parent.log_figure(comparison_figure(per_run, languages, prefix.rstrip("/")), plot_file(prefix, "compare"))
    return logged
