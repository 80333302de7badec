"""Helpers for the experiment tests: the shipped quickstart as text, and loading edited copies of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlgrpo.errors import UserError

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"
QUICKSTART = (EXPERIMENTS / "quickstart.yaml").read_text(encoding="utf-8")


def edited(old: str, new: str, text: str = QUICKSTART) -> str:
    """`text` with `old` replaced once; the test fails loudly if the quickstart no longer has `old`."""
    assert text.count(old) == 1, f"{old!r} is not exactly once in the base text"
    return text.replace(old, new)


def line_of(text: str, needle: str) -> int:
    """1-based line of the only line containing `needle`."""
    hits = [i for i, line in enumerate(text.splitlines(), 1) if needle in line]
    assert len(hits) == 1, f"{needle!r} is on lines {hits}"
    return hits[0]


@pytest.fixture
def write(tmp_path):
    def write(text: str, name: str = "exp.yaml") -> Path:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return path

    return write


@pytest.fixture
def load_error(write):
    """The message of the UserError that loading `text` raises (the test fails if it loads)."""
    from mlgrpo.experiments import load_experiment

    def load_error(text: str) -> tuple[str, Path]:
        path = write(text)
        with pytest.raises(UserError) as info:
            load_experiment(path)
        message = str(info.value)
        assert "\n" not in message
        return message, path

    return load_error
