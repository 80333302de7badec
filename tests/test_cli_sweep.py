"""Every sub-command of `mlgrpo` with missing, wrong and conflicting arguments (issue 8): a non-zero exit, a
message on stderr that names the problem, no traceback, and nothing created or changed on disk.

The sub-commands and their options come from walking the real parser (cli.build_parser), so a new command
or option is swept without editing this file; the cases that need a command's meaning (which argument is an
input path, which options conflict) are tables below, and a test checks that they name every command.
Cases run in-process through cli.main (argparse's SystemExit caught) in an empty working directory;
two run as real processes, to show what reaches a terminal.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mlgrpo import cli

REPO = Path(__file__).resolve().parents[1]
QUICKSTART = str(REPO / "experiments" / "quickstart.yaml")
WRONG = "not-a-number"

# {in}: a good JSONL file outside the working directory; {nowhere}: a folder that does not exist.
NONEXISTENT_INPUTS = [
    (["data", "prepare", "{nowhere}/in.jsonl", "--out", "out.jsonl"], "no such file"),
    (["data", "inspect", "{nowhere}/in.jsonl"], "no such file"),
    (["suites", "show", "no-such-suite"], "unknown suite 'no-such-suite'"),
    (["langid", "{nowhere}/in.jsonl"], "cannot read {nowhere}/in.jsonl"),
    (["model", "info", "{nowhere}/model"], "is not a saved model folder"),
    (["validate", "{nowhere}/exp.yaml"], "no such experiment file"),
    (["run", "{nowhere}/exp.yaml"], "no such experiment file"),
    (["eval", "--model", "tiny", "--data", "{nowhere}/held_out.jsonl"], "no such file"),  # MLflow on: no mlflow.db
    (["eval", "--model", "tiny", "--data", "{in}", "--baseline", "{nowhere}/b.json", "--no-mlflow"],
     "cannot read the baseline report"),
    (["report", "{nowhere}/exp.yaml"], "no such experiment file"),
    (["report", "no-such-experiment"], "no MLflow store at"),  # the default ./mlflow.db is not created
    (["ui"], "no MLflow store at"),
    (["ui", "--tracking-uri", "sqlite:///{nowhere}/mlflow.db"], "no MLflow store at"),
    (["server", "--backend-store-uri", "sqlite:///{nowhere}/mlflow.db", "--artifacts-destination", "artifacts"],
     "does not exist"),
]
# Commands that read no file, or whose only file is an output.
NO_INPUT = {"suites", "suites list", "suites cards", "model build-tiny"}

WRONG_VALUES = [
    (["data", "prepare", "{in}", "--out", "out.jsonl", "--encoding", "no-such-codec"], "is not a known encoding"),
    (["data", "inspect", "{in}", "--candidates", "en,xx"], "unknown language code 'xx'"),
    (["suites", "show", "numbers", "-n", "0"], "at least 1"),
    (["suites", "show", "numbers", "--eval-share", "2"], "between 0 and 1"),
    (["langid", "{in}", "--min-confidence", "7"], "between 0 and 1"),
    (["langid", "{in}", "--backend", "no-such-backend"], "unknown language-ID backend"),
    (["model", "build-tiny", "--options", "no_such_option=1"], "unknown tiny option"),
    (["eval", "--model", "tiny", "--data", "{in}", "--collapse-threshold", "5"], "between 0 and 1"),
    (["eval", "--model", "tiny", "--data", "{in}", "--rewards", "no_such_reward", "--no-mlflow"], "unknown reward"),
]

CONFLICTS = [
    (["data", "prepare", "{in}", "--out", "{inputs}/p.jsonl", "--problems", "{inputs}/p.jsonl"],
     "named for both --out and --problems"),
    (["data", "prepare", "{in}", "--out", "{in}"], "is the input file"),
    (["data", "prepare", "{in}", "--out", "out.jsonl", "--prompt-field", "q", "--answers-field", "q"],
     "is named for both prompt and answers"),
    (["data", "inspect", "{in}", "--card", "{in}"], "is the input file"),  # once overwrote the data with the card
    (["data", "inspect", "{in}", "--reference-field", "r", "--answers-field", "r"],
     "named for both reference and answers"),
    (["eval", "--model", "tiny", "--data", "{in}", "--output", "{in}", "--no-mlflow"], "is the --data file"),
    (["run", QUICKSTART, "--dry-run", "--only", "no-such-arm"], "arm 'no-such-arm' is not in the experiment"),
]


# ---- the parser, walked -----------------------------------------------------------------------------------

Command = tuple[tuple[str, ...], argparse.ArgumentParser]  # ("data", "prepare"), its parser


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[Command]:
    """(path, parser) of every command and sub-command, parents included."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _commands(child, (*path, name))


