"""The bridge from a Hugging Face / TRL trainer's logs to an MLflow run.

TrackingCallback(handle, languages) goes into `Trainer(callbacks=[...])` (with report_to="none", so
that transformers' own MLflow callback does not log the same numbers under other names). Each log call
becomes one step of metrics in mlgrpo names with per-language aggregates (mlgrpo.tracking.names); a
checkpoint save and the end of training flush the buffer, so that a run resumed from that checkpoint
finds every metric up to it in the store.

Knows the TrainerCallback protocol only; nothing of models, data or algorithms.
"""

from __future__ import annotations

from collections.abc import Sequence

from transformers import TrainerCallback

from mlgrpo.tracking.names import LOWER, direction, tracked_metrics
from mlgrpo.tracking.run import RunHandle

LOWER_IS_BETTER_TAG = "mlgrpo.lower_is_better"


class TrackingCallback(TrainerCallback):
    """Logs the trainer's logs to `handle` at step state.global_step (main process only)."""

    def __init__(self, handle: RunHandle, languages: Sequence[str]):
        self.handle = handle
        self.languages = tuple(languages)
        self._lower: set[str] = set()

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not state.is_world_process_zero or not logs:
            return
        metrics = tracked_metrics(logs, self.languages)
        self.handle.log_metrics(metrics, step=state.global_step)
        # Say on the run which "worst" series are a max, so that nobody reads train/kl/worst as a min.
        lower = {k.rsplit("/", 1)[0] for k in metrics if k.endswith("/worst")
                 and direction(k.rsplit("/", 1)[0].split("/", 1)[-1]) == LOWER}
        if not lower <= self._lower:
            self._lower |= lower
            self.handle.set_tags({LOWER_IS_BETTER_TAG: ",".join(sorted(self._lower))})

    def on_save(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            self.handle.flush()

    def on_train_end(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            self.handle.flush()
