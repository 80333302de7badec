"""Real texts for the language-ID tests: Django's own translations of its UI strings (shipped in the
django wheel), read with gettext. Each is a person's translation of the English msgid."""

from __future__ import annotations

import gettext
from pathlib import Path

import pytest

# Languages across 11 scripts; "zh" is Django's zh_Hans catalogue.
LANGUAGES = ("de", "fr", "es", "tr", "vi", "ru", "uk", "el", "he", "ar", "fa", "hi", "th", "ja", "ko", "zh")
MSGIDS = ("Enter a valid date.", "This field is required.", "Enter a valid email address.")


def django_translations(language: str) -> list[str]:
    import django

    localedir = Path(django.__file__).parent / "conf" / "locale"
    catalogue = gettext.translation("django", localedir=localedir, languages=["zh_Hans" if language == "zh" else language])
    texts = [catalogue.gettext(msgid) for msgid in MSGIDS]
    assert all(t not in MSGIDS for t in texts), f"{language}: Django left a string untranslated"
    return texts


@pytest.fixture(scope="session")
def ui_texts() -> dict[str, list[str]]:
    """Three translated Django UI sentences per language of LANGUAGES."""
    return {language: django_translations(language) for language in LANGUAGES}
