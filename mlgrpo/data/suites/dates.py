"""The `dates` suite: write a calendar date, given as year-month-day, the way the language writes it.

Answers are CLDR's date formats as babel renders them. Compositional (digits are copied, the month
name and the order are learnt), so a tiny model can learn it. Knows nothing about splits, prompts
or records.
"""

from __future__ import annotations

import datetime as dt

from mlgrpo.data.suites.base import LANGUAGES, Item, LanguageItems, Source, SuiteSpec, register, unique_answers

# 1,000 dates from 1950-01-01 in steps of 29 days (to 2029-04-27): 29 is prime to 7 and to every
# month length, so the items walk through all days of the month, weekdays and months evenly.
FIRST_DATE = dt.date(1950, 1, 1)
STEP_DAYS = 29
COUNT = 1000
# "long" is the date written in running text ("5. März 2024"); "full" is the same with the weekday,
# which is also correct. "medium" and "short" are not accepted: in many locales they are numeric
# ("05.03.2024"), which would turn the task into copying digits.
FORMATS = ("long", "full")

BABEL = Source(
    "babel",
    "BSD-3-Clause (code); its data is CLDR, (c) Unicode, Inc., Unicode License v3",
    "CLDR date formats (babel.dates.format_date)",
)


def dates() -> list[dt.date]:
    return [FIRST_DATE + dt.timedelta(days=STEP_DAYS * k) for k in range(COUNT)]


def build(language: str) -> LanguageItems:
    """Each date in `language`: CLDR "long" (the reference), then "full" (with the weekday)."""
    from babel import Locale
    from babel.dates import format_date

    locale = Locale.parse(language)
    source = str(BABEL)
    items = []
    for day in dates():
        answers = unique_answers(format_date(day, fmt, locale=locale) for fmt in FORMATS)
        items.append(Item(key=day.isoformat(), text=day.isoformat(), answers=answers, source=source))
    return LanguageItems(tuple(items))


SPEC = register(
    SuiteSpec(
        name="dates",
        description="Write a date, given as year-month-day, the way the language writes it in running text.",
        languages=LANGUAGES,
        sources=(BABEL,),
        tag_word="date",
        instruct=(
            "Write the date {text} (year-month-day) in {language}, in the long form used in running "
            "text. Answer with the date only."
        ),
        fewshot_label="Date",
        method=(
            f"Items are {COUNT:,} dates from {FIRST_DATE.isoformat()} in steps of {STEP_DAYS} days "
            "(through all days of the month, weekdays and months), the same in every language; the "
            "prompt shows the ISO date. The reference is CLDR's `long` date format in the language "
            "(babel.dates.format_date); CLDR's `full` format, the same date with its weekday, is also "
            "accepted. `medium` and `short` are not: in many locales they are numeric (de "
            "05.03.2024) and would reduce the task to copying digits. Answers are NFC with single "
            "plain spaces (CLDR puts a narrow no-break space before Russian 'г.' and Ukrainian 'р.')."
        ),
        known_problems=(
            "Digits are Latin in every language, as babel formats them, although CLDR's default "
            "numbering system is Persian digits for fa and Bengali digits for bn; native-digit "
            "answers are not in `answers` (a grader that maps digits to ASCII accepts them).",
            "The calendar is Gregorian everywhere: Thai dates carry the Christian-era mark ค.ศ. "
            "rather than the Buddhist era common in Thailand.",
            "Chinese and Japanese long dates are identical (2024年3月5日).",
        ),
        build=build,
    )
)
