"""The generic runner: determinism, parallel = serial, resume, corrupt and stale files, atomic writes, summary."""

import csv
import json
from dataclasses import dataclass

import numpy as np
import pytest

from curteach_teaching.experiments import results as results_module
from curteach_teaching.experiments.car_irl import CarIRLExperiment
from curteach_teaching.experiments.results import (
    RunResult,
    flagged_fraction,
    load_run,
    read_summary,
    run_path,
    save_run,
    summarize,
)
from curteach_teaching.experiments.runner import run_sweep, write_outputs

SMALL = dict(steps=4, target_steps=10, pretrain_steps=10, teachers=("Agn", "Cur", "Scot"))


@dataclass(frozen=True)
class InterruptedExperiment(CarIRLExperiment):
    """Same settings as CarIRLExperiment, but the sweep is 'killed' when it reaches run 2."""

    def run(self, index, seed_sequence):
        if index == 2:
            raise KeyboardInterrupt
        return super().run(index, seed_sequence)


def _same(a: RunResult, b: RunResult):
    assert a.curves.keys() == b.curves.keys()
    for name in a.curves:
        np.testing.assert_array_equal(a.curves[name], b.curves[name])
        np.testing.assert_array_equal(a.picks[name], b.picks[name])
    assert a.crash_step == b.crash_step


def test_same_seed_same_results_in_any_worker_count(tmp_path):
    experiment = CarIRLExperiment(**SMALL)
    serial = run_sweep(experiment, tmp_path / "a", 3, seed=5, workers=1, progress=False)
    parallel = run_sweep(experiment, tmp_path / "b", 3, seed=5, workers=2, progress=False)
    for a, b in zip(serial.results, parallel.results):
        _same(a, b)
    other = run_sweep(experiment, tmp_path / "c", 1, seed=6, workers=1, progress=False)
    assert not np.array_equal(other.results[0].curves["Agn"], serial.results[0].curves["Agn"])
    # runs draw fresh roads: different runs differ
    assert not np.array_equal(serial.results[0].curves["Agn"], serial.results[1].curves["Agn"])


def test_resume_after_interruption(tmp_path):
    out = tmp_path / "sweep"
    with pytest.raises(KeyboardInterrupt):
        run_sweep(InterruptedExperiment(**SMALL), out, 4, seed=1, workers=1, progress=False)
    assert run_path(out, 0).exists() and run_path(out, 1).exists() and not run_path(out, 2).exists()
    resumed = run_sweep(CarIRLExperiment(**SMALL), out, 4, seed=1, workers=1, progress=False)
    assert resumed.reused == [0, 1] and resumed.computed == [2, 3]
    fresh = run_sweep(CarIRLExperiment(**SMALL), tmp_path / "fresh", 4, seed=1, workers=1, progress=False)
    for a, b in zip(resumed.results, fresh.results):
        _same(a, b)
    again = run_sweep(CarIRLExperiment(**SMALL), out, 4, seed=1, workers=1, progress=False)
    assert again.computed == [] and again.reused == [0, 1, 2, 3]


def test_corrupt_and_stale_files_are_recomputed(tmp_path, capsys):
    out = tmp_path / "sweep"
    first = run_sweep(CarIRLExperiment(**SMALL), out, 3, seed=2, workers=1, progress=False)
    # run 0: a silently changed number (valid JSON); run 1: a truncated file
    document = json.loads(run_path(out, 0).read_text())
    document["data"]["curves"]["Cur"][2] += 1.0
    run_path(out, 0).write_text(json.dumps(document))
    run_path(out, 1).write_text(run_path(out, 1).read_text()[:100])
    again = run_sweep(CarIRLExperiment(**SMALL), out, 3, seed=2, workers=1, progress=False)
    assert again.computed == [0, 1] and again.reused == [2]
    assert "checksum" in again.invalid[0] and "unreadable" in again.invalid[1]
    assert "recomputing" in capsys.readouterr().err
    for a, b in zip(first.results, again.results):
        _same(a, b)
    # other settings or another seed: not reused
    changed = run_sweep(CarIRLExperiment(**{**SMALL, "steps": 5}), out, 1, seed=2, workers=1, progress=False)
    assert changed.computed == [0] and "other settings" in changed.invalid[0]
    reseeded = run_sweep(CarIRLExperiment(**{**SMALL, "steps": 5}), out, 1, seed=3, workers=1, progress=False)
    assert reseeded.computed == [0] and "seed" in reseeded.invalid[0]


