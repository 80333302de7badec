"""A resolved config as MLflow params and tags: flattened, within MLflow's limits, with secrets hidden.

    {"train": {"lr": 2e-4, "languages": ["en", "ja"]}, "tracking": {"uri": "https://u:pw@host"}}
    -> {"train.lr": "0.0002", "train.languages": '["en", "ja"]', "tracking.uri": "https://u:***@host"}

Nested mappings become dotted keys; lists of plain values stay one JSON value (one param per
language list reads better than "languages.0", "languages.1"); lists holding mappings are indexed
("arms.0.name"). Values longer than MLflow's limit (6000 characters for params) are cut with a note
saying how long they were. Values under keys that name a secret (password, token, api_key, ...) are
replaced by ***, and so is the password part of any URI inside a value.

Pure functions; imports neither mlflow nor yaml.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Mapping
from pathlib import PurePath

from mlgrpo.tracking.names import clean_name
from mlgrpo.tracking.uris import MASK, mask_text

MAX_PARAM_VALUE = 6000  # mlflow.utils.validation.MAX_PARAM_VAL_LENGTH in MLflow 3.17
MAX_TAG_VALUE = 8000  # MAX_TAG_VAL_LENGTH
MAX_KEY = 250  # MAX_ENTITY_KEY_LENGTH

# Whole words of a key only: "hub_token" and "api_key" are secrets, "max_new_tokens" is not.
_SECRET_KEY = re.compile(
    r"(^|[_\-])(password|passwd|secret|token|api[_-]?key|access[_-]?key|credentials?|private[_-]?key)($|[_\-])", re.I
)


def _plain(value: object) -> bool:
    return value is None or isinstance(value, (str, int, float, bool, PurePath))


def _text(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, PurePath):
        return str(value)
    return json.dumps(value, ensure_ascii=False, default=str)


def _walk(value: object, key: str, out: dict[str, object]) -> None:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    if isinstance(value, Mapping) and value:
        for sub, item in value.items():
            _walk(item, f"{key}.{sub}" if key else str(sub), out)
    elif isinstance(value, (list, tuple)) and value and not all(_plain(v) for v in value):
        for i, item in enumerate(value):
            _walk(item, f"{key}.{i}", out)
    else:
        out[key] = list(value) if isinstance(value, tuple) else value


def safe_key(key: str) -> str:
    """A valid MLflow key; one longer than 250 characters keeps its start and a hash of the whole."""
    key = clean_name(key) or "_"
    if len(key) <= MAX_KEY:
        return key
    digest = hashlib.sha1(key.encode()).hexdigest()[:10]
    return f"{key[: MAX_KEY - 11]}~{digest}"


def safe_value(key: str, value: object, limit: int) -> str:
    """The value as text: masked when the key names a secret or the text holds a URI with credentials,
    and cut to `limit` characters with a note of the full length."""
    if _SECRET_KEY.search(key.rsplit(".", 1)[-1]) and value not in (None, ""):
        return MASK
    text = mask_text(_text(value))
    if len(text) <= limit:
        return text
    note = f"... [cut: {len(text)} characters]"
    return text[: limit - len(note)] + note


def flatten_params(config: Mapping[str, object] | object, limit: int = MAX_PARAM_VALUE) -> dict[str, str]:
    """Dotted keys -> text values, ready for MLflow (see the module docstring).

    >>> flatten_params({"algo": {"name": "grpo", "lr": 2e-4}, "languages": ["en", "ja"], "hub_token": "hf_x"})
    {'algo.name': 'grpo', 'algo.lr': '0.0002', 'languages': '["en", "ja"]', 'hub_token': '***'}
    """
    flat: dict[str, object] = {}
    _walk(config, "", flat)
    return {safe_key(k): safe_value(k, v, limit) for k, v in flat.items()}


def safe_tags(tags: Mapping[str, object]) -> dict[str, str]:
    """Tags as MLflow takes them: valid keys, masked values, at most 8000 characters each."""
    return {safe_key(str(k)): safe_value(str(k), v, MAX_TAG_VALUE) for k, v in tags.items()}
