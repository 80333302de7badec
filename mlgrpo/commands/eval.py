"""`mlgrpo eval`: evaluate any checkpoint or hub model on per-language held-out data.

    mlgrpo eval --model tiny --data suite:numbers --languages en,ja,sw --per-language 50
    mlgrpo eval --model ./runs/grpo-seed0 --data held_out.jsonl --rewards exact_match,language_consistency \
        --baseline step0.json --output after.json

Writes the EvalReport as JSON (and, unless --no-mlflow, one MLflow run with the flat metrics, the
report and the sample generations), and prints a per-language table. Parses arguments, calls
mlgrpo.evaluation, prints; holds no metric logic of its own.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from mlgrpo.errors import UserError

SUMMARY_METRICS = ("exact_match", "chrf", "bleu", "rouge_l", "token_f1", "language_consistency", "code_switch")


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "eval", help="evaluate a model per language (JSON report and an MLflow run)",
        description="Generate on per-language held-out prompts with a checkpoint, the tiny model or a hub model, "
        "and report exact match, chrF, BLEU, ROUGE-L, token F1, language consistency, code-switching, diversity, "
        "length and the optional rewards, KL, reward-model and safety scores, per language and aggregated.")
    parser.add_argument("--model", required=True, metavar="SPEC", help="'tiny[:options]', a model folder, or a hub id")
    parser.add_argument("--data", required=True, metavar="SPEC",
                        help="suite:NAME (a built-in suite's eval split) or a data file/folder")
    parser.add_argument("--languages", metavar="CODES",
                        help="comma-separated language codes (default: all in the data)")
    parser.add_argument("--per-language", type=int, metavar="N", help="rows per language (default: all)")
    parser.add_argument("--metrics", metavar="NAMES", help="comma-separated text metrics (default: all)")
    parser.add_argument("--max-new-tokens", type=int, default=32, metavar="N",
                        help="tokens per completion (default: 32)")
    parser.add_argument("--batch-size", type=int, default=64, metavar="N", help="prompts per batch (default: 64)")
    parser.add_argument("--sampled-k", type=int, default=0, metavar="K",
                        help="also sample K completions per prompt and report pass@1 and pass@K (default: 0, off)")
    parser.add_argument("--temperature", type=float, default=1.0, help="temperature of the K samples (default: 1.0)")
    parser.add_argument("--rewards", metavar="NAMES", help="comma-separated reward functions to average, e.g. "
                        "exact_match,chrf,language_consistency")
    parser.add_argument("--reward-model", metavar="DIR", help="local reward-model folder to score completions with")
    parser.add_argument("--reference-model", metavar="SPEC", help="model to measure KL(policy || reference) against")
    parser.add_argument("--safety-classifier", metavar="DIR", help="local text classifier folder for toxicity")
    parser.add_argument("--safety-label", metavar="LABEL", help="the classifier's unsafe label (default: by its name)")
    parser.add_argument("--samples-per-language", type=int, default=8, metavar="N",
                        help="generations kept per language in the report (default: 8)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the subsample, samples and kept rows (default: 0)")
    parser.add_argument("--device", help="torch device, e.g. cuda:0 (default: cpu)")
    parser.add_argument("--dtype", help="float32, bfloat16, ... (default: the checkpoint's own)")
    parser.add_argument("--baseline", metavar="JSON", help="an earlier report (e.g. step 0): adds changes and "
                        "collapse warnings")
    parser.add_argument("--collapse-threshold", type=float, default=0.1, metavar="X",
                        help="drop in language consistency or exact match that counts as collapse (default: 0.1)")
    parser.add_argument("--output", metavar="JSON", help="report file (default: eval-<model>-<data>.json)")
    parser.add_argument("--tracking-uri", help="MLflow tracking URI (default: MLFLOW_TRACKING_URI or mlgrpo's default)")
    parser.add_argument("--experiment", default="mlgrpo-eval", help="MLflow experiment name (default: mlgrpo-eval)")
    parser.add_argument("--no-mlflow", action="store_true", help="write the JSON report only")
    parser.set_defaults(handler=run)


def _names(text: str | None) -> list[str] | None:
    return [part.strip() for part in text.split(",") if part.strip()] if text else None


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._")[:60] or "model"


def run(args: argparse.Namespace) -> int:
    from mlgrpo.evaluation import EvalReport, collapse_warnings, evaluate_policy
    from mlgrpo.evaluation.sources import load_eval_records
    from mlgrpo.models import load_policy

    # Everything that can be wrong with the arguments fails here, before the slow part.
    output = Path(args.output or f"eval-{_slug(args.model)}-{_slug(args.data)}.json")
    if not output.parent.is_dir():
        raise UserError(f"cannot write the report to {output}: folder {output.parent} does not exist")
    if Path(args.data).is_file() and output.resolve() == Path(args.data).resolve():
        raise UserError(f"--output {output} is the --data file; write the report to another file")
    if not 0.0 <= args.collapse_threshold <= 1.0:
        raise UserError(f"--collapse-threshold must be between 0 and 1, got {args.collapse_threshold}")
    baseline = EvalReport.from_json(_read_baseline(args.baseline), args.baseline) if args.baseline else None
    records, notes = load_eval_records(args.data, languages=_names(args.languages), per_language=args.per_language,
                                       seed=args.seed)
    reward_funcs, weights = _rewards(_names(args.rewards))
    # After the checks above: opening a local store creates it, and a refused command leaves nothing behind.
    tracker = None if args.no_mlflow else _open_tracker(args)
    print(f"mlgrpo eval: {len(records)} prompts; loading {args.model}", file=sys.stderr, flush=True)
    model, tokenizer = load_policy(args.model, dtype=args.dtype, device=args.device)
    reference = None
    if args.reference_model:
        reference, _ = load_policy(args.reference_model, dtype=args.dtype, device=args.device)
    report = evaluate_policy(
        model, tokenizer, records, metrics=_names(args.metrics), max_new_tokens=args.max_new_tokens,
        batch_size=args.batch_size, sampled_k=args.sampled_k, reward_funcs=reward_funcs, reward_weights=weights,
        reference_model=reference, safety_classifier=args.safety_classifier, safety_label=args.safety_label,
        samples_per_language=args.samples_per_language, seed=args.seed, reward_model=args.reward_model,
        temperature=args.temperature)
    report.notes = notes + report.notes
    changes = collapse_warnings(baseline, report, args.collapse_threshold) if baseline is not None else {}
    document = {"model": args.model, "data": args.data, **report.to_json(), "changes": changes}
    output.write_text(json.dumps(document, ensure_ascii=False, indent=2), encoding="utf-8")
    if tracker is not None:
        _log_to_mlflow(tracker, args, report, document, changes)
    print(summary(report, changes))
    print(f"report: {output}")
    return 0


def _read_baseline(path: str) -> dict:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise UserError(f"cannot read the baseline report {path}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise UserError(f"the baseline report {path} is not JSON (line {exc.lineno}: {exc.msg})") from None
    except UnicodeDecodeError as exc:
        raise UserError(f"the baseline report {path} is not UTF-8 text (byte {exc.start + 1}); give the JSON report "
                        "an earlier `mlgrpo eval` wrote") from None


def _rewards(names: list[str] | None):
    if not names:
        return [], []
    from mlgrpo.rewards import RewardSpec, build_reward_functions

    return build_reward_functions([RewardSpec(name) for name in names])


def _open_tracker(args: argparse.Namespace):
    try:
        from mlgrpo.tracking import Tracker, resolve_tracking_uri
    except ImportError as exc:
        raise UserError(f"MLflow logging needs mlgrpo.tracking, which cannot be imported here ({exc}); pass "
                        "--no-mlflow to write the JSON report only") from None
    return Tracker.open(resolve_tracking_uri(args.tracking_uri, None), args.experiment)


def _log_to_mlflow(tracker, args: argparse.Namespace, report, document: dict, changes: dict) -> None:
    from mlgrpo.tracking import clean_name

    tags = {"mlgrpo.kind": "eval", "model": args.model, "data": args.data}
    params = {key: value for key, value in report.settings.items() if value not in (None, [], "")}
    params["languages"] = ",".join(report.per_language)
    handle = tracker.start_parent(f"eval-{_slug(args.model)}-{_slug(args.data)}", tags, params)
    try:
        # Reward names come from users' configs: MLflow accepts only some characters in a metric name.
        handle.log_metrics({clean_name(key): value for key, value in {**report.flat(), **changes}.items()}, 0)
        handle.log_dict(document, "eval_report.json")
        handle.log_table(report.samples, "eval_samples.json")
    except BaseException:
        handle.finish("FAILED")
        raise
    handle.finish("FINISHED")
    print(f"MLflow run {handle.run_id} in experiment {args.experiment!r}", file=sys.stderr)


def summary(report, changes: dict) -> str:
    """The per-language table of the main metrics, the aggregates, collapse flags and notes, as text."""
    shown = [m for m in SUMMARY_METRICS if m in report.directions]
    rows = [["language", "rows", *shown]]
    for lang, scores in report.per_language.items():
        rows.append([lang, str(report.rows.get(lang, "")), *(_cell(scores.get(m)) for m in shown)])
    for stat in ("macro", "worst", "gap"):
        rows.append([stat, "", *(_cell(report.aggregates.get(m, {}).get(stat)) for m in shown)])
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    collapsed = sorted(key.rsplit("/", 1)[1] for key, value in changes.items() if "/collapse/" in key and value)
    if changes:
        lines.append(f"collapse since the baseline: {', '.join(collapsed) if collapsed else 'none'}")
    if report.not_measured:
        lines.append(f"not measured: {', '.join(report.not_measured)}")
    lines += [f"note: {note}" for note in report.notes]
    return "\n".join(lines)


def _cell(value) -> str:
    return "-" if value is None else f"{value:.3f}" if abs(value) < 10 else f"{value:.1f}"
