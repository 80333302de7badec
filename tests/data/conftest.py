"""Real multilingual text for the data-layer tests: CLDR territory names (babel) and Django's
human-translated UI strings, both shipped inside installed packages (no download)."""

from __future__ import annotations

import gettext
import json
from functools import lru_cache
from pathlib import Path

import babel
import django
import pytest


@lru_cache(maxsize=None)
def territory_names(locale: str) -> tuple[str, ...]:
    """Country and region names in `locale`, by ISO code order (CLDR via babel)."""
    territories = babel.Locale.parse(locale).territories
    return tuple(territories[code] for code in sorted(territories) if not code.isdigit())


@lru_cache(maxsize=None)
def _django_catalog(locale: str) -> tuple[tuple[str, str], ...]:
    path = Path(django.__file__).parent / "conf" / "locale" / locale / "LC_MESSAGES" / "django.mo"
    with path.open("rb") as handle:
        catalog = gettext.GNUTranslations(handle)._catalog
    return tuple((k, v) for k, v in sorted(catalog.items(), key=str) if isinstance(k, str) and k and v)


def django_strings(locale: str) -> tuple[str, ...]:
    """Django's translations of its own UI strings into `locale` (zh_Hans, ja, ru, ...)."""
    return tuple(v for _, v in _django_catalog(locale))


def django_english(locale: str) -> tuple[str, ...]:
    """The English source strings of the same catalog."""
    return tuple(k for k, _ in _django_catalog(locale))


def encodable(texts, codec: str, n: int) -> list[str]:
    """The first `n` non-ASCII texts that `codec` can encode (the others are not in its repertoire)."""
    out = []
    for text in texts:
        try:
            text.encode(codec)
        except UnicodeEncodeError:
            continue
        if not text.isascii() and "\n" not in text:
            out.append(text)
        if len(out) == n:
            break
    assert len(out) == n, f"only {len(out)} texts of this locale fit {codec}"
    return out


def jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


class RealText:
    """The helpers above, handed to tests by the `real_text` fixture."""

    territories = staticmethod(territory_names)
    django = staticmethod(django_strings)
    english = staticmethod(django_english)
    encodable = staticmethod(encodable)
    jsonl = staticmethod(jsonl)


@pytest.fixture(scope="session")
def real_text() -> RealText:
    return RealText()


@pytest.fixture
def write(tmp_path):
    """write(name, text or bytes, codec="utf-8") -> path of a file in tmp_path."""

    def _write(name: str, content: str | bytes, codec: str = "utf-8") -> Path:
        path = tmp_path / name
        path.write_bytes(content if isinstance(content, bytes) else content.encode(codec))
        return path

    return _write
