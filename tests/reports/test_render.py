"""mlgrpo.reports.render: hostile model text stays text, the page loads nothing, Markdown says the same."""

from __future__ import annotations

import base64
import math
import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure as MplFigure

from mlgrpo.reports.content import Figure, Report, SampleRow, Section, Table
from mlgrpo.reports.render import format_cell, neutralise_bidi, render_html, write_html, write_markdown

SCRIPT = "<script>alert(1)</script>"
CLOSE = "x</script><b>bold</b>"
ATTRIBUTE = '" onmouseover="x'
IMG = "<img src=x onerror=alert(1)>"
RLO = "abc\u202eevil\u202cdef"
ARABIC = "الإجابة هي ٤٢"
MAGENTA = (1.0, 0.0, 1.0)  # the figure's colour, looked for in the browser screenshot

ALLOWED_TAGS = {"html", "head", "meta", "title", "style", "body", "header", "main", "nav", "section", "div",
                "h1", "h2", "h3", "p", "ul", "li", "a", "strong", "small", "br", "span", "table", "caption",
                "thead", "tbody", "tr", "th", "td", "figure", "figcaption", "img", "details", "summary"}
ALLOWED_ATTRIBUTES = {"lang", "charset", "http-equiv", "content", "name", "id", "class", "href", "src", "alt",
                      "dir", "role"}


def make_report(folder: Path) -> Report:
    """Two sections, a table with NaN and None, a magenta PNG, samples full of injection attempts."""
    (folder / "figures").mkdir(parents=True, exist_ok=True)
    figure = MplFigure(figsize=(4, 2))
    figure.add_subplot().imshow(np.ones((4, 8, 3)) * MAGENTA, aspect="auto")
    figure.savefig(folder / "figures" / "reward.png", dpi=60)
    frame = pd.DataFrame({"language": ["ar", "de", "x|y"], "arm": ["grpo", "ppo", IMG],
                          "mean": [0.123456, math.nan, 12345.6], "n": [3, 4, 5],
                          "p": [4.0e-5, None, 1.0]})
    samples = [
        SampleRow("ar", f"prompt {SCRIPT}", ["٤٢", ATTRIBUTE], {"grpo": ARABIC, "ppo": RLO}, {"grpo": 1.0, "ppo": None}),
        SampleRow("en", "two\nlines | pipe", ["42"], {"grpo": IMG, "ppo": CLOSE}, {"grpo": 0.0, "ppo": 0.5}),
        SampleRow("en", "missing arm", [], {"grpo": SCRIPT}, {"grpo": math.nan}),
    ]
    return Report(
        title=f"Report {SCRIPT}",
        subtitle=ATTRIBUTE,
        warnings=[f"run still in progress {IMG}"],
        sections=[
            Section(title="Curves", paragraphs=["See http-free text.", "# not a heading"], bullets=[SCRIPT],
                    figures=[Figure("figures/reward.png", f"Reward {ATTRIBUTE}", note="band: 95% t-interval")]),
            Section(title="Final", tables=[Table("final", f"Final {SCRIPT}", frame, note=IMG)],
                    samples=samples, sample_arms=["grpo", "ppo"]),
            Section(title="Details", collapsed=True, tables=[Table(
                "styled", "Verdicts", pd.DataFrame({"metric": ["exact_match"], "en": ["+0.1\n[+0.05, +0.15]\nbetter"]}),
                styles=pd.DataFrame({"metric": [""], "en": ['v-better" onclick="alert(1)']}), css_class="evidence")]),
        ],
    )


