"""The pre-flight probe (`mlgrpo validate X.yaml --probe`): will this experiment learn, and how long will it take?

TRL's users meet `frac_reward_zero_std = 1.0` only after a run; gsm-smoke spent 31 minutes with every GRPO
group flat, and gemma-270m-lora's exact_match never fired (issue 26). The probe asks the starting model first:

    the run's own train prompts (the first few per language, in the seed's data order)
    -> the starting policy as the worker loads it (dtype, tokenizer, stop_at_newline)
    -> per distinct rollout setting among the arms: G sampled completions per prompt at the arm's temperature,
       top_p, top_k and completion length (TRL's sampler settings), and one greedy completion
    -> the arm's real rewards (a control arm's too: the control changes training only)
    -> per language and reward: mean, greedy mean, spread inside groups (std, ddof 1 as TRL), share of groups
       with zero spread (no GRPO signal), firing rate (share non-zero)
    -> wall time: generation per completion and one forward + backward of a minibatch (with the arm's LoRA),
       on one thread on CPU as a worker runs; a step and a run estimated from them
    -> one-line warnings with what to change

Knows nothing about trainers' internals, YAML or MLflow.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

from mlgrpo.experiments.diff import canonical

PROMPTS_PER_LANGUAGE = 4
# A group whose reward std is at most this has zero spread: TRL's frac_reward_zero_std (std == 0, float noise aside).
FLAT = 1e-6
# A non-flat spread below this is near-constant: std scaling makes it +-1 advantages (Dr. GRPO, arXiv 2503.20783;
# gemma-270m-lora's chrF had 0.013-0.058 inside a language).
NOISE_SPREAD = 0.05
# Most groups flat: above this share, most prompts give GRPO no gradient.
MOSTLY_FLAT = 0.5
ROLLOUT_KEYS = ("num_generations", "temperature", "top_p", "top_k", "max_completion_length")


@dataclass
class Probe:
    """One rollout setting's probe: which arms share it, what was sampled, the statistics and the timing."""

    arms: list[str]
    settings: dict[str, Any]
    rows: list[dict[str, Any]] = field(default_factory=list)  # one per (language, reward)
    timing: dict[str, float] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"arms": self.arms, "settings": self.settings, "rows": self.rows, "timing": self.timing,
                "warnings": self.warnings}


def run_probe(experiment, prompts_per_language: int = PROMPTS_PER_LANGUAGE) -> list[Probe]:
    """Probe every distinct rollout setting of the experiment's arms (see the module docstring)."""
    import torch

    from mlgrpo.experiments.data import load_run_data
    from mlgrpo.models import load_policy
    from mlgrpo.runtime import configure_threads

    cuda = torch.cuda.is_available()
    if not cuda:
        configure_threads(1)  # a worker's thread count: the timing is what a run will see
    seed = experiment.seeds[0]
    train, _ = load_run_data(experiment.data, seed, eval_per_language=experiment.evaluation.per_language)
    records = [r for code in experiment.data.languages for r in [x for x in train if x["language"] == code][
        :prompts_per_language]]
    model_config = experiment.model
    model, tokenizer = load_policy(model_config.policy, dtype=model_config.dtype, tokenizer=model_config.tokenizer,
                                   stop_at_newline=model_config.stop_at_newline, device="cuda" if cuda else None)
    runs = {run.arm: run for run in experiment.plan() if run.seed == seed}
    groups: dict[str, list[str]] = {}
    for arm, run in runs.items():
        if run.algorithm.name == "sft":  # no rollouts to probe
            continue
        groups.setdefault(_rollout_key(run), []).append(arm)
    probes, samples = [], None
    for arms in groups.values():
        probe, samples = _probe_one(model, tokenizer, records, runs[arms[0]], arms, seed)
        probe.warnings += _warnings(probe, [runs[a] for a in arms])
        probes.append(probe)
    if probes:
        _time_update(model, tokenizer, samples, runs[probes[0].arms[0]], probes[0])
    return probes


