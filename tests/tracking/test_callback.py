"""TrackingCallback inside a real Hugging Face Trainer: the trainer's logs arrive in mlgrpo names, with
per-language aggregates, at the trainer's steps; a checkpoint save finds its metrics in the store.

The trainer adds per-language values to its logs the way TRL's GRPOTrainer does (in `log`, from
metrics gathered during the step): here the squared error of each language's rows of real
multilingual data (the numbers suite), on a one-weight regression model; each step sees every row.
"""

from __future__ import annotations

from collections import defaultdict

import pytest
import torch
from mlflow import MlflowClient
from transformers import Trainer, TrainerCallback, TrainingArguments

from mlgrpo.data.suites import load_suite
from mlgrpo.tracking import Tracker, TrackingCallback

from .conftest import QUICK

LANGS = ("en", "ja", "sw")


class Regression(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Linear(1, 1)

    def forward(self, x, labels, lang_id):
        error = (self.weight(x).squeeze(-1) - labels) ** 2
        return {"loss": error.mean(), "error": error.detach()}


class PerLanguageTrainer(Trainer):
    """Collects per-row errors by language during steps and adds them to each log, as TRL does."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._errors: dict[str, list[float]] = defaultdict(list)

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        outputs = model(**inputs)
        for lang_id, error in zip(inputs["lang_id"].tolist(), outputs["error"].tolist()):
            self._errors[LANGS[lang_id]].append(error)
        return (outputs["loss"], outputs) if return_outputs else outputs["loss"]

    def log(self, logs, start_time=None):
        prefix = "" if self.model.training else "eval_"
        for lang, errors in self._errors.items():
            logs[f"{prefix}kl/{lang}"] = sum(errors) / len(errors)  # named kl: a lower-is-better metric
            logs[f"{prefix}samples/{lang}"] = float(len(errors))
        self._errors.clear()
        super().log(logs, start_time)


class StoreProbe(TrainerCallback):
    """Runs after TrackingCallback: what the store holds when a checkpoint is saved."""

    def __init__(self, client: MlflowClient, run_id: str):
        self.client, self.run_id, self.at_save = client, run_id, {}

    def on_save(self, args, state, control, **kwargs):
        steps = [m.step for m in self.client.get_metric_history(self.run_id, "train/loss")]
        self.at_save[state.global_step] = steps


def _rows() -> list[dict]:
    records = load_suite("numbers", languages=list(LANGS), per_language={lang: 8 for lang in LANGS})
    # target: the length of the spelled-out number (hundreds of characters), which differs by language
    return [{"x": [int(r["item"]) / 1000], "labels": len(r["reference"]) / 100, "lang_id": LANGS.index(r["language"])}
            for r in records]


@pytest.fixture(scope="module")
def trained(sqlite_uri, tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("callback")
    tracker = Tracker.open(sqlite_uri, "callback", policy=QUICK, outbox_dir=tmp_path / "outbox")
    child, _ = tracker.child_run(tracker.start_parent("p"), {"arm": "regression"}, "regression")
    probe = StoreProbe(tracker.client, child.run_id)
    args = TrainingArguments(output_dir=str(tmp_path / "out"), max_steps=4, logging_steps=1, save_steps=2,
                             per_device_train_batch_size=24, learning_rate=0.1, report_to="none", use_cpu=True,
                             remove_unused_columns=False, disable_tqdm=True, seed=0)
    rows = _rows()
    trainer = PerLanguageTrainer(model=Regression(), args=args, train_dataset=rows, eval_dataset=rows,
                                 callbacks=[TrackingCallback(child, LANGS), probe])
    trainer.train()
    trainer.evaluate()
    child.finish()
    return tracker, child, probe


def test_trainer_logs_arrive_named_aggregated_and_at_their_steps(trained):
    tracker, child, _ = trained
    client = tracker.client
    run = client.get_run(child.run_id)

    def steps(key):
        return [m.step for m in client.get_metric_history(child.run_id, key)]

    assert steps("train/loss") == [1, 2, 3, 4] and steps("train/learning_rate") == [1, 2, 3, 4]
    for lang in (*LANGS, "macro", "worst"):
        assert steps(f"train/kl/{lang}") == [1, 2, 3, 4], lang
    assert steps("eval/loss") == [4] and steps("eval/kl/worst") == [4]
    assert "train/summary/runtime" in run.data.metrics and "train/summary/loss" in run.data.metrics
    assert "train/samples/macro" in run.data.metrics and "train/samples/worst" not in run.data.metrics
    metrics = run.data.metrics
    per_lang = [metrics[f"eval/kl/{lang}"] for lang in LANGS]
    assert metrics["eval/kl/worst"] == max(per_lang)  # kl: higher is worse
    assert metrics["eval/kl/macro"] == pytest.approx(sum(per_lang) / 3)
    assert metrics["eval/samples/macro"] == 8.0  # 24 eval rows, 8 per language
    assert run.data.tags["mlgrpo.lower_is_better"] == "eval/kl,train/kl"


def test_checkpoint_save_finds_its_metrics_in_the_store(trained):
    _, _, probe = trained
    assert probe.at_save == {2: [1, 2], 4: [1, 2, 3, 4]}