class _Collector(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


@pytest.fixture
def page(tmp_path) -> tuple[str, _Collector]:
    path = tmp_path / "report.html"
    write_html(make_report(tmp_path), path)
    source = path.read_text(encoding="utf-8")
    parser = _Collector()
    parser.feed(source)
    parser.close()
    return source, parser


def test_only_allowed_tags_and_attributes(page):
    source, parser = page
    tags = {tag for tag, _ in parser.tags}
    assert tags <= ALLOWED_TAGS, tags - ALLOWED_TAGS
    assert "script" not in tags and "<script" not in source.lower()
    for tag, attrs in parser.tags:
        assert set(attrs) <= ALLOWED_ATTRIBUTES, (tag, attrs)
        assert not any(name.startswith("on") for name in attrs), (tag, attrs)
        if "src" in attrs:
            assert attrs["src"].startswith("data:image/png;base64,"), attrs["src"][:40]
        if "href" in attrs:
            assert attrs["href"].startswith("#"), attrs["href"]
    assert [tag for tag, _ in parser.tags].count("img") == 1


def test_hostile_text_is_shown_as_text(page):
    source, parser = page
    text = "".join(parser.text)
    for hostile in (SCRIPT, CLOSE, ATTRIBUTE, IMG, ARABIC):
        assert hostile in text, hostile
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in source
    assert "&quot; onmouseover=&quot;x" in source
    assert "<b>" not in source


def test_bidi_controls_are_made_visible(page):
    source, parser = page
    assert "\u202e" not in source and "\u202c" not in source
    assert "abc&lt;U+202E&gt;evil&lt;U+202C&gt;def" in source
    assert neutralise_bidi("a\u200fb\u2066c") == "a<U+200F>b<U+2066>c"


def test_page_loads_nothing_and_forbids_scripts(page):
    source, parser = page
    assert "http://" not in source and "https://" not in source
    assert "//" not in re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "", source)  # nor protocol-relative
    csp = [a["content"] for t, a in parser.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
    assert csp and "default-src 'none'" in csp[0] and "script-src" not in csp[0]
    assert ("meta", {"charset": "utf-8"}) in parser.tags


def test_figure_is_embedded_byte_for_byte(tmp_path, page):
    source, parser = page
    src = next(a["src"] for t, a in parser.tags if t == "img")
    assert base64.b64decode(src.split(",", 1)[1]) == (tmp_path / "figures" / "reward.png").read_bytes()


def test_structure_toc_warnings_samples(page):
    source, parser = page
    ids = {a["id"] for _, a in parser.tags if "id" in a}
    hrefs = {a["href"][1:] for t, a in parser.tags if t == "a"}
    assert hrefs <= ids and {"section-1", "section-2", "table-final", "samples-2"} <= hrefs
    assert source.index('class="warnings"') < source.index('<nav class="toc"')
    cells = [a for t, a in parser.tags if t == "td" and a.get("dir") == "auto"]
    assert {"lang": "ar", "dir": "auto", "class": "text"} in cells
    outputs = [a for t, a in parser.tags if t == "div" and a.get("class") == "out"]
    assert len(outputs) == 6 and all(a["dir"] == "auto" for a in outputs)  # 3 rows x 2 arms
    assert "no output" in source and "score 0.5" in source


def test_collapsed_sections_and_cell_classes(page):
    source, parser = page
    assert "<details><summary><h2>Details</h2></summary>" in source and source.count("<details>") == 1
    assert '<table class="evidence">' in source
    assert '<td class="v-better&quot; onclick=&quot;alert(1)">+0.1\n[+0.05, +0.15]\nbetter</td>' in source
    assert source.index("<h2>Curves</h2>") < source.index('<nav class="toc">') < source.index("<h2>Final</h2>")


def test_table_cells_are_formatted(page):
    source, parser = page
    assert '<td class="num">0.123</td>' in source and '<td class="num">12346</td>' in source
    assert '<td class="num">–</td>' in source and '<td class="num">4e-05</td>' in source
    assert '<th class="num">mean</th>' in source and "<th>arm</th>" in source


def test_format_cell():
    assert [format_cell(v) for v in (0.12345, 12.345, 4e-5, 12345.6, math.nan, None, np.int64(7), True, "a")] == [
        "0.123", "12.3", "4e-05", "12346", "–", "–", "7", "True", "a"]
    assert format_cell(np.float32(0.5)) == "0.5" and format_cell(pd.NA) == "–"


def test_markdown_has_the_tables_escaped(tmp_path):
    write_markdown(make_report(tmp_path), tmp_path / "report.md")
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "| language | arm | mean | n | p |\n| --- | --- | ---: | ---: | ---: |" in md
    assert "| ar | grpo | 0.123 | 3 | 4e-05 |" in md
    assert "| x\\|y | \\<img src=x onerror=alert(1)\\> | 12346 | 5 | 1 |" in md
    assert "| prompt | accepted answers | grpo | ppo |" in md
    assert "two<br>lines \\| pipe" in md  # newline and pipe cannot break the row
    assert "![Reward \" onmouseover=\"x](figures/reward.png)" in md
    assert not re.search(r"(?<!\\)<(?!br>)", md), "an unescaped < outside the <br> of table cells"
    assert "\\<script\\>" in md and "\u202e" not in md and "\\# not a heading" in md
    assert "> - run still in progress" in md
    assert ARABIC in md


def test_missing_figure_is_an_error_not_a_blank(tmp_path):
    report = make_report(tmp_path)
    (tmp_path / "figures" / "reward.png").unlink()
    with pytest.raises(FileNotFoundError, match="reward.png"):
        render_html(report, tmp_path)
    report.sections[0].figures[0].path = "../outside.png"
    with pytest.raises(ValueError, match="relative to the report folder"):
        render_html(report, tmp_path)
