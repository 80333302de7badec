"""`mlgrpo report`: read a comparison from MLflow and write report.html, report.md, figures and tables.

    MLflow experiment -> tracking.reader -> collect.Comparison
    -> analysis tables (verdicts: evidence) -> summary (the first screen: forest plot, wide table,
       verdict in words) -> curves (PNG) -> content.Report -> render (HTML, Markdown)
    -> tables as CSV, blind A/B sheet (its key beside the report folder: blind.py)

The first section answers the question; every other section is details (collapsed in HTML).

Everything comes from MLflow, so a report can be written on a machine that did not train. Nothing
here computes a statistic (analysis, stats) or writes HTML (render).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path


from mlgrpo.errors import UserError
from mlgrpo.reports import analysis
from mlgrpo.reports.blind import blind_export
from mlgrpo.reports.collect import Comparison, comparison_from
from mlgrpo.reports.conclusions import headline_metrics
from mlgrpo.reports.content import Report, SampleRow, Section, Table
from mlgrpo.reports.settings import ReportConfig, from_resolved

RESOLVED_YAML = "experiment.resolved.yaml"  # the parent run's artifact, with the report settings


@dataclass
class ReportFiles:
    folder: Path
    html: Path
    markdown: Path
    tables: list[Path]
    figures: list[Path]
    blind_sheet: Path | None
    blind_key: Path | None


def write_report(uri: str, name: str, *, out: str | Path | None = None, progress=lambda message: None,
                 settings: ReportConfig | None = None) -> ReportFiles:
    """The report of MLflow experiment `name` at `uri`, in `out` (default reports/<name>/). `settings`:
    the experiment file's report section; None reads the one the parent run logged (defaults if none)."""
    from mlgrpo.tracking.reader import read_experiment

    record = read_experiment(uri, name, progress=progress)
    if not record.runs:
        raise UserError(f"experiment {name!r} at {record.uri} has no runs yet; run it first (mlgrpo run ...)")
    comp = comparison_from(record)
    if settings is None:
        settings, warning = from_resolved(comp.parent.artifacts.get(RESOLVED_YAML) if comp.parent else None)
        comp.warnings += [warning] if warning else []
    folder = Path(out) if out else Path("reports") / _safe(name)
    try:
        for sub in ("figures", "tables"):
            (folder / sub).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot write the report to {folder}: {exc.strerror or exc}") from None
    progress("computing statistics")
    report, tables = _assemble(comp, folder, progress, settings)
    from mlgrpo.reports.render import write_html, write_markdown

    html, markdown = folder / "report.html", folder / "report.md"
    write_html(report, html)
    write_markdown(report, markdown)
    csvs = []
    for table in tables:
        path = folder / "tables" / f"{table.name}.csv"
        table.frame.to_csv(path, index=False)
        csvs.append(path)
    sheet, key = blind_export(comp, folder)
    return ReportFiles(folder, html, markdown, csvs, [folder / f.path for f in report.figures()], sheet, key)


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "experiment"


