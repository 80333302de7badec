"""Thread settings: deliberate, overridable by the user, applied to torch when it is loaded."""

from __future__ import annotations

import subprocess
import sys


def _threads_in_child(env_threads: str | None) -> str:
    code = (
        "from mlgrpo.runtime import configure_threads; n = configure_threads(); "
        "import torch, os; print(n, torch.get_num_threads(), os.environ['OMP_NUM_THREADS'])"
    )
    env = {"PATH": "/usr/bin:/bin"}
    if env_threads is not None:
        env["OMP_NUM_THREADS"] = env_threads
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout


def test_user_setting_wins():
    assert _threads_in_child("1").split() == ["1", "1", "1"]


def test_default_is_cores_per_worker():
    from mlgrpo.runtime import default_threads

    n, torch_n, env_n = _threads_in_child(None).split()
    assert int(n) == default_threads() == int(torch_n) == int(env_n)
    assert default_threads(workers=10_000) == 1
