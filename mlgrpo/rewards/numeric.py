"""A reward for math problems with a numeric answer (GSM8K, MGSM): is the completion's final number right?

The final answer is, in this order: the content of the last `\\boxed{...}`, the text after the last "####"
(GSM8K's marker), or the last number in the completion. A number is read in any script's digits (Arabic-
Indic ٣, Persian ۳, Devanagari ३, Bengali ৩, Thai ๓, full-width ３: every character Unicode gives a decimal
value), with a minus sign (-, U+2212), thousands separators (",", ".", " ", U+00A0, U+202F, "'", Arabic
"٬") and a decimal separator ("." or ",", and Arabic "٫"), told apart by how they are used: a separator
followed by exactly three digits, or that occurs more than once, groups thousands ("1,234", "1.234.567",
"12 345"); otherwise it is the decimal point ("3,5", "0.75"). So "1.234" is one thousand two hundred and
thirty-four, as German, Spanish and Indonesian write it; a completion that means 1.234 should write it
with more or fewer than three decimals. Percent and currency signs around the number are ignored.

reward 1.0 when |answer - reference| <= tolerance * max(1, |reference|) (tolerance 1e-6: exact for
integers), else 0.0; None when the row has no numeric reference. Knows nothing about trainers or MLflow.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any

from mlgrpo.errors import UserError
from mlgrpo.rewards.registry import register
from mlgrpo.rewards.texts import as_text, column

_BOXED = re.compile(r"\\boxed\s*\{")
_MARKER = "####"
_GROUP = ",.'\u00a0\u202f\u066c "  # thousands separators (space only between digits)
_DECIMAL = ".,\u066b"
_MINUS = "-\u2212\u2012\u2013\ufe63\uff0d"


def _digit(ch: str) -> str | None:
    value = unicodedata.decimal(ch, None)
    return None if value is None else str(value)


def _numbers(text: str) -> list[float]:
    """Every number in `text`, in order (see the module docstring for the separators).

    >>> _numbers("Ana ana ٣٬٥٠٠ dola na 2,5 kg; -7 และ ๑๒")
    [3500.0, 2.5, -7.0, 12.0]
    """
    found: list[float] = []
    i, n = 0, len(text)
    while i < n:
        if _digit(text[i]) is None:
            i += 1
            continue
        start = i
        raw = []
        while i < n:
            d = _digit(text[i])
            if d is not None:
                raw.append(d)
                i += 1
            elif text[i] in _GROUP + _DECIMAL and i + 1 < n and _digit(text[i + 1]) is not None:
                raw.append(text[i])
                i += 1
            else:
                break
        negative = start > 0 and text[start - 1] in _MINUS and (start < 2 or not text[start - 2].isalnum())
        value = _value("".join(raw))
        if value is not None:
            found.append(-value if negative else value)
    return found


def _value(raw: str) -> float | None:
    """The number a run of digits and separators writes ("1.234.567" -> 1234567, "3,5" -> 3.5)."""
    separators = [(k, ch) for k, ch in enumerate(raw) if not ch.isdigit()]
    if not separators:
        return float(raw)
    last_at, last = separators[-1]
    tail = len(raw) - last_at - 1
    same = sum(ch == last for _, ch in separators)
    mixed = len({ch for _, ch in separators}) > 1
    if last in _DECIMAL and (mixed or (same == 1 and tail != 3)):
        integer, fraction = raw[:last_at], raw[last_at + 1 :]
    else:
        integer, fraction = raw, ""
    integer = "".join(ch for ch in integer if ch.isdigit())
    try:
        return float(f"{integer or '0'}.{fraction or '0'}")
    except ValueError:
        return None


def _boxed(text: str) -> str | None:
    """The content of the last \\boxed{...}, braces balanced."""
    matches = list(_BOXED.finditer(text))
    if not matches:
        return None
    start = matches[-1].end()
    depth = 1
    for k in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[k], 0)
        if depth == 0:
            return text[start:k]
    return text[start:]


def final_number(text: str) -> float | None:
    """The completion's final answer: last \\boxed{}, else after the last "####", else the last number.

    >>> final_number("2 + 3 = 5, so \\\\boxed{5}"), final_number("... = ٤٢\\n#### ٤٢"), final_number("no number")
    (5.0, 42.0, None)
    """
    boxed = _boxed(text)
    if boxed is not None:
        numbers = _numbers(boxed)
        return numbers[-1] if numbers else None
    if _MARKER in text:
        numbers = _numbers(text.rsplit(_MARKER, 1)[1])
        if numbers:
            return numbers[0]
    numbers = _numbers(text)
    return numbers[-1] if numbers else None


def _reference_number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    return final_number(str(value))


def _check(params: Mapping[str, Any]) -> None:
    tolerance = params.get("tolerance", 1e-6)
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not 0 <= tolerance < 1:
        raise UserError(f"numeric_answer: tolerance must be a number in [0, 1), got {tolerance!r}")


@register("numeric_answer", requires=("reference",), check=_check)
def numeric_answer(prompts: Sequence, completions: Sequence, *, reference: Sequence | None = None,
                   tolerance: float = 1e-6, **_: Any) -> list[float | None]:
    """1.0 when the completion's final number equals the reference number (relative `tolerance`), else 0.0.

    Hand-worked: "#### 1.234" in German is 1234 -> right for 1234; "jibu ni ٤٢" -> 42 -> right; "3,5"
    -> 3.5, not 35 -> wrong for 35; a row whose reference has no number -> None.

    >>> numeric_answer([""] * 4, ["#### 1.234", "jibu ni ٤٢", "3,5", "7"], reference=["1234", "42", "35", "n/a"])
    [1.0, 1.0, 0.0, None]
    """
    rewards: list[float | None] = []
    for completion, ref in zip(completions, column(reference, len(completions))):
        target = _reference_number(ref)
        if target is None:
            rewards.append(None)
            continue
        got = final_number(as_text(completion))
        rewards.append(float(got is not None and abs(got - target) <= tolerance * max(1.0, abs(target))))
    return rewards
