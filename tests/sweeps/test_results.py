"""Run results: built once (frozen, keywords only), saved and loaded exactly; the car's run layout."""

import dataclasses

import numpy as np
import pytest

from curteach_teaching.experiments.car.result import car_run_result, crash_step, diverged_steps, finished
from curteach_teaching.sweeps.results import RunResult, load_run, run_path, save_run


def _result(**changes) -> RunResult:
    fields = dict(index=2, seed=7, curves={"A": np.array([0.5, 0.25])}, records={"picks": {"A": np.array([3])}},
                  extras={"note": "x"}, cell="base", artifacts={"model.bin": b"\x00\x01"})
    return RunResult(**{**fields, **changes})


def test_a_result_is_built_once():
    result = _result()
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.cell = "plus"
    with pytest.raises(TypeError):
        RunResult(2, 7, {"A": np.zeros(2)})  # keywords only
    moved = dataclasses.replace(result, cell="plus", seed=8)
    assert (moved.cell, moved.seed, result.cell, result.seed) == ("plus", 8, "base", 7)
    assert moved.curves is result.curves


def test_save_and_load_round_trip_with_artifacts(tmp_path):
    result = _result()
    path = run_path(tmp_path, 2, "base")
    save_run(path, result, "fingerprint")
    loaded, reason = load_run(path, "fingerprint", 2, "base")
    assert reason == ""
    assert loaded.to_data() == result.to_data() and loaded.artifacts == {"model.bin": b"\x00\x01"}
    assert loaded.records["picks"]["A"].dtype.kind == "i" and loaded.curves["A"].tolist() == [0.5, 0.25]
    path.with_suffix(".model.bin").write_bytes(b"\x00\x02")
    assert load_run(path, "fingerprint", 2, "base") == (None, "artifact 'model.bin' does not match its checksum "
                                                              "(corrupt file)")


def test_a_record_of_a_curve_that_does_not_exist_is_refused():
    data = _result(records={"picks": {"B": np.array([1])}}).to_data()
    with pytest.raises(ValueError, match="names curves that do not exist: \\['B'\\]"):
        RunResult.from_data(data)


def test_the_car_run_layout():
    curves = {"Cur": np.array([0.0, 1.0, 2.0])}
    picks = {"Cur": np.array([4, 9])}
    types = {"Cur": np.array([0, 1])}
    plain = car_run_result(index=3, curves=curves, picks=picks, pick_types=types, crash_step=None,
                           extras={"expert_reward": 2.5})
    assert plain.index == 3 and plain.seed == 0 and plain.cell == "main"
    assert plain.records == {"picks": picks, "pick_types": types}
    assert plain.extras == {"expert_reward": 2.5, "crash_step": None}  # no "diverged" key when nothing diverged
    assert finished(plain) and crash_step(plain) is None and diverged_steps(plain) == {}
    flagged = car_run_result(index=3, curves=curves, picks=picks, pick_types=types, crash_step=np.int64(1), extras={},
                             diverged={"Cur": np.int64(2)})
    assert not finished(flagged) and crash_step(flagged) == 1 and type(crash_step(flagged)) is int
    assert diverged_steps(flagged) == {"Cur": 2}
    with pytest.raises(TypeError):
        car_run_result(3, curves, picks, types, None, {})  # keywords only


def test_report_options_are_keywords_only(tmp_path):
    from curteach_teaching.experiments.car.report import CarReport
    from curteach_teaching.sweeps.reports import Report, summarize, write_summary

    runs = [_result()]
    with pytest.raises(TypeError):
        summarize(runs, ["A"], None, "teacher")
    assert summarize(runs, ["A"], label="curve")[0] == {"curve": "A", "subset": "all", "t": 0, "mean": 0.5,
                                                        "sem": pytest.approx(np.nan, nan_ok=True), "n": 1}
    with pytest.raises(TypeError):
        write_summary([], tmp_path / "summary.csv", "teacher")
    with pytest.raises(TypeError):
        Report(object(), ["A"])
    with pytest.raises(TypeError):
        CarReport(object(), "Cur")
    with pytest.raises(TypeError):
        Report(object(), curves=["A"]).write(None, tmp_path, False)
