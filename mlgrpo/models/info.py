"""What a saved model folder holds, read from its JSON files and safetensors headers, never its weights.

Used by `mlgrpo model info`; importing it loads neither torch nor transformers.
Knows nothing about training or loading.
"""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

from mlgrpo.errors import UserError
from mlgrpo.models.cache import read_build_info


def safetensors_parameters(path: Path) -> int:
    """Number of values stored in one safetensors file, from its header alone.

    The format starts with an 8-byte little-endian header length, then a JSON header that maps
    each tensor name to its dtype, shape and byte offsets.
    """
    with open(path, "rb") as handle:
        (length,) = struct.unpack("<Q", handle.read(8))
        header = json.loads(handle.read(length))
    return sum(math.prod(entry["shape"]) for name, entry in header.items() if name != "__metadata__")


def describe(folder: str | Path) -> dict:
    """Architecture, size and (for a tiny model) build facts of a saved model folder."""
    folder = Path(folder).expanduser()
    config_path = folder / "config.json"
    if not config_path.is_file():
        raise UserError(f"{folder} is not a saved model folder: it has no config.json")
    config = json.loads(config_path.read_text(encoding="utf-8"))
    weights = sorted(folder.glob("*.safetensors"))
    summary = {
        "path": str(folder),
        "architecture": ", ".join(config.get("architectures") or [config.get("model_type", "?")]),
        "layers": config.get("num_hidden_layers"),
        "hidden_size": config.get("hidden_size"),
        "vocab_size": config.get("vocab_size"),
        "parameters": sum(safetensors_parameters(p) for p in weights) if weights else None,
        "weights": [p.name for p in weights] or "no safetensors file (mlgrpo will not load pickled weights)",
    }
    info = read_build_info(folder)
    if info:
        summary["build"] = {k: info[k] for k in ("kind", "settings", "warm_start", "final_exact_match", "samples",
                                                 "gguf_sha256", "source", "wall_seconds", "versions") if k in info}
    return summary
