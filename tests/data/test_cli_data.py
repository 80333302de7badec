"""`mlgrpo data prepare` and `mlgrpo data inspect` on good and bad input: output, one-line errors, exit codes.

Only the data command is registered (COMMAND_MODULES patched), so that these tests see this command's
behaviour whatever state the other sub-commands are in; tests/test_cli.py covers the whole CLI.
"""

from __future__ import annotations

import json
import subprocess
from collections import Counter
import sys

import pytest

from mlgrpo import cli

CANDIDATES = "ru,en,zh,ja,fr"


@pytest.fixture
def run(monkeypatch, capsys):
    monkeypatch.setattr(cli, "COMMAND_MODULES", ("data",))

    def _run(*args: str) -> tuple[int, str, str]:
        code = cli.main(["data", *map(str, args)])
        out, err = capsys.readouterr()
        return code, out, err

    return _run


def _one_line_error(code: int, err: str, *fragments: str) -> None:
    assert code == 2
    assert err.startswith("mlgrpo data: error: ") and err.count("\n") == 1 and "Traceback" not in err
    for fragment in fragments:
        assert fragment in err


@pytest.fixture
def good(write, real_text):
    texts = real_text.encodable([t for t in real_text.django("zh_Hans") if "%" not in t and len(t) > 6], "gbk", 10)
    rows = [{"prompt": t, "language": "zh-Hans" if i < 5 else None} for i, t in enumerate(texts)]
    return write("zh.jsonl", real_text.jsonl(rows) + "\n", "gbk"), texts


def test_prepare_writes_and_summarises(run, good, tmp_path):
    path, texts = good
    out = tmp_path / "out.jsonl"
    code, stdout, _ = run("prepare", path, "--out", out, "--candidates", CANDIDATES, "--problems", tmp_path / "p.jsonl")
    assert code == 0
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["prompt"] for r in records] == texts and [r["language"] for r in records][:5] == ["zh"] * 5
    assert "read      11 rows" in stdout and "wrote     10 rows" in stdout and "dropped   1: empty 1" in stdout
    assert "gb18030 (detected" in stdout and "(5 given, 5 identified)" in stdout
    counts = Counter(r["language"] for r in records)  # the summary tells what was written
    assert all(f"{code} {n} ({10 * n:.1f}%)" in stdout for code, n in counts.items())
    assert json.loads((tmp_path / "p.jsonl").read_text(encoding="utf-8"))["row"] == 11


def test_inspect_text_json_and_card(run, good, tmp_path):
    path, _ = good
    code, stdout, _ = run("inspect", path, "--candidates", CANDIDATES)
    assert code == 0 and "rows      11 read, 10 usable, 1 dropped" in stdout and f"{path}:11: empty (dropped)" in stdout
    code, stdout, _ = run("inspect", path, "--json", "--candidates", CANDIDATES, "--card", tmp_path / "card.md")
    report = json.loads(stdout)  # exactly one JSON object
    assert code == 0 and report["rows"]["usable"] == 10 and report["encoding"]["name"] == "gb18030"
    assert "## Fill in: license and provenance" in (tmp_path / "card.md").read_text(encoding="utf-8")


def test_bad_input_is_one_line_and_exit_2(run, write, tmp_path):
    out = tmp_path / "out.jsonl"
    _one_line_error(*run("prepare", tmp_path / "missing.jsonl", "--out", out)[::2], "missing.jsonl: no such file")
    _one_line_error(*run("inspect", write("d.xlsx", b"PK"))[::2], "unknown format '.xlsx'", ".jsonl")
    ok = write("ok.jsonl", '{"prompt": "hi"}\n')
    _one_line_error(*run("prepare", ok, "--out", out, "--encoding", "utf-9")[::2], "did you mean utf-8")
    _one_line_error(*run("prepare", ok, "--out", tmp_path / "no" / "out.jsonl")[::2], "does not exist")
    _one_line_error(*run("prepare", write("x.jsonl", '{"q": 1}\n'), "--out", out)[::2], "no usable rows")
    strict = write("s.jsonl", '{"prompt": "hi"}\n[1]\n')
    _one_line_error(*run("prepare", strict, "--out", out, "--strict", "--candidates", CANDIDATES)[::2], "s.jsonl:2: not_object")
    _one_line_error(*run("inspect", ok, "--candidates", "de,klingon")[::2], "unknown language code 'klingon'")
    assert not out.exists()


def test_prompt_field_and_mojibake_options(run, write, tmp_path):
    path = write("q.csv", "question,lang\nÃ©tÃ© Ã  Paris,fr\n")
    code, _, err = run("prepare", path, "--out", tmp_path / "o.jsonl")
    _one_line_error(code, err, "no column 'prompt'", "--prompt-field")
    code, stdout, _ = run("prepare", path, "--out", tmp_path / "o.jsonl", "--prompt-field", "question",
                          "--language-field", "lang", "--fix-mojibake")
    record = json.loads((tmp_path / "o.jsonl").read_text(encoding="utf-8"))
    assert code == 0 and (record["prompt"], record["language"]) == ("été à Paris", "fr")
    assert "warnings  1: mojibake_fixed 1" in stdout


def test_process_exit_code_and_no_traceback(write, tmp_path):
    script = "import sys, mlgrpo.cli as c; c.COMMAND_MODULES = ('data',); sys.exit(c.main(sys.argv[1:]))"
    result = subprocess.run(
        [sys.executable, "-c", script, "data", "prepare", str(tmp_path / "none.csv"), "--out", str(tmp_path / "o.jsonl")],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip() == f"mlgrpo data: error: {tmp_path / 'none.csv'}: no such file"
