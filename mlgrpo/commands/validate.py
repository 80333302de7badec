"""`mlgrpo validate EXPERIMENT.yaml [--json] [--probe]`: check an experiment file and print its plan.

    runs (arm x seed, with run names and config hashes), every setting in which the arms differ in what
    they train with, defaults included (one column per arm), the settings in force that decide whether a run
    can learn (learning-rate schedule, LoRA targets, sampling temperature, std scope ...), the update schedule
    of each arm, the rows
    per language (train / held-out eval), each arm's estimated peak memory on this machine's device
    (experiments/memory.py), warnings, notes, and "OK"

Nothing trains and no weights are loaded (the memory estimate reads configs and the tokenizer) unless
--probe asks for the starting model's own rollouts (experiments/probe.py); the data is read (suites take a second). The work is in mlgrpo.experiments; this module parses arguments and formats.
"""

from __future__ import annotations

import argparse
import json
import math


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "validate", help="check an experiment file and print its plan (runs, differences between arms, data)",
        description="Check an experiment file before anything trains: unknown keys, wrong types and impossible "
        "combinations are reported as file:line: key: reason. Prints the runs, the settings that differ "
        "between arms, and the rows per language.",
    )
    parser.add_argument("experiment", metavar="EXPERIMENT.yaml",
                        help="the experiment file, e.g. experiments/quickstart.yaml")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    parser.add_argument("--probe", action="store_true",
                        help="also sample the run's own rollouts from the starting model on a few prompts per language, "
                        "score them with the experiment's rewards, and say whether the groups carry a signal and how "
                        "long a step and a run will take (loads the model; seconds on tiny, minutes on gemma-3-270m)")
    parser.add_argument("--probe-prompts", type=int, default=4, metavar="N",
                        help="train prompts per language the probe samples (default 4)")
    parser.set_defaults(handler=validate)


def validate(args: argparse.Namespace) -> int:
    from mlgrpo.errors import UserError
    from mlgrpo.experiments import load_experiment
    from mlgrpo.experiments.cluster import check_shared_output
    from mlgrpo.experiments.memory import plan_memory
    from mlgrpo.experiments.runner import placement_lines

    experiment = load_experiment(args.experiment)
    check_shared_output(experiment)
    try:
        placement = placement_lines(experiment, experiment.plan(), experiment.run_settings.workers)
    except UserError as exc:  # a file for a bigger machine is still a valid file; `mlgrpo run` refuses here
        placement = [f"placement: not on this machine: {exc}"]
    memory = plan_memory(experiment)
    probes = None
    if args.probe:
        from mlgrpo.experiments.probe import run_probe

        if args.probe_prompts < 1:
            raise UserError(f"--probe-prompts must be at least 1, got {args.probe_prompts}")
        probes = run_probe(experiment, args.probe_prompts)
        placement += wall_seconds(experiment, probes)
    if args.json:
        plan = {**plan_json(experiment, memory), "placement": placement}
        if probes is not None:
            plan["probe"] = [p.to_json() for p in probes]
        print(json.dumps(plan, ensure_ascii=False))
    else:
        text = render(experiment, memory).removesuffix("OK") + "\n".join(placement) + "\n\nOK"
        if probes is not None:
            text = text.removesuffix("OK") + "\n".join(probe_lines(probes, experiment)) + "\n\nOK"
        print(text)
    return 0


def wall_seconds(experiment, probes) -> list[str]:
    """The placement's wall time in seconds: its GRPO-run lengths x the probe's run time of a GRPO-family arm on
    this machine (without the probe, a run's length is not known; PPO counts as placement.RELATIVE_COST runs)."""
    from mlgrpo.experiments.runner import longest_first, plan_placement

    algorithms = {run.arm: run.algorithm.name for run in experiment.plan()}
    runs = [p.timing["run_s"] for p in probes if math.isfinite(p.timing.get("run_s", math.nan))
            and any(algorithms.get(arm) != "ppo" for arm in p.arms)]
    if not runs:
        return []
    placement = plan_placement(experiment, longest_first(experiment.plan()), experiment.run_settings.workers)
    return [f"  estimated wall time on this machine: {placement.wall:g} run length(s) x {runs[0]:.0f} s (the probe's "
            f"run of a GRPO arm, evaluations left out) ~ {duration(placement.wall * runs[0])}"]


def probe_lines(probes, experiment) -> list[str]:
    """The probe's tables, timing and warnings (experiments/probe.py)."""
    def num(value, digits=3):
        return "-" if value is None else f"{value:.{digits}f}"

    lines = []
    for probe in probes:
        s, t = probe.settings, probe.timing
        lines += [f"probe of {', '.join(probe.arms)}: {s['prompts_per_language']} train prompts per language x "
                  f"G={s['num_generations']} at temperature {s['temperature']} (top_p {s['top_p']}, top_k "
                  f"{s['top_k']}, <= {s['max_completion_length']} tokens) from the starting model:"]
        lines += table(["language", "reward", "mean", "greedy", "spread", "zero-spread groups", "fires"],
                       [[r["language"], r["reward"], num(r["mean"]), num(r["greedy"]), num(r["spread"]),
                         "-" if r["zero_spread"] is None else f"{r['zero_spread']:.0%}",
                         "-" if r["fires"] is None else f"{r['fires']:.0%}"] for r in probe.rows])
        if "step_s" in t:
            run = "" if t["run_s"] != t["run_s"] else f"; a run of {t['max_steps']} steps ~ {duration(t['run_s'])}"
            lines.append(f"  time on this machine ({t['threads']} thread(s)): {t['generation_s_per_completion']:.3g} s "
                         f"per sampled completion, {t['update_s_per_minibatch']:.3g} s forward + backward of a "
                         f"{t['minibatch_completions']}-completion minibatch; a step ~ {t['step_s']:.3g} s{run} "
                         "(evaluations and a PPO critic not included)")
        lines.append("")
    warnings = [w for p in probes for w in p.warnings]
    lines += ["probe warnings:", *(f"  - {w}" for w in warnings)] if warnings else ["probe: no warning"]
    return lines