COMMANDS = [(path, parser) for path, parser in _commands(cli.build_parser()) if path]
LEAVES = [(path, parser) for path, parser in COMMANDS if parser.get_default("handler")]
LEAF_NAMES = {" ".join(path) for path, _ in LEAVES}


def _command_of(argv: list[str]) -> str:
    """The command an argv runs: "data prepare", "suites show", "run", ..."""
    return next(name for k in (2, 1) if (name := " ".join(argv[:k])) in LEAF_NAMES)


def _arguments(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if not isinstance(a, (argparse._HelpAction, argparse._VersionAction))]


def _required(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in _arguments(parser) if a.required]


def _required_argv(parser: argparse.ArgumentParser) -> list[str]:
    """Values for the required arguments (never read: each case fails while parsing)."""
    argv = []
    for action in _required(parser):
        if not isinstance(action, argparse._SubParsersAction):
            argv += [action.option_strings[0], "x"] if action.option_strings else ["x"]
    return argv


def _typed_options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """Options whose value argparse checks: a type (int, float, a parser function) or a list of choices."""
    return [a for a in _arguments(parser) if a.option_strings and (a.type not in (None, str) or a.choices)]


# ---- running a case ---------------------------------------------------------------------------------------

@pytest.fixture
def sweep(tmp_path, monkeypatch, capsys):
    """run(argv, fragment) -> problems found (empty: refused as required), in an empty working directory."""
    cwd, inputs = tmp_path / "cwd", tmp_path / "inputs"
    cwd.mkdir()
    inputs.mkdir()
    (inputs / "in.jsonl").write_text('{"prompt": "How many legs has a spider?", "reference": "8"}\n', encoding="utf-8")
    monkeypatch.chdir(cwd)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    names = {"{in}": str(inputs / "in.jsonl"), "{inputs}": str(inputs), "{nowhere}": str(tmp_path / "nowhere")}

    def fill(text: str) -> str:
        for key, value in names.items():
            text = text.replace(key, value)
        return text

    def snapshot() -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in inputs.iterdir()}

    def run(argv: list[str], fragment: str) -> list[str]:
        argv, fragment = [fill(a) for a in argv], fill(fragment)
        before = snapshot()
        try:
            code = cli.main(argv)
        except SystemExit as exc:  # argparse: usage and error on stderr
            code = exc.code
        out, err = capsys.readouterr()
        last = err.strip().splitlines()[-1] if err.strip() else ""
        where = f"mlgrpo {' '.join(argv)}"
        problems = []
        if code in (0, None):
            problems.append(f"{where}: exit {code}")
        if "Traceback" in out + err:
            problems.append(f"{where}: a traceback\n{err}")
        if ": error: " not in last or fragment not in last:
            problems.append(f"{where}: the last line of stderr does not say {fragment!r}: {last!r}")
        if os.listdir(cwd):
            problems.append(f"{where}: created {sorted(os.listdir(cwd))} in the working directory")
            for entry in cwd.iterdir():  # the next case starts in an empty directory again
                shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
        if snapshot() != before:
            problems.append(f"{where}: changed the input folder: {sorted(before)} -> {sorted(snapshot())}")
        return problems

    return run


