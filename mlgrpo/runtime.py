"""Process-level settings: thread counts (before torch starts) and where mlgrpo keeps its caches.

On a small CPU machine, torch's default of one intra-op thread per core oversubscribes as soon as
two processes (or a tokenizer pool) run side by side; we measured a training step 30x slower
(../shared/research/stack.md). mlgrpo therefore sets its thread counts deliberately, once, here.
Knows nothing about models, data or MLflow.
"""

from __future__ import annotations

import os
from pathlib import Path

THREAD_ENV_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def default_threads(workers: int = 1) -> int:
    """Threads per worker process: the usable cores split evenly between workers, at least 1."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # macOS has no sched_getaffinity
        cores = os.cpu_count() or 1
    return max(1, cores // max(1, workers))


def configure_threads(threads: int | None = None) -> int:
    """Pin the thread counts of this process (env vars for libraries not yet loaded, and torch).

    A user's explicit OMP_NUM_THREADS wins over our default. Returns the count in force.
    """
    if threads is None:
        env = os.environ.get("OMP_NUM_THREADS", "")
        threads = int(env) if env.isdigit() and int(env) > 0 else default_threads()
    for var in THREAD_ENV_VARS:
        os.environ[var] = str(threads)
    # Tokenizers' Rust pool forks badly under our worker processes and competes for the same cores.
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import sys

    if "torch" in sys.modules:
        torch = sys.modules["torch"]
        torch.set_num_threads(threads)
    return threads


def cache_dir(kind: str) -> Path:
    """$MLGRPO_CACHE/<kind>, else $XDG_CACHE_HOME/mlgrpo/<kind>, else ~/.cache/mlgrpo/<kind> (not created)."""
    root = os.environ.get("MLGRPO_CACHE")
    if not root:
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = os.path.join(xdg, "mlgrpo")
    return Path(root).expanduser() / kind
