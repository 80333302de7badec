"""Rewards on the shape of a completion: its length relative to the reference, and its format.

Length is counted in Unicode code points after NFC, not words or tokens: words do not exist in
Chinese or Thai text and tokens depend on a tokenizer; a completion and its reference are in the
same language, so a ratio of code points compares like with like in every script.
Knows nothing about trainers, advantages or MLflow.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from mlgrpo.errors import UserError
from mlgrpo.rewards.registry import register
from mlgrpo.rewards.texts import as_text, column, has_value
from mlgrpo.text import normalize


def length_ratio_penalty(length: int, reference_length: int, min_ratio: float, max_ratio: float) -> float:
    """0.0 inside [min_ratio, max_ratio] x the reference length; outside, minus the relative distance
    to the nearest bound, floored at -1.0.

    Hand-worked, reference of 5 characters, range [0.5, 2]: 12 characters is ratio 2.4, above 2 by
    0.4, and 0.4 / 2 = 0.2 -> -0.2; 2 characters is ratio 0.4, below 0.5 by 0.1, and 0.1 / 0.5 = 0.2
    -> -0.2; 0 characters is -1.0.

    >>> [round(length_ratio_penalty(n, 5, 0.5, 2.0), 4) for n in (12, 2, 5, 0, 100)]
    [-0.2, -0.2, 0.0, -1.0, -1.0]
    """
    ratio = length / reference_length
    if ratio > max_ratio:
        return -min(1.0, (ratio - max_ratio) / max_ratio)
    if ratio < min_ratio:
        return -min(1.0, (min_ratio - ratio) / min_ratio)
    return 0.0


def _check_length(params: Mapping[str, Any]) -> None:
    low, high = params.get("min_ratio", 0.5), params.get("max_ratio", 2.0)
    ok = all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in (low, high))
    if not ok or not 0 < low <= high:
        raise UserError(f"length: need 0 < min_ratio <= max_ratio (finite numbers), got min_ratio={low!r}, "
                        f"max_ratio={high!r}")


@register("length", requires=("reference",), check=_check_length)
def length(prompts: Sequence, completions: Sequence, *, reference: Sequence | None = None,
           min_ratio: float = 0.5, max_ratio: float = 2.0, **_: Any) -> list[float | None]:
    """A penalty in [-1, 0] for completions shorter or longer than the reference allows.

    See `length_ratio_penalty`; lengths are code points of the stripped NFC text. Rows without a
    reference get None. Hand-worked against "hello" (5): "hello world!" (12) -> -0.2, "hi" (2) -> -0.2,
    "привет" (6, ratio 1.2) -> 0.0.

    >>> [round(r, 4) for r in length(["", "", ""], ["hello world!", "hi", "привет"], reference=["hello"] * 3)]
    [-0.2, -0.2, 0.0]
    """
    rewards: list[float | None] = []
    for completion, row_reference in zip(completions, column(reference, len(completions))):
        if not has_value(row_reference):
            rewards.append(None)
            continue
        n = len(normalize(as_text(completion)).strip())
        n_ref = len(normalize(str(row_reference)).strip())
        rewards.append(length_ratio_penalty(n, n_ref, min_ratio, max_ratio))
    return rewards


def _check_format(params: Mapping[str, Any]) -> None:
    pattern, mode = params.get("pattern"), params.get("mode", "full")
    if not isinstance(pattern, str):
        raise UserError(f"format: params.pattern must be a regular expression string, got {pattern!r}")
    try:
        re.compile(pattern)
    except re.error as exc:
        raise UserError(f"format: pattern {pattern!r} is not a valid regular expression: {exc}") from None
    if mode not in ("full", "search"):
        raise UserError(f"format: mode must be 'full' (the whole completion matches) or 'search' (somewhere in it), "
                        f"got {mode!r}")


@register("format", check=_check_format)
def format_match(prompts: Sequence, completions: Sequence, *, pattern: str, mode: str = "full",
                 **_: Any) -> list[float | None]:
    """1.0 when the completion matches `pattern`, else 0.0.

    mode "full": the whole completion, stripped of surrounding whitespace, must match; "search": a
    match anywhere will do. "." matches newlines too (re.DOTALL), since reasoning spans lines.

    >>> format_match(["", "", ""], ["<think>a\\nb</think> <answer>7</answer>\\n", "7", "so: <answer>7</answer>"],
    ...              pattern=r"<think>.*</think>\\s*<answer>.*</answer>")
    [1.0, 0.0, 0.0]
    >>> format_match([""], ["so: <answer>7</answer>"], pattern=r"<answer>\\d+</answer>", mode="search")
    [1.0]
    """
    compiled = re.compile(pattern, re.S)
    find = compiled.fullmatch if mode == "full" else compiled.search
    return [1.0 if find(as_text(c).strip() if mode == "full" else as_text(c)) else 0.0 for c in completions]
