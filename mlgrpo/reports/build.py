"""`mlgrpo report`: read a comparison from MLflow and write report.html, report.md, figures and tables.

    MLflow experiment -> tracking.reader -> collect.Comparison
    -> analysis tables -> conclusions -> figures (PNG) -> content.Report -> render (HTML, Markdown)
    -> tables as CSV, blind A/B sheet and key

Everything comes from MLflow, so a report can be written on a machine that did not train. Nothing
here computes a statistic (analysis, stats) or writes HTML (render).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from mlgrpo.errors import UserError
from mlgrpo.reports import analysis
from mlgrpo.reports.collect import Comparison, comparison_from
from mlgrpo.reports.conclusions import conclusions, headline_metrics
from mlgrpo.reports.content import Figure, Report, SampleRow, Section, Table

# Training curves drawn per language (one panel each) and without a language (one panel).
LANGUAGE_CURVES = (("train/reward", "reward (train)"), ("eval/reward/total", "held-out reward"),
                   ("eval/exact_match", "held-out exact match"))
SCALAR_CURVES = (("train/kl", "KL to the reference"), ("train/entropy", "entropy"),
                 ("train/clip_ratio/region_mean", "clip fraction"), ("train/ppo/value_loss", "PPO value loss"),
                 ("train/loss", "loss"))


@dataclass
class ReportFiles:
    folder: Path
    html: Path
    markdown: Path
    tables: list[Path]
    figures: list[Path]
    blind_sheet: Path | None
    blind_key: Path | None


def write_report(uri: str, name: str, *, out: str | Path | None = None,
                 progress=lambda message: None) -> ReportFiles:
    """The report of MLflow experiment `name` at `uri`, in `out` (default reports/<name>/)."""
    from mlgrpo.tracking.reader import read_experiment

    record = read_experiment(uri, name, progress=progress)
    if not record.runs:
        raise UserError(f"experiment {name!r} at {record.uri} has no runs yet; run it first (mlgrpo run ...)")
    comp = comparison_from(record)
    folder = Path(out) if out else Path("reports") / _safe(name)
    try:
        for sub in ("figures", "tables", "blind"):
            (folder / sub).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot write the report to {folder}: {exc.strerror or exc}") from None
    progress("computing statistics")
    report, tables = _assemble(comp, folder, progress)
    from mlgrpo.reports.render import write_html, write_markdown

    html, markdown = folder / "report.html", folder / "report.md"
    write_html(report, html)
    write_markdown(report, markdown)
    csvs = []
    for table in tables:
        path = folder / "tables" / f"{table.name}.csv"
        table.frame.to_csv(path, index=False)
        csvs.append(path)
    sheet, key = _blind_export(comp, folder / "blind")
    return ReportFiles(folder, html, markdown, csvs, [folder / f.path for f in report.figures()], sheet, key)


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "experiment"


def _assemble(comp: Comparison, folder: Path, progress) -> tuple[Report, list[Table]]:
    metrics = comp.item_metrics() + [m for m in comp.eval_metrics() if m not in comp.item_metrics()]
    final = analysis.final_table(comp, metrics)
    paired = analysis.paired_table(comp, metrics)
    headline = headline_metrics(metrics)
    tables = {
        "differences": Table("differences", "Settings that differ between arms", analysis.differences_table(comp),
                             "Every other setting is the same in all arms."),
        "final_metrics": Table("final_metrics", "Final held-out metrics per language and arm", final,
                               "Mean over seeds of the per-prompt mean at the last evaluation; 95% CI by a "
                               "two-stage bootstrap over seeds and prompts (column ci says what it covers)."),
        "paired_differences": Table("paired_differences", "Paired differences between arms", paired,
                                    "arm minus vs, paired by seed and prompt; per-language p from a sign-flip "
                                    "permutation test, Holm-adjusted across languages; macro/worst/gap rows use "
                                    "a bootstrap p. verdict needs both p_adjusted < 0.05 and a CI excluding 0."),
        "stability": Table("stability", "Stability", analysis.stability_table(comp),
                           "Volatility: standard deviation of step-to-step changes (mean over seeds)."),
        "convergence": Table("convergence", "Convergence", analysis.convergence_table(comp),
                             "Steps (and samples) until the training reward first reaches the start plus 90% of "
                             "its rise to the final value (mean of the last 3 steps); mean over seeds."),
        "cost": Table("cost", "Cost", analysis.cost_table(comp),
                      "Mean over seeds; ratio rows divide each arm by the baseline arm."),
    }
    progress("drawing figures")
    figures = _figures(comp, final, headline, folder)
    sections = [
        Section("Conclusions", bullets=conclusions(paired[paired.metric.isin(headline)], headline, len(comp.seeds)),
                paragraphs=[f"Baseline arm: {analysis.baseline_arm(comp)}. Only differences whose Holm-adjusted "
                            "p-value is below 0.05 and whose 95% interval excludes zero are stated as differences."]),
        Section("Setup", bullets=_setup(comp), tables=[tables["differences"]]),
        Section("Training curves", paragraphs=[
            "Mean over seeds with a 95% t-band (no band with one seed; with two seeds the band is +-12.7 standard "
            "errors, so it is wide). Training curves (train/...) are a rolling mean over about 1/10 of the logged "
            "points first; held-out curves are drawn as measured, at each evaluation."],
                figures=figures["curves"]),
        Section("Final metrics", tables=[tables["final_metrics"], tables["paired_differences"]],
                figures=figures["final"]),
        Section("Stability", tables=[tables["stability"]]),
        Section("Convergence", tables=[tables["convergence"]]),
        Section("Cost", tables=[tables["cost"]]),
        _samples_section(comp, headline[0] if headline else None),
    ]
    subtitle = f"MLflow experiment {comp.name} at {comp.uri}; arms {', '.join(comp.arms)}; seeds {', '.join(comp.seeds)}"
    return Report(f"mlgrpo comparison: {comp.name}", subtitle, sections, warnings=list(comp.warnings)), list(tables.values())


def _setup(comp: Comparison) -> list[str]:
    run = comp.run_list()[0]
    p, t = run.params, run.tags
    data = p.get("data.suite") if p.get("data.suite") not in (None, "null") else p.get("data.file", "?")
    rewards = [f"{p[k]} x{p.get(k.replace('.name', '.weight'), '1')}" + _params_note(p.get(k.replace(".name", ".params")))
               for k in sorted(p) if k.startswith("rewards.rewards.") and k.endswith(".name")]
    out = [f"Model: {p.get('model.policy', '?')}",
           f"Data: {data}; languages {', '.join(comp.languages)}; per language {_per_language(p)}",
           f"Rewards: {', '.join(rewards) or '?'}",
           f"Arms: {', '.join(comp.arms)}; seeds: {', '.join(comp.seeds)}",
           f"Hardware: {t.get('system.cpus', '?')} CPUs, GPU {t.get('system.gpu', '?')}, "
           f"{t.get('system.world_size', '1')} process(es), {t.get('system.platform', '?')}",
           "Versions: " + ", ".join(f"{k.split('.', 1)[1]} {v}" for k, v in sorted(t.items()) if k.startswith("versions."))
           + f"; mlgrpo {t.get('mlgrpo.version', '?')} (git {t.get('git.commit', '?')})"]
    loaded = sorted({f"{k}: {v}" for r in comp.run_list() for k, v in r.params.items()
                     if (k == "model.policy" or k.endswith((".path", ".classifier", "reward_model", ".tokenizer")))
                     and v not in ("null", "")})
    out.append("Models and code the configuration names (mlgrpo imports no code by path): " + "; ".join(loaded))
    for path, value in sorted(comp.run_list()[0].artifacts.items()):
        if path.endswith("languages.json") and isinstance(value, dict) and isinstance(value.get("languages"), dict):
            counts = value["languages"]
            total = sum(counts.values()) or 1
            shares = ", ".join(f"{lang} {n} ({n / total:.0%})" for lang, n in sorted(counts.items(), key=lambda kv: -kv[1]))
            out.append(f"Language distribution, {value.get('dataset', path)} data ({value.get('rows', total)} rows): {shares}")
    for path, text in (comp.run_list()[0].artifacts.items()):
        if path.endswith("_card.md") and isinstance(text, str):
            first = next((line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")), "")
            out.append(f"Data card ({path.rsplit('/', 1)[-1]}): {first[:300]}")
    return out


def _params_note(text: str | None) -> str:
    return f" ({text})" if text and text not in ("{}", "null") else ""


def _per_language(params: dict) -> str:
    pairs = [(k.rsplit(".", 1)[-1], v) for k, v in sorted(params.items()) if k.startswith("data.per_language.")]
    return ", ".join(f"{lang} {n}" for lang, n in pairs) or "all"


def smoothing_window(steps: int) -> int:
    """Training curves are drawn as a rolling mean over about 1/10 of the logged points (1 for short runs):
    per-step rewards of a few prompts jump by more than the differences between arms."""
    return max(1, round(steps / 10))


def _bands(comp: Comparison, key: str, per_sample: bool = False) -> dict:
    """{arm: (x, mean, low, high)} of metric `key` over each arm's seeds; x in steps, or in completions drawn."""
    from mlgrpo.reports.stats import curve_band, rolling_mean

    out = {}
    for arm in comp.arms:
        steps, values = comp.curve(arm, key)
        if len(steps):
            band = curve_band(rolling_mean(values, smoothing_window(len(steps))) if key.startswith("train/") else values)
            scale = analysis.samples_per_step(next(iter(comp.runs[arm].values()))) if per_sample else 1.0
            out[arm] = (steps * scale, band.mean, band.low, band.high)
    return out


