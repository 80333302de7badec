"""evaluate_policy: generate on held-out per-language records, score everything, return an EvalReport.

    completions (greedy) -> text metrics (registry) -> length in tokens -> rewards (mean per reward
    function, and TRL's weighted total) -> reward model -> KL to the reference -> safety classifier
    -> pass@1 / pass@k from k sampled completions -> per-language means -> aggregates, samples

pass@k is named "pass_at_<k>": MLflow accepts no "@" in a metric name.

The training runner calls it at step 0, every N steps and at the end; `mlgrpo eval` calls it once.
Scores that cannot be measured in a run (no reference model, no classifier, no samples) are listed in
`not_measured`, never reported as 0. The model is put in eval mode and given back in the mode it had.
Knows nothing about trainers, advantages or MLflow.
"""

from __future__ import annotations

import contextlib
import math
import random
import time
from collections.abc import Callable, Iterator, Sequence

from mlgrpo.errors import UserError
from mlgrpo.evaluation.compute import evaluate_texts, mean_by_language
from mlgrpo.evaluation.inputs import answers_of, language_of, rows_by_language
from mlgrpo.evaluation.overlap import exact_match
from mlgrpo.evaluation.report import EvalReport

# Which way is better for the scores evaluate_policy adds to the text metrics (None: neither, so the
# aggregates have no "worst"); rewards and pass@k are "higher".
EXTRA_DIRECTIONS = {"length_tokens": None, "kl_ref": "lower", "reward_model": "higher", "toxicity": "lower",
                    "toxic_rate": "lower", "pass_at_1": "higher"}


@contextlib.contextmanager
def eval_mode(*models) -> Iterator[None]:
    """Every model in eval mode inside the block, and back in its previous mode after it (even on error)."""
    present = [m for m in models if m is not None]
    modes = [m.training for m in present]
    try:
        for model in present:
            model.eval()
        yield
    finally:
        for model, mode in zip(present, modes):
            model.train(mode)


