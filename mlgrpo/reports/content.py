"""What a report says, before it is rendered: titled sections of paragraphs, tables, figures and samples.

The builder (build.py) fills a Report from the statistics; render.py turns the same Report into HTML and
Markdown, so both say exactly the same thing. Every string here is plain text (model outputs included):
escaping is the renderer's job, and it escapes everything.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd


@dataclass
class Table:
    name: str  # file stem of its CSV (tables/<name>.csv), unique in a report
    title: str
    frame: pd.DataFrame
    note: str = ""  # how to read it (plain text)
    styles: pd.DataFrame | None = None  # CSS class names per cell, the frame's shape (HTML only; the text says it too)
    css_class: str = ""  # the table's own class ("evidence": cells keep their line breaks)


@dataclass
class Figure:
    path: str  # PNG, relative to the report folder (figures/<name>.png)
    title: str
    note: str = ""


@dataclass
class SampleRow:
    """One prompt with each arm's output side by side."""

    language: str
    prompt: str
    answers: list[str]
    outputs: dict[str, str]  # arm -> completion (seed shown in the section's note)
    scores: dict[str, float | None]  # arm -> the headline score of that completion


@dataclass
class Section:
    title: str
    paragraphs: list[str] = field(default_factory=list)
    bullets: list[str] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    samples: list[SampleRow] = field(default_factory=list)
    sample_arms: list[str] = field(default_factory=list)  # column order of `samples`
    collapsed: bool = False  # details a reader opens (HTML <details>); the first screen stays open


@dataclass
class Report:
    title: str
    subtitle: str
    sections: list[Section]
    warnings: list[str] = field(default_factory=list)  # shown first: in-progress runs, missing data

    def tables(self) -> list[Table]:
        return [t for s in self.sections for t in s.tables]

    def figures(self) -> list[Figure]:
        return [f for s in self.sections for f in s.figures]
