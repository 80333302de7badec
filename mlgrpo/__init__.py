"""mlgrpo: controlled, per-language comparisons of GRPO and PPO on multilingual data.

Data flows one way, and the sub-packages follow it:

    data -> langid -> sampling -> rollout (TRL) -> rewards -> algorithms -> trainers
         -> evaluation -> tracking (MLflow) -> reports

Importing the top-level package is cheap: it imports no torch, transformers or mlflow.
"""

__version__ = "0.1.0"
