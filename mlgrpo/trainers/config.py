"""What an arm trains with beyond TRL's own settings: the algorithm, the KL to the reference, the update schedule.

TRL's loss settings (loss_type, epsilon, epsilon_high ...) are not repeated here: they stay in
trl.GRPOConfig, which validates them. Two of TRL's settings are owned here instead, because they must be
the same for every arm unless an arm declares otherwise, and because PPO and GRPO need them in different
places: the KL coefficient (TRL's `beta`, which only GRPO's loss reads) and the update schedule (TRL's
`steps_per_generation` and `num_iterations`). `grpo_settings` maps them onto GRPOConfig fields; the
trainers check that the GRPOConfig they get agrees.
Knows nothing about models, data or MLflow.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from mlgrpo.algorithms import KL_ESTIMATORS, AdvantageConfig
from mlgrpo.errors import UserError
from mlgrpo.registry import unknown_message
from mlgrpo.sampling.group_schedule import GroupSwitch

VALUE_MODELS = ("separate", "head", "lora")
KL_PLACEMENTS = ("auto", "reward", "loss")
ALGORITHMS = ("grpo", "ppo", "sft")
SFT_TARGETS = ("answers", "solution")
SFT_BUDGETS = ("samples", "time")
# Where each algorithm puts the KL with placement "auto": PPO as a per-token penalty in the reward
# (Ziegler et al. 2019, Ouyang et al. 2022; verl use_kl_in_reward, OpenRLHF's default), GRPO as a loss
# term (Shao et al. 2024, DeepSeekMath; TRL's beta, verl use_kl_loss).
AUTO_PLACEMENT = {"ppo": "reward", "grpo": "loss"}
# TRL's loss computes the k3 estimator only.
LOSS_ESTIMATOR = "k3"


@dataclass(frozen=True)
class KLConfig:
    """KL(pi || pi_ref) to the initial policy: one setting shared by every arm (an arm may override it)."""

    # Weight of the KL. 0 turns it off (no reference model is kept).
    coef: float = 0.0
    # Per-token estimator (mlgrpo.algorithms.kl): k1 = log pi - log pi_ref, k2 = its square / 2,
    # k3 = r - 1 - log r (unbiased and >= 0; the only one TRL's loss computes).
    estimator: str = "k3"
    # "auto": in the reward for PPO, in the loss for GRPO. "reward" or "loss" to force one (GRPO's group
    # estimators have no per-token reward, so GRPO accepts "loss" only).
    placement: str = "auto"

    def __post_init__(self) -> None:
        if self.estimator not in KL_ESTIMATORS:
            raise UserError(f"kl.estimator: {KL_ESTIMATORS.unknown_message(self.estimator)}")
        if self.placement not in KL_PLACEMENTS:
            raise UserError(f"kl.placement must be one of {', '.join(KL_PLACEMENTS)}, got {self.placement!r}")
        if not self.coef >= 0:
            raise UserError(f"kl.coef must be >= 0 (0: no KL), got {self.coef!r}")

    def placed(self, algorithm: str) -> str:
        """Where the KL acts for `algorithm`: "reward", "loss", or "off" when coef is 0."""
        if self.coef == 0:
            return "off"
        return AUTO_PLACEMENT[algorithm] if self.placement == "auto" else self.placement

    def trl_beta(self, algorithm: str) -> float:
        """TRL's `beta` for this arm: the coefficient when the KL sits in TRL's loss, else 0."""
        return self.coef if self.placed(algorithm) == "loss" else 0.0

    def check(self, algorithm: str) -> None:
        """The combinations no trainer implements, refused with the reason."""
        if algorithm == "sft" and self.coef != 0:
            raise UserError(f"kl.coef {self.coef}: the SFT arm trains on the references and has no KL to the initial "
                            "policy; give the sft arm its own `kl: {coef: 0}`")
        where = self.placed(algorithm)
        if algorithm == "grpo" and where == "reward":
            raise UserError("kl.placement reward needs per-token rewards, which GRPO's group estimators do not "
                            "have; use placement loss (or auto) for GRPO arms")
        if where == "loss" and self.estimator != LOSS_ESTIMATOR:
            raise UserError(f"kl.estimator {self.estimator!r} in the loss: TRL's loss computes k3 only; set "
                            f"kl.estimator: k3, or placement: reward (PPO)")


@dataclass(frozen=True)
class UpdateSchedule:
    """How often the policy (and critic) is updated on each rollout: the same for every arm unless declared.

    A rollout is the batch generated at once; it is split into `minibatches` optimiser steps, and the
    split is passed over `epochs` times (PPO's K epochs over minibatches; GRPO's mu, TRL's num_iterations).
    On TRL: steps_per_generation = minibatches x gradient_accumulation_steps, num_iterations = epochs,
    so a minibatch is per_device_train_batch_size x gradient_accumulation_steps completions per process and
    a rollout is `minibatches` of them. With one optimiser step per rollout the policy never moves before
    the loss reads its ratio: the ratio is 1, clipping never acts, and PPO is actor-critic with GAE.
    """

    # Optimiser steps per pass over a rollout. 4: the rollout-to-minibatch ratio of verl (train batch 1024,
    # ppo_mini_batch_size 256); OpenRLHF's defaults give 8 (rollout 1024, train batch 128).
    minibatches: int = 4
    # Passes over each rollout (verl ppo_epochs and OpenRLHF max_epochs: 1).
    epochs: int = 1
    # Group-size switches (optimiser step -> completions per prompt) after training.num_generations, the size
    # of the first rollouts: the method notes grow the group (32 -> 64) against advantage drift. A switch takes
    # effect at the first rollout starting at or after its step; every rollout keeps its completions, so a
    # larger group has fewer prompts (sampling/group_schedule.py). Empty: num_generations throughout.
    group_schedule: tuple[GroupSwitch, ...] = ()

    def __post_init__(self) -> None:
        for name in ("minibatches", "epochs"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise UserError(f"update.{name} must be a whole number >= 1, got {value!r}")

    @property
    def steps_per_rollout(self) -> int:
        return self.minibatches * self.epochs

    @property
    def ratio_can_leave_one(self) -> bool:
        """False when every rollout gets one optimiser step: the loss then always sees ratio 1."""
        return self.steps_per_rollout > 1

    def trl_fields(self, gradient_accumulation_steps: int) -> dict[str, int]:
        """GRPOConfig's steps_per_generation and num_iterations for this schedule.

        >>> UpdateSchedule(minibatches=4, epochs=2).trl_fields(gradient_accumulation_steps=2)
        {'steps_per_generation': 8, 'num_iterations': 2}
        """
        return {"steps_per_generation": self.minibatches * gradient_accumulation_steps, "num_iterations": self.epochs}


@dataclass(frozen=True)
class PPOSettings:
    """PPO's critic (Ouyang et al. 2022; Huang et al. 2024, "The N+ implementation details of RLHF with PPO").

    The anchors: verl's critic lr 1e-5 next to an actor lr 1e-6 and cliprange_value 0.5; OpenRLHF's 9e-6
    next to 1e-6 and value_clip 0.5 (both: rewards of order 1, large models). Ours, 1e-4 and 0.2, were
    measured on the tiny model at policy lr 1e-4 (experiments/README.md, "Critic defaults").
    """

    # "separate": a value model of the policy's architecture, initialised from the policy's backbone, with
    # its own optimiser and learning rate (classic RLHF). "head": a linear value head on the policy's
    # backbone, trained through the policy's loss with weight vf_coef (cheaper, shares features). "lora" (LoRA
    # policies): its own adapter on the policy's frozen base and a head, with its own optimiser; costs little
    # more memory than GRPO (trainers/critic.py).
    value_model: str = "separate"
    # Learning rate of the separate (or LoRA) critic's AdamW.
    value_learning_rate: float = 1e-4
    # Weight of the value loss when value_model="head" (it shares the policy's optimiser).
    vf_coef: float = 0.1
    # Clip range of the value update around the rollout's values (PPO's clipped value loss).
    cliprange_value: float = 0.2
    # Gradient-norm clip of the separate critic (the policy's clip is TRL's max_grad_norm).
    max_grad_norm: float = 1.0
    # Optimiser steps at the start in which only the critic learns: the policy's update is skipped (its
    # learning-rate schedule still advances). verl trainer.critic_warmup, OpenRLHF critic.freezing_steps; 0: off.
    warmup_steps: int = 0

    def __post_init__(self) -> None:
        if self.value_model not in VALUE_MODELS:
            raise UserError(f"ppo.value_model must be one of {', '.join(VALUE_MODELS)}, got {self.value_model!r}")
        for name in ("value_learning_rate", "vf_coef", "cliprange_value", "max_grad_norm"):
            if not getattr(self, name) > 0:
                raise UserError(f"ppo.{name} must be > 0, got {getattr(self, name)!r}")
        if self.warmup_steps < 0:
            raise UserError(f"ppo.warmup_steps must be >= 0, got {self.warmup_steps!r}")


@dataclass(frozen=True)
class SFTSettings:
    """The supervised control arm (algorithm name "sft"): "is RL worth it here at all?"

    It reads the RL arms' prompts in their order (the same sampler and seed), the same number of completions per
    optimiser step, and trains on the records' accepted answers with the token-mean cross-entropy instead of
    generating (trainers/sft.py).
    """

    # "answers": each record's accepted answers; the k-th copy of a prompt in its group of num_generations
    # trains on answer k (cyclically), so every accepted spelling is seen. "solution": the record's worked
    # solution column (the gsm suite has one).
    target: str = "answers"
    # "samples": as many completions as the RL arms (training.max_steps steps of the same batch). "time": until
    # `seconds` of training wall time (the Trainer's runtime, the report's "wall time"), at most max_steps steps.
    budget: str = "samples"
    seconds: float | None = None

    def __post_init__(self) -> None:
        if self.target not in SFT_TARGETS:
            raise UserError(f"sft.target must be one of {', '.join(SFT_TARGETS)}, got {self.target!r}")
        if self.budget not in SFT_BUDGETS:
            raise UserError(f"sft.budget must be one of {', '.join(SFT_BUDGETS)}, got {self.budget!r}")
        if self.budget == "time" and not (self.seconds is not None and self.seconds > 0):
            raise UserError(f"sft.seconds must be > 0 with budget time (the wall time to train for), got {self.seconds!r}")
        if self.budget == "samples" and self.seconds is not None:
            raise UserError("sft.seconds is set but sft.budget is samples; set budget: time, or remove seconds")


def group_schedule_conflict(algorithm: AlgorithmConfig, sampler) -> str | None:
    """What a group-size schedule cannot be combined with yet (its G would be fixed there), or None."""
    if algorithm.dynamic_sampling.enabled:  # the refill stream's sampler is built with one G (trainers/dynamic.py)
        return "algorithm.dynamic_sampling"
    if sampler is not None and sampler.reward_buckets > 0:  # draws that depend on rewards cannot be replayed
        return "sampler.reward_buckets"
    return None


# Group keys under which a baseline group is one prompt's G completions, the unit dynamic sampling keeps or drops.
PROMPT_GROUPS = ("prompt", "prompt_in_language")


@dataclass(frozen=True)
class DynamicSampling:
    """DAPO's dynamic sampling (Yu et al. 2025): prompt groups whose rewards are all equal are dropped and the
    rollout is refilled with fresh prompts (algorithms/dynamic_sampling.py decides; trainers/dynamic.py refills).
    """

    # Off by default: every generated group is trained on, as TRL does.
    enabled: bool = False
    # Most refill rounds per rollout, each generating a whole generation batch of fresh prompts. When the
    # rollout is still short after them, the earliest constant groups fill it (and are counted as re-admitted).
    max_rounds: int = 3
    # A group is constant when max - min <= tolerance x max(1, its largest |reward|): the range, not the std,
    # whose float32 rounding noise on equal rewards is ~1e-8, not 0 (NVIDIA-NeMo/RL#4158).
    tolerance: float = 1e-6

    def __post_init__(self) -> None:
        if not isinstance(self.enabled, bool):
            raise UserError(f"dynamic_sampling.enabled must be true or false, got {self.enabled!r}")
        if isinstance(self.max_rounds, bool) or not isinstance(self.max_rounds, int) or self.max_rounds < 1:
            raise UserError(f"dynamic_sampling.max_rounds must be a whole number >= 1, got {self.max_rounds!r}")
        if not (isinstance(self.tolerance, (int, float)) and 0 <= self.tolerance < 1):
            raise UserError(f"dynamic_sampling.tolerance must be a number in [0, 1), got {self.tolerance!r}")
        defaults = {f.name: f.default for f in fields(self)}
        if not self.enabled and any(getattr(self, name) != defaults[name] for name in ("max_rounds", "tolerance")):
            raise UserError("dynamic_sampling settings are set but dynamic_sampling.enabled is false; set enabled: true")


@dataclass(frozen=True)
class AlgorithmConfig:
    """What differs between GRPO-family arms and PPO. YAML keys map 1:1 onto the fields."""

    # "grpo": group-relative advantages, no critic. "ppo": a critic and per-token GAE. "sft": the supervised
    # control arm (no rollouts, no advantages; see SFTSettings).
    name: str = "grpo"
    # The advantage estimator, grouping, std scope and shaping options (see AdvantageConfig).
    advantage: AdvantageConfig = field(default_factory=AdvantageConfig)
    # PPO's critic settings; rejected when changed for "grpo", which has no critic.
    ppo: PPOSettings = field(default_factory=PPOSettings)
    # The SFT arm's target and budget; rejected when changed for another algorithm.
    sft: SFTSettings = field(default_factory=SFTSettings)
    # DAPO's dynamic sampling of GRPO-family rollouts; off by default.
    dynamic_sampling: DynamicSampling = field(default_factory=DynamicSampling)

    def __post_init__(self) -> None:
        if self.name not in ALGORITHMS:
            raise UserError(f"algorithm.name: {unknown_message('algorithm', self.name, ALGORITHMS)}")
        per_token = self.advantage.spec.per_token
        if self.name == "ppo" and not per_token:
            raise UserError(
                f"algorithm ppo needs a per-token estimator (gae), got advantage.estimator="
                f"{self.advantage.estimator!r}; set advantage.estimator: gae"
            )
        if self.name == "grpo" and per_token:
            raise UserError(
                "advantage.estimator gae needs a critic: use algorithm name: ppo, or a group estimator "
                "(grpo, dr_grpo, rloo, reinforce_pp, reinforce_pp_token) for GRPO"
            )
        if self.name != "ppo" and self.ppo != PPOSettings():
            raise UserError(f"algorithm.ppo settings are set but algorithm.name is {self.name}: "
                            f"{self.name.upper()} has no critic")
        if self.name != "sft" and self.sft != SFTSettings():
            raise UserError(f"algorithm.sft settings are set but algorithm.name is {self.name}; set name: sft")
        if self.dynamic_sampling.enabled:
            self._check_dynamic_sampling()

    def _check_dynamic_sampling(self) -> None:
        """Dynamic sampling drops groups without a group-relative signal; refused where that is not what it does."""
        why = {"ppo": "PPO's advantages come from its critic (r - V), so a group of equal rewards still has a signal",
               "sft": "the SFT arm generates no rollouts"}.get(self.name)
        if why:
            raise UserError(f"dynamic_sampling is for GRPO-family arms: {why}; remove it from the {self.name} arm")
        advantage = self.advantage
        if advantage.group_by not in PROMPT_GROUPS:
            raise UserError(f"dynamic_sampling keeps or drops one prompt's group whole, but advantage.group_by is "
                            f"{advantage.group_by!r} (a baseline spanning prompts); use group_by prompt or prompt_in_language")
        if advantage.mix_lambda != 1.0:
            raise UserError(f"dynamic_sampling with advantage.mix_lambda {advantage.mix_lambda}: a constant group still "
                            "has the absolute reward's advantage, so dropping it would lose signal; set mix_lambda 1")

    @classmethod
    def ppo_default(cls) -> AlgorithmConfig:
        """PPO as the comparison runs it: GAE (gamma 1, lambda 0.95) whitened over the batch."""
        return cls(name="ppo", advantage=AdvantageConfig(estimator="gae", std_scope="batch"))