def _figures(comp: Comparison, final: pd.DataFrame, headline: list[str], folder: Path) -> dict[str, list[Figure]]:
    from mlgrpo.reports import figures as draw

    curves, finals = [], []
    # (metric prefix, label, x in completions drawn: for arms whose steps hold different numbers of samples)
    for prefix, label, per_sample in [(p, lbl, False) for p, lbl in LANGUAGE_CURVES] + [
            ("train/reward", "reward (train) vs completions drawn", True)]:
        panels = {lang: bands for lang in comp.languages if (bands := _bands(comp, f"{prefix}/{lang}", per_sample))}
        if panels:
            name = f"figures/{prefix.replace('/', '_')}{'_samples' if per_sample else ''}.png"
            draw.curves_figure(panels, label, label.split(" vs ")[0], folder / name, arm_order=comp.arms,
                               xlabel="completions drawn" if per_sample else "step")
            curves.append(Figure(name, f"{label} per language"))
    scalar = {label: bands for key, label in SCALAR_CURVES if (bands := _bands(comp, key))}
    if scalar:
        draw.curves_figure(scalar, "training diagnostics", "value", folder / "figures/diagnostics.png",
                           arm_order=comp.arms)
        curves.append(Figure("figures/diagnostics.png", "KL, entropy, clip fraction, PPO value loss and loss"))
    for metric in headline:
        rows = final[(final.metric == metric) & final.language.isin(comp.languages)]
        if len(rows):
            name = f"figures/final_{metric.replace('/', '_')}.png"
            draw.bars_figure(rows, f"final {metric} per language (95% CI)", metric, folder / name,
                             arm_order=comp.arms, language_order=comp.languages)
            finals.append(Figure(name, f"Final {metric} per language and arm"))
    return {"curves": curves, "final": finals}


