"""Language codes: the ISO 639-1 codes language ID answers with, and checks of the codes users give.

Backends label languages their own way ("zh-cn", "yue", "nb", "iw"); `canonical` maps every label to
one ISO 639-1 code or None, so that the rest of mlgrpo compares plain two-letter codes.
Knows nothing about models or files.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Iterable

from mlgrpo.errors import UserError

UNDETERMINED = "und"

# Labels that name a variety or an old code of an ISO 639-1 language. Chinese varieties and Egyptian
# Arabic fall under their macrolanguage (zh, ar), as ISO 639-3 defines it; fastText's lite model
# puts part of the mass of Chinese text on "wuu" and "yue", and langdetect splits zh-cn/zh-tw.
# Norwegian Bokmal is "nb" in lingua and "no" in fastText and langdetect: we answer "no".
_ALIASES = {
    "zh-cn": "zh", "zh-tw": "zh", "zh-hans": "zh", "zh-hant": "zh", "yue": "zh", "wuu": "zh",
    "arz": "ar", "ckb": "ku", "nb": "no", "iw": "he", "in": "id", "ji": "yi", "jw": "jv", "mo": "ro",
}

# Every code some backend can answer with (lingua's 75, fastText's two-letter labels, langdetect's
# 55, and the script table's). Spelled out so that checking a user's code loads no model; the
# tests check that each backend's own label list maps into it.
KNOWN_CODES = frozenset(
    "af am an ar as av az ba be bg bh bn bo br bs ca ce co cs cv cy da de dv el en eo es et eu fa fi "
    "fr fy ga gd gl gn gu gv he hi hr ht hu hy ia id ie io is it ja jv ka kk km kn ko ku kv kw ky la "
    "lb lg li lo lt lv mg mi mk ml mn mr ms mt my ne nl nn no oc or os pa pl ps pt qu rm ro ru sa sc "
    "sd sh si sk sl sn so sq sr st su sv sw ta te tg th tk tl tn tr ts tt ug uk ur uz vi vo wa xh yi "
    "yo zh zu".split()
)


@functools.lru_cache(maxsize=1024)  # backends repeat a few hundred labels millions of times
def canonical(label: str) -> str | None:
    """The ISO 639-1 code for a backend's label, or None when it has none ("als", "ceb").

    >>> canonical("zh-cn"), canonical("NB"), canonical("fr"), canonical("ceb")
    ('zh', 'no', 'fr', None)
    """
    code = label.strip().lower().replace("_", "-")
    code = _ALIASES.get(code, code)
    return code if code in KNOWN_CODES else None


def parse_code(text: str) -> str:
    """A user's language code as ISO 639-1: case, region and script subtags are ignored, and
    three-letter ISO 639-2/3 codes are mapped ("pt-BR" -> "pt", "zh_Hans" -> "zh", "deu" -> "de").

    Raises UserError naming the closest codes.
    """
    raw = text.strip()
    lowered = raw.lower().replace("_", "-")
    base = lowered.split("-")[0]
    code = canonical(lowered) or canonical(base) or _from_three_letters(base)
    if code is None:
        close = _closest(raw)
        hint = f"did you mean {', '.join(close)}? " if close else ""
        raise UserError(
            f"unknown language code {raw!r}: {hint}use ISO 639-1 codes such as "
            f"de, fr, zh ({len(KNOWN_CODES)} known: {' '.join(sorted(KNOWN_CODES))})"
        )
    return code


def _closest(raw: str) -> list[str]:
    """Known codes one letter away from a two-letter `raw` (same first letter first), or the code
    of a language named `raw` ("German" -> de)."""
    code = raw.lower()
    if len(code) == 2:
        near = [k for k in KNOWN_CODES if (k[0] == code[0]) != (k[1] == code[1])]
        return sorted(near, key=lambda k: (k[0] != code[0], k))[:3]
    import pycountry

    try:
        alpha_2 = getattr(pycountry.languages.lookup(raw), "alpha_2", None)
    except LookupError:
        return difflib.get_close_matches(code, sorted(KNOWN_CODES), n=3, cutoff=0.6)
    return [canonical(alpha_2)] if alpha_2 and canonical(alpha_2) else []


def _from_three_letters(code: str) -> str | None:
    if len(code) != 3:
        return None
    import pycountry  # local: loads its tables on first use, and most codes never need it

    language = pycountry.languages.get(alpha_3=code) or pycountry.languages.get(bibliographic=code)
    alpha_2 = getattr(language, "alpha_2", None)
    return canonical(alpha_2) if alpha_2 else None


def parse_candidates(candidates: Iterable[str] | None) -> frozenset[str] | None:
    """The candidate set as ISO 639-1 codes; None means every known language.

    A single string is refused (it would be read letter by letter); an empty list is refused too,
    since no language could ever be answered.
    """
    if candidates is None:
        return None
    if isinstance(candidates, str):
        raise UserError(
            f"candidates must be a list of codes, not the string {candidates!r}: "
            f"write [{', '.join(repr(c.strip()) for c in candidates.split(','))}]"
        )
    codes = frozenset(parse_code(c) for c in candidates)
    if not codes:
        raise UserError("candidates is empty: give at least one language code, or None for all")
    return codes
