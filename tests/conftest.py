"""Test-wide settings: one torch thread (the CI machine has 2 cores), no hub access, a private MLflow store."""

from __future__ import annotations

import os

# Before anything imports torch or the HF libraries.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
