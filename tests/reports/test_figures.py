"""mlgrpo.reports.figures: valid PNGs for ordinary, NaN-only and one-language/one-arm inputs; stable colours."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from matplotlib.image import imread

from mlgrpo.reports.figures import (
    CJK_FONTS, PALETTE, VERDICT_COLOURS, arm_colours, bars_figure, cjk_font, curves_figure, forest_figure,
)

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
nan = math.nan


def assert_png(path):
    data = path.read_bytes()
    assert data.startswith(PNG_SIGNATURE) and len(data) > 1000
    pixels = imread(path)
    assert pixels.ndim == 3 and pixels.std() > 0  # something was drawn


def _curve(values):
    return np.arange(values.shape[1]), values


def test_curves_figure_many_languages(tmp_path):
    rng = np.random.default_rng(0)
    curves = {lang: {arm: _curve(rng.normal(size=(3, 20)).cumsum(axis=1)) for arm in ("grpo", "ppo")}
              for lang in ("ar", "de", "en", "fr", "ja")}  # 5 languages: two rows of at most 4
    curves["ja"]["ppo"] = _curve(np.full((2, 20), nan))  # NaN-only arm
    path = curves_figure(curves, "reward", "mean reward", tmp_path / "figures" / "reward.png", arm_order=["ppo", "grpo"])
    assert path == tmp_path / "figures" / "reward.png"
    assert_png(path)


def _pixels_of(path, colour: str, tolerance: float = 0.08) -> int:
    from matplotlib.colors import to_rgb

    pixels = imread(path)[..., :3]
    return int((np.abs(pixels - np.array(to_rgb(colour))).max(axis=-1) < tolerance).sum())


def test_seeds_are_thin_lines_and_the_band_needs_enough_seeds(tmp_path):
    # two seeds far apart: without a band the arm's colour covers only its lines; with band_seeds=2 the
    # t-band (+-12.7 standard errors) fills the panel in a pale tint of that colour
    values = np.stack([np.linspace(0, 1, 30), np.linspace(0, 1, 30) + 0.5])
    plain = curves_figure({"en": {"grpo": _curve(values)}}, "r", "y", tmp_path / "plain.png", arm_order=["grpo"])
    banded = curves_figure({"en": {"grpo": _curve(values)}}, "r", "y", tmp_path / "band.png", arm_order=["grpo"],
                           band_seeds=2)
    pale = "#d9eaf3"  # PALETTE[0] (#0072B2) at alpha 0.15 on white: 0.85 + 0.15 * (0, 0.447, 0.698)
    assert _pixels_of(plain, pale, 0.015) < 200 < 5000 < _pixels_of(banded, pale, 0.015)
    assert _pixels_of(plain, PALETTE[0]) > 300  # the mean, drawn thick


def test_curves_figure_nan_only_and_single(tmp_path):
    all_nan = (np.arange(5.0), np.full((2, 5), nan))
    assert_png(curves_figure({"ar": {"grpo": all_nan}}, "nan", "y", tmp_path / "nan.png"))
    one_seed = _curve(np.array([[0.1, 0.3, nan, 0.5]]))  # 1 seed: a gap in the line
    assert_png(curves_figure({"ar": {"grpo": one_seed}}, "one", "y", tmp_path / "one.png"))
    one_point = (np.array([3.0]), np.array([[0.5]]))
    assert_png(curves_figure({"ar": {"grpo": one_point}}, "point", "y", tmp_path / "point.png"))


def test_curves_figure_rejects_bad_input(tmp_path):
    with pytest.raises(ValueError, match="no languages"):
        curves_figure({}, "t", "y", tmp_path / "x.png")
    with pytest.raises(ValueError, match="of one length"):
        curves_figure({"ar": {"grpo": (np.arange(3), np.zeros((2, 2)))}}, "t", "y", tmp_path / "x.png")
    with pytest.raises(ValueError, match=r"\['dpo'\] are not in arm_order"):
        curves_figure({"ar": {"dpo": _curve(np.zeros((2, 3)))}}, "t", "y", tmp_path / "x.png", arm_order=["grpo"])


def test_forest_figure_colours_each_verdict(tmp_path):
    rows = pd.DataFrame([
        {"metric": "exact_match", "language": "en", "arm": "grpo", "difference": 0.3, "low": 0.2, "high": 0.4,
         "verdict": "better", "smallest_effect": 0.02},
        {"metric": "exact_match", "language": "ja", "arm": "grpo", "difference": -0.3, "low": -0.4, "high": -0.2,
         "verdict": "worse", "smallest_effect": 0.02},
        {"metric": "exact_match", "language": "macro", "arm": "grpo", "difference": 0.0, "low": -0.3, "high": 0.3,
         "verdict": "no difference", "smallest_effect": 0.02},
        {"metric": "chrf", "language": "en", "arm": "grpo", "difference": -3.5, "low": nan, "high": nan,
         "verdict": "untestable", "smallest_effect": 1.0},
    ])
    path = forest_figure(rows, ["exact_match", "chrf"], ["en", "ja", "macro"], ["grpo"], {}, tmp_path / "forest.png",
                         "ppo")
    assert_png(path)
    for verdict in ("better", "worse", "no difference", "untestable"):
        assert _pixels_of(path, VERDICT_COLOURS[verdict]) > 20, verdict
    with pytest.raises(ValueError, match="no rows"):
        forest_figure(rows, ["bleu"], ["en"], ["grpo"], {}, tmp_path / "none.png", "ppo")


@pytest.mark.skipif(cjk_font() is None, reason="no CJK font installed (Debian: fonts-noto-cjk, which .ci/run installs)")
def test_cjk_labels_are_drawn_with_the_cjk_font(tmp_path):
    import warnings

    assert cjk_font() in CJK_FONTS
    curves = {"日本語": {"グループ": _curve(np.arange(6.0).reshape(2, 3))}}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib warns "Glyph ... missing from font(s)" when it draws a box
        assert_png(curves_figure(curves, "報酬", "値", tmp_path / "ja.png", arm_order=["グループ"]))


def test_without_a_cjk_font_the_report_says_so(monkeypatch):
    from mlgrpo.reports import build, figures
    from mlgrpo.reports.collect import Comparison

    monkeypatch.setattr(figures, "cjk_font", lambda: None)
    comparison = Comparison("x", ["グループ", "ppo"], ["0"], ["en"], {"グループ": {}, "ppo": {}}, None, "sqlite:///x")
    assert "no CJK font found" in build._font_warning(comparison)[0]
    assert build._font_warning(Comparison("x", ["grpo"], ["0"], ["en"], {"grpo": {}}, None, "sqlite:///x")) == []


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
