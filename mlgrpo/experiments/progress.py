"""The progress display of `mlgrpo run`: one line overall, one line per active run (step, reward, ETA).

On a terminal the block is redrawn in place; otherwise (CI, a log file) a plain line is printed at most
every few seconds per run, so logs stay readable. Knows nothing about training or MLflow.
"""

from __future__ import annotations

import sys
import time


def eta(seconds: float, done: int, total: int) -> str:
    """Remaining time at the current pace, as m:ss ("?" before the first step).

    >>> eta(30.0, 10, 40)
    '1:30'
    """
    if done <= 0 or total <= done:
        return "?" if done <= 0 else "0:00"
    left = seconds / done * (total - done)
    return f"{int(left // 60)}:{int(left % 60):02d}"


class ProgressBoard:
    def __init__(self, total_runs: int, stream=None, plain_every: float = 5.0) -> None:
        self.total_runs, self.done_runs = total_runs, 0
        self.stream = stream or sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.plain_every = plain_every
        self.active: dict[str, dict] = {}
        self._last_plain: dict[str, float] = {}
        self._drawn = 0
        self.started = time.perf_counter()

    def update(self, message: dict) -> None:
        if "note" in message:  # a one-off line about a run ("resuming from checkpoint-40")
            self._clear()
            print(f"  {message['run']}: {message['note']}", file=self.stream, flush=True)
            if self.tty:
                self._redraw()
            return
        self.active[message["run"]] = message
        if self.tty:
            self._redraw()
        elif time.perf_counter() - self._last_plain.get(message["run"], 0.0) >= self.plain_every:
            self._last_plain[message["run"]] = time.perf_counter()
            print(self._line(message), file=self.stream, flush=True)

    def finished(self, run: str, status: str, seconds: float) -> None:
        self.active.pop(run, None)
        self.done_runs += 1
        self._clear()
        print(f"[{self.done_runs}/{self.total_runs}] {run}: {status} in {seconds:.0f}s", file=self.stream, flush=True)
        if self.tty:
            self._redraw()

    def skipped(self, run: str, why: str) -> None:
        self.done_runs += 1
        print(f"[{self.done_runs}/{self.total_runs}] {run}: skipped ({why})", file=self.stream, flush=True)

    def _line(self, m: dict) -> str:
        total = m.get("max_steps") or 0
        return (f"  {m['run']}: step {m['step']}/{total}  reward {m['reward']:.3f}  "
                f"ETA {eta(m['seconds'], m['step'], total)}")

    def _clear(self) -> None:
        if self.tty and self._drawn:
            self.stream.write(f"\x1b[{self._drawn}F\x1b[J")
            self._drawn = 0

    def _redraw(self) -> None:
        self._clear()
        elapsed = time.perf_counter() - self.started
        lines = [f"runs {self.done_runs}/{self.total_runs} done, {len(self.active)} running, {elapsed:.0f}s elapsed"]
        lines += [self._line(m) for m in self.active.values()]
        self.stream.write("\n".join(lines) + "\n")
        self.stream.flush()
        self._drawn = len(lines)
