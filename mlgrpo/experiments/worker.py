"""One run of a comparison (one arm x one seed), start to finish, in the process that calls it.

    load data (same order for every arm of a seed) -> load the policy (same initial weights)
    -> rewards (registry, guarded) -> trainer (TRAINERS[algorithm]) with callbacks:
       tracking (metrics to MLflow), evaluation (step 0, every N, end), progress, graceful stop
    -> resume from the run's last checkpoint when there is one -> final evaluation -> FINISHED

SIGTERM and SIGINT stop the run at the next step boundary: it saves a checkpoint and is marked KILLED;
running the experiment again resumes it. Knows nothing about how runs are scheduled or displayed.

Under `accelerate launch` / `torchrun` every rank calls execute_run for the same run: the main process
(the one given an MLflow run id) tracks, evaluates and reports progress; the other ranks only train.
"""

from __future__ import annotations

import json
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from transformers import TrainerCallback

from mlgrpo.errors import UserError


@dataclass
class RunOutcome:
    run_name: str
    status: str  # FINISHED | KILLED | FAILED
    seconds: float
    eval_start: dict | None  # EvalReport.to_json() at step 0
    eval_end: dict | None  # at the end
    message: str = ""


class StopFlag:
    """Set by SIGTERM/SIGINT; the trainer checks it at every step boundary."""

    def __init__(self) -> None:
        self.requested = False
        self.signal_name = ""

    def install(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._handle)

    def _handle(self, signum, frame) -> None:
        self.requested = True
        self.signal_name = signal.Signals(signum).name


class StopAtBoundary(TrainerCallback):
    """Stops at the step boundary after a signal. With several ranks they agree first (any rank's signal
    stops all of them at the same step): a rank that stopped alone would leave the others waiting forever
    in the next step's collectives."""

    def __init__(self, flag: StopFlag) -> None:
        self.flag = flag

    def on_step_end(self, args, state, control, **kwargs):
        if args.world_size > 1:
            self.flag.requested = _any_rank(self.flag.requested)
        if self.flag.requested:
            control.should_save = True
            control.should_training_stop = True
        return control


class Progress(TrainerCallback):
    """Reports (run, step, max_steps, reward, seconds) through `emit` after every logged step."""

    def __init__(self, run_name: str, emit) -> None:
        self.run_name, self.emit, self.started = run_name, emit, time.perf_counter()

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "reward" in logs:
            self.emit({"run": self.run_name, "step": state.global_step, "max_steps": state.max_steps,
                       "reward": logs["reward"], "seconds": time.perf_counter() - self.started})


class Evaluate(TrainerCallback):
    """Held-out evaluation every `every` steps (0: only at start and end, which the worker runs)."""

    def __init__(self, run_eval, every: int) -> None:
        self.run_eval, self.every = run_eval, every

    def on_step_end(self, args, state, control, **kwargs):
        if self.every and state.global_step % self.every == 0 and state.global_step < state.max_steps:
            self.run_eval(state.global_step)
        return control


def _any_rank(value: bool) -> bool:
    import torch
    import torch.distributed as dist
    from accelerate import PartialState

    flag = torch.tensor([float(value)], device=PartialState().device)
    dist.all_reduce(flag, op=dist.ReduceOp.MAX)
    return bool(flag.item())


def latest_checkpoint(folder: Path) -> str | None:
    """The newest checkpoint the trainer finished writing; one a kill cut short is passed over (runs keep
    two checkpoints, so the one before it is still there)."""
    import re

    from mlgrpo.trainers.checkpoints import complete_checkpoint

    if not folder.is_dir():
        return None
    found = [(int(m[1]), p) for p in folder.iterdir() if (m := re.fullmatch(r"checkpoint-(\d+)", p.name)) and p.is_dir()]
    return next((str(p) for _, p in sorted(found, reverse=True) if complete_checkpoint(p)), None)


OWNER = "run.json"  # in a run's folder: which experiment, run and configuration its checkpoints belong to


def claim_run_folder(run_dir: Path, experiment_name: str, run_name: str, config_hash: str, write: bool = True) -> None:
    """Refuse to resume from checkpoints that another configuration wrote (two experiment files sharing a
    `run.output_dir`, or an arm edited after its run was interrupted): resuming would silently continue
    training another configuration. Else record this run as the folder's owner (when `write`).
    Folders from before the owner file existed are taken as they are."""
    owner_file = run_dir / OWNER
    mine = {"experiment": experiment_name, "run": run_name, "config_hash": config_hash}
    if owner_file.is_file() and latest_checkpoint(run_dir / "checkpoints") is not None:
        try:
            owner = json.loads(owner_file.read_text(encoding="utf-8"))
        except ValueError:
            owner = {}
        if {k: owner.get(k) for k in mine} != mine:
            raise UserError(
                f"{run_dir}: its checkpoints belong to run {owner.get('run')!r} of experiment {owner.get('experiment')!r} "
                f"(config {owner.get('config_hash')}), not to {run_name!r} of {experiment_name!r} (config {config_hash}); "
                "resuming would continue another configuration: remove the folder or give this experiment its own "
                "run.output_dir")
    if write:
        run_dir.mkdir(parents=True, exist_ok=True)
        owner_file.write_text(json.dumps(mine), encoding="utf-8")


