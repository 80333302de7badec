"""mlgrpo.reports.figures: valid PNGs for ordinary, NaN-only and one-language/one-arm inputs; stable colours."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from matplotlib.image import imread

from mlgrpo.reports.figures import PALETTE, arm_colours, bars_figure, curves_figure
from mlgrpo.reports.stats import curve_band

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
nan = math.nan


def assert_png(path):
    data = path.read_bytes()
    assert data.startswith(PNG_SIGNATURE) and len(data) > 1000
    pixels = imread(path)
    assert pixels.ndim == 3 and pixels.std() > 0  # something was drawn


def _curve(values):
    band = curve_band(values)
    return np.arange(values.shape[1]), band.mean, band.low, band.high


def test_curves_figure_many_languages(tmp_path):
    rng = np.random.default_rng(0)
    curves = {lang: {arm: _curve(rng.normal(size=(3, 20)).cumsum(axis=1)) for arm in ("grpo", "ppo")}
              for lang in ("ar", "de", "en", "fr", "ja")}  # 5 languages: two rows of at most 4
    curves["ja"]["ppo"] = _curve(np.full((2, 20), nan))  # NaN-only arm
    path = curves_figure(curves, "reward", "mean reward", tmp_path / "figures" / "reward.png", arm_order=["ppo", "grpo"])
    assert path == tmp_path / "figures" / "reward.png"
    assert_png(path)


def test_curves_figure_nan_only_and_single(tmp_path):
    all_nan = (np.arange(5.0), np.full(5, nan), np.full(5, nan), np.full(5, nan))
    assert_png(curves_figure({"ar": {"grpo": all_nan}}, "nan", "y", tmp_path / "nan.png"))
    one_seed = _curve(np.array([[0.1, 0.3, nan, 0.5]]))  # 1 seed: NaN band, a gap in the line
    assert_png(curves_figure({"ar": {"grpo": one_seed}}, "one", "y", tmp_path / "one.png"))
    one_point = (np.array([3.0]), np.array([0.5]), np.array([nan]), np.array([nan]))
    assert_png(curves_figure({"ar": {"grpo": one_point}}, "point", "y", tmp_path / "point.png"))


def test_curves_figure_rejects_bad_input(tmp_path):
    with pytest.raises(ValueError, match="no languages"):
        curves_figure({}, "t", "y", tmp_path / "x.png")
    with pytest.raises(ValueError, match="one length"):
        curves_figure({"ar": {"grpo": (np.arange(3), np.zeros(2), np.zeros(2), np.zeros(2))}}, "t", "y", tmp_path / "x.png")
    with pytest.raises(ValueError, match=r"\['dpo'\] are not in arm_order"):
        curves_figure({"ar": {"dpo": _curve(np.zeros((2, 3)))}}, "t", "y", tmp_path / "x.png", arm_order=["grpo"])


def test_arm_colours_are_stable():
    order = ["grpo", "ppo", "grpo-lang"]
    assert arm_colours(["ppo"], order)["ppo"] == arm_colours(["grpo-lang", "ppo"], order)["ppo"] == PALETTE[1]
    assert arm_colours(["b", "a"]) == {"a": PALETTE[0], "b": PALETTE[1]}


def test_bars_figure(tmp_path):
    table = pd.DataFrame({
        "language": ["ar", "ar", "de", "de", "en"],
        "arm": ["grpo", "ppo", "grpo", "ppo", "grpo"],  # en has no ppo row
        "mean": [0.4, 0.3, nan, 0.5, 0.6],
        "low": [0.35, 0.2, nan, nan, 0.61],  # en: interval above its mean, clipped
        "high": [0.45, 0.4, nan, nan, 0.7],
    })
    assert_png(bars_figure(table, "exact match", "exact match", tmp_path / "bars.png", arm_order=["grpo", "ppo"]))
    single = pd.DataFrame({"language": ["ar"], "arm": ["grpo"], "mean": [nan], "low": [nan], "high": [nan]})
    assert_png(bars_figure(single, "nan", "y", tmp_path / "single.png"))


def test_bars_figure_rejects_bad_tables(tmp_path):
    row = {"language": "ar", "arm": "grpo", "mean": 0.1, "low": 0.0, "high": 0.2}
    with pytest.raises(ValueError, match=r"lacks columns \['high'\]"):
        bars_figure(pd.DataFrame([row]).drop(columns="high"), "t", "y", tmp_path / "x.png")
    with pytest.raises(ValueError, match="more than one row"):
        bars_figure(pd.DataFrame([row, row]), "t", "y", tmp_path / "x.png")
    with pytest.raises(ValueError, match="not in language_order"):
        bars_figure(pd.DataFrame([row]), "t", "y", tmp_path / "x.png", language_order=["de"])
