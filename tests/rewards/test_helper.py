"""The language-consistency helper process: the same numbers as in the training process, errors carried back,
and it ends with its parent, even a parent killed with SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from mlgrpo.rewards.helper import ConsistencyProcess
from mlgrpo.rewards.language import language_consistency

COMPLETIONS = ["Γεια σου world", "Habari ya asubuhi", "Good morning to you", "42", "こんにちは"]
LANGUAGES = ["el", "sw", "sw", "en", "ja"]


def test_the_helper_measures_what_the_function_measures():
    helper = ConsistencyProcess()
    try:
        helper.load(("el", "en", "ja", "sw")).result(timeout=120)
        got = helper.measure([""] * 5, COMPLETIONS, LANGUAGES, ("el", "en", "ja", "sw")).result(timeout=120)
        assert got == language_consistency([""] * 5, COMPLETIONS, language=LANGUAGES, candidates=("el", "en", "ja", "sw"))
        assert got[0] == pytest.approx(2 / 3) and got[3] is None  # hand-worked in rewards/language.py
        # In order, several at once.
        futures = [helper.measure([""], [text], [lang], None) for text, lang in zip(COMPLETIONS, LANGUAGES)]
        assert [f.result(timeout=120)[0] for f in futures] == got
    finally:
        helper.close()
    assert helper.pid is None


def test_an_error_in_the_helper_is_raised_where_the_result_is_read():
    helper = ConsistencyProcess()
    try:
        future = helper.measure([""], ["Bonjour tout le monde"], ["fr"], ("de", "en"))
        with pytest.raises(ValueError, match="not among the language identifier's candidates"):
            future.result(timeout=120)
        assert helper.measure([""], ["Γεια"], ["el"], None).result(timeout=120) == [1.0]  # still serving
    finally:
        helper.close()


def test_a_helper_that_dies_fails_its_pending_work_and_the_next_request_starts_a_new_one():
    helper = ConsistencyProcess()
    try:
        helper.measure([""], ["Γεια"], ["el"], None).result(timeout=120)
        first = helper.pid
        # Work that takes the helper seconds (20,000 completions), killed while it is pending.
        texts = [f"Habari za asubuhi rafiki {i} Guten Morgen" for i in range(20_000)]
        pending = helper.measure([""] * len(texts), texts, ["sw"] * len(texts), ("de", "en", "sw"))
        os.kill(first, signal.SIGKILL)
        with pytest.raises(RuntimeError, match="exited with code -9"):
            pending.result(timeout=120)
        assert helper.measure([""], ["Γεια"], ["el"], None).result(timeout=120) == [1.0]  # a new helper
        assert helper.pid not in (None, first)
    finally:
        helper.close()


def test_a_request_that_cannot_be_pickled_raises_at_once_and_queues_nothing():
    helper = ConsistencyProcess()
    try:
        with pytest.raises(Exception, match="pickle"):
            helper.measure([""], [lambda: None], ["el"], None)
        assert helper.measure([""], ["Γεια"], ["el"], None).result(timeout=120) == [1.0]  # answers still pair up
    finally:
        helper.close()


PARENT = """
import sys, time
from mlgrpo.rewards.helper import service
service().measure([""], ["Γεια"], ["el"], None).result(timeout=120)
print(service().pid, flush=True)
time.sleep(600)
"""


def test_the_helper_exits_when_its_parent_is_killed():
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True)
    try:
        helper = int(parent.stdout.readline())
        parent.kill()  # SIGKILL: no atexit, no cleanup
        parent.wait(timeout=30)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                os.kill(helper, 0)
            except ProcessLookupError:
                return
            if open(f"/proc/{helper}/stat").read().split(") ", 1)[1].startswith("Z"):
                return  # exited; a zombie until init reaps it
            time.sleep(0.1)
        raise AssertionError(f"helper {helper} outlived its parent")
    finally:
        parent.kill()