def execute_run(experiment_path: str, run_index: int, tracking_uri: str, child_run_id: str | None, run_dir: str,
                emit=lambda message: None, threads: int = 1, tags: dict | None = None) -> RunOutcome:
    """Train and evaluate run `run_index` of the experiment's plan, logging to the MLflow run `child_run_id`
    (None on the ranks other than the main one of a distributed launch: they train and nothing else), with
    `tags` added to it (where it runs, for a run placed by Ray)."""
    from mlgrpo.runtime import configure_threads

    configure_threads(threads)
    flag = StopFlag()
    flag.install()
    from mlgrpo.experiments import load_experiment
    from mlgrpo.tracking import Tracker

    experiment = load_experiment(experiment_path)
    run = experiment.plan()[run_index]
    handle = None
    if child_run_id is not None:
        handle = Tracker.open(tracking_uri, experiment.tracking_experiment).attach(child_run_id)
        handle.set_tags(tags or {})
    started = time.perf_counter()
    try:
        outcome = _train(experiment, run, handle, Path(run_dir), flag, emit)
    except BaseException as exc:
        if handle is not None:
            handle.finish("KILLED" if isinstance(exc, KeyboardInterrupt) else "FAILED")
        raise
    if handle is not None:
        handle.finish(outcome.status)
    outcome.seconds = time.perf_counter() - started
    return outcome


def _train(experiment, run, handle, run_dir: Path, flag: StopFlag, emit) -> RunOutcome:
    import torch
    from datasets import Dataset

    from mlgrpo.evaluation import EvalReport, collapse_warnings, evaluate_policy
    from mlgrpo.evaluation.report import paired_change
    from mlgrpo.experiments import grpo_config, load_run_data
    from mlgrpo.models import load_policy
    from mlgrpo.rewards import RewardGuard, build_reward_functions
    from mlgrpo.rewards.control import RewardControl
    from mlgrpo.tracking import TrackingCallback, log_language_plots
    from mlgrpo.trainers import TRAINERS

    torch.manual_seed(run.seed)
    ev = run.evaluation
    train_records, eval_records = load_run_data(run.data, run.seed, eval_per_language=ev.per_language)
    languages = sorted({r["language"] for r in train_records})
    model, tokenizer = load_policy(run.model.policy, dtype=run.model.dtype, tokenizer=run.model.tokenizer,
                                   stop_at_newline=run.model.stop_at_newline)
    guard = RewardGuard(run.rewards.on_bad_reward)
    funcs, weights = build_reward_functions(run.rewards, guard=guard)
    # A control arm trains on rewards with their link to the completions broken; evaluation scores the real ones.
    train_funcs = RewardControl(run.rewards.control, run.seed).wrap(funcs)
    state_file = run_dir / "eval_start.json"
    main = handle is not None  # the process that tracks and evaluates (the only one, unless distributed)

    # Sampled pass@1 at the rollouts' own temperature: what RL changes first (greedy text can stay put).
    temperature = run.effective["training"]["temperature"]
    reference = _frozen_copy(model) if main else None  # KL to the initial policy at every evaluation
    start_report: list = []  # the step-0 report, for "change since step 0" and collapse warnings

    def run_eval(step: int) -> dict:
        report = evaluate_policy(model, tokenizer, eval_records, metrics=ev.metrics, max_new_tokens=ev.max_new_tokens,
                                 batch_size=ev.batch_size, sampled_k=ev.sampled_k, reward_funcs=funcs,
                                 reward_weights=weights, samples_per_language=ev.samples_per_language, seed=run.seed,
                                 reference_model=reference, temperature=temperature)
        metrics = report.flat("eval")
        if start_report:
            metrics.update(collapse_warnings(start_report[0], report))
            metrics.update(paired_change(start_report[0], report))
        handle.log_metrics(metrics, step=step)
        handle.log_table(report.samples, f"samples/step_{step:06d}.json")
        handle.log_dict(report.items, f"{ITEMS_FOLDER}/step_{step:06d}.json")
        return report.to_json()

    claim_run_folder(run_dir, experiment.name, run.run_name, run.config_hash, write=main)
    checkpoint = latest_checkpoint(run_dir / "checkpoints")  # the same on every rank: a shared folder
    eval_start = None
    if main:
        if checkpoint is None or not state_file.exists():
            run_dir.mkdir(parents=True, exist_ok=True)
            _log_data(handle, run, train_records, eval_records, run_dir)
            state_file.write_text(json.dumps(run_eval(0)), encoding="utf-8")
        eval_start = json.loads(state_file.read_text(encoding="utf-8"))
        start_report.append(EvalReport.from_json(eval_start, str(state_file)))
    args = grpo_config(run, str(run_dir / "checkpoints"), reward_weights=weights,
                       save_strategy="steps", save_steps=experiment.run_settings.checkpoint_every,
                       save_total_limit=2)  # 2: when a kill cuts the newest short, the one before is complete
    trainer = TRAINERS[run.algorithm.name](
        model=model, reward_funcs=train_funcs, args=args, train_dataset=Dataset.from_list(train_records),
        processing_class=tokenizer, algorithm=run.algorithm, kl=run.kl, sampler=run.sampler, reward_guard=guard,
        reward_clip=[spec.clip for spec in run.rewards.rewards], group_schedule=run.update.group_schedule,
        peft_config=_lora(run.model.lora), reference_model=reference,  # one frozen copy: evaluation's and PPO's
        callbacks=[StopAtBoundary(flag)] + ([TrackingCallback(handle, languages), Evaluate(run_eval, ev.every_steps),
                                             Progress(run.run_name, emit)] if main else []),
    )
    _quiet(trainer)
    if checkpoint is not None and main:
        emit({"run": run.run_name, "note": f"resuming from {Path(checkpoint).name}"})
    trainer.train(resume_from_checkpoint=checkpoint)
    if flag.requested:
        return RunOutcome(run.run_name, "KILLED", 0.0, eval_start, None, f"stopped by {flag.signal_name}")
    trainer.save_model(str(run_dir / "final"))  # every rank: saving is collective under DeepSpeed / FSDP
    if not main:
        return RunOutcome(run.run_name, "FINISHED", 0.0, None, None)
    eval_end = run_eval(trainer.state.global_step)
    handle.flush()
    log_language_plots(handle, PLOTTED)
    return RunOutcome(run.run_name, "FINISHED", 0.0, eval_start, eval_end)