def _rollout_key(run) -> str:
    training = run.effective["training"]
    rewards = {k: v for k, v in run.effective["rewards"].items() if k != "control"}
    return canonical([training.get(k) for k in ROLLOUT_KEYS] + [rewards])


def _probe_one(model, tokenizer, records: list[dict], run, arms: list[str], seed: int):
    from mlgrpo.evaluation import generation
    from mlgrpo.evaluation.policy import eval_mode, reward_rows
    from mlgrpo.rewards import build_reward_functions

    training = run.effective["training"]
    size = training["num_generations"]
    settings = {key: training.get(key) for key in ROLLOUT_KEYS}
    settings["prompts_per_language"] = max(_per_language(records).values())
    funcs, weights = build_reward_functions(run.rewards)
    prompt_ids = generation.prompt_token_ids(tokenizer, [r["prompt"] for r in records])
    with eval_mode(model):
        started = time.perf_counter()
        sampled = generation.generate(model, tokenizer, prompt_ids, max_new_tokens=training["max_completion_length"],
                                      batch_size=max(1, 64 // size), sample=True, samples=size,
                                      temperature=training["temperature"], top_p=training.get("top_p") or 1.0,
                                      top_k=training.get("top_k") or 0, seed=seed)
        seconds = time.perf_counter() - started
        greedy = generation.generate(model, tokenizer, prompt_ids, max_new_tokens=training["max_completion_length"],
                                     batch_size=64)
    repeated = [r for r in records for _ in range(size)]
    scores = reward_rows(funcs, weights, repeated, sampled.texts, sampled.ids)
    greedy_scores = reward_rows(funcs, weights, records, greedy.texts, greedy.ids)
    probe = Probe(arms, settings, timing={"generation_s_per_completion": seconds / max(1, len(repeated))})
    for code in dict.fromkeys(r["language"] for r in records):
        rows = [i for i, r in enumerate(records) if r["language"] == code]
        for key, values in scores.items():
            grouped = [values[i * size:(i + 1) * size] for i in rows]
            probe.rows.append({"language": code, "reward": key.removeprefix("reward/"),
                               **group_stats(grouped, [greedy_scores[key][i] for i in rows])})
    samples = [(prompt_ids[i // size], sampled.ids[i]) for i in range(len(repeated))]
    return probe, samples


def _per_language(records: list[dict]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in records:
        counts[r["language"]] = counts.get(r["language"], 0) + 1
    return counts


def group_stats(groups: list[list[float | None]], greedy: list[float | None]) -> dict[str, float | int | None]:
    """Statistics of one language's sampled groups and greedy scores (None: the reward did not apply).

    Hand-worked, two groups of 2: [1, 0] and [0, 0] -> mean 0.25; stds (ddof 1) 0.707 and 0 -> spread 0.354,
    zero_spread 0.5; fires 1 of 4 = 0.25.

    >>> s = group_stats([[1.0, 0.0], [0.0, 0.0]], [1.0, None])
    >>> s["mean"], round(s["spread"], 3), s["zero_spread"], s["fires"], s["greedy"], s["groups"]
    (0.25, 0.354, 0.5, 0.25, 1.0, 2)
    """
    values = [v for g in groups for v in g if v is not None]
    stds = [statistics.stdev(scored) if len(scored) > 1 else 0.0
            for g in groups if (scored := [v for v in g if v is not None])]
    scored_greedy = [v for v in greedy if v is not None]
    return {
        "mean": statistics.fmean(values) if values else None,
        "greedy": statistics.fmean(scored_greedy) if scored_greedy else None,
        "spread": statistics.fmean(stds) if stds else None,
        "language_spread": statistics.stdev(values) if len(values) > 1 else None,
        "zero_spread": sum(s <= FLAT for s in stds) / len(stds) if stds else None,
        "fires": sum(v != 0 for v in values) / len(values) if values else None,
        "groups": len(stds),
        "completions": len(values),
        "spreads": stds,
    }


def _time_update(model, tokenizer, samples, run, probe: Probe) -> None:
    """One forward + backward of a minibatch of probed completions (with the arm's LoRA), and the step and run
    estimates: a step generates its share of a rollout and updates on one minibatch."""
    import torch

    from mlgrpo.evaluation.generation import left_pad, pad_id

    update = run.effective["update"]
    batch = update["minibatch_completions"]
    rows = [list(p) + list(c) for p, c in (samples * (batch // len(samples) + 1))[:batch]]
    if run.model.lora:
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(task_type="CAUSAL_LM", **run.model.lora))
    model.train()
    input_ids, mask = left_pad(rows, pad_id(tokenizer), model.device)
    width = max(1, max(len(c) for _, c in samples))
    started = time.perf_counter()
    # As TRL's loss does: logits of the completion positions only (a 262k vocabulary makes the rest costly),
    # log-probabilities of the sampled tokens, backward.
    logits = model(input_ids=input_ids, attention_mask=mask, logits_to_keep=width + 1).logits[:, :-1]
    logprobs = torch.log_softmax(logits.float(), dim=-1).gather(-1, input_ids[:, -width:, None])
    logprobs.mean().backward()
    update_s = time.perf_counter() - started
    model.zero_grad(set_to_none=True)
    generation = probe.timing["generation_s_per_completion"] * update["rollout_completions"] / update["steps_per_rollout"]
    steps = run.training.get("max_steps", -1)
    probe.timing.update(update_s_per_minibatch=update_s, step_s=generation + update_s,
                        run_s=(generation + update_s) * steps if steps and steps > 0 else math.nan,
                        max_steps=steps, minibatch_completions=batch, threads=torch.get_num_threads())


def _warnings(probe: Probe, runs: list) -> list[str]:
    """One line per problem, with what to change."""
    out = []
    rewards = [r for r in dict.fromkeys(row["reward"] for row in probe.rows) if r != "total"]
    for reward in rewards:
        rows = [row for row in probe.rows if row["reward"] == reward and row["fires"] is not None]
        silent = [row["language"] for row in rows if row["fires"] == 0]
        total = sum(row["completions"] for row in rows)
        if rows and len(silent) == len(rows):
            out.append(f"reward {reward!r} never fired in {total} sampled completions (any language): it gives no "
                       "signal; use a reward with partial credit (chrf), easier data, few-shot prompts "
                       "(data.prompt_style: fewshot) or a higher temperature")
        elif silent:
            out.append(f"reward {reward!r} never fired in {', '.join(silent)}: those languages get no signal from it")
    totals = [row for row in probe.rows if row["reward"] == "total" and row["groups"]]
    groups = sum(row["groups"] for row in totals)
    flat = sum(row["zero_spread"] * row["groups"] for row in totals)
    if groups and flat / groups > MOSTLY_FLAT:
        per = ", ".join(f"{row['language']} {row['zero_spread']:.0%}" for row in totals)
        out.append(f"most groups are flat: {flat / groups:.0%} of {groups} groups have zero spread in the total reward "
                   f"({per}), so those prompts give GRPO no gradient; raise training.temperature or num_generations, "
                   "or use a reward with partial credit")
    spreads = {"group": [s for row in totals for s in row["spreads"] if s > FLAT],
               "language": [row["language_spread"] for row in totals if (row["language_spread"] or 0) > FLAT]}
    for run in runs:
        scope = run.algorithm.advantage.scale_scope
        if scope in spreads and spreads[scope] and statistics.median(spreads[scope]) < NOISE_SPREAD:
            out.append(f"arm {run.arm!r}: std_scope {scope} divides a near-constant reward (median spread inside a "
                       f"{scope} {statistics.median(spreads[scope]):.3f}) by its own spread, making +-1 advantages of "
                       "noise (Dr. GRPO, arXiv 2503.20783); set algorithm.advantage.std_scope: batch or none")
    return out
