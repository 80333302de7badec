"""The `mlgrpo` entry point: help for every sub-command, one-line errors, no traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest

from mlgrpo import cli


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mlgrpo.cli", *args], capture_output=True, text=True, timeout=120
    )


def test_help_lists_every_subcommand():
    result = run_cli("--help")
    assert result.returncode == 0
    for name in cli.COMMAND_MODULES:
        assert name in result.stdout


@pytest.mark.parametrize("name", cli.COMMAND_MODULES)
def test_each_subcommand_has_help(name):
    with pytest.raises(SystemExit) as exit_info:
        cli.main([name, "--help"])
    assert exit_info.value.code == 0


def test_unknown_subcommand_fails_without_traceback():
    result = run_cli("no-such-command")
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert "invalid choice" in result.stderr


def test_version():
    result = run_cli("--version")
    assert result.returncode == 0 and "mlgrpo" in result.stdout
