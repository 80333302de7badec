"""Language consistency measured in a helper process, for callers that must not spend their own CPU on it.

The trainer logs per-language language consistency (rewards.language.language_consistency) on logging
steps. Done inline it costs the step its CPU (~15 ms for 64 short completions in 50 languages: 6% of a
tiny-model step, bench/bench_load.py); in a background thread it cost more, because the thread's Python
holds the GIL and a training thread that lets go of it at every torch op waits to get it back (an
ad-hoc paired run on 2 cores, 2026-12-01: +12-15% step time with logging on, +5-6% without the
thread). A helper process has its own interpreter: the caller only pickles the completions.

Protocol: length-prefixed pickles over the helper's stdin and stdout, ("load", candidates) or
("measure", prompts, completions, languages, candidates) in, (ok, result or exception) out, answered
in order. Each helper has its own queue of pending futures, read by its own reader thread: a helper
that dies fails exactly its own pending work, and the next request starts a new one. The helper exits
when its stdin closes, so it never outlives its parent (even one killed with SIGKILL).
Started as `python -m mlgrpo.rewards.helper`: importing mlgrpo.rewards is light (no torch).
"""

from __future__ import annotations

import atexit
import os
import pickle
import struct
import subprocess
import sys
import threading
from collections import deque
from concurrent.futures import Future, InvalidStateError
from typing import BinaryIO

_HEADER = struct.Struct("!Q")


def _frame(message) -> bytes:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return _HEADER.pack(len(data)) + data


def _read(stream: BinaryIO):
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        raise EOFError
    size = _HEADER.unpack(header)[0]
    data = stream.read(size)
    if len(data) < size:
        raise EOFError
    return pickle.loads(data)


class _Helper:
    """One running helper process and the futures waiting for its answers, oldest first."""

    def __init__(self) -> None:
        env = {**os.environ, "OMP_NUM_THREADS": "1"}  # language ID only: no thread pools competing with training
        self.process = subprocess.Popen([sys.executable, "-m", __name__], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, env=env)
        self.pending: deque[Future] = deque()  # append (writer) and popleft (reader) are atomic
        self.closed = False
        threading.Thread(target=self._answers, name="mlgrpo-helper-reader", daemon=True).start()

    def alive(self) -> bool:
        return not self.closed and self.process.poll() is None

    def _answers(self) -> None:
        """Resolve the pending futures in order; blocked in read (no GIL) in between."""
        try:
            while True:
                ok, value = _read(self.process.stdout)
                future = self.pending.popleft()
                (future.set_result if ok else future.set_exception)(value)
        except Exception:  # noqa: BLE001 - EOF, a dead helper, an answer that does not unpickle: fail what waits
            pass
        self.closed = True
        code = self.process.wait()
        while self.pending:
            self.pending.popleft().set_exception(
                RuntimeError(f"the language-consistency helper process exited with code {code}"))


class ConsistencyProcess:
    """The helper process, started on first use (and again after it died); `measure` answers with a Future."""

    def __init__(self) -> None:
        self._helper: _Helper | None = None
        self._write_lock = threading.Lock()  # one writer at a time; the reader never takes it

    @property
    def pid(self) -> int | None:
        """The helper's process id while it runs (benchmarks read its CPU time)."""
        helper = self._helper
        return helper.process.pid if helper is not None and helper.alive() else None

    def load(self, candidates: tuple[str, ...]) -> Future:
        """Load the identifier models that measuring rows in `candidates` needs, in the helper."""
        return self._send(("load", tuple(candidates)))

    def measure(self, prompts: list, completions: list, languages: list, candidates: tuple[str, ...] | None) -> Future:
        """language_consistency(prompts, completions, language=languages, candidates=candidates), in the helper."""
        return self._send(("measure", list(prompts), list(completions), list(languages), candidates))

    def close(self) -> None:
        with self._write_lock:
            helper, self._helper = self._helper, None
        if helper is not None:
            helper.process.stdin.close()  # the helper exits on EOF
            try:
                helper.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                helper.process.kill()

    def _send(self, request) -> Future:
        frame = _frame(request)  # before anything is queued: a request that cannot be pickled raises here
        future: Future = Future()
        with self._write_lock:
            if self._helper is None or not self._helper.alive():
                self._helper = _Helper()
            helper = self._helper
            helper.pending.append(future)
            try:
                helper.process.stdin.write(frame)
                helper.process.stdin.flush()
            except OSError as exc:  # it died; its reader may have failed what was pending already
                try:
                    future.set_exception(RuntimeError(f"the language-consistency helper process is gone ({exc})"))
                except InvalidStateError:
                    pass
        return future


_SERVICE: ConsistencyProcess | None = None


def service() -> ConsistencyProcess:
    """The process-wide helper (one per process, shared by its trainers)."""
    global _SERVICE
    if _SERVICE is None:
        _SERVICE = ConsistencyProcess()
        atexit.register(_SERVICE.close)
    return _SERVICE


def _serve() -> None:
    from mlgrpo.rewards.language import language_consistency, load_models

    requests = sys.stdin.buffer
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # file descriptor 1 too: output of native code must not land in the answers
    sys.stdout = sys.stderr
    while True:
        try:
            kind, *args = _read(requests)
        except EOFError:
            return
        try:
            if kind == "load":
                result = load_models(args[0]) if args[0] else None
            else:
                prompts, completions, languages, candidates = args
                result = language_consistency(prompts, completions, language=languages, candidates=candidates)
            answer = (True, result)
        except Exception as exc:  # noqa: BLE001 - sent back, raised where the result is read
            answer = (False, exc)
        try:
            frame = _frame(answer)
            pickle.loads(frame[_HEADER.size:])  # an exception that does not round-trip is sent as text
        except Exception:  # noqa: BLE001
            frame = _frame((False, RuntimeError(repr(answer[1]))))
        answers.write(frame)
        answers.flush()


if __name__ == "__main__":
    _serve()
