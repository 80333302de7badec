"""Benchmark: a 100,000-row dataset in 50 languages through prepare, inspect and the language sampler, and
what logging per-language metrics every step costs a real training step.

The dataset is made from package data in each language: whole numbers 0-999 spelled out (CLDR RBNF /
num2words, as the numbers suite builds them) and CLDR territory, language and currency names (babel),
each a prompt whose reference is the number or the code; past a language's ~2,000 distinct texts, two
of them are joined. Languages are Zipf-sized (share ~ rank ** -0.8: about 15,000 English rows, 670
Telugu). 10% of the rows leave out `language`, so language ID runs on them (over the 50 codes as
candidates), and 50 rows are broken (empty prompt, bad JSON, a number as prompt, no prompt) so that
the row accounting has something to count. Each operation runs in its own process, so that its peak
RSS is its own; the CLI rows are `mlgrpo data ...` end to end, imports included.

Tracking: tiny-model GRPO steps (MultilingualGRPOTrainer, balanced sampler over the same dataset) in
three arms, one process each, alternated round after round: no per-step logging (logging_steps far
away), logging every step without a store, and logging every step through TrackingCallback to a local
SQLite MLflow store (buffered, sent in batches by a background thread).

    OMP_NUM_THREADS=1 .venv/bin/python -m bench.bench_load [--rows 100000] [--languages 50] [--rounds 3]
        [--skip-training] [--no-write]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

# In rank order (rough share of web text): the Zipf sizes follow it. Every one has CLDR names in babel,
# number spell-out rules in unicode-rbnf or num2words, and a lingua model for language ID.
LANGUAGES = tuple(
    "en zh es ru de fr ja pt it ar pl nl tr fa ko vi id uk cs sv hu el ro he th fi da no bg hi "
    "sk bn lt sr ca sl lv et mk is ka hy az kk be sq af sw ta te".split()
)
ZIPF = 0.8
UNLABELED = 0.1  # share of rows without `language`
ROWS_PER_BROKEN = 2000  # one broken row per this many (50 in 100,000)
G, BATCH = 8, 64  # sampler: completions per prompt, prompts per generation batch (as bench_sampling)
FIRST_DRAWS = 10_000  # indices drawn from a fresh sampler
# Goals for 100,000 rows on a shared 2-core machine: a user waits a minute at most for prepare or
# inspect; the sampler must not show up next to a training step (bench_sampling's 1 s per million).
GOAL_DATA_S, GOAL_SAMPLER_S, GOAL_EPOCH_S_PER_M, GOAL_TRACKING = 60.0, 1.0, 1.0, 0.05
SAMPLERS = ("balanced", "temperature", "oversample")
# Training steps: G x prompts completions of NEW_TOKENS tokens, on the quickstart's small tiny model.
TRAIN_G, TRAIN_PROMPTS, NEW_TOKENS, WARMUP, STEPS = 8, 8, 16, 3, 20
ARMS = ("no per-step logging", "logging every step, no store", "logging every step, TrackingCallback to SQLite")


# ---- the dataset -----------------------------------------------------------------------------------


def language_pool(code: str) -> list[tuple[str, str, str]]:
    """(task, prompt, reference) from package data in `code`, one per distinct prompt text."""
    from babel import Locale

    from mlgrpo.data.suites import numbers

    locale = Locale.parse(code)
    pool = [("numbers", item.answers[0], item.text) for item in numbers.build(code).items]
    for task, names in (("territories", locale.territories), ("languages", locale.languages),
                        ("currencies", locale.currencies)):
        pool += [(task, name, key) for key, name in sorted(names.items())]
    first: dict[str, tuple[str, str, str]] = {}
    for task, prompt, ref in pool:
        first.setdefault(prompt, (task, prompt, ref))
    return list(first.values())


def language_sizes(rows: int, languages: tuple[str, ...]) -> dict[str, int]:
    """Rows per language, Zipf-shaped by rank, summing to `rows` (at least one each)."""
    weights = [(rank + 1) ** -ZIPF for rank in range(len(languages))]
    sizes = [max(1, int(rows * w / sum(weights))) for w in weights]
    sizes[0] += rows - sum(sizes)
    return dict(zip(languages, sizes))


def language_rows(code: str, n: int, rng: random.Random) -> list[dict]:
    """`n` rows in `code`: the pool shuffled, then distinct pairs of pool texts once the pool runs out."""
    pool = language_pool(code)
    rng.shuffle(pool)
    size = len(pool)
    picked = pool[:n]
    for i in range(n - len(picked)):  # pair i joins item i % size with a later one: distinct for i < size ** 2
        (_, p1, r1), (_, p2, r2) = pool[i % size], pool[(i % size + 1 + i // size) % size]
        picked.append(("pairs", f"{p1}, {p2}", f"{r1}, {r2}"))
    return [{"prompt": p, "reference": r, "language": code, "task": t} for t, p, r in picked]


BROKEN = ('{"prompt": "", "reference": "x", "language": "en"}', '{"prompt": "unterminated',
          '{"prompt": 42, "reference": "42"}', '{"question": "no prompt field", "reference": "x"}')


def dataset_lines(rows: int, languages: tuple[str, ...], seed: int = 0) -> tuple[list[str], list[str | None], set[int]]:
    """(JSONL lines of the benchmark dataset, the language each line was made in (None: a broken line),
    the 1-based numbers of the lines that leave `language` out)."""
    rng = random.Random(seed)
    broken = max(len(BROKEN), rows // ROWS_PER_BROKEN)
    records = [r for code, n in language_sizes(rows - broken, languages).items() for r in language_rows(code, n, rng)]
    rng.shuffle(records)
    truth: list[str | None] = [r["language"] for r in records]
    unlabeled = [False] * len(records)
    for i in rng.sample(range(len(records)), round(UNLABELED * len(records))):
        del records[i]["language"]
        unlabeled[i] = True
    lines = [json.dumps(r, ensure_ascii=False) for r in records]
    for k, at in enumerate(sorted(rng.sample(range(rows), broken))):
        lines.insert(at, BROKEN[k % len(BROKEN)])
        truth.insert(at, None)
        unlabeled.insert(at, False)
    return lines, truth, {i + 1 for i, flag in enumerate(unlabeled) if flag}


# ---- timed operations (in this process) ------------------------------------------------------------


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def time_prepare(data: Path, out: Path, candidates: list[str]) -> dict:
    from mlgrpo.data.prepare import prepare

    start = time.perf_counter()
    summary = prepare(data, out, candidates=candidates)
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "written": summary.written, "dropped": summary.log.dropped,
            "problems": len(summary.log.problems), "identified": summary.identified,
            "languages": len(summary.languages)}


def time_inspect(data: Path, candidates: list[str], as_json: bool) -> dict:
    from mlgrpo.data.inspect import inspect_source, render_text

    start = time.perf_counter()
    report = inspect_source(data, candidates=candidates)
    text = json.dumps(report, ensure_ascii=False) if as_json else render_text(report)
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "usable": report["rows"]["usable"], "dropped": report["rows"]["dropped"],
            "read": report["rows"]["read"], "chars": len(text)}


def sampler_config(name: str, labels: list[str]):
    from mlgrpo.sampling import SamplerConfig

    if name == "temperature":
        return SamplerConfig(name="temperature", alpha=0.3)
    if name == "oversample":  # the smallest language x4, at most 3 expected draws of a row per epoch
        smallest = min(Counter(labels).items(), key=lambda kv: kv[1])[0]
        return SamplerConfig(name="oversample", oversample={smallest: 4.0}, max_repeats_per_item=3)
    return SamplerConfig(name=name)


def time_sampler(labels: list[str], name: str) -> dict:
    """Seconds to build a LanguageSampler, to draw its first FIRST_DRAWS indices, and a whole next epoch."""
    from mlgrpo.sampling import LanguageSampler

    config = sampler_config(name, labels)
    start = time.perf_counter()
    sampler = LanguageSampler(labels, config, mini_repeat_count=G, batch_size=BATCH)
    built = time.perf_counter()
    first = list(itertools.islice(iter(sampler), FIRST_DRAWS))
    drawn = time.perf_counter()
    epoch = list(sampler)
    end = time.perf_counter()
    assert len(first) == FIRST_DRAWS and len(epoch) == len(sampler)
    return {"build_s": built - start, "first_s": drawn - built, "epoch_s": end - drawn, "indices": len(epoch)}


def prepared_languages(path: Path) -> list[str]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line)["language"] for line in handle]


def identified_accuracy(out: Path, truth: list[str | None], unlabeled_lines: set[int]) -> tuple[int, int, int]:
    """(right, und, asked) over the rows whose language was identified: against the language each was made in."""
    right = und = asked = 0
    with out.open(encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            row = int(record["id"].rsplit(":", 1)[1])  # 1-based line number
            if row in unlabeled_lines:
                asked += 1
                und += record["language"] == "und"
                right += record["language"] == truth[row - 1]
    return right, und, asked


# ---- processes ---------------------------------------------------------------------------------------


def _env() -> dict:
    return {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def child(op: str, *args: str) -> dict:
    """Run `--one op args` in a fresh process; its JSON answer, with that process's peak RSS."""
    done = subprocess.run([sys.executable, "-m", "bench.bench_load", "--one", op, *args], capture_output=True,
                          text=True, env=_env())
    if done.returncode:
        raise RuntimeError(f"--one {op} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def time_cli(args: list[str], stdout: Path) -> dict:
    """Wall seconds and peak RSS of `mlgrpo ARGS` end to end (interpreter start and imports included)."""
    exe = Path(sys.executable).with_name("mlgrpo")
    command = [str(exe)] if exe.exists() else [sys.executable, "-m", "mlgrpo.cli"]
    with stdout.open("w", encoding="utf-8") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        process = subprocess.Popen(command + args, stdout=out, stderr=err, env=_env())
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode:
            err.seek(0)
            raise RuntimeError(f"mlgrpo {' '.join(args)} exited {process.returncode}:\n{err.read()[-3000:]}")
    return {"seconds": seconds, "peak_rss_mb": usage.ru_maxrss / 1024}


def one(op: str, args: list[str]) -> dict:
    """What a `--one` child does; the data operations take DATA [OUT] and the candidate codes."""
    if op == "prepare":
        result = time_prepare(Path(args[0]), Path(args[1]), args[2].split(","))
    elif op in ("inspect", "inspect-json"):
        result = time_inspect(Path(args[0]), args[1].split(","), op == "inspect-json")
    elif op == "sampler":
        result = time_sampler(prepared_languages(Path(args[0])), args[1])
    elif op == "train":
        result = train_arm(int(args[0]), Path(args[1]), Path(args[2]))
    else:
        raise ValueError(f"unknown --one {op!r}")
    return {**result, "peak_rss_mb": peak_rss_mb()}


# ---- training steps with and without per-step tracking ------------------------------------------------


def thread_cpu_s(prefix: str) -> float:
    """CPU seconds used so far by this process's live threads whose name starts with `prefix` (Linux /proc)."""
    import threading

    total = 0
    for thread in threading.enumerate():
        if thread.name.startswith(prefix) and thread.native_id is not None:
            fields = Path(f"/proc/self/task/{thread.native_id}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def helper_cpu_s() -> float:
    """CPU seconds used so far by the trainer's language-consistency helper process (0 before it starts)."""
    from mlgrpo.rewards.helper import service

    pid = service().pid
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def helper_peak_rss_mb() -> float:
    """Peak resident memory of the language-consistency helper process (VmHWM), 0 when none runs."""
    from mlgrpo.rewards.helper import service

    pid = service().pid
    if pid is None:
        return 0.0
    line = next(x for x in Path(f"/proc/{pid}/status").read_text().splitlines() if x.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024


def train_arm(arm: int, prepared: Path, folder: Path) -> dict:
    """WARMUP + STEPS tiny-model GRPO steps on the prepared dataset, in ARMS[arm]; step times after warm-up."""
    import torch

    torch.set_num_threads(1)
    from datasets import Dataset
    from transformers import TrainerCallback
    from transformers.trainer_callback import PrinterCallback, ProgressCallback
    from trl import GRPOConfig

    from mlgrpo.models.architecture import init_model
    from mlgrpo.models.settings import TinySettings
    from mlgrpo.models.tokenizer import train_tokenizer
    from mlgrpo.sampling import SamplerConfig
    from mlgrpo.tracking import FlushPolicy, Tracker, TrackingCallback, tracked_metrics
    from mlgrpo.trainers import MultilingualGRPOTrainer
    from mlgrpo.rewards.helper import service as helper_service

    with prepared.open(encoding="utf-8") as handle:
        rows = [{k: r[k] for k in ("prompt", "answers", "language")} for r in map(json.loads, handle)]
    sample = rows[:: max(1, len(rows) // 5000)]
    tokenizer = train_tokenizer([r["prompt"] + " " + r["answers"][0] for r in sample], 1024)
    # The quickstart's small preset; room for the longest prompts in bytes (joined Thai or Tamil names).
    model = init_model(TinySettings(hidden_size=128, num_layers=2, intermediate_size=512, max_positions=512), tokenizer)

    def reward(completions, answers, **_):
        return [float(c.strip() in a) + len(c) / 100 for c, a in zip(completions, answers)]

    class Clock(TrainerCallback):
        def __init__(self):
            self.ends: list[tuple[float, float]] = []  # (wall, process CPU) at each step's end
            self.consistency_cpu = 0.0  # CPU of the language-consistency helper at the end of the warm-up

        def on_step_end(self, args, state, control, **kwargs):
            self.ends.append((time.perf_counter(), time.process_time()))
            if len(self.ends) == WARMUP:
                self.consistency_cpu = helper_cpu_s()

    class TimedTracking(TrackingCallback):
        """TrackingCallback, timing its work on the training thread and counting the keys it logs."""

        seconds, calls, keys = 0.0, 0, 0

        def on_log(self, args, state, control, logs=None, **kwargs):
            start = time.perf_counter()
            super().on_log(args, state, control, logs=logs, **kwargs)
            self.seconds += time.perf_counter() - start
            self.calls += 1
            self.keys += len(tracked_metrics(logs or {}, self.languages))

    callbacks: list = [Clock()]
    handle = None
    if arm == 2:
        tracker = Tracker.open(f"sqlite:///{folder}/mlflow.db", "bench-load", policy=FlushPolicy(),
                               outbox_dir=folder / "outbox")
        handle = tracker.child_run(tracker.start_parent("bench-load"), {"bench": "load"}, "tracked")[0]
        callbacks.append(TimedTracking(handle, sorted({r["language"] for r in rows})))
    args = GRPOConfig(output_dir=str(folder / "out"), use_cpu=True, bf16=False, fp16=False, report_to="none",
                      num_generations=TRAIN_G, per_device_train_batch_size=TRAIN_G * TRAIN_PROMPTS,
                      max_completion_length=NEW_TOKENS, max_steps=WARMUP + STEPS, save_strategy="no", seed=0,
                      logging_steps=1 if arm else 10**6, disable_tqdm=True, learning_rate=1e-5)
    trainer = MultilingualGRPOTrainer(model=model, reward_funcs=[reward], args=args, train_dataset=Dataset.from_list(rows),
                                      processing_class=tokenizer, sampler=SamplerConfig(name="balanced"),
                                      callbacks=callbacks)
    for printer in (PrinterCallback, ProgressCallback):  # as the runner does: no dict printed per step
        trainer.remove_callback(printer)
    collect, waits = trainer._collect_consistency, []

    def timed_collect():  # the training thread waiting for the background language consistency, at each log
        start = time.perf_counter()
        collect()
        waits.append(time.perf_counter() - start)

    trainer._collect_consistency = timed_collect
    # The helper loads the identifier's models (lingua: ~5 s of CPU for these 50 languages) while training
    # starts; a one-off, waited for here so that it falls on no arm's timed steps.
    helper_service().load(trainer._candidates).result()
    trainer.train()
    ends = callbacks[0].ends
    logged = waits[WARMUP:WARMUP + STEPS] or [0.0]  # arm 0 logs only at the end: nothing measured
    result = {"step_s": [b[0] - a[0] for a, b in zip(ends[WARMUP - 1:], ends[WARMUP:])],
              "cpu_s_per_step": (ends[-1][1] - ends[WARMUP - 1][1]) / STEPS,
              "consistency_cpu_ms": (helper_cpu_s() - callbacks[0].consistency_cpu) / STEPS * 1000,
              "consistency_ms": statistics.median(logged) * 1000, "consistency_mean_ms": statistics.mean(logged) * 1000,
              "helper_peak_rss_mb": helper_peak_rss_mb()}
    if handle is not None:
        timed = callbacks[1]
        sender = thread_cpu_s("mlgrpo-outbox")
        cpu, start = time.process_time(), time.perf_counter()
        handle.finish()
        result.update(log_ms=timed.seconds / timed.calls * 1000, keys=timed.keys / timed.calls,
                      store_cpu_ms=(sender + time.process_time() - cpu) / timed.calls * 1000,
                      finish_s=time.perf_counter() - start)
    return result


def measure_training(prepared: Path, rounds: int) -> list[list[dict]]:
    """results[round][arm], the arms in turns within each round so that load drift falls on all of them."""
    results = []
    for _ in range(rounds):
        row = []
        for arm in range(len(ARMS)):
            with tempfile.TemporaryDirectory(prefix="bench-load-train-") as folder:
                row.append(child("train", str(arm), str(prepared), folder))
        results.append(row)
    return results


def overhead(results: list[list[dict]], arm: int, base: int) -> float:
    """Median over rounds of (median step of `arm`) / (median step of `base`) - 1, within each round."""
    return statistics.median(statistics.median(r[arm]["step_s"]) / statistics.median(r[base]["step_s"]) - 1
                             for r in results)


def paired_overhead(results: list[list[dict]], arm: int, base: int) -> tuple[float, float, float, int]:
    """(median, lower quartile, upper quartile, pairs) of step i of `arm` / step i of `base` - 1, over every
    timed step of every round. The same seed gives every arm the same batches and completions (logging
    draws no random numbers), so step i is the same work in each arm: pairing by step removes the
    spread of the work between steps and leaves the machine's."""
    ratios = sorted(a / b - 1 for r in results for a, b in zip(r[arm]["step_s"], r[base]["step_s"]))
    quartiles = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [ratios[0]] * 3
    return statistics.median(ratios), quartiles[0], quartiles[2], len(ratios)


def training_report(results: list[list[dict]]) -> tuple[str, dict[str, float]]:
    """(markdown table, summary): step time overheads against arm 0, and the measured costs of logging."""
    from bench._report import markdown_table

    def median_of_rounds(arm: int, key: str, per_round=statistics.median) -> float:
        return statistics.median(per_round(r[arm][key]) if per_round else r[arm][key] for r in results)

    tracked = [r[2] for r in results]
    rows = []
    for arm, name in enumerate(ARMS):
        mean = (lambda key, arm=arm: statistics.mean(r[arm][key] for r in results)) if arm == 2 else None
        rows.append([name, f"{median_of_rounds(arm, 'step_s') * 1000:.0f}",
                     f"{median_of_rounds(arm, 'cpu_s_per_step', None) * 1000:.0f}",
                     f"{overhead(results, arm, 0) * 100:+.1f}%",
                     f"{median_of_rounds(arm, 'consistency_cpu_ms', None):.0f}",
                     f"{median_of_rounds(arm, 'consistency_ms', None):.1f} / "
                     f"{median_of_rounds(arm, 'consistency_mean_ms', None):.1f}",
                     f"{mean('log_ms'):.2f}" if mean else "-", f"{mean('store_cpu_ms'):.1f}" if mean else "-",
                     f"{mean('keys'):.0f}" if mean else "-", f"{median_of_rounds(arm, 'peak_rss_mb', None):.0f}",
                     f"{median_of_rounds(arm, 'helper_peak_rss_mb', None):.0f}"])
    step_ms = median_of_rounds(2, "step_s") * 1000
    summary = {
        "wall": overhead(results, 2, 0),
        "paired": paired_overhead(results, 2, 0),
        "rounds": [statistics.median(r[2]["step_s"]) / statistics.median(r[0]["step_s"]) - 1 for r in results],
        "mlflow": statistics.mean(t["log_ms"] + t["store_cpu_ms"] for t in tracked) / step_ms,
        "consistency": median_of_rounds(2, "consistency_ms", None) / step_ms,
        "consistency_cpu": median_of_rounds(2, "consistency_cpu_ms", None) / step_ms,
    }
    headers = ["arm", "median step ms", "CPU ms/step", "step time vs no per-step logging (median of rounds)",
               "language consistency: CPU ms/step (helper process)",
               "language consistency: ms the training thread waits for it (median / mean)",
               "ms in on_log (training thread)",
               "store CPU ms/step (sender thread + final flush)", "metric keys/step", "peak RSS MiB (training process)",
               "peak RSS MiB (helper: language ID models)"]
    return markdown_table(headers, rows), summary


# ---- the data operations, end to end -------------------------------------------------------------------


def _met(ok: bool) -> str:
    return "met" if ok else "NOT met"


def measure_data(rows: int, languages: tuple[str, ...], folder: Path) -> tuple[list[list], list[str], Path]:
    """(table rows, accounting lines, the prepared file) for a dataset of `rows` rows in `languages`."""
    import re

    start = time.perf_counter()
    lines, truth, unlabeled = dataset_lines(rows, languages)
    data = folder / "load.jsonl"
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    built = time.perf_counter() - start
    codes = ",".join(languages)
    out, cli_out = folder / "prepared.jsonl", folder / "prepared-cli.jsonl"
    prep = child("prepare", str(data), str(out), codes)
    cli_prep = time_cli(["data", "prepare", str(data), "--out", str(cli_out), "--candidates", codes], folder / "p.txt")
    cli_written = sum(1 for _ in cli_out.open(encoding="utf-8"))
    cli_dropped = int(re.search(r"^dropped\s+(\d+)", (folder / "p.txt").read_text(), re.M).group(1))
    inspect_text, inspect_json = child("inspect", str(data), codes), child("inspect-json", str(data), codes)
    cli_text = time_cli(["data", "inspect", str(data), "--candidates", codes], folder / "i.txt")
    cli_json = time_cli(["data", "inspect", str(data), "--json", "--candidates", codes], folder / "i.json")
    cli_report = json.loads((folder / "i.json").read_text(encoding="utf-8"))["rows"]

    n = len(lines)
    table = [["build the dataset (package data to JSONL, this process)", n, built, n / built, peak_rss_mb(), "-", "-"]]
    for name, r in (("prepare (Python API)", prep), ("mlgrpo data prepare (CLI, end to end)", cli_prep),
                    ("inspect (Python API, text)", inspect_text), ("inspect (Python API, --json)", inspect_json),
                    ("mlgrpo data inspect (CLI)", cli_text), ("mlgrpo data inspect --json (CLI)", cli_json)):
        table.append([name, n, r["seconds"], n / r["seconds"], r["peak_rss_mb"], f"< {GOAL_DATA_S:g} s",
                      _met(r["seconds"] < GOAL_DATA_S)])
    labels = prepared_languages(out)
    for name in SAMPLERS:
        s = child("sampler", str(out), name)
        per_m = s["epoch_s"] / (s["indices"] / 1e6)
        table += [
            [f"LanguageSampler {name}: build", len(labels), s["build_s"], len(labels) / s["build_s"], s["peak_rss_mb"],
             f"< {GOAL_SAMPLER_S:g} s", _met(s["build_s"] < GOAL_SAMPLER_S)],
            [f"LanguageSampler {name}: first {FIRST_DRAWS:,} indices", FIRST_DRAWS, s["first_s"],
             FIRST_DRAWS / s["first_s"], s["peak_rss_mb"], f"< {GOAL_SAMPLER_S:g} s", _met(s["first_s"] < GOAL_SAMPLER_S)],
            [f"LanguageSampler {name}: next epoch ({s['indices']:,} indices)", s["indices"], s["epoch_s"],
             s["indices"] / s["epoch_s"], s["peak_rss_mb"], f"< {GOAL_EPOCH_S_PER_M:g} s per million",
             _met(per_m < GOAL_EPOCH_S_PER_M)],
        ]
    right, und, asked = identified_accuracy(out, truth, unlabeled)
    accounting = [
        f"prepare (API): {n:,} input rows = {prep['written']:,} written + {prep['dropped']} dropped "
        f"({'no row lost' if prep['written'] + prep['dropped'] == n else 'ROWS LOST'}); {prep['problems']} problems "
        f"in the ledger; {prep['identified']:,} languages identified; {prep['languages']} language codes in the output "
        "(und among them).",
        f"prepare (CLI): {n:,} = {cli_written:,} written + {cli_dropped} dropped "
        f"({'no row lost' if cli_written + cli_dropped == n else 'ROWS LOST'}).",
        f"inspect: {inspect_json['read']:,} read = {inspect_json['usable']:,} usable + {inspect_json['dropped']} dropped; "
        f"CLI --json: {cli_report['read']:,} = {cli_report['usable']:,} + {cli_report['dropped']}.",
        f"Language ID on the {asked:,} rows without a language ({len(languages)} candidates): {und:,} und (too short "
        f"or too shared to decide: 'Angola' is Angola in many languages), {right:,} of the {asked - und:,} decided "
        f"({right / max(asked - und, 1):.1%}) agree with the language the row was made in.",
    ]
    return table, accounting, out


def main(argv: list[str] | None = None) -> None:
    from bench._report import markdown_table, write_section

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--languages", type=int, default=len(LANGUAGES), help=f"the first N of {len(LANGUAGES)}")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the three training arms")
    parser.add_argument("--skip-training", action="store_true", help="data and sampler only")
    parser.add_argument("--no-write", action="store_true", help="print only; leave reports/benchmarks.md alone")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args, rest = parser.parse_known_args(argv)
    if args.one:
        print(json.dumps(one(args.one, rest)))
        return
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    languages = LANGUAGES[: args.languages]
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bench-load-") as name:
        folder = Path(name)
        table, accounting, prepared = measure_data(args.rows, languages, folder)
        training = None if args.skip_training else measure_training(prepared, args.rounds)
    headers = ["operation", "rows", "seconds", "rows/s", "peak RSS MiB", "goal", "goal met"]
    sizes = language_sizes(args.rows, languages)
    body = (
        f"{args.rows:,} JSONL rows in {len(languages)} languages from package data (numbers spelled out by CLDR RBNF / "
        f"num2words; CLDR territory, language and currency names), Zipf-sized by language ({languages[0]} "
        f"{sizes[languages[0]]:,} rows ... {languages[-1]} {sizes[languages[-1]]:,}); {UNLABELED:.0%} of rows without "
        f"`language` (identified over the {len(languages)} codes as candidates), "
        f"{max(len(BROKEN), args.rows // ROWS_PER_BROKEN)} broken rows. One process per operation (its own peak RSS); "
        f"samplers with G = {G}, {BATCH} prompts per generation batch, one prompt per usable row per epoch.\n\n"
        + markdown_table(headers, table) + "\n\nRows: " + " ".join(accounting)
    )
    goals = [row[-1] for row in table if row[-1] != "-"]
    body += f"\n\nData and sampler goals: {goals.count('met')} of {len(goals)} met."
    if training is not None:
        train_table, t = training_report(training)
        rounds = ", ".join(f"{x * 100:+.1f}%" for x in t["rounds"])
        body += (
            f"\n\nTracking: tiny-model GRPO steps ({TRAIN_PROMPTS} prompts x G = {TRAIN_G}, {NEW_TOKENS} new tokens, "
            f"balanced sampler over the prepared {args.rows:,}-row dataset), {STEPS} timed steps after {WARMUP} warm-up, "
            f"one process per arm, arms in turns, {args.rounds} rounds, torch on one thread. On logging steps only, the "
            "trainer also measures language consistency (language ID of every completion over the dataset's "
            "languages) in a helper process, collected when the step logs; its CPU is counted in the helper, "
            "and the training thread's wait for it apart. "
            "The MLflow columns are measured directly: the callback's time on the training thread, "
            "and the CPU of the sender thread plus the final flush, per logged step.\n\n"
            + train_table
            + f"\n\nLogging per-language metrics every step, to SQLite through TrackingCallback: {t['wall'] * 100:+.1f}% "
            f"step time against no per-step logging (median of the rounds: {rounds}; goal < {GOAL_TRACKING:.0%}: "
            f"{_met(t['wall'] < GOAL_TRACKING)}); paired by step (step i is the same work in every arm: same seed, same "
            f"batches and completions) {t['paired'][0] * 100:+.1f}% (median of {t['paired'][3]} pairs, quartiles "
            f"{t['paired'][1] * 100:+.1f}% and {t['paired'][2] * 100:+.1f}%; goal: {_met(t['paired'][0] < GOAL_TRACKING)}). "
            "Of a tracked step, MLflow (on_log plus all the store's CPU) takes "
            f"{t['mlflow'] * 100:.1f}% ({_met(t['mlflow'] < GOAL_TRACKING)}: the calls are batched, a send every 5 s); "
            f"waiting for language consistency {t['consistency'] * 100:.1f}% (the helper's CPU is "
            f"{t['consistency_cpu'] * 100:.1f}% of a step, on the core torch leaves free), and the rest of the "
            "difference is the trainer's own logging and noise between processes."
        )
    body += (f"\n\nShared 2-core machine with other jobs running (1-min load average {load_before:.1f} before, "
             f"{os.getloadavg()[0]:.1f} after): seconds move with that load.")
    print(body)
    if any("ROWS LOST" in line for line in accounting):
        raise SystemExit("rows were lost: see the accounting above")
    if not args.no_write:
        command = "OMP_NUM_THREADS=1 .venv/bin/python -m bench.bench_load" + "".join(
            f" --{name} {value}" for name, value in (("rows", args.rows), ("languages", args.languages), ("rounds", args.rounds))
            if value != parser.get_default(name))
        print(f"\nwritten to {write_section('load', f'Load: {args.rows:,} rows in {len(languages)} languages', body, command)}")


if __name__ == "__main__":
    main()
