"""How reward functions read what TRL hands them: completions, prompts and dataset columns.

TRL passes completions as strings (standard format) or as lists of chat messages (conversational
format), and every dataset column as a list aligned with the completions; a column the dataset lacks
is simply absent. These helpers turn both into plain per-row values. Knows nothing about trainers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def as_text(item: Any) -> str:
    """The text of a prompt or completion, standard or conversational.

    Conversational items are lists of messages whose "content" is a string or a list of parts
    ({"type": "text", "text": ...}); the texts of all messages are joined with newlines.

    >>> as_text("Paris")
    'Paris'
    >>> as_text([{"role": "assistant", "content": [{"type": "text", "text": "Paris"}]}])
    'Paris'
    """
    if isinstance(item, str):
        return item
    if item is None:
        return ""
    parts = []
    for message in item:
        content = message.get("content", "") if isinstance(message, dict) else message
        if isinstance(content, str):
            parts.append(content)
        else:  # multimodal parts: only the text ones carry words
            parts.extend(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return "\n".join(parts)


def column(values: Sequence | None, n: int) -> list:
    """A dataset column as a list of `n` row values; an absent column is `n` Nones.

    >>> column(None, 2), column(["de", "sw"], 2)
    ([None, None], ['de', 'sw'])
    """
    if values is None:
        return [None] * n
    values = list(values)
    if len(values) != n:
        raise ValueError(f"a column has {len(values)} values for {n} completions; columns must align with completions")
    return values


def has_value(value: Any) -> bool:
    """True when a row's column value can be used: not None, not an empty or blank string, not empty.

    >>> has_value(" "), has_value([]), has_value(["Paris"]), has_value(0)
    (False, False, True, True)
    """
    if value is None:
        return False
    if isinstance(value, str):
        return bool(value.strip())
    if isinstance(value, (list, tuple)):
        return any(has_value(v) for v in value)
    return True


def base_language(code: Any) -> str | None:
    """The ISO 639-1 part of a language tag, lower case; None for missing or "und".

    >>> base_language("zh-Hant"), base_language("SW"), base_language("und")
    ('zh', 'sw', None)
    """
    if not isinstance(code, str) or not code.strip():
        return None
    base = code.strip().replace("_", "-").split("-")[0].lower()
    return None if base == "und" else base
