"""Turn a registered suite into records: choice of languages, train/eval split, subsampling, prompts.

The split is a pure function of the item key (a hash, with no run seed), so an item is in the same
split in every language, in every run and every arm; `seed` only chooses which items a smaller
per-language count keeps. Knows nothing about models, trainers or MLflow, and nothing about where a
family's data comes from (the family modules read the packages).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping, Sequence

from mlgrpo.data.suites.base import SUITES, Item, LanguageItems, SuiteSpec, registered
from mlgrpo.errors import UserError
from mlgrpo.registry import did_you_mean

SPLITS = ("train", "eval")
PROMPT_STYLES = ("tag", "instruct", "fewshot")
DEFAULT_EVAL_SHARE = 0.2
# Solved examples in a few-shot prompt: three was enough for gemma-3-270m (a base model) to answer in the
# asked language, one line, in the examples' form; each example adds ~15 tokens to every rollout.
FEWSHOT_EXAMPLES = 3
# A few-shot example must be short and plain: a placeholder such as %(value)s teaches nothing about the
# language and long help texts crowd the prompt.
FEWSHOT_MAX_CHARS = 40
_PLACEHOLDER_CHARS = frozenset("%{}")


def available_suites() -> dict[str, SuiteSpec]:
    """Suite name -> SuiteSpec (languages, description, sources, license), easiest family first."""
    return registered()


def _unknown(kind: str, value: object, valid: Sequence[str], where: str = "", close: str | None = None) -> UserError:
    """An error naming the bad value, the closest valid one (spelling distance unless given), and all."""
    if close is None:
        close = did_you_mean(value, valid)
    hint = f" (did you mean {close!r}?)" if close else ""
    return UserError(f"unknown {kind} {value!r}{where}{hint}; valid: {', '.join(valid)}")


def closest_language(value: str, valid: Sequence[str]) -> str | None:
    """The valid code a person most likely meant, or None.

    Spelling distance is useless between two-letter codes ("jp" is as close to "pt" as to "ja"), so
    this reads the mistake instead, with CLDR's help: a locale ("zh-Hans", "pt_BR"), an old code
    ("iw", "in"), an English name ("German"), or a country code ("jp" -> "ja", "ua" -> "uk").
    """
    from babel import Locale, UnknownLocaleError
    from babel.languages import get_official_languages

    text = str(value).strip().replace("-", "_")
    by_name = {language_name(code).lower(): code for code in valid}
    candidates = [text.split("_")[0].lower(), by_name.get(text.lower(), "")]
    try:
        candidates.append(Locale.parse(text).language)
    except (ValueError, UnknownLocaleError):
        pass
    candidates += get_official_languages(text.upper()) if text.isalpha() else ()
    return next((code for code in candidates if code in valid), None)


def _unknown_language(language: str, spec: SuiteSpec) -> UserError:
    close = closest_language(language, spec.languages) or ""  # "": no guess rather than difflib's
    return _unknown("language", language, spec.languages, f" for suite {spec.name!r}", close=close)


def get_spec(name: str) -> SuiteSpec:
    return SUITES.get(name)


@functools.lru_cache(maxsize=None)
def language_items(name: str, language: str) -> LanguageItems:
    """All items of suite `name` in `language`, built once per process from the package data."""
    spec = get_spec(name)
    if language not in spec.languages:
        raise _unknown_language(language, spec)
    return spec.build(language)


def item_split(name: str, key: str, eval_share: float) -> str:
    """"eval" when the item's hash position in [0, 1) falls below `eval_share`, else "train".

    A threshold (not a sorted cut) keeps an item's split independent of which other items a
    language has, so the ui suite's uneven catalogues still never share items across splits; and
    a larger eval_share only moves items from train to eval.
    """
    digest = hashlib.sha256(f"{name}/{key}".encode("utf-8")).digest()
    position = int.from_bytes(digest[:8], "big") / 2**64
    return "eval" if position < eval_share else "train"


def subsample(items: Sequence[Item], count: int, seed: int) -> list[Item]:
    """`count` items chosen by a seeded hash of their keys, kept in their natural order.

    Ranking by hash (rather than drawing) makes the choice nested (the 20 items kept for a count
    of 20 are among those kept for 40) and the same items in every language that has them.
    """
    def rank(item: Item) -> bytes:
        return hashlib.sha256(f"{seed}/{item.key}".encode("utf-8")).digest()

    chosen = {item.key for item in sorted(items, key=rank)[:count]}
    return [item for item in items if item.key in chosen]


@functools.lru_cache(maxsize=None)
def language_name(language: str) -> str:
    """The English name of a language ("de" -> "German"), from CLDR."""
    from babel import Locale

    return Locale.parse(language).get_display_name("en")


def render_prompt(spec: SuiteSpec, language: str, text: str, style: str, shots: Sequence[Item] = ()) -> str:
    """The prompt for one item.

    "tag" is short and identical in shape across languages and suites ("<de> number: 246 ->"), which
    a tiny byte-level BPE model learns quickly; "instruct" is an instruction for chat models (English; gsm:
    the package's native one); "fewshot" shows solved `shots` in lines a base model continues ("English: Save\nGerman: Speichern"),
    ending where the answer goes: the answer is the rest of the line.
    """
    if style == "tag":
        return f"<{language}> {spec.tag_word}: {text} ->"
    if style == "fewshot":
        name = language_name(language)
        solved = "".join(f"{spec.fewshot_label}: {shot.text}\n{name}: {shot.answers[0]}\n\n" for shot in shots)
        return f"{solved}{spec.fewshot_label}: {text}\n{name}:"
    native = spec.instruction(language) if spec.instruction else ""
    return spec.instruct.format(text=text, language=language_name(language), instruction=native)


def fewshot_examples(name: str, language: str, eval_share: float) -> list[Item]:
    """The solved examples of few-shot prompts in `language`: short plain train-split items ranked by a
    fixed hash of their keys, so every run, arm and split shows the same ones, and no eval answer.
    One more than FEWSHOT_EXAMPLES, so that a train item's own prompt can leave itself out."""
    def plain(item: Item) -> bool:
        texts = (item.text, item.answers[0])
        return all(len(t) <= FEWSHOT_MAX_CHARS and not _PLACEHOLDER_CHARS & set(t) for t in texts)

    pool = [item for item in language_items(name, language).items
            if item_split(name, item.key, eval_share) == "train" and plain(item)]
    pool.sort(key=lambda item: hashlib.sha256(f"fewshot/{item.key}".encode("utf-8")).digest())
    if len(pool) < FEWSHOT_EXAMPLES + 1:
        raise UserError(f"suite {name!r} has {len(pool)} short train items in {language!r}, fewer than the "
                        f"{FEWSHOT_EXAMPLES + 1} few-shot prompts need; use prompt_style tag or instruct")
    return pool[: FEWSHOT_EXAMPLES + 1]


def _languages(spec: SuiteSpec, languages: Sequence[str] | None, per_language: Mapping | None) -> list[str]:
    if languages is None:
        chosen = list(per_language) if per_language else list(spec.languages)
    elif isinstance(languages, str):
        raise UserError(f"languages must be a list of codes, not the string {languages!r}; write [{languages!r}]")
    else:
        chosen = list(languages)
    if not chosen:
        raise UserError(f"no languages asked for suite {spec.name!r}; valid: {', '.join(spec.languages)}")
    duplicates = sorted({lang for lang in chosen if chosen.count(lang) > 1})
    if duplicates:
        raise UserError(f"languages listed twice for suite {spec.name!r}: {', '.join(duplicates)}")
    for language in chosen:
        if language not in spec.languages:
            raise _unknown_language(language, spec)
    for language in per_language or {}:
        if language not in chosen:
            raise UserError(
                f"per_language names {language!r}, which is not among the languages asked for "
                f"suite {spec.name!r} ({', '.join(chosen)}); add it to languages or remove it"
            )
    return chosen


def _check_options(split: str, eval_share: float, prompt_style: str, per_language: Mapping | None) -> None:
    if split not in SPLITS:
        raise _unknown("split", split, SPLITS)
    if prompt_style not in PROMPT_STYLES:
        raise _unknown("prompt style", prompt_style, PROMPT_STYLES)
    if isinstance(eval_share, bool) or not isinstance(eval_share, (int, float)) or not 0.0 < eval_share < 1.0:
        raise UserError(
            f"eval_share must be a number between 0 and 1 (exclusive), got {eval_share!r}: both splits need items"
        )
    for language, count in (per_language or {}).items():
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise UserError(f"per_language[{language!r}] must be a whole number of at least 1, got {count!r}")


def load_suite(
    name: str,
    *,
    languages: Sequence[str] | None = None,
    split: str = "train",
    per_language: Mapping[str, int] | None = None,
    eval_share: float = DEFAULT_EVAL_SHARE,
    prompt_style: str = "tag",
    seed: int = 0,
) -> list[dict]:
    """Records (see mlgrpo.data.records) of one split of a built-in suite, language by language.

    languages     codes to include, in this order; default: the keys of `per_language` if given,
                  else all of the suite's languages
    per_language  exact record count per language in the returned split (seeded subsample);
                  languages not named keep all their items. Asking for more items than the split
                  has is an error that names the language and the available count.
    eval_share    share of items (by item key, the same in every language) held out for "eval"
    seed          chooses the subsample; the split does not depend on it

    Each record has the standard fields plus `item` (the source key shown in the prompt: "246",
    "DE", the English UI string), `source` (packages and versions) and `split`; and `solution`, a worked
    solution, where the suite has one (gsm).
    """
    spec = get_spec(name)
    _check_options(split, eval_share, prompt_style, per_language)
    records = []
    for language in _languages(spec, languages, per_language):
        built = language_items(name, language).items
        items = [item for item in built if item_split(name, item.key, eval_share) == split]
        if per_language and language in per_language:
            wanted = per_language[language]
            if wanted > len(items):
                raise UserError(
                    f"suite {name!r} has {len(items)} {split} items in {language!r} (eval_share "
                    f"{eval_share}), but per_language asks for {wanted}; ask for at most {len(items)}"
                )
            items = subsample(items, wanted, seed)
        examples = fewshot_examples(name, language, eval_share) if prompt_style == "fewshot" else []
        for item in items:
            shots = [shot for shot in examples if shot.key != item.key][:FEWSHOT_EXAMPLES]
            records.append(_record(spec, language, item, split, prompt_style, shots))
    return records


def _record(spec: SuiteSpec, language: str, item: Item, split: str, prompt_style: str, shots: list[Item]) -> dict:
    solution = {} if item.solution is None else {"solution": item.solution}
    return {
        "id": f"{spec.name}/{language}/{item.key}",
        "prompt": render_prompt(spec, language, item.text, prompt_style, shots),
        "reference": item.answers[0],
        "answers": list(item.answers),
        "language": language,
        "task": spec.name,
        "item": item.text,
        "source": item.source,
        "split": split,
        **solution,
    }
