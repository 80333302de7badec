"""Pure reducers from per-row tensors to named per-language metrics, and process-level system figures.

Every per-language statistic goes through `group_stats` (the one on-device reducer) with the language
ids as groups; names follow `<metric>/<lang>` so that the tracking layer can namespace them as
`train/<metric>/<lang>`. Knows nothing about TRL, models or MLflow.
"""

from __future__ import annotations

import resource
import sys

import torch
from torch import Tensor

from mlgrpo.algorithms import group_stats


def per_language(values: Tensor, lang_ids: Tensor, languages: tuple[str, ...], name: str) -> dict[str, Tensor]:
    """{"<name>/<lang>": mean, "<name>_std/<lang>": population std} over the rows of each language.

    values (N,) float with NaN for rows without a value; lang_ids (N,) int64 in [0, len(languages)).
    Values are 0-d tensors on the input's device: the caller converts them once per step.

    >>> v = torch.tensor([1.0, 3.0, 10.0]); ids = torch.tensor([0, 0, 1])
    >>> {k: round(float(x), 3) for k, x in per_language(v, ids, ("de", "sw"), "reward").items()}
    {'reward/de': 2.0, 'reward_std/de': 1.0, 'reward/sw': 10.0, 'reward_std/sw': 0.0}
    """
    table = group_stats(values.float(), lang_ids, 0, num_ids=len(languages)).table
    out: dict[str, Tensor] = {}
    for i, lang in enumerate(languages):
        out[f"{name}/{lang}"] = table.mean[i]
        out[f"{name}_std/{lang}"] = table.std[i]
    return out


def language_counts(lang_ids: Tensor, languages: tuple[str, ...], name: str = "samples") -> dict[str, Tensor]:
    """{"<name>/<lang>": number of rows of that language} (0-d float tensors)."""
    counts = torch.bincount(lang_ids, minlength=len(languages)).float()
    return {f"{name}/{lang}": counts[i] for i, lang in enumerate(languages)}


def peak_memory_mb(device: torch.device) -> float:
    """Peak memory of this process in MiB: max allocated on CUDA, max resident set size on CPU."""
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024


def to_floats(metrics: dict[str, Tensor]) -> dict[str, float]:
    """One host transfer for a whole dict of 0-d tensors (a stack, then .tolist())."""
    if not metrics:
        return {}
    names = list(metrics)
    stacked = torch.stack([metrics[n].detach().float().reshape(()) for n in names]).cpu().tolist()
    return dict(zip(names, stacked))
