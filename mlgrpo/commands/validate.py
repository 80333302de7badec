"""`mlgrpo validate EXPERIMENT.yaml [--json]`: check an experiment file and print its plan.

    runs (arm x seed, with run names and config hashes), every setting in which the arms differ in what
    they train with, defaults included (one column per arm), the update schedule of each arm, the rows
    per language (train / held-out eval), each arm's estimated peak memory on this machine's device
    (experiments/memory.py), warnings, notes, and "OK"

Nothing trains and no weights are loaded (the memory estimate reads configs and the tokenizer); the data
is read (suites take a second). The work is in mlgrpo.experiments; this module parses arguments and formats.
"""

from __future__ import annotations

import argparse
import json


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
    parser.set_defaults(handler=validate)


def validate(args: argparse.Namespace) -> int:
    from mlgrpo.experiments import load_experiment

    from mlgrpo.experiments.memory import plan_memory

    experiment = load_experiment(args.experiment)
    from mlgrpo.errors import UserError
    from mlgrpo.experiments.cluster import check_shared_output
    from mlgrpo.experiments.runner import placement_lines

    check_shared_output(experiment)
    try:
        placement = placement_lines(experiment, experiment.plan(), experiment.run_settings.workers)
    except UserError as exc:  # a file for a bigger machine is still a valid file; `mlgrpo run` refuses here
        placement = [f"placement: not on this machine: {exc}"]
    memory = plan_memory(experiment)
    if args.json:
        print(json.dumps({**plan_json(experiment, memory), "placement": placement}, ensure_ascii=False))
    else:
        print(render(experiment, memory).removesuffix("OK") + "\n".join(placement) + "\n\nOK")
    return 0


def plan_json(experiment, memory=None) -> dict:
    from mlgrpo.experiments.diff import ABSENT

    return {
        "name": experiment.name,
        "path": str(experiment.path),
        "runs": [{"run_name": r.run_name, "arm": r.arm, "seed": r.seed, "algorithm": r.algorithm.name,
                  "config_hash": r.config_hash} for r in experiment.plan()],
        "differences": [{"key": key, "values": {arm: None if v is ABSENT else v for arm, v in values.items()}}
                        for key, values in experiment.differences()],
        "schedule": {arm: experiment.arm_configs[arm].effective["update"] for arm in experiment.arms},
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
