"""The registry helper of algorithms/ (estimators, group keys, KL estimators, weightings, losses): mlgrpo's
one Registry (mlgrpo/registry.py), imported here so that algorithms/ modules name their own package."""

from mlgrpo.registry import Registry, did_you_mean

__all__ = ["Registry", "did_you_mean"]
