"""Write one benchmark's section into reports/benchmarks.md without touching the others.

Each benchmark owns the text between `<!-- begin:NAME -->` and `<!-- end:NAME -->`; a missing section
is appended. The file is re-read right before writing so that benchmarks can run one after another.
"""

from __future__ import annotations

import platform
import re
from datetime import date
from pathlib import Path

REPORT = Path(__file__).resolve().parent.parent / "reports" / "benchmarks.md"
HEADER = (
    "# Benchmarks\n\n"
    "Measured by the scripts in `bench/`; each section says the command that produced it.\n"
    "Numbers are from the machine named in each section, not targets.\n"
)


def machine() -> str:
    import os

    return f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"


def markdown_table(headers: list[str], rows: list[list]) -> str:
    def cell(v) -> str:
        if isinstance(v, float):
            return f"{v:.4g}"
        return str(v)

    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def write_section(name: str, title: str, body: str, command: str, path: Path = REPORT) -> Path:
    """Replace (or append) the section `name` of reports/benchmarks.md (or of the markdown file `path`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = path.read_text(encoding="utf-8") if path.exists() else HEADER
    section = (
        f"<!-- begin:{name} -->\n## {title}\n\n"
        f"Command: `{command}` ({date.today().isoformat()}, {machine()})\n\n"
        f"{body.strip()}\n<!-- end:{name} -->"
    )
    pattern = re.compile(rf"<!-- begin:{re.escape(name)} -->.*?<!-- end:{re.escape(name)} -->", re.S)
    if pattern.search(text):
        text = pattern.sub(lambda _: section, text)
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    path.write_text(text, encoding="utf-8")
    return path


def kept_sections(path: Path) -> str:
    """The `<!-- begin:NAME -->...<!-- end:NAME -->` sections of `path` (other benchmarks' parts of a file one rewrites)."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    return "\n\n".join(m.group(0) for m in re.finditer(r"<!-- begin:([\w-]+) -->.*?<!-- end:\1 -->", text, re.S))
