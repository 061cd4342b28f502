"""The sensitivity sweep: cells of rates (and projection radii) over paired runs."""

import json

import numpy as np
import pytest

from curteach_teaching.cli import main
from curteach_teaching.experiments.car.bc import CarBCExperiment
from curteach_teaching.experiments.car.irl import CarIRLExperiment
from curteach_teaching.experiments.theory.sensitivity import SensitivityExperiment, cell_name, parse_values
from curteach_teaching.sweeps.backends import run_seed_sequence
from curteach_teaching.sweeps.reports import read_summary
from curteach_teaching.sweeps.sweep import run_sweep

SMALL = dict(steps=6, target_steps=10, pretrain_steps=10, teachers=("Agn", "Cur", "Omn"))


def test_a_cell_is_exactly_the_single_experiment_with_that_rate(tmp_path):
    base = CarIRLExperiment(**SMALL)
    experiment = SensitivityExperiment(base, (0.05, 0.17), radii=(None, 2.0))
    assert experiment.cells == ("eta=0.05_R=none", "eta=0.17_R=none", "eta=0.05_R=2", "eta=0.17_R=2")
    sweep = run_sweep(experiment, tmp_path, 2, seed=4, workers=2, progress=False)
    for cell in experiment.cells:
        rate, radius = experiment.setting_of(cell)
        single = CarIRLExperiment(**SMALL, teaching_rate=rate, projection_radius=radius)
        for index, result in enumerate(sweep.cells[cell]):
            alone = single.run(index, run_seed_sequence(4, index))
            for name in alone.curves:
                np.testing.assert_array_equal(result.curves[name], alone.curves[name])
            np.testing.assert_array_equal(result.records["picks"]["Cur"], alone.records["picks"]["Cur"])
    # paired: run i of every cell teaches on the same road (the expert's reward), and cells of one radius start
    # from the same pre-trained learner (the projection also acts during pre-training)
    roads = {tuple(r.extras["expert_reward"] for r in runs) for runs in sweep.cells.values()}
    assert len(roads) == 1
    for radius in ("none", "2"):
        starts = {tuple(r.curves["Agn"][0] for r in runs) for cell, runs in sweep.cells.items()
                  if cell.endswith(f"_R={radius}")}
        assert len(starts) == 1


def test_settings_and_names():
    experiment = SensitivityExperiment(CarIRLExperiment(**SMALL), (0.1, 0.03))
    settings = experiment.settings()
    assert "teaching_rate" not in settings and settings["rates"] == [0.1, 0.03]
    assert settings["experiment"] == "car-irl-sensitivity" and "radii" not in settings
    assert cell_name(0.17) == "eta=0.17" and cell_name(1e-4, 5.0, True) == "eta=0.0001_R=5"
    assert parse_values("0.1, 0.2", "--x") == (0.1, 0.2) and parse_values("none,3", "--r", True) == (None, 3.0)
    for text, message in (("", "at least one"), ("0.1,0.1", "twice"), ("0.1,-2", "finite numbers > 0"),
                          ("a", "comma-separated numbers"), ("inf", "finite numbers > 0")):
        with pytest.raises(ValueError, match=message):
            parse_values(text, "--x")
    with pytest.raises(ValueError, match="car-irl\\) only"):
        SensitivityExperiment(CarBCExperiment(steps=3), (0.01,), radii=(None,))
    with pytest.raises(ValueError, match="base must be one of"):
        SensitivityExperiment(object(), (0.1,))
    with pytest.raises(ValueError, match="cell must be one of"):
        experiment.run_cell("eta=9", 0, run_seed_sequence(0, 0))


def test_car_irl_sensitivity_command(tmp_path, capsys):
    out = tmp_path / "sens"
    args = ["car-irl-sensitivity", "--runs", "2", "--steps", "5", "--teaching-rates", "0.05,0.5", "--teachers",
            "Agn,Cur", "--workers", "1", "--no-progress", "--out", str(out)]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "eta=0.05 (n=2): final expected reward, all runs:" in printed
    rows = read_summary(out / "summary.csv")
    assert list(rows[0]) == ["cell", "teacher", "subset", "t", "mean", "sem", "n"]
    assert {r["cell"] for r in rows} == {"eta=0.05", "eta=0.5"}
    report = json.loads((out / "report.json").read_text())
    assert report["rate_field"] == "teaching_rate" and set(report["by_cell"]) == {"eta=0.05", "eta=0.5"}
    assert report["by_cell"]["eta=0.5"]["rate"] == 0.5
    for name in ("final_reward_vs_rate.png", "stability_vs_rate.png", "learning_curves_eta=0.05_all.png",
                 "steps_to_gap.csv"):
        assert (out / name).exists()
    gap = {(row["cell"], row["teacher"], row["fraction"]) for row in report["steps_to_gap"]}
    assert len(gap) == 2 * 2 * 3 and ("eta=0.5", "Cur", 0.1) in gap
    assert main([*args, "--teaching-rates", "0.05,0"]) == 2
    assert "--teaching-rates must be finite numbers > 0" in capsys.readouterr().err


def test_car_bc_sensitivity_command(tmp_path, capsys):
    out = tmp_path / "bc"
    args = ["car-bc-sensitivity", "--runs", "2", "--steps", "3", "--pretrain-sweeps", "1", "--learning-rates",
            "0.01,0.1", "--teachers", "Agn,Cur", "--workers", "1", "--no-progress", "--out", str(out)]
    assert main(args) == 0
    assert "flagged" not in capsys.readouterr().out  # the BC original could not crash
    report = json.loads((out / "report.json").read_text())
    assert report["rate_field"] == "learning_rate" and report["by_cell"]["eta=0.1"]["flagged_share"] is None
    assert {r["subset"] for r in read_summary(out / "summary.csv")} == {"all"}
