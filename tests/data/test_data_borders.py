"""The data layer's borders: reading data never loads a model library, a tracker or a trainer."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("torch", "transformers", "trl", "mlflow", "datasets", "pyarrow")


def test_importing_the_data_commands_loads_no_heavy_library():
    # `datasets` and `pyarrow` load only for sources that need them (Parquet, datasets folders, hub ids).
    code = (
        "import sys, mlgrpo.data.prepare, mlgrpo.data.inspect, mlgrpo.commands.data; "
        f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""


def test_reading_a_jsonl_file_loads_no_heavy_library(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text('{"prompt": "Grüß Gott"}\n', encoding="utf-8")
    code = (
        f"import sys; from mlgrpo.data.readers import read_records; read_records({str(path)!r}); "
        f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""
