"""Figures: every curve of a figure has its own colour and line style, for any number of curves."""

import numpy as np
import pytest
from matplotlib.colors import to_hex

from curteach_teaching import plots
from curteach_teaching.plots import TEACHER_STYLES, curve_styles


def _pairs(styles: dict) -> set:
    return {(to_hex(style["color"]), str(style["linestyle"])) for style in styles.values()}


def test_the_papers_names_keep_their_styles():
    styles = curve_styles(list(TEACHER_STYLES))
    assert styles == {name: {**style} for name, style in TEACHER_STYLES.items()}


def test_the_mixed_quality_cells_differ_in_colour_and_in_line_style():
    # the committed figure of docs/results/babyai-mixed-0.2 drew Cur and the fifth cell both in solid green
    names = ["Agn", "Cur", "Cur-T@select", "Cur-T@weight", "Cur-T@select/return"]
    styles = curve_styles(names)
    assert styles["Agn"] == TEACHER_STYLES["Agn"] and styles["Cur"] == TEACHER_STYLES["Cur"]
    assert len({to_hex(s["color"]) for s in styles.values()}) == 5
    assert len({str(s["linestyle"]) for s in styles.values()}) == 5


@pytest.mark.parametrize("count", [12, 40, 150])
def test_any_number_of_cells_gets_distinct_colour_and_style_pairs(count):
    names = ["Agn", "Cur", *(f"cell-{k}" for k in range(count - 2))]
    styles = curve_styles(names)
    assert list(styles) == names and len(_pairs(styles)) == count
    if count <= 12:  # while the named colours last, every curve has a colour of its own
        assert len({to_hex(s["color"]) for s in styles.values()}) == count


def test_styles_are_deterministic_and_given_styles_win():
    names = [f"c{k}" for k in range(9)]
    assert curve_styles(names) == curve_styles(list(names))
    mine = curve_styles(["Agn", "mine", "other"], {"mine": {"color": "darkorange", "linestyle": "-"}})
    assert mine["mine"] == {"color": "darkorange", "linestyle": "-"}
    assert mine["other"]["color"] != "darkorange"  # a colour a given style holds is not handed out again


def test_the_drawn_lines_have_the_styles(tmp_path, monkeypatch):
    drawn = []

    def keep(plt, fig, path):
        drawn.extend(line for line in fig.axes[0].get_lines() if line.get_label() and
                     not line.get_label().startswith("paper"))
        plt.close(fig)
        return path

    monkeypatch.setattr(plots, "_save", keep)
    names = ["Agn", "Cur", *(f"Cur-T@{k}" for k in range(10))]
    curves = {name: ([0, 100], [0.0, float(k)], [0.0, 0.1], 3) for k, name in enumerate(names)}
    plots.plot_curves_against_batches(curves, tmp_path / "x.png")
    seen = {(to_hex(line.get_color()), tuple(np.round(line._unscaled_dash_pattern[1] or (), 3)))
            for line in drawn}
    assert len(drawn) == len(names) == len(seen)
