"""The consistency benchmark's sources and arithmetic (bench/consistency_sources.py, bench/bench_consistency.py).

Its test sources must be whole catalogues nothing in mlgrpo trains or tunes on; its intervals and goal lines
must be the ones worked by hand here.
"""

from __future__ import annotations

import pytest

from bench import consistency_sources as sources
from bench.bench_consistency import goal_lines, wilson
from mlgrpo.langid import corpus


def test_wilson_interval_by_hand():
    # 97 of 100: p = 0.97, z = 1.96, z^2 = 3.8416; centre (0.97 + 0.019208) / 1.038416 = 0.952612;
    # half 1.96 * sqrt(0.97 * 0.03 / 100 + 3.8416 / 40000) / 1.038416 = 1.96 * 0.019673 / 1.038416 = 0.037133
    low, high = wilson(97, 100)
    assert low == pytest.approx(0.915479, abs=1e-5) and high == pytest.approx(0.989745, abs=1e-5)
    assert wilson(0, 10)[0] == 0.0 and 0.0 < wilson(0, 10)[1] < 0.31  # not empty at 0
    assert wilson(10, 10)[1] == 1.0 and wilson(10, 10)[0] > 0.69


def test_goal_lines_say_met_and_missed_and_name_languages_without_a_source():
    figures = {"correct": {"de": 0.99, "fa": 0.969}, "pairs": {"pt text in a es row": 0.03},
               "few_pairs": {"sw text in a id row": 0}, "english": {"de": 0.01, "fa": 0.0}, "neighbour_all": 0.03}
    correct, pairs, english = goal_lines(figures, ["sw"])
    assert "MISSED" in correct and "below: fa 0.969" in correct and "no unseen source: sw" in correct
    assert "met" in pairs and "sw text in a id row (0)" in pairs
    assert "worst de 0.010" in english and "MISSED" not in english
    assert "MISSED" in goal_lines({**figures, "correct": {"de": 0.99}}, ["sw"])[0]  # a language with no source fails too
    assert "MISSED" not in goal_lines({**figures, "correct": {"de": 0.99}}, [])[0]


def test_material_entries_read_text_and_leave_configuration_out(tmp_path):
    path = tmp_path / "xx.html"
    path.write_text('{% macro t(key) %}{{ {\n  "language": "xx",\n  "direction": "rtl",\n  "search.config.lang": "ja",\n'
                    '  "clipboard.copy": "Copia \\"esto\\"",\n  "footer.next": "Siguiente"\n}[key] }}{% endmacro %}\n',
                    encoding="utf-8")
    assert sources.material_entries(path) == {"clipboard.copy": 'Copia "esto"', "footer.next": "Siguiente"}


def test_tune_and_test_sources_are_disjoint_and_none_is_a_corpus_source():
    assert not set(sources.TUNE_SOURCES) & set(sources.TEST_SOURCES)
    assert len(sources.TEST_SOURCES) >= 3
    read_by_corpus = {"django", "rest_framework", "plone.app.locales", "pycountry", "babel"}
    assert not {"cms", "oscar", "humanize", "material", "edx_proctoring", "sphinx", "allauth"} & read_by_corpus
    assert not set(sources.TEST_SOURCES) & set(corpus.SOURCES)


@pytest.mark.slow
def test_test_sources_are_unseen_and_cover_the_languages():
    """Every test source's translations are unseen (none is in the language's training text) and translated
    (not spelled as their English); together they hold every benchmark language (Swahili: edx-proctoring alone)."""
    for name in sources.TEST_SOURCES:
        if not sources.source_triples(name):
            pytest.skip(f"{sources.PACKAGES[name]} is not installed: pip install -e '.[dev]'")
    assert sources.missing_languages(tuple(sources.TEST_SOURCES)) == []
    for name in sources.TEST_SOURCES:
        for language, english, translation in sources.source_triples(name)[:200]:
            assert corpus.fold(translation) != corpus.fold(english)
            assert corpus.fold(translation) not in sources._trained(language), (name, language, translation)


def test_a_section_written_into_another_file_survives_its_owner_rewriting_it(tmp_path):
    """bench_consistency writes its 'unseen' section into the data card that bench_langid rewrites whole:
    bench_langid keeps the sections it finds (`kept_sections`)."""
    from bench._report import kept_sections, write_section

    card = tmp_path / "card.md"
    card.write_text("# Card\n\nold body\n", encoding="utf-8")
    write_section("unseen", "Unseen", "figures", "cmd", card)
    text = card.read_text(encoding="utf-8")
    assert text.startswith("# Card\n\nold body") and "<!-- begin:unseen -->\n## Unseen" in text and "figures" in text
    kept = kept_sections(card)
    assert kept.startswith("<!-- begin:unseen -->") and kept.endswith("<!-- end:unseen -->") and "old body" not in kept
    assert kept_sections(tmp_path / "missing.md") == ""


def test_by_source_report_pools_languages_and_names_the_worst_source():
    """Two sources of German text and English answers: the figures pool the sources per language, with
    Wilson's interval, and a pair with under MIN_PAIR texts is named, not judged."""
    from bench.bench_consistency import MIN_PROBABILITY, by_source_report

    a, b = "django-cms", "humanize"
    sets = {"correct": [(a, "de", "Passwort ändern"), (b, "de", "Benutzername vergessen")],
            "english": [(a, "de", "Change password"), (b, "de", "Forgot your username")],
            "neighbour:nl text in a de row": [(a, "de", "Wachtwoord wijzigen")]}
    tables, figures = by_source_report(sets, MIN_PROBABILITY, (a, b))
    assert figures["correct"] == {"de": 1.0} and figures["english"] == {"de": 0.0}
    assert figures["few_pairs"] == {"nl text in a de row": 1} and figures["neighbour_all"] == 0.0
    assert "| de | 2 | 1.000 [0.342, 1.000] |" in tables  # Wilson's interval of 2 of 2