def _sweep_all(sweep, reliability, what: str, cases: list[tuple[list[str], str]]) -> None:
    found = [sweep(argv, fragment) for argv, fragment in cases]
    reliability.record("bad input: CLI", what, "refused", tried=len(cases), refused=sum(not f for f in found))
    assert not any(found), "\n".join(p for problems in found for p in problems)


# ---- the sweep --------------------------------------------------------------------------------------------

def test_the_walk_finds_every_command():
    names = {" ".join(path) for path, _ in LEAVES}
    assert {"data prepare", "data inspect", "suites show", "langid", "model build-tiny", "model info", "validate",
            "run", "eval", "report", "ui"} <= names
    assert {path[0] for path, _ in COMMANDS} == set(cli.COMMAND_MODULES)


def test_the_tables_cover_every_command():
    covered = {_command_of(argv) for argv, _ in NONEXISTENT_INPUTS}
    assert LEAF_NAMES - NO_INPUT <= covered, LEAF_NAMES - NO_INPUT - covered
    assert NO_INPUT <= LEAF_NAMES, NO_INPUT - LEAF_NAMES  # a renamed command must leave this list too


def test_missing_arguments(sweep, reliability):
    cases = []
    for path, parser in COMMANDS:
        required = _required(parser)
        if required:  # named as argparse names them: INPUT, --out, ACTION
            cases.append((list(path), f"required: {', '.join(argparse._get_action_name(a) for a in required)}"))
    assert len(cases) >= 10
    _sweep_all(sweep, reliability, "missing arguments (every command with required ones)", cases)


def test_unknown_flag(sweep, reliability):
    cases = [([*path, *_required_argv(parser), "--no-such-flag"], "unrecognized arguments: --no-such-flag")
             for path, parser in LEAVES]
    _sweep_all(sweep, reliability, "an unknown flag (every command)", cases)


def test_wrong_typed_values(sweep, reliability):
    cases = [([*path, *_required_argv(parser), action.option_strings[0], WRONG],
              f"argument {'/'.join(action.option_strings)}: ")
             for path, parser in LEAVES for action in _typed_options(parser)]
    typed = {"suites show", "langid", "model build-tiny", "run", "eval", "ui"}
    assert {_command_of(argv) for argv, _ in cases} >= typed
    _sweep_all(sweep, reliability, "a wrong-typed value for a typed option (int, float, choices, parsed)", cases)


def test_out_of_range_and_unknown_values(sweep, reliability):
    _sweep_all(sweep, reliability, "out-of-range or unknown values (codec, language, suite, reward, ...)",
               WRONG_VALUES)


def test_nonexistent_inputs(sweep, reliability):
    _sweep_all(sweep, reliability, "a nonexistent input path or name (every command that reads one)",
               NONEXISTENT_INPUTS)


def test_conflicting_options(sweep, reliability):
    _sweep_all(sweep, reliability, "conflicting options (output = input, two fields on one column, ...)", CONFLICTS)


def test_a_real_terminal_sees_one_line(tmp_path, reliability):
    """Through real processes: exit 2, one line on stderr, nothing in the working directory, the input intact."""
    data = tmp_path / "in.jsonl"
    data.write_text('{"prompt": "hello"}\n', encoding="utf-8")
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    cases = [(["data", "inspect", str(data), "--card", str(data)], "is the input file"),
             (["eval", "--model", "tiny", "--data", str(tmp_path / "missing.jsonl")], "no such file")]
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    for argv, fragment in cases:
        result = subprocess.run([sys.executable, "-m", "mlgrpo.cli", *argv], cwd=cwd, env=env, capture_output=True,
                                text=True, timeout=120)
        assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
        assert result.stderr.count("\n") == 1 and fragment in result.stderr, result.stderr
        assert os.listdir(cwd) == [] and data.read_text(encoding="utf-8") == '{"prompt": "hello"}\n'
    reliability.record("bad input: CLI", "output = input, missing data (real processes)", "refused",
                       tried=len(cases), refused=len(cases))


def test_a_folder_tracking_uri_is_refused_in_one_line(sweep):
    assert not sweep(["report", "no-such-experiment", "--tracking-uri", "{nowhere}/mlruns"], "{nowhere}/mlruns")
