"""A worker process for the tracking tests: opens a store, writes one child run, then exits or waits.

    python writer.py URI EXPERIMENT OUTBOX NAME STEPS [--hold | --exit]

Logs STEPS steps of 20 per-language metrics (flushing every step, the most writes a store can get),
a tag and a text artifact, and finishes the run. With --hold it prints the run id once everything is
flushed and sleeps, leaving the run RUNNING for the test to SIGKILL. With --exit it never flushes
(the background thread would wait 10 minutes) and returns without finish(), as a crashed runner does.
"""

from __future__ import annotations

import sys
import time

from mlgrpo.tracking import FlushPolicy, Tracker

LANGUAGES = ("en", "es", "ru", "ar", "ja")
METRICS = ("reward", "reward_std", "completion_length", "language_consistency")


def main(uri: str, experiment: str, outbox: str, name: str, steps: int, mode: str) -> None:
    interval = 600.0 if mode == "--exit" else 0.2
    policy = FlushPolicy(interval_s=interval, max_backoff_s=1.0, finish_timeout_s=60.0, setup_timeout_s=60.0)
    tracker = Tracker.open(uri, experiment, policy=policy, outbox_dir=outbox)
    parent = tracker.start_parent(f"parent-{name}", {"worker": name})
    child, state = tracker.child_run(parent, {"worker": name}, name, {"arm": "grpo"}, {"lr": 2e-4, "name": name})
    for step in range(steps):
        values = {f"train/{m}/{lang}": step + i / 100 for i, (m, lang) in
                  enumerate((m, lang) for m in METRICS for lang in LANGUAGES)}
        child.log_metrics(values, step)
        if mode != "--exit":
            child.flush()
    if mode == "--exit":
        print(child.run_id, state, flush=True)
        return  # the atexit hook sends what is buffered and leaves the run RUNNING
    child.set_tags({"written_by": name})
    child.log_text(f"written by {name}\n", f"notes/{name}.txt")
    assert child.flush(timeout_s=60), "the store did not take the writes"
    if mode == "--hold":
        print(child.run_id, state, flush=True)
        time.sleep(600)
    child.finish()
    parent.finish()
    print(child.run_id, state, flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:5], int(sys.argv[5]), sys.argv[6] if len(sys.argv) > 6 else "")