# Per-prompt scores of each evaluation (EvalReport.items), read by `mlgrpo report`.
ITEMS_FOLDER = "eval_items"

# Metric families drawn as one line per language at the end of a run (PNG artifacts under plots/).
PLOTTED = ("train/reward", "train/language_consistency", "train/adv/mean", "eval/exact_match", "eval/chrf",
           "eval/reward/total")


def _log_data(handle, run, train_records, eval_records, run_dir: Path) -> None:
    """The data a run used: datasets (MLflow dataset tracking), language distributions, the suite's card."""
    from mlgrpo.tracking import log_records

    card = None
    if run.data.suite:
        from mlgrpo.data.cards import render_card

        card = run_dir / f"{run.data.suite}_card.md"
        card.write_text(render_card(run.data.suite), encoding="utf-8")
    log_records(handle, train_records, "train", "training", card=card)
    log_records(handle, eval_records, "eval", "evaluation")


def _frozen_copy(model):
    """A frozen copy of the initial policy for KL at evaluation; None (KL not measured) with PEFT adapters,
    whose reference is the base model under them, or when a copy would not fit comfortably (> 1B params)."""
    import copy

    if hasattr(model, "peft_config") or sum(p.numel() for p in model.parameters()) > 1_000_000_000:
        return None
    reference = copy.deepcopy(model).eval()
    for param in reference.parameters():
        param.requires_grad_(False)
    return reference


def _quiet(trainer) -> None:
    """The runner's progress board replaces the Trainer's own printing (a dict per step, tqdm bars)."""
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    for callback in (PrinterCallback, ProgressCallback):
        trainer.remove_callback(callback)


def quiet_libraries() -> None:
    import warnings

    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    # transformers 5 renamed gradient_checkpointing; TRL 1.16 uses the old names every step.
    warnings.filterwarnings("ignore", message=r".*gradient_checkpointing.*is deprecated", category=FutureWarning)


def _lora(settings: dict | None):
    if not settings:
        return None
    from peft import LoraConfig

    try:
        return LoraConfig(task_type="CAUSAL_LM", **settings)
    except (TypeError, ValueError) as exc:
        raise UserError(f"model.lora: {exc}") from None