def _samples_section(comp: Comparison, score: str | None) -> Section:
    seed = comp.seeds[0]
    by_arm = {arm: {s.get("id"): s for s in comp.samples(comp.runs[arm][seed])} if seed in comp.runs[arm] else {}
              for arm in comp.arms}
    ids = sorted({i for samples in by_arm.values() for i in samples}, key=str)
    rows = []
    for item in ids:
        first = next(s[item] for s in by_arm.values() if item in s)
        rows.append(SampleRow(language=str(first.get("language", "")), prompt=str(first.get("prompt", "")),
                              answers=[str(a) for a in (first.get("answers") or [])],
                              outputs={arm: str(by_arm[arm][item].get("completion", "")) for arm in comp.arms
                                       if item in by_arm[arm]},
                              scores={arm: _number(by_arm[arm][item].get(score)) for arm in comp.arms
                                      if item in by_arm[arm] and score}))
    rows.sort(key=lambda r: r.language)
    note = (f"Greedy outputs at the last evaluation, seed {seed}; the number under each output is its {score}."
            if rows else "No sample generations were logged.")
    return Section("Sample outputs", paragraphs=[note], samples=rows, sample_arms=list(comp.arms))


def _number(value) -> float | None:
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


def _blind_export(comp: Comparison, folder: Path) -> tuple[Path | None, Path | None]:
    """For each arm vs the baseline: every sampled prompt with the two outputs in random A/B order (a
    sheet for raters) and which arm is A (a key kept apart). The order is drawn with a fixed seed so the
    files are reproducible; raters must not see the key."""
    pairs = analysis.pairs(comp)
    seed = comp.seeds[0]
    sheet, key = [], []
    rng = random.Random(f"blind/{comp.name}")
    for arm, base in pairs:
        if seed not in comp.runs[arm] or seed not in comp.runs[base]:
            continue
        a_samples = {s.get("id"): s for s in comp.samples(comp.runs[arm][seed])}
        b_samples = {s.get("id"): s for s in comp.samples(comp.runs[base][seed])}
        for item in sorted(set(a_samples) & set(b_samples), key=str):
            flip = rng.random() < 0.5
            first, second = (base, arm) if flip else (arm, base)
            outputs = {arm: a_samples[item].get("completion", ""), base: b_samples[item].get("completion", "")}
            row_id = f"{len(sheet) + 1:04d}"
            sheet.append({"row": row_id, "language": a_samples[item].get("language", ""),
                          "prompt": _cell(a_samples[item].get("prompt", "")), "output A": _cell(outputs[first]),
                          "output B": _cell(outputs[second]), "preferred (A, B or tie)": "", "comment": ""})
            key.append({"row": row_id, "item": item, "A": first, "B": second, "seed": seed})
    if not sheet:
        return None, None
    sheet_path, key_path = folder / "sheet.csv", folder / "key.csv"
    pd.DataFrame(sheet).to_csv(sheet_path, index=False)
    pd.DataFrame(key).to_csv(key_path, index=False)
    return sheet_path, key_path


def _cell(text) -> str:
    """Model text for a spreadsheet: a leading = + - @ (or tab / CR) would make it a formula there (CSV
    injection), so such cells get a leading apostrophe, which spreadsheets show as text."""
    text = str(text)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text
