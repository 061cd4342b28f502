"""What reports say about how many runs stand behind their numbers: the heat map's subtitle and one run's note."""

import pytest

from curteach_teaching import plots
from curteach_teaching.cli import main


@pytest.mark.parametrize("runs, subtitle", [(1, "(the only run)"), (2, "(all 2 runs)")])
def test_car_irl_heat_map_counts_its_runs_in_words_and_one_run_is_said(tmp_path, capsys, monkeypatch, runs,
                                                                       subtitle):
    titles = []
    draw = plots.plot_curriculum_heatmap

    def keep(pick_types, path, **kwargs):
        titles.append(kwargs.get("title", ""))
        return draw(pick_types, path, **kwargs)

    monkeypatch.setattr(plots, "plot_curriculum_heatmap", keep)
    assert main(["car-irl", "--init", "T0", "--runs", str(runs), "--steps", "3", "--workers", "1", "--no-progress",
                 "--out", str(tmp_path / "irl")]) == 0
    out = capsys.readouterr().out
    assert titles and titles[0].endswith(subtitle), titles
    assert all(" all runs)" not in title for title in titles)
    one_run = "note: one run each: a difference between these numbers is one draw"
    assert (one_run in out) == (runs == 1)
    if runs == 2:
        assert "note: with 2 pairs the signed-rank test cannot give p < 0.5 (2/2^2)" in out


def test_the_finished_subset_says_how_many():
    from types import SimpleNamespace

    from curteach_teaching.experiments.car.report import CarReport

    report = CarReport(SimpleNamespace(teacher_names=("Cur", "Agn")))
    assert report.runs_label("all", 4) == "all 4 runs" and report.runs_label("all", 1) == "the only run"
    assert report.runs_label("finished", 3) == "3 runs the original would have finished"
    assert report.runs_label("finished", 1) == "1 run the original would have finished"