def test_atomic_write_leaves_no_partial_file(tmp_path, monkeypatch):
    result = RunResult(0, 0, {"A": np.zeros(3)}, {"A": np.zeros(2, int)}, {"A": np.zeros(2, int)})
    path = run_path(tmp_path, 0)

    def broken_dump(obj, stream):
        stream.write('{"format": "curteach-run-1", "data": ')
        raise OSError("disk full")

    monkeypatch.setattr(results_module.json, "dump", broken_dump)
    with pytest.raises(OSError):
        save_run(path, result, "f")
    assert not path.exists() and list(path.parent.iterdir()) == []
    monkeypatch.undo()
    save_run(path, result, "f")
    loaded, reason = load_run(path, "f", 0)
    assert reason == "" and loaded.curves["A"].tolist() == [0, 0, 0]
    assert load_run(path, "f", 1)[0] is None


def _fake(index, values, crash=None):
    values = np.asarray(values, float)
    steps = values.shape[0] - 1
    return RunResult(index, 0, {"X": values}, {"X": np.zeros(steps, int)}, {"X": np.zeros(steps, int)}, crash)


def test_summary_subsets_and_sem(tmp_path):
    runs = [_fake(0, [0, 1]), _fake(1, [0, 3]), _fake(2, [0, 8], crash=0)]
    rows = summarize(runs, ["X"])
    final = {row["subset"]: row for row in rows if row["t"] == 1}
    assert final["all"]["mean"] == pytest.approx(4.0) and final["all"]["n"] == 3
    assert final["all"]["sem"] == pytest.approx(np.std([1, 3, 8], ddof=1) / np.sqrt(3))
    assert final["finished"]["mean"] == pytest.approx(2.0) and final["finished"]["n"] == 2
    assert final["finished"]["sem"] == pytest.approx(1.0)
    assert flagged_fraction(runs) == pytest.approx(1 / 3)


def test_write_outputs(tmp_path, capsys):
    experiment = CarIRLExperiment(**SMALL)
    sweep = run_sweep(experiment, tmp_path, 2, seed=0, workers=1, progress=False)
    report = write_outputs(experiment, sweep, tmp_path, heatmap_teacher="Cur")
    with open(tmp_path / "summary.csv") as stream:
        header = next(csv.reader(stream))
    assert header == ["teacher", "subset", "t", "mean", "sem", "n"]
    rows = read_summary(tmp_path / "summary.csv")
    assert {r["subset"] for r in rows} == {"all", "finished"}
    assert {r["teacher"] for r in rows} == {"Agn", "Scot", "Cur"}
    assert len(rows) == 3 * 2 * 5
    saved = json.loads((tmp_path / "report.json").read_text())
    assert saved["flagged_fraction"] == report["flagged_fraction"]
    assert (tmp_path / "learning_curves_all.png").exists()
    assert (tmp_path / "curriculum_Cur_all.png").exists()
    assert "flagged" in capsys.readouterr().out
    with pytest.raises(ValueError, match="heat-map teacher"):
        write_outputs(experiment, sweep, tmp_path, heatmap_teacher="Nobody")


def test_bad_sweep_arguments(tmp_path):
    experiment = CarIRLExperiment(**SMALL)
    for kwargs, match in (({"runs": 0}, "runs"), ({"runs": 1, "seed": -1}, "seed"), ({"runs": 1, "workers": 0}, "workers")):
        with pytest.raises(ValueError, match=match):
            run_sweep(experiment, tmp_path, progress=False, **kwargs)
