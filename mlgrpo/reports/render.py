"""Renders a Report (content.py) as one self-contained report.html and as report.md; computes nothing.

    write_html(report, folder / "report.html")    # figures read from folder/<Figure.path>, embedded
    write_markdown(report, folder / "report.md")  # figures linked as ![title](figures/x.png)

Every string of a Report is untrusted plain text: model outputs, prompts, answers, arm names, titles.
HTML escapes all of it (html.escape with quote=True), builds its tables itself (no to_html), links
nothing outside the file and carries no script at all, so a Content-Security-Policy that forbids
scripts and remote resources costs nothing and backs the escaping up. Bidi control characters
(U+202A-U+202E, U+2066-U+2069, U+200E, U+200F, U+061C) are replaced by a visible "<U+202E>" marker
in both outputs: a model that emits an override shows it, and it cannot reorder the rest of a cell
("Trojan Source", CVE-2021-42574). Sample cells carry dir="auto", so Arabic or Hebrew text reads
right to left, and lang= when the sample's language looks like a BCP 47 tag.

Layout: the first section (the answer) comes before the contents; collapsed sections are <details>
(a link from the contents opens its section); a section's figures come before its tables, each caption
above its figure; a table may carry a CSS class per cell (the verdict colours), its text says the same.
"""

from __future__ import annotations

import base64
import html
import math
import re
from collections.abc import Iterable
from numbers import Integral, Real
from pathlib import Path
from urllib.parse import quote

import pandas as pd

from mlgrpo.reports.content import Figure, Report, SampleRow, Section, Table

MISSING = "–"  # NaN, None or no output: an en dash, not an empty cell that reads as "zero"
_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_LANG_TAG = re.compile(r"^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$")  # "ar", "zh-Hans"; not "macro"
_IMAGE_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
                ".webp": "image/webp", ".svg": "image/svg+xml"}
_CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"


# --------------------------------------------------------------------------- shared


def neutralise_bidi(text: str) -> str:
    """'a\\u202eb' -> 'a<U+202E>b': bidi controls made visible (escape the result for HTML or Markdown)."""
    return _BIDI.sub(lambda m: f"<U+{ord(m.group()):04X}>", text)


def format_cell(value) -> str:
    """A table cell as text: 3 significant digits, no exponent from 1e-4 up, MISSING for NaN and None.

    0.12345 -> "0.123", 12.345 -> "12.3", 4.0e-5 -> "4e-05", 12345.6 -> "12346", nan -> "–".
    """
    if value is None or (pd.api.types.is_scalar(value) and pd.isna(value)):
        return MISSING
    if isinstance(value, bool) or not isinstance(value, Real):
        return str(value)
    if isinstance(value, Integral):
        return str(int(value))
    v = float(value)
    return f"{v:.0f}" if math.isfinite(v) and abs(v) >= 1000 else f"{v:.3g}"


def _is_number(value) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool)


def _flat_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """Index levels become columns (unless a plain RangeIndex); MultiIndex column names are joined."""
    if not (isinstance(frame.index, pd.RangeIndex) and frame.index.name is None):
        frame = frame.reset_index()
    if isinstance(frame.columns, pd.MultiIndex):
        frame = frame.set_axis([" / ".join(map(str, c)) for c in frame.columns], axis=1)
    return frame


def _numeric_columns(frame: pd.DataFrame) -> list[bool]:
    """A column is right-aligned when every value it has is a number (bool is not)."""
    out = []
    for _, column in frame.items():
        values = [v for v in column.tolist() if not (v is None or (pd.api.types.is_scalar(v) and pd.isna(v)))]
        out.append(bool(values) and all(_is_number(v) for v in values))
    return out


def _by_language(samples: Iterable[SampleRow]) -> dict[str, list[SampleRow]]:
    groups: dict[str, list[SampleRow]] = {}
    for row in samples:
        groups.setdefault(row.language, []).append(row)
    return groups


def _relative_path(figure: Figure) -> Path:
    relative = Path(figure.path)
    if relative.is_absolute() or ".." in relative.parts:
        raise ValueError(f"Figure {figure.title!r}: path {figure.path!r} must be relative to the report folder "
                         "(figures/<name>.png), so that report.md links it and report.html finds it")
    return relative


def _figure_data_uri(figure: Figure, folder: Path) -> str:
    relative = _relative_path(figure)
    file = folder / relative
    if not file.is_file():
        raise FileNotFoundError(f"Figure {figure.title!r}: {file} does not exist; write the figures before "
                                "rendering the report (mlgrpo.reports.figures)")
    mime = _IMAGE_TYPES.get(relative.suffix.lower())
    if mime is None:
        raise ValueError(f"Figure {figure.title!r}: {figure.path!r} is not one of {sorted(_IMAGE_TYPES)}")
    return f"data:{mime};base64,{base64.b64encode(file.read_bytes()).decode('ascii')}"


