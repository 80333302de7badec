"""Helpers for the experiment tests: the shipped quickstart as text, and loading edited copies of it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from mlgrpo.data.suites import available_suites
from mlgrpo.errors import UserError

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"
QUICKSTART = (EXPERIMENTS / "quickstart.yaml").read_text(encoding="utf-8")


def shipped_experiments() -> list:
    """Every experiment file in experiments/ as a pytest parameter. One whose suite needs a package that is not
    installed (gsm on Python 3.11 after the README's install command) skips, naming the command that adds it;
    `mlgrpo validate` refuses such a file in one line with the same command (test_validate_command)."""
    missing = {name: spec.missing for name, spec in available_suites().items() if spec.missing}
    params = []
    for path in sorted(EXPERIMENTS.glob("*.yaml")):
        suite = (yaml.safe_load(path.read_text(encoding="utf-8")).get("data") or {}).get("suite")
        reason = f"{path.name} uses the {suite} suite, which needs: {'; '.join(missing.get(suite, ()))}"
        params.append(pytest.param(path, id=path.stem, marks=pytest.mark.skipif(suite in missing, reason=reason)))
    return params


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
