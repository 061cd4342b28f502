"""The car MaxEnt-IRL experiment: one run's protocol, the teachers' known behaviour, and the CLI."""

import json

import numpy as np
import pytest

from curteach_teaching.cli import main
from curteach_teaching.experiments.car.irl import CarIRLExperiment, parse_init
from curteach_teaching.sweeps.sweep import run_seed_sequence
from curteach_teaching.teaching.teachers import TEACHER_NAMES


@pytest.fixture(scope="module")
def full_run():
    """One run with the original's settings (init T0-T3, 200 steps, 7 teachers; under a second of CPU)."""
    return CarIRLExperiment().run(0, run_seed_sequence(0, 3))


def test_run_protocol(full_run):
    assert tuple(full_run.curves) == TEACHER_NAMES  # the original's order of play
    for name in TEACHER_NAMES:
        curve = full_run.curves[name]
        picks, types = full_run.records["picks"][name], full_run.records["pick_types"][name]
        assert curve.shape == (201,) and np.isfinite(curve).all()
        assert picks.shape == types.shape == (200,)
        assert np.all(picks % 20 == 0) and np.all((0 <= picks) & (picks < 800))
        np.testing.assert_array_equal(types, (picks // 20) % 8)
    initial = {full_run.curves[name][0] for name in TEACHER_NAMES}
    assert len(initial) == 1  # every teacher starts from the same pre-trained learner
    assert full_run.extras["expert_reward"] > max(c[-1] for c in full_run.curves.values())
    assert full_run.extras["crash_step"] is None or 0 <= full_run.extras["crash_step"] < 200


def test_known_teacher_behaviour(full_run):
    picks = full_run.records["picks"]
    # Omn stalls on the zero-gradient T0 start 0 once no start brings theta closer to theta*
    assert np.all(picks["Omn"][-100:] == 0)
    assert np.ptp(full_run.curves["Omn"][-100:]) == 0.0
    # Cur-L locks onto one start (T0, or a task on which its learner blew up)
    assert np.unique(picks["Cur-L"][-50:]).size == 1
    # Cur-T sweeps all 40 tasks without repeats, then repeats the same order
    assert sorted(picks["Cur-T"][:40]) == list(range(0, 800, 20))
    np.testing.assert_array_equal(picks["Cur-T"][40:80], picks["Cur-T"][:40])
    # Scot's batch starts with state 0, which covers every task with mu = 0 (all of T0, T2 and T4)
    assert picks["Scot"][0] == 0


def test_init_and_settings_validation():
    assert parse_init("T0") == 1 and parse_init("T0-T3") == 4 and parse_init("none") == 0
    with pytest.raises(ValueError, match="init"):
        parse_init("T9")
    with pytest.raises(ValueError, match="teachers"):
        CarIRLExperiment(teachers=("Cur", "Nobody"))
    with pytest.raises(ValueError, match="steps"):
        CarIRLExperiment(steps=0)
    with pytest.raises(ValueError, match="aggregation"):
        CarIRLExperiment(cur_aggregation="max")
    with pytest.raises(ValueError, match="observability"):
        CarIRLExperiment(observability=())
    # teachers play in the original's order whatever order they are given in
    assert CarIRLExperiment(teachers=("BBox", "Agn")).teachers == ("Agn", "BBox")


def test_teacher_subset_does_not_change_the_others():
    small = dict(steps=5, target_steps=10, pretrain_steps=10)
    everyone = CarIRLExperiment(**small).run(0, run_seed_sequence(1, 0))
    some = CarIRLExperiment(teachers=("Agn", "Scot"), **small).run(0, run_seed_sequence(1, 0))
    for name in ("Agn", "Scot"):
        np.testing.assert_array_equal(some.curves[name], everyone.curves[name])
    assert some.extras["crash_checked"] is False and some.extras["crash_step"] is None


def test_cli_car_irl(tmp_path, capsys):
    out = tmp_path / "irl"
    code = main(["car-irl", "--init", "T0", "--runs", "2", "--steps", "5", "--workers", "1", "--no-progress",
                 "--out", str(out), "--heatmap-teacher", "BBox"])
    assert code == 0
    text = capsys.readouterr().out
    assert "flagged" in text and "finished" in text
    assert (out / "summary.csv").exists() and (out / "curriculum_BBox_all.png").exists()
    assert len(list((out / "runs" / "main").glob("run_*.json"))) == 2
    report = json.loads((out / "report.json").read_text())
    assert report["settings"]["init_types"] == 1 and report["runs"] == 2
    # rerun: nothing recomputed
    main(["car-irl", "--init", "T0", "--runs", "2", "--steps", "5", "--workers", "1", "--no-progress",
          "--out", str(out), "--heatmap-teacher", "BBox", "--no-figures"])
    assert "0 computed, 2 reused" in capsys.readouterr().out


def test_cli_observability(tmp_path, capsys):
    out = tmp_path / "obs"
    code = main(["car-irl-observability", "--runs", "1", "--steps", "3", "--workers", "1", "--no-progress",
                 "--settings", "1:inf,2:10", "--out", str(out)])
    assert code == 0
    report = json.loads((out / "report.json").read_text())
    assert set(report["final"]["all"]) == {"Cur B=1 k=inf", "Cur B=2 k=10"}
    assert (out / "curriculum_Cur_B=1_k=inf_all.png").exists()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["car-irl", "--init", "T9"], "init"),
        (["car-irl", "--runs", "0"], "runs"),
        (["car-irl", "--teachers", "Cur,Nobody"], "teachers"),
        (["car-irl", "--heatmap-teacher", "Nobody"], "heatmap"),
        (["car-irl-observability", "--settings", "0:inf"], "B must be"),
    ],
)
def test_cli_bad_input(argv, message, capsys, tmp_path):
    assert main(argv + ["--out", str(tmp_path), "--no-progress"]) == 2
    assert message in capsys.readouterr().err