def _check(records: Sequence[dict], max_new_tokens: int, batch_size: int, sampled_k: int, temperature: float,
           reward_funcs: Sequence, reward_weights: Sequence[float], samples_per_language: int) -> None:
    if not records:
        raise UserError("no records to evaluate; give at least one record with a prompt")
    missing = [i for i, r in enumerate(records) if r.get("prompt") in (None, "", [])]
    if missing:
        raise UserError(f"{len(missing)} record(s) have no prompt (first: row {missing[0]}, "
                        f"id {records[missing[0]].get('id')!r})")
    for name, value, low in (("max_new_tokens", max_new_tokens, 1), ("batch_size", batch_size, 1),
                             ("sampled_k", sampled_k, 0), ("samples_per_language", samples_per_language, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise UserError(f"{name} must be a whole number of at least {low}, got {value!r}")
    if sampled_k and not (isinstance(temperature, (int, float)) and math.isfinite(temperature) and temperature > 0):
        raise UserError(f"temperature must be a positive number when sampling (sampled_k={sampled_k}), "
                        f"got {temperature!r}")
    if reward_weights and len(reward_weights) != len(reward_funcs):
        raise UserError(f"{len(reward_weights)} reward weights for {len(reward_funcs)} reward functions; give one "
                        "weight per function, or none (each weighs 1.0)")


def reward_rows(reward_funcs: Sequence[Callable], reward_weights: Sequence[float], records: Sequence[dict],
                completions: list[str], completion_ids: list[list[int]]) -> dict[str, list[float | None]]:
    """{"reward/<name>": per-row rewards, "reward/total": TRL's weighted sum}, called as TRL calls them
    (prompts, completions, completion_ids, trainer_state=None and every other record column).
    A NaN reward counts as not applicable (None), as TRL's nansum treats it."""
    from mlgrpo.rewards import weighted_total

    keys = dict.fromkeys(key for r in records for key in r if key != "prompt")
    columns = {key: [r.get(key) for r in records] for key in keys}
    prompts = [r["prompt"] for r in records]
    rows: dict[str, list[float | None]] = {}
    for index, func in enumerate(reward_funcs):
        name = getattr(func, "__name__", f"reward_{index}")
        values = func(prompts=prompts, completions=completions, completion_ids=completion_ids, trainer_state=None,
                      **columns)
        if len(values) != len(records):
            raise UserError(f"reward function {name!r} returned {len(values)} values for {len(records)} completions")
        rows[f"reward/{name}"] = [None if v is None or not math.isfinite(v) else float(v) for v in values]
    if rows:
        weights = list(reward_weights) or [1.0] * len(rows)
        rows["reward/total"] = weighted_total(list(rows.values()), weights)
    return rows


def pass_at_k_rows(sampled: list[str], records: Sequence[dict], k: int) -> dict[str, list[float | None]]:
    """pass_at_1 (share of a prompt's k samples that are exact matches) and pass_at_<k> (any of them is).

    With n = k samples, Chen et al. (2021)'s unbiased estimator 1 - C(n-c, k) / C(n, k) is exactly
    "any of them", and its k = 1 case is c / n. Hand-worked, k = 4, one correct sample: 0.25 and 1.0.
    """
    hits = exact_match(sampled, [r for r in records for _ in range(k)])
    pass_1: list[float | None] = []
    pass_k: list[float | None] = []
    for i in range(len(records)):
        row = hits[i * k:(i + 1) * k]
        applies = row[0] is not None  # None: the row has no answers
        pass_1.append(sum(row) / k if applies else None)
        pass_k.append(float(any(row)) if applies else None)
    return {"pass_at_1": pass_1} if k == 1 else {"pass_at_1": pass_1, f"pass_at_{k}": pass_k}


def pick_samples(records: Sequence[dict], per_language: int, seed: int) -> list[int]:
    """Row indices kept as samples: up to `per_language` per language, drawn with `seed`, in row order.

    The same records and seed give the same rows at every evaluation, so a report can follow the
    same prompts from step 0 to the end.
    """
    chosen: list[int] = []
    for lang, rows in rows_by_language(records).items():
        chosen += random.Random(f"{seed}/{lang}").sample(rows, min(per_language, len(rows)))
    return sorted(chosen)


def sample_rows(records: Sequence[dict], completions: list[str], rows: dict[str, list[float | None]],
                picked: list[int], sampled: list[str] | None, k: int) -> list[dict]:
    """One dict per picked row: id, language, prompt, completion, answers, and its per-row scores."""
    samples = []
    for i in picked:
        record = records[i]
        sample = {"id": record.get("id"), "language": language_of(record), "prompt": record["prompt"],
                  "completion": completions[i], "answers": answers_of(record)}
        sample.update({name: values[i] for name, values in rows.items()})
        if sampled is not None:
            sample["sampled"] = sampled[i * k:(i + 1) * k]
        samples.append(sample)
    return samples


def evaluate_policy(model, tokenizer, records: list[dict], *, metrics: Sequence[str] | None = None,
                    max_new_tokens: int = 32, batch_size: int = 64, sampled_k: int = 0,
                    reward_funcs: Sequence[Callable] = (), reward_weights: Sequence[float] = (),
                    reference_model=None, safety_classifier: str | None = None, samples_per_language: int = 8,
                    seed: int = 0, reward_model: str | None = None, safety_label: str | None = None,
                    temperature: float = 1.0) -> EvalReport:
    """Generate greedily for every record (and `sampled_k` samples when > 0), score, and report.

    records: prompt, answers, reference, language, task (+ extras, passed to reward functions).
    metrics: text metrics of the registry to compute (default: all).
    reward_funcs / reward_weights: TRL-style functions, reported as reward/<name> and reward/total.
    reward_model: a local reward-model folder (mlgrpo.rewards.reward_model), reported as reward_model.
    reference_model: reported as kl_ref, KL(policy || reference) per completion token.
    safety_classifier / safety_label: a local classifier folder (see mlgrpo.evaluation.safety).
    temperature: of the `sampled_k` samples (pass@k); greedy completions are scored by every metric.
    """
    started = time.perf_counter()
    records = list(records)
    _check(records, max_new_tokens, batch_size, sampled_k, temperature, reward_funcs, reward_weights,
           samples_per_language)
    greedy, sampled, kl = _generate(model, tokenizer, records, reference_model, max_new_tokens=max_new_tokens,
                                    batch_size=batch_size, sampled_k=sampled_k, temperature=temperature, seed=seed)
    text = evaluate_texts(greedy.texts, records, metrics)
    rows: dict[str, list[float | None]] = {**text.rows, "length_tokens": [float(n) for n in greedy.lengths()]}
    rows.update(reward_rows(reward_funcs, reward_weights, records, text.predictions, greedy.ids))
    device = str(model.device)
    if reward_model is not None:
        from mlgrpo.rewards.model import reward_model as score

        rows["reward_model"] = score([r["prompt"] for r in records], text.predictions, path=reward_model,
                                     device=device)
    if kl is not None:
        rows["kl_ref"] = kl
    if safety_classifier is not None:
        from mlgrpo.evaluation.safety import THRESHOLD, unsafe_probabilities

        rows["toxicity"] = unsafe_probabilities(text.predictions, safety_classifier, label=safety_label, device=device)
        rows["toxic_rate"] = [None if p is None else float(p >= THRESHOLD) for p in rows["toxicity"]]
    if sampled is not None:
        rows.update(pass_at_k_rows(sampled, records, sampled_k))
    settings = {"max_new_tokens": max_new_tokens, "batch_size": batch_size, "sampled_k": sampled_k,
                "temperature": temperature if sampled_k else None, "seed": seed,
                "samples_per_language": samples_per_language, "metrics": list(text.directions),
                "reward_functions": [k.removeprefix("reward/") for k in rows
                                     if k.startswith("reward/") and k != "reward/total"],
                "reward_model": reward_model, "reference_model": reference_model is not None,
                "safety_classifier": safety_classifier}
    return _report(records, text, rows, sampled, sampled_k, started, settings)


def _generate(model, tokenizer, records, reference_model, *, max_new_tokens, batch_size, sampled_k, temperature,
              seed):
    """(greedy Completions, sampled texts or None, KL per completion or None), in eval mode, and with the
    tokenizer's padding side given back as it was."""
    from mlgrpo.evaluation import generation

    padding_side = getattr(tokenizer, "padding_side", None)
    sampled = kl = None
    try:
        with eval_mode(model, reference_model):
            prompt_ids = generation.prompt_token_ids(tokenizer, [r["prompt"] for r in records])
            greedy = generation.generate(model, tokenizer, prompt_ids, max_new_tokens=max_new_tokens,
                                         batch_size=batch_size)
            if sampled_k:
                sampled = generation.generate(model, tokenizer, prompt_ids, max_new_tokens=max_new_tokens,
                                              batch_size=max(1, batch_size // sampled_k), sample=True,
                                              samples=sampled_k, temperature=temperature, seed=seed).texts
            if reference_model is not None:
                kl = generation.completion_kl(model, reference_model, prompt_ids, greedy.ids,
                                              pad_id=generation.pad_id(tokenizer))
    finally:
        if padding_side is not None:
            tokenizer.padding_side = padding_side
    return greedy, sampled, kl


def _report(records, text, rows, sampled, k, started, settings) -> EvalReport:
    groups = rows_by_language(records)
    per_language = {lang: dict(scores) for lang, scores in text.per_language.items()}
    directions = dict(text.directions)
    for name, values in rows.items():
        if name in text.rows:
            continue
        directions[name] = EXTRA_DIRECTIONS.get(name, "higher")  # rewards and pass@k: higher is better
        for lang, value in mean_by_language(values, groups).items():
            per_language[lang][name] = value
    not_measured = [name for name in directions if not any(name in s for s in per_language.values())]
    absent = {"kl_ref": "kl_ref" not in rows, "reward_model": "reward_model" not in rows,
              "toxicity": "toxicity" not in rows, "toxic_rate": "toxic_rate" not in rows,
              "pass_at_k": sampled is None, "reward": not any(n.startswith("reward/") for n in rows)}
    not_measured += [name for name, is_absent in absent.items() if is_absent]
    picked = pick_samples(records, settings["samples_per_language"], settings["seed"])
    return EvalReport.build(
        per_language, directions, samples=sample_rows(records, text.predictions, rows, picked, sampled, k),
        not_measured=not_measured, tokenizers=text.tokenizers, seconds=time.perf_counter() - started,
        notes=text.notes, rows={lang: len(r) for lang, r in groups.items()}, settings=settings,
        items=item_scores(records, rows))


def item_scores(records: Sequence[dict], rows: dict[str, list[float | None]]) -> dict[str, list]:
    """Every row's id (its position when it has none), language and per-row scores, column-wise."""
    items: dict[str, list] = {"id": [str(r.get("id", i)) for i, r in enumerate(records)],
                              "language": [language_of(r) for r in records]}
    items.update({name: list(values) for name, values in rows.items()})
    return items

