"""Per-language figures: one line per language plus dashed aggregates; one panel per language when comparing."""

from __future__ import annotations

import io

from mlgrpo.tracking.plots import comparison_figure, language_figure, plot_file

HISTORY = {
    "en": [(1, 0.2), (2, 0.4)], "sw": [(1, 0.1), (2, 0.15)],
    "macro": [(1, 0.15), (2, 0.275)], "worst": [(1, 0.1), (2, 0.15)],
}


def test_language_figure_has_a_line_per_language_and_aggregate():
    figure = language_figure(HISTORY, "train/reward")
    (axis,) = figure.axes
    lines = {line.get_label(): line for line in axis.get_lines()}
    assert list(lines) == ["en", "sw", "macro", "worst"]
    assert list(lines["sw"].get_ydata()) == [0.1, 0.15]
    assert lines["en"].get_linestyle() == "-" and lines["macro"].get_linestyle() == "--"
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    assert buffer.getvalue()[:4] == b"\x89PNG"


def test_comparison_figure_has_a_panel_per_language_and_a_line_per_run():
    per_run = {"grpo s0": {"en": [(1, 0.5)], "ja": [(1, 0.3)]}, "ppo s0": {"en": [(1, 0.4)]}}
    figure = comparison_figure(per_run, ["en", "ja", "sw", "ar"], "eval/exact_match")
    visible = [axis for axis in figure.axes if axis.get_visible()]
    assert [axis.get_title() for axis in visible] == ["en", "ja", "sw", "ar"]
    assert [line.get_label() for line in visible[0].get_lines()] == ["grpo s0", "ppo s0"]
    assert [line.get_label() for line in visible[1].get_lines()] == ["grpo s0"]  # ppo has no ja
    assert len(figure.axes) == 6  # a 2 x 3 grid, two panels hidden


def test_plot_file_names():
    assert plot_file("train/reward/") == "plots/languages/train_reward.png"
    assert plot_file("eval/exact_match", "compare") == "plots/compare/eval_exact_match.png"
