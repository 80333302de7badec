"""Language consistency of training completions, measured in a helper process.

The trainer logs per-language language consistency (mlgrpo.rewards.language_consistency) on logging
steps. Done inline it costs the step its CPU (~15 ms for 64 short completions in 50 languages: 6% of a
tiny-model step, bench/bench_load.py); in a background thread it cost more, because the thread's Python
holds the GIL and a training thread that lets go of it at every torch op waits to get it back (an
ad-hoc paired run on 2 cores, 2026-12-01: +12-15% step time with logging on, +5-6% without the
thread). A helper process has its own interpreter: the training process only pickles the completions.

Protocol: length-prefixed pickles over the helper's stdin and stdout, ("load", candidates) or
("measure", prompts, completions, languages, candidates) in, (request id, result or exception) out,
answered in order. The helper exits when its stdin closes, so it never outlives the training process
(even one killed with SIGKILL). Knows nothing about trainers or MLflow.
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
from concurrent.futures import Future
from typing import BinaryIO

_HEADER = struct.Struct("!Q")


def _write(stream: BinaryIO, message) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def _read(stream: BinaryIO):
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        raise EOFError
    size = _HEADER.unpack(header)[0]
    data = stream.read(size)
    if len(data) < size:
        raise EOFError
    return pickle.loads(data)


class ConsistencyProcess:
    """The helper process, started on first use; `measure` answers with a Future, `load` warms it up."""

    def __init__(self) -> None:
        self._process: subprocess.Popen | None = None
        self._pending: deque[Future] = deque()
        self._lock = threading.Lock()

    def load(self, candidates: tuple[str, ...]) -> Future:
        """Load the identifier models that measuring rows in `candidates` needs, in the helper."""
        return self._send(("load", tuple(candidates)))

    def measure(self, prompts: list, completions: list, languages: list, candidates: tuple[str, ...] | None) -> Future:
        """language_consistency(prompts, completions, language=languages, candidates=candidates), in the helper."""
        return self._send(("measure", list(prompts), list(completions), list(languages), candidates))

    @property
    def pid(self) -> int | None:
        """The helper's process id while it runs (benchmarks read its CPU time)."""
        return self._process.pid if self._process is not None else None

    def close(self) -> None:
        with self._lock:
            process, self._process = self._process, None
        if process is not None:
            process.stdin.close()  # the helper exits on EOF
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()

    def _send(self, request) -> Future:
        future: Future = Future()
        with self._lock:
            if self._process is None or self._process.poll() is not None:
                self._start()
            self._pending.append(future)
            try:
                _write(self._process.stdin, request)
            except (BrokenPipeError, OSError) as exc:
                self._pending.remove(future)
                raise RuntimeError(f"the language-consistency helper process is gone ({exc})") from None
        return future

    def _start(self) -> None:
        env = {**os.environ, "OMP_NUM_THREADS": "1"}  # language ID only: no thread pools competing with training
        # This file run as a script (-P: its folder not on sys.path), not `-m mlgrpo.trainers.consistency`,
        # which would first import mlgrpo.trainers and with it torch and TRL (~5 s).
        self._process = subprocess.Popen([sys.executable, "-P", os.path.abspath(__file__)], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, env=env)
        self._pending.clear()
        threading.Thread(target=self._answers, args=(self._process,), name="mlgrpo-consistency-reader",
                         daemon=True).start()

    def _answers(self, process: subprocess.Popen) -> None:
        """Reader thread: resolves the pending futures in order; blocked in read (no GIL) in between."""
        while True:
            try:
                ok, value = _read(process.stdout)
            except (EOFError, OSError, pickle.UnpicklingError):
                break
            with self._lock:
                future = self._pending.popleft()
            (future.set_result if ok else future.set_exception)(value)
        code = process.wait()
        with self._lock:
            if self._process is not process:
                return
            lost, self._pending = list(self._pending), deque()
        for future in lost:
            future.set_exception(RuntimeError(f"the language-consistency helper process exited with code {code}"))


_SERVICE: ConsistencyProcess | None = None


def service() -> ConsistencyProcess:
    """The process-wide helper (one per training process, shared by its trainers)."""
    global _SERVICE
    if _SERVICE is None:
        _SERVICE = ConsistencyProcess()
        atexit.register(_SERVICE.close)
    return _SERVICE


def _serve() -> None:
    from mlgrpo.rewards.language import language_consistency, load_models

    requests, answers = sys.stdin.buffer, os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    sys.stdout = sys.stderr  # a stray print must not land in the answers
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
        except Exception as exc:  # noqa: BLE001 - sent back, raised in the trainer where the result is read
            answer = (False, exc)
        try:
            _write(answers, answer)
        except (pickle.PicklingError, TypeError, AttributeError):
            _write(answers, (False, RuntimeError(repr(answer[1]))))


if __name__ == "__main__":
    _serve()