def plan_json(experiment, memory=None) -> dict:
    from mlgrpo.experiments.diff import ABSENT
    from mlgrpo.experiments.inforce import settings_in_force

    return {
        "name": experiment.name,
        "path": str(experiment.path),
        "runs": [{"run_name": r.run_name, "arm": r.arm, "seed": r.seed, "algorithm": r.algorithm.name,
                  "config_hash": r.config_hash} for r in experiment.plan()],
        "differences": [{"key": key, "values": {arm: None if v is ABSENT else v for arm, v in values.items()}}
                        for key, values in experiment.differences()],
        "schedule": {arm: experiment.arm_configs[arm].effective["update"] for arm in experiment.arms},
        "settings": dict(settings_in_force(experiment, default_lora_targets(experiment.model.policy))),
        "warnings": list(experiment.warnings),
        "data": {code: {"train": rows[0], "eval": rows[1]} for code, rows in experiment.data_summary.items()},
        "notes": list(experiment.notes),
        "memory": memory_json(memory),
        "ok": True,
    }


def memory_json(memory) -> dict | None:
    if memory is None or isinstance(memory, str):
        return {"unavailable": memory} if memory else None
    return {"device": memory.device, "available_bytes": memory.available, "runs_at_once": memory.concurrent,
            "arms": {a.arm: {"peak_bytes": a.peak, "terms": a.terms} for a in memory.arms},
            "fit": memory.fit.to_json(), "warnings": memory.warnings}


def render(experiment, memory=None) -> str:
    from mlgrpo.experiments.diff import show
    from mlgrpo.experiments.effective import rollout_text
    from mlgrpo.experiments.inforce import settings_in_force

    runs = experiment.plan()
    lines = [f"experiment {experiment.name} ({experiment.path})"]
    if experiment.description:
        lines.append(f"  {experiment.description}")
    source = f"suite {experiment.data.suite}" if experiment.data.suite else f"file {experiment.data.file}"
    lines += [f"model {experiment.model.policy}; data {source}; output {experiment.run_settings.output_dir}", "",
              f"runs ({len(experiment.arms)} arms x {len(experiment.seeds)} seeds = {len(runs)}):"]
    lines += table(["run", "algorithm", "config"], [[r.run_name, r.algorithm.name, r.config_hash] for r in runs])
    differences = experiment.differences()
    lines += ["", "settings that differ between arms (what each trains with, defaults included):" if differences
              else "no setting differs between arms (defaults included)"]
    if differences:
        lines += table(["key", *experiment.arms], [[key, *(show(v[arm]) for arm in experiment.arms)]
                                                   for key, v in differences])
    lines += ["", "settings in force (defaults included; see `training` for every trl.GRPOConfig field):"]
    lines += table(["key", "value"], [list(row) for row in settings_in_force(experiment,
                                                                              default_lora_targets(experiment.model.policy))])
    lines += ["", "update schedule (per process):"]
    lines += table(["arm", "rollout", "minibatch", "steps per rollout", "policy ratio"],
                   [[arm, rollout_text(u["rollout_completions"], u["rollout_prompts"]),
                     f"{u['minibatch_completions']} completions", f"{u['minibatches']} x {u['epochs']} epoch(s)",
                     u["policy_ratio"]] for arm in experiment.arms
                    for u in [experiment.arm_configs[arm].effective["update"]]])
    lines += ["", "rows per language:"]
    lines += table(["language", "train", "eval"],
                   [[code, str(n_train), str(n_eval)] for code, (n_train, n_eval) in experiment.data_summary.items()])
    lines += memory_lines(memory)
    warnings = [*experiment.warnings, *(memory.warnings if memory and not isinstance(memory, str) else [])]
    if warnings:
        lines += ["", "warnings:", *(f"  - {warning}" for warning in warnings)]
    if experiment.notes:
        lines += ["", "notes:", *(f"  - {note}" for note in experiment.notes)]
    lines += ["", "OK"]
    return "\n".join(lines)


def default_lora_targets(policy: str) -> str:
    """What peft adapts when model.lora names no target_modules: its default for the model's type."""
    from peft.utils.constants import TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING as DEFAULTS

    from mlgrpo.models.shape import architecture

    arch = architecture(policy)
    if arch is None:
        return "peft's default for the model (its type is not known offline yet)"
    kind = arch.config.model_type
    targets = DEFAULTS.get(kind)
    return f"{', '.join(targets)} (peft's default for {kind})" if targets else f"none known to peft for {kind}"


def duration(seconds: float) -> str:
    """Seconds for people.

    >>> duration(42.0), duration(3000.0), duration(7400.0)
    ('42 s', '50.0 min', '2.1 h')
    """
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min" if seconds < 6000 else f"{seconds / 3600:.1f} h"


def memory_lines(memory) -> list[str]:
    """Each arm's estimated peak memory (experiments/memory.py), or why there is none."""
    from mlgrpo.experiments.memory import summary

    if memory is None:
        return []
    if isinstance(memory, str):
        return ["", f"estimated peak memory: {memory}"]
    title, header, rows, notes = summary(memory)
    return ["", title, *table(header, rows), *(f"  ({note})" for note in notes)]


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    """Left-aligned columns, two spaces apart, indented by two.

    >>> table(["a", "bb"], [["xyz", "1"]])
    ['  a    bb', '  xyz  1']
    """
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows, strict=True)]
    return ["  " + "  ".join(str(cell).ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
            for row in [header, *rows]]