# --------------------------------------------------------------------------- HTML


def _h(text) -> str:
    """Any value as escaped HTML text, bidi controls made visible."""
    return html.escape(neutralise_bidi(str(text)), quote=True)


def _lang_attr(language: str) -> str:
    return f' lang="{_h(language)}"' if _LANG_TAG.match(language) else ""


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-") or "x"


def render_html(report: Report, folder: Path) -> str:
    """The whole page; figures are read from `folder` (the report folder) and embedded as data: URIs."""
    body = [f"<header><h1>{_h(report.title)}</h1>"]
    if report.subtitle:
        body.append(f'<p class="subtitle">{_h(report.subtitle)}</p>')
    body.append("</header>")
    if report.warnings:
        items = "".join(f"<li>{_h(w)}</li>" for w in report.warnings)
        body.append(f'<div class="warnings" role="note"><strong>Warnings</strong><ul>{items}</ul></div>')
    body.append("<main>")
    for i, section in enumerate(report.sections, 1):
        body.append(_html_section(section, i, Path(folder)))
        if i == 1:  # the answer first, then the contents of the details
            body.append(_html_toc(report))
    body.append("</main>")
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{_h(report.title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )


def _html_toc(report: Report) -> str:
    entries = []
    for i, section in enumerate(report.sections, 1):
        sub = [f'<li><a href="#figure-{i}-{j}">{_h(f.title)}</a></li>' for j, f in enumerate(section.figures, 1)]
        sub += [f'<li><a href="#table-{_slug(t.name)}">{_h(t.title)}</a></li>' for t in section.tables]
        if section.samples:
            sub.append(f'<li><a href="#samples-{i}">Sample outputs</a></li>')
        inner = f"<ul>{''.join(sub)}</ul>" if sub else ""
        entries.append(f'<li><a href="#section-{i}">{_h(section.title)}</a>{inner}</li>')
    return f'<nav class="toc"><h2>Contents</h2><ul>{"".join(entries)}</ul></nav>'


def _html_section(section: Section, index: int, folder: Path) -> str:
    heading = f"<h2>{_h(section.title)}</h2>"
    parts = [f'<section id="section-{index}">',
             f"<details><summary>{heading}</summary>" if section.collapsed else heading]
    parts += [f"<p>{_h(p)}</p>" for p in section.paragraphs]
    if section.bullets:
        parts.append("<ul>" + "".join(f"<li>{_h(b)}</li>" for b in section.bullets) + "</ul>")
    for j, figure in enumerate(section.figures, 1):  # the caption above its figure: below, it read as a heading
        note = f"<br><small>{_h(figure.note)}</small>" if figure.note else ""
        parts.append(f'<figure id="figure-{index}-{j}"><figcaption>{_h(figure.title)}{note}</figcaption>'
                     f'<img src="{_figure_data_uri(figure, folder)}" alt="{_h(figure.title)}"></figure>')
    parts += [_html_table(t) for t in section.tables]  # figures first: long tables come after the picture
    if section.samples:
        parts.append(f'<div id="samples-{index}">')
        for language, rows in _by_language(section.samples).items():
            parts.append(f"<h3>Sample outputs: {_h(language)}</h3>")
            parts.append(_html_samples(rows, section.sample_arms))
        parts.append("</div>")
    if section.collapsed:
        parts.append("</details>")
    parts.append("</section>")
    return "\n".join(parts)


def _html_table(table: Table) -> str:
    frame = _flat_frame(table.frame)
    numeric = _numeric_columns(frame)
    styles = table.styles.reset_index(drop=True) if table.styles is not None else None
    head = "".join(f'<th{_classes("num" if n else "")}>{_h(c)}</th>' for c, n in zip(frame.columns, numeric))
    rows = []
    for i, values in enumerate(frame.itertuples(index=False, name=None)):
        cells = "".join(f'<td{_classes("num" if n else "", _style(styles, i, column))}>'
                        f"{_h(format_cell(v))}</td>" for v, n, column in zip(values, numeric, frame.columns))
        rows.append(f"<tr>{cells}</tr>")
    note = f'<p class="note">{_h(table.note)}</p>' if table.note else ""
    return (f'<div class="table-wrap" id="table-{_slug(table.name)}"><table{_classes(table.css_class)}>'
            f"<caption>{_h(table.title)}</caption>"
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>{note}</div>")


def _style(styles: pd.DataFrame | None, row: int, column) -> str:
    if styles is None or column not in styles.columns or row >= len(styles):
        return ""
    value = styles.iloc[row][column]
    return value if isinstance(value, str) else ""


def _classes(*names: str) -> str:
    """ class="a b" from CSS class names, escaped; "" when there are none."""
    joined = " ".join(n for n in names if n)
    return f' class="{_h(joined)}"' if joined else ""


def _html_samples(rows: list[SampleRow], arms: list[str]) -> str:
    head = "<th>prompt</th><th>accepted answers</th>" + "".join(f"<th>{_h(a)}</th>" for a in arms)
    body = []
    for row in rows:
        lang = _lang_attr(row.language)
        answers = "".join(f'<div dir="auto"{lang}>{_h(a)}</div>' for a in row.answers) or MISSING
        cells = [f'<td class="text" dir="auto"{lang}>{_h(row.prompt)}</td>', f'<td class="text">{answers}</td>']
        for arm in arms:
            output = row.outputs.get(arm)
            text = _h(output) if output is not None else f'<span class="missing">{MISSING} no output</span>'
            score = format_cell(row.scores.get(arm))
            cells.append(f'<td class="text"><div class="out" dir="auto"{lang}>{text}</div>'
                         f'<div class="score">score {_h(score)}</div></td>')
        body.append(f"<tr>{''.join(cells)}</tr>")
    return (f'<div class="table-wrap"><table class="samples"><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table></div>")


_CSS = """
:root { color-scheme: light dark; --fg: #1f2328; --muted: #59636e; --line: #d1d9e0; --zebra: #f6f8fa;
  --head: #eef1f4; --warn-bg: #fff8c5; --warn-line: #d4a72c; --link: #0969da; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --muted: #9198a1; --line: #3d444d;
  --zebra: #151b23; --head: #212830; --warn-bg: #2e2a14; --warn-line: #9e6a03; --link: #4493f8; } }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", "Noto Sans Arabic",
  "Noto Sans CJK JP", "Noto Sans JP", "Noto Sans CJK SC", "Noto Sans SC", "Source Han Sans", "Hiragino Sans",
  "Hiragino Kaku Gothic ProN", "Yu Gothic", "Meiryo", "PingFang SC", "Microsoft YaHei", "Malgun Gothic",
  "Noto Sans Devanagari", sans-serif;
  color: var(--fg); line-height: 1.5; max-width: 1200px; margin: 2rem auto; padding: 0 1rem; }
h1 { margin-bottom: 0.2rem; } .subtitle { color: var(--muted); margin-top: 0; }
h2 { border-bottom: 1px solid var(--line); padding-bottom: 0.2rem; margin-top: 2.2rem; }
a { color: var(--link); text-decoration: none; } a:hover { text-decoration: underline; }
.warnings { background: var(--warn-bg); border: 1px solid var(--warn-line); border-radius: 6px;
  padding: 0.6rem 1rem; margin: 1rem 0; } .warnings ul { margin: 0.3rem 0 0; }
.toc ul { margin: 0.2rem 0; } .toc h2 { border: none; font-size: 1.1rem; margin-top: 1rem; }
.table-wrap { overflow-x: auto; margin: 1rem 0; }
table { border-collapse: collapse; font-size: 0.9rem; }
caption { text-align: start; font-weight: 600; padding: 0.3rem 0; }
th, td { border: 1px solid var(--line); padding: 0.3rem 0.6rem; vertical-align: top; text-align: start; }
thead th { background: var(--head); } tbody tr:nth-child(even) { background: var(--zebra); }
.num { text-align: right; font-variant-numeric: tabular-nums; }
.note, figcaption small { color: var(--muted); font-size: 0.85rem; }
figure { margin: 1.2rem 0; } figure img { max-width: 100%; height: auto; }
figcaption { font-weight: 600; } figcaption small { font-weight: normal; }
table.samples td.text { white-space: pre-wrap; overflow-wrap: anywhere; min-width: 12rem; max-width: 28rem; }
.score { color: var(--muted); font-size: 0.8rem; margin-top: 0.3rem; font-variant-numeric: tabular-nums; }
.missing { color: var(--muted); }
details > summary { cursor: pointer; list-style-position: outside; }
details > summary h2 { display: inline; border: none; }
section > details { border-bottom: 1px solid var(--line); padding-bottom: 0.4rem; margin-top: 1.6rem; }
table.evidence td { white-space: pre; font-variant-numeric: tabular-nums; font-size: 0.78rem; line-height: 1.3;
  padding: 0.2rem 0.35rem; }
table.evidence td.v-better { background: #c8ecdf; color: #0b3d2c; } table.evidence td.v-worse { background: #f7d0bd; color: #5a1f00; }
table.evidence td.v-negligible { background: #d5ebf8; color: #0f3550; } table.evidence td.v-none { background: #e9e9e9; color: #333; }
table.evidence td.v-unclear { background: #f3dcea; color: #4a1f38; }
table.evidence td.v-untestable { background: #fff; color: #555; font-style: italic; border-style: dashed; }
"""


def write_html(report: Report, path: Path) -> None:
    """report.html at `path`; Figure.path is read relative to path's folder."""
    path = Path(path)
    path.write_text(render_html(report, path.parent), encoding="utf-8")


# --------------------------------------------------------------------------- Markdown

_MD_INLINE = re.compile(r"([\\`*_\[\]<>|~&])")  # emphasis, code, links, HTML, table cells, entities
_MD_LINE_START = re.compile(r"^(\s*)([-+=>#]|\d+[.)])", re.MULTILINE)  # lists, headings, quotes


def _md_inline(text) -> str:
    """Plain text that renders as itself inside a line: no emphasis, links, raw HTML or cell breaks."""
    return _MD_INLINE.sub(r"\\\1", neutralise_bidi(str(text)))


def _md(text) -> str:
    """A paragraph of plain text: inline escapes, and no line may start a list, heading or quote."""
    return _MD_LINE_START.sub(lambda m: m.group(1) + "\\" + m.group(2), _md_inline(text))


def _md_cell(text) -> str:
    """One table cell: escaped, line breaks kept as <br> (GitHub renders it inside tables)."""
    lines = str(text).splitlines()
    return "<br>".join(_md_inline(line) for line in lines) if lines else " "


def _md_table(header: list[str], rows: list[list[str]], right: list[bool]) -> str:
    rule = ["---:" if r else "---" for r in right]
    return "\n".join("| " + " | ".join(cells) + " |" for cells in [header, rule, *rows])


def render_markdown(report: Report) -> str:
    """The same content as render_html; figures linked relative to the report folder."""
    out = [f"# {_md(report.title)}", ""]
    if report.subtitle:
        out += [f"*{_md(report.subtitle)}*", ""]
    if report.warnings:
        out += ["> **Warnings**", ">"] + [f"> - {_md(w)}" for w in report.warnings] + [""]
    for section in report.sections:
        out += [f"## {_md(section.title)}", ""]
        for paragraph in section.paragraphs:
            out += [_md(paragraph), ""]
        if section.bullets:
            out += [f"- {_md(b)}" for b in section.bullets] + [""]
        for figure in section.figures:
            out += [f"*{_md(figure.title)}*" + (f" — {_md(figure.note)}" if figure.note else ""), ""]
            out += [f"![{_md_inline(figure.title)}]({quote(_relative_path(figure).as_posix())})", ""]
        for table in section.tables:
            out += _md_table_block(table)
        for language, rows in _by_language(section.samples).items():
            out += [f"### Sample outputs: {_md(language)}", "", _md_samples(rows, section.sample_arms), ""]
    return "\n".join(out).rstrip() + "\n"


def _md_table_block(table: Table) -> list[str]:
    frame = _flat_frame(table.frame)
    numeric = _numeric_columns(frame)
    rows = [[_md_cell(format_cell(v)) for v in values] for values in frame.itertuples(index=False, name=None)]
    block = [f"**{_md(table.title)}**", "", _md_table([_md_cell(c) for c in frame.columns], rows, numeric), ""]
    return block + ([_md(table.note), ""] if table.note else [])


def _md_samples(rows: list[SampleRow], arms: list[str]) -> str:
    body = []
    for row in rows:
        answers = "<br>".join(_md_cell(a) for a in row.answers) or MISSING
        cells = [_md_cell(row.prompt), answers]
        for arm in arms:
            output = row.outputs.get(arm)
            text = _md_cell(output) if output is not None else f"{MISSING} no output"
            cells.append(f"{text}<br>*score {_md_inline(format_cell(row.scores.get(arm)))}*")
        body.append(cells)
    header = ["prompt", "accepted answers", *(_md_cell(a) for a in arms)]
    return _md_table(header, body, [False] * len(header))


def write_markdown(report: Report, path: Path) -> None:
    """report.md at `path`; figures are linked, so keep figures/ beside it."""
    Path(path).write_text(render_markdown(report), encoding="utf-8")
