"""What one paired difference between two arms supports, in words: better, worse, negligible, no
difference, unclear or untestable, and why. Every verdict is read from the same interval the report
shows, so a sentence can never say more (or less) than its interval.

    better / worse   the test rejects (adjusted p < alpha) and the 95% interval excludes 0, and the
                     difference is at least the smallest effect of interest (delta)
    negligible       the difference is significant but smaller than delta, or its whole interval lies
                     within +-delta (equivalence: nothing of interest either way)
    no difference    the interval includes 0 and reaches beyond +-delta: no difference was shown
    unclear          the interval excludes 0 but the multiplicity-adjusted p is not below alpha
    untestable       too few paired values, or one value per seed and fewer seeds than a test over
                     seeds needs (its smallest p is 2 / 2**seeds: 0.5 with 2 seeds)

With fewer seeds than ReportConfig.min_seeds a per-prompt verdict holds for the trained models the
seeds produced, not yet for the algorithm: `conditional` marks it. Pure; no I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mlgrpo.reports.settings import ALPHA

VERDICTS = ("better", "worse", "negligible", "no difference", "unclear", "untestable")
CLAIMS = ("better", "worse")


@dataclass(frozen=True)
class Judgement:
    verdict: str  # one of VERDICTS
    reason: str  # why, in a few words a reader can check against the interval
    conditional: bool  # holds for these seeds only (fewer than min_seeds)


def judge(difference: float, low: float, high: float, p_adjusted: float, *, pairs: int, seeds: int,
          per_prompt: bool, higher_is_better: bool, smallest: float, min_seeds: int, adjustment: str = "holm",
          alpha: float = ALPHA) -> Judgement:
    """The verdict on `difference` = arm - baseline (metric units), its 95% interval [low, high] and p.

    Hand-worked, higher is better, delta 0.02, 2 seeds of per-prompt scores (min_seeds 6):
      +0.06 [+0.02, +0.10], p 0.01  -> better (conditional on these 2 seeds)
      +0.004 [+0.001, +0.008], p 0.008 -> negligible: significant, below delta
      -0.01 [-0.015, +0.012], p 0.4 -> negligible: the interval lies within +-0.02
      -0.03 [-0.08, +0.02], p 0.3   -> no difference
      -3.5 [-4.16, -2.84] of one value per seed, 2 seeds -> untestable (smallest possible p 0.5)
    """
    conditional = seeds < min_seeds
    if not per_prompt and seeds < min_seeds:
        return Judgement("untestable", f"one value per seed (no per-prompt scores) and {seeds} "
                                       f"seed{'s' if seeds != 1 else ''}: a test over seeds needs {min_seeds} (its "
                                       f"smallest p here is 2/2^{seeds} = {2 / 2 ** seeds:.2g})", False)
    if pairs < 2 or any(math.isnan(v) for v in (difference, low, high, p_adjusted)):
        return Judgement("untestable", "fewer than 2 paired values" if pairs < 2 else "a value is missing", False)
    sign = 1.0 if higher_is_better else -1.0
    gain, (lo, hi) = sign * difference, sorted((sign * low, sign * high))
    excludes_zero = lo > 0 or hi < 0
    p_text = f"{'Holm-adjusted ' if adjustment == 'holm' else 'bootstrap '}p {_p(p_adjusted)}"
    if p_adjusted < alpha and excludes_zero:
        if abs(gain) < smallest:
            return Judgement("negligible", f"{p_text}, but smaller than the smallest effect of interest "
                                           f"{smallest:g}", conditional)
        return Judgement("better" if gain > 0 else "worse", f"{p_text}; interval excludes 0", conditional)
    if smallest > 0 and -smallest < lo and hi < smallest:
        return Judgement("negligible", f"the whole interval lies within +-{smallest:g}", conditional)
    if excludes_zero:
        return Judgement("unclear", f"the interval excludes 0 but the {p_text} is not below {alpha:g}", conditional)
    return Judgement("no difference", f"the interval includes 0 ({p_text})", conditional)


def _p(p: float) -> str:
    return "< 0.0005" if p == 0 else f"= {p:.2g}"
