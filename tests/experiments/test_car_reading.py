"""The reading of make demo's car runs (curteach_teaching.experiments.car.reading, curteach demo-reading)."""

import numpy as np
import pytest

from curteach_teaching.cli import main
from curteach_teaching.experiments.car.reading import SweepFinals, car_reading, load_sweep_finals, plot_car_reading


def _sweep(rate, cur, agn, crashes, pairing="same"):
    return SweepFinals(rate, {"Cur": np.array(cur), "Agn": np.array(agn)}, tuple(crashes), pairing=pairing)


def test_paper_rate_with_crashes_against_a_smaller_rate():
    # eta 0.17: Cur collapses in the two runs the original would crash (steps 10 and 12); over all runs its mean
    # (3 + 2.5 - 1 - 2) / 4 = 0.625 is below Agn's (2 + 2 + 2.5 + 1.5) / 4 = 2.0; over the finished runs Cur 2.75 > 2.0
    paper = _sweep(0.17, [3.0, 2.5, -1.0, -2.0], [2.0, 2.0, 2.5, 1.5], [None, None, 10, 12])
    smaller = _sweep(0.1, [2.5, 2.0, 2.0, 1.5], [2.0, 1.0, 2.5, 1.0], [None] * 4)
    lines = car_reading(paper, smaller)
    assert lines[1] == ("* eta = 0.17, all runs: Cur 0.62, Agn 2.00 (Cur ahead on 2 of 4 roads): Cur does not lead "
                        "over all runs.")
    assert lines[2].startswith("* The original code would have crashed in 2 of these 4 runs (at steps 10, 12")
    assert lines[2].endswith("reported only the other 2: Cur 2.75, Agn 2.00 (Cur ahead on 2 of 2 roads).")
    assert lines[3] == ("* eta = 0.1, all runs (none would have crashed the original): Cur 2.00, Agn 1.62 (Cur ahead "
                        "on 3 of 4 roads): Cur leads over all runs.")
    assert "leads over all runs at eta = 0.1, not at 0.17" in lines[4]


def test_no_crash_and_no_lead_are_said_as_they_are():
    paper = _sweep(0.17, [2.0, 2.0], [1.0, 1.0], [None, None])
    smaller = _sweep(0.05, [0.0, 0.5], [1.0, 1.0], [None, 7])
    lines = car_reading(paper, smaller)
    assert "Cur leads over all runs." in lines[1]
    assert lines[2] == "* The original code would have finished every run at this rate."
    assert "(1 would have crashed the original)" in lines[3] and "Cur does not lead over all runs." in lines[3]
    assert len(lines) == 4  # no claim about the step size when the smaller rate does not help
    every_run_crashes = _sweep(0.17, [0.0], [1.0], [3])
    assert car_reading(every_run_crashes, _sweep(0.1, [2.0], [1.0], [None]))[2].endswith("reported none of them.")


def test_bad_pairs_are_refused():
    paper = _sweep(0.17, [1.0], [1.0], [None])
    with pytest.raises(ValueError, match="must be below"):
        car_reading(paper, _sweep(0.25, [1.0], [1.0], [None]))
    with pytest.raises(ValueError, match="not on the same roads"):
        car_reading(paper, _sweep(0.1, [1.0], [1.0], [None], pairing="other"))
    with pytest.raises(ValueError, match="no teacher BBox"):
        car_reading(paper, _sweep(0.1, [1.0], [1.0], [None]), base="BBox")
    with pytest.raises(ValueError, match="2 final values for 1 run$"):
        _sweep(0.1, [1.0, 2.0], [1.0], [None])


def test_plot_writes_a_picture(tmp_path):
    paper = _sweep(0.17, [3.0, -1.0], [2.0, 2.5], [None, 10])
    path = plot_car_reading(paper, _sweep(0.1, [2.5, 2.0], [2.0, 1.0], [None, None]), tmp_path / "r.png")
    assert path.stat().st_size > 1000


def test_command_reads_two_car_irl_folders(tmp_path, capsys):
    common = ["car-irl", "--runs", "1", "--steps", "3", "--teachers", "Agn,Cur", "--no-progress", "--no-figures"]
    assert main([*common, "--out", str(tmp_path / "a")]) == 0
    assert main([*common, "--teaching-rate", "0.1", "--out", str(tmp_path / "b")]) == 0
    capsys.readouterr()
    assert main(["demo-reading", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Reading (Cur against Agn, final expected reward, 1 run at eta = 0.17 and 1 at eta = 0.1")
    assert (tmp_path / "car_irl_reading.png").exists()
    finals = load_sweep_finals(tmp_path / "b")
    assert finals.teaching_rate == 0.1 and finals.runs == 1 and set(finals.final) == {"Agn", "Cur"}
    # a different seed is a different set of roads
    assert main([*common, "--seed", "1", "--teaching-rate", "0.1", "--out", str(tmp_path / "c")]) == 0
    assert main(["demo-reading", str(tmp_path / "a"), str(tmp_path / "c")]) == 2
    assert "not on the same roads" in capsys.readouterr().err
    assert main(["demo-reading", str(tmp_path / "a"), str(tmp_path / "missing")]) == 2