def _assemble(comp: Comparison, folder: Path, progress, settings: ReportConfig) -> tuple[Report, list[Table]]:
    from mlgrpo.reports.curves import curve_figures
    from mlgrpo.reports.summary import answer_section

    metrics = comp.item_metrics() + [m for m in comp.eval_metrics() if m not in comp.item_metrics()]
    final = analysis.final_table(comp, metrics, settings)
    paired = analysis.paired_table(comp, metrics, settings)
    headline = headline_metrics(metrics)
    baseline = analysis.baseline_arm(comp)
    answer, answer_tables = answer_section(comp, paired, headline, baseline, settings, folder)
    tables = {
        "differences": Table("differences", "Settings that differ between arms", analysis.differences_table(comp),
                             "Every other setting is the same in all arms."),
        "final_metrics": Table("final_metrics", "Final held-out metrics per language and arm", final,
                               "Mean over seeds of the per-prompt mean at the last evaluation; 95% CI by a "
                               "two-stage bootstrap over seeds and prompts (column ci says what it covers)."),
        "paired_differences": Table("paired_differences", "Paired differences between arms, every metric", paired,
                                    "arm minus vs, paired by seed and prompt; per-language p from a sign-flip "
                                    "permutation test, Holm-adjusted across languages; macro/worst/gap rows use "
                                    "a bootstrap p. verdict and reason: mlgrpo.reports.evidence (the same words "
                                    "as the first screen)."),
        "stability": Table("stability", "Stability", analysis.stability_table(comp),
                           "Volatility: standard deviation of step-to-step changes (mean over seeds)."),
        "convergence": Table("convergence", "Convergence", analysis.convergence_table(comp),
                             "Steps (and samples) until the training reward first reaches the start plus 90% of "
                             "its rise to the final value (mean of the last 3 steps); mean over seeds."),
        "diagnostics": Table("diagnostics", "Training diagnostics", analysis.diagnostics_table(comp),
                             "Mean over the logged steps (mean over seeds) and the largest value any seed logged; "
                             "an arm that does not log a diagnostic has no row for it."),
        "cost": Table("cost", "Cost", analysis.cost_table(comp),
                      "Mean over seeds; ratio rows divide each arm by the baseline arm."),
        "change": Table("change", "Change since step 0, per arm", analysis.change_table(comp, comp.item_metrics()),
                        "Last evaluation minus the first (step 0) on the same held-out prompts, paired by seed and "
                        "prompt over every language; 95% CI by a two-stage bootstrap (seeds, then prompts); p from "
                        "a sign-flip permutation test. pass_at_1 is sampled at each arm's training temperature."),
        "runs": Table("runs", "Every run, start and end", analysis.runs_table(comp, headline),
                      "Macro held-out value of each headline metric at the first and the last evaluation."),
    }
    progress("drawing figures")
    figures = curve_figures(comp, final, headline, folder, band_seeds=settings.min_seeds)
    sections = [
        answer,
        Section("Setup", bullets=_setup(comp), tables=[tables["differences"]], collapsed=True),
        Section("Training curves", figures=figures["curves"], collapsed=True),
        Section("Final metrics", tables=[tables["final_metrics"], tables["change"], tables["runs"]],
                figures=figures["final"],
                collapsed=True),
        Section("Paired differences, every metric", tables=[tables["paired_differences"]], collapsed=True),
        Section("Stability", tables=[tables["stability"], tables["diagnostics"]], collapsed=True),
        Section("Convergence", tables=[tables["convergence"]], collapsed=True),
        Section("Cost", tables=[tables["cost"]], collapsed=True),
        _samples_section(comp, headline[0] if headline else None),
    ]
    subtitle = (f"MLflow experiment {comp.name} at {shown_uri(comp.uri)}; arms {', '.join(comp.arms)} (baseline {baseline}); "
                f"seeds {', '.join(comp.seeds)}")
    report = Report(f"mlgrpo comparison: {comp.name}", subtitle, sections, warnings=comp.warnings + _font_warning(comp))
    return report, list(tables.values()) + answer_tables


def shown_uri(uri: str, cwd: Path | None = None) -> str:
    """The store as the reader would type it: a SQLite file under the working directory by its relative path
    (a committed report then names ./mlflow.db, not the folder of the machine that wrote it)."""
    prefix = "sqlite:///"
    if not uri.startswith(prefix):
        return uri
    try:
        relative = Path(uri[len(prefix):]).resolve().relative_to((cwd or Path.cwd()).resolve())
    except ValueError:
        return uri
    return prefix + relative.as_posix()


def _font_warning(comp: Comparison) -> list[str]:
    """Figures label arms and languages; without a CJK font their CJK characters would be boxes."""
    from mlgrpo.reports.figures import cjk_font

    labels = "".join(comp.arms + comp.languages)
    if cjk_font() is None and any("\u2e80" <= ch <= "\u9fff" or "\uac00" <= ch <= "\ud7af" for ch in labels):
        return ["no CJK font found for the figures (install fonts-noto-cjk): CJK characters in their labels "
                "are drawn as boxes"]
    return []


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
    out += [f"Update schedule and KL, {line}" for line in analysis.schedule_lines(comp)]
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
