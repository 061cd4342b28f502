"""The sweep layer: cells x runs, paired seeds, backends, the driver writing every file, resume, reports."""

import csv
import json
from dataclasses import dataclass, field, replace

import numpy as np
import pytest

from curteach_teaching.experiments.car.irl import CarIRLExperiment
from curteach_teaching.experiments.car.report import CarReport, car_summary_rows, flagged_fraction
from curteach_teaching.experiments.car.result import car_run_result
from curteach_teaching.sweeps import results as results_module
from curteach_teaching.sweeps import sweep as sweep_module
from curteach_teaching.sweeps.backends import ProcessBackend, SerialBackend
from curteach_teaching.sweeps.reports import Report, read_summary
from curteach_teaching.sweeps.results import RunResult, load_run, run_path, save_run
from curteach_teaching.sweeps.sweep import make_backend, run_sweep

SMALL = dict(steps=4, target_steps=10, pretrain_steps=10, teachers=("Agn", "Cur", "Scot"))


@dataclass(frozen=True)
class InterruptedExperiment(CarIRLExperiment):
    """Same settings as CarIRLExperiment, but the sweep is 'killed' when it reaches run 2."""

    def run(self, index, seed_sequence):
        if index == 2:
            raise KeyboardInterrupt
        return super().run(index, seed_sequence)


@dataclass(frozen=True)
class ShiftExperiment:
    """Two cells on the same random draws: cell ``plus`` is cell ``base`` shifted by ``shift``."""

    shift: float = 1.0
    cells = ("base", "plus")

    def settings(self):
        return {"shift": self.shift}

    def run_cell(self, cell, index, seed_sequence):
        draws = np.random.default_rng(seed_sequence).normal(size=6)
        curve = draws + (self.shift if cell == "plus" else 0.0)
        return RunResult(index=index, seed=0, curves={"x": curve, "y": -curve},
                         records={"step": {"x": np.arange(5)}}, extras={"first": float(curve[0])})


@dataclass(frozen=True)
class FailingExperiment(ShiftExperiment):
    def run_cell(self, cell, index, seed_sequence):
        if index == 1:
            raise ValueError("broken run")
        return super().run_cell(cell, index, seed_sequence)


def _same(a: RunResult, b: RunResult):
    assert a.curves.keys() == b.curves.keys() and a.cell == b.cell and a.index == b.index
    for name in a.curves:
        np.testing.assert_array_equal(a.curves[name], b.curves[name])
    for record in a.records:
        for name in a.records[record]:
            np.testing.assert_array_equal(a.records[record][name], b.records[record][name])
    assert a.extras == b.extras


def test_same_seed_same_results_in_any_worker_count_and_backend(tmp_path):
    experiment = CarIRLExperiment(**SMALL)
    serial = run_sweep(experiment, tmp_path / "a", 3, seed=5, workers=1, progress=False)
    parallel = run_sweep(experiment, tmp_path / "b", 3, seed=5, workers=2, progress=False)
    explicit = run_sweep(experiment, tmp_path / "c", 3, seed=5, backend=SerialBackend(), progress=False)
    for a, b, c in zip(serial.results, parallel.results, explicit.results):
        _same(a, b)
        _same(a, c)
    other = run_sweep(experiment, tmp_path / "d", 1, seed=6, workers=1, progress=False)
    assert not np.array_equal(other.results[0].curves["Agn"], serial.results[0].curves["Agn"])
    # runs draw fresh roads: different runs differ
    assert not np.array_equal(serial.results[0].curves["Agn"], serial.results[1].curves["Agn"])


def test_cells_are_paired_and_laid_out_per_cell(tmp_path):
    sweep = run_sweep(ShiftExperiment(), tmp_path, 3, seed=4, workers=2, progress=False)
    assert list(sweep.cells) == ["base", "plus"]
    for base, plus in zip(sweep.cells["base"], sweep.cells["plus"]):
        np.testing.assert_array_equal(plus.curves["x"], base.curves["x"] + 1.0)  # same draws: paired
    assert sweep.computed == [("base", 0), ("base", 1), ("base", 2), ("plus", 0), ("plus", 1), ("plus", 2)]
    assert sorted(p.relative_to(tmp_path).as_posix() for p in (tmp_path / "runs").rglob("*.json")) == [
        f"runs/{cell}/run_0000{i}.json" for cell in ("base", "plus") for i in range(3)
    ]
    with pytest.raises(ValueError, match="2 cells"):
        sweep.results  # noqa: B018
    again = run_sweep(ShiftExperiment(), tmp_path, 3, seed=4, workers=1, progress=False)
    assert again.computed == [] and len(again.reused) == 6
    for a, b in zip(sweep.all_results, again.all_results):
        _same(a, b)


def test_the_driver_writes_every_file(tmp_path, monkeypatch):
    """Workers only compute: every save happens in the driver process, once per unit."""
    saved = []
    original = sweep_module.save_run
    monkeypatch.setattr(sweep_module, "save_run", lambda path, *a: (saved.append(path), original(path, *a)))
    run_sweep(ShiftExperiment(), tmp_path, 2, seed=0, backend=ProcessBackend(2), progress=False)
    assert sorted(saved) == sorted(run_path(tmp_path, i, c) for c in ("base", "plus") for i in range(2))


def test_a_failing_run_names_itself_and_keeps_finished_runs(tmp_path, capsys):
    with pytest.raises(ValueError, match="broken run"):
        run_sweep(FailingExperiment(), tmp_path, 3, seed=0, workers=1, progress=False)
    assert "run 1 of cell 'base' failed" in capsys.readouterr().err
    assert run_path(tmp_path, 0, "base").exists() and not run_path(tmp_path, 1, "base").exists()


def test_resume_after_interruption(tmp_path):
    out = tmp_path / "sweep"
    with pytest.raises(KeyboardInterrupt):
        run_sweep(InterruptedExperiment(**SMALL), out, 4, seed=1, workers=1, progress=False)
    assert run_path(out, 0).exists() and run_path(out, 1).exists() and not run_path(out, 2).exists()
    resumed = run_sweep(CarIRLExperiment(**SMALL), out, 4, seed=1, workers=1, progress=False)
    assert resumed.reused == [("main", 0), ("main", 1)] and resumed.computed == [("main", 2), ("main", 3)]
    fresh = run_sweep(CarIRLExperiment(**SMALL), tmp_path / "fresh", 4, seed=1, workers=1, progress=False)
    for a, b in zip(resumed.results, fresh.results):
        _same(a, b)
    again = run_sweep(CarIRLExperiment(**SMALL), out, 4, seed=1, workers=1, progress=False)
    assert again.computed == [] and len(again.reused) == 4


def test_corrupt_and_stale_files_are_recomputed(tmp_path, capsys):
    out = tmp_path / "sweep"
    first = run_sweep(CarIRLExperiment(**SMALL), out, 3, seed=2, workers=1, progress=False)
    # run 0: a silently changed number (valid JSON); run 1: a truncated file
    document = json.loads(run_path(out, 0).read_text())
    document["data"]["curves"]["Cur"][2] += 1.0
    run_path(out, 0).write_text(json.dumps(document))
    run_path(out, 1).write_text(run_path(out, 1).read_text()[:100])
    again = run_sweep(CarIRLExperiment(**SMALL), out, 3, seed=2, workers=1, progress=False)
    assert again.computed == [("main", 0), ("main", 1)] and again.reused == [("main", 2)]
    assert "checksum" in again.invalid[("main", 0)] and "unreadable" in again.invalid[("main", 1)]
    assert "recomputing" in capsys.readouterr().err
    for a, b in zip(first.results, again.results):
        _same(a, b)
    # a file of other settings inside this sweep's folder (copied in by hand): not reused
    document = json.loads(run_path(out, 2).read_text())
    document["fingerprint"] = "0" * 16
    run_path(out, 2).write_text(json.dumps(document))
    stale = run_sweep(CarIRLExperiment(**SMALL), out, 3, seed=2, workers=1, progress=False)
    assert stale.computed == [("main", 2)] and "other settings" in stale.invalid[("main", 2)]
    # a sweep of other settings or another seed is refused, naming the difference, unless overwrite is given
    with pytest.raises(ValueError, match=r"other settings \(steps: 4 -> 5\); pass --overwrite"):
        run_sweep(CarIRLExperiment(**{**SMALL, "steps": 5}), out, 1, seed=2, workers=1, progress=False)
    with pytest.raises(ValueError, match="seed: 2 -> 3"):
        run_sweep(CarIRLExperiment(**SMALL), out, 1, seed=3, workers=1, progress=False)
    assert len(list((out / "runs" / "main").glob("run_*.json"))) == 3  # nothing was touched
    changed = run_sweep(CarIRLExperiment(**{**SMALL, "steps": 5}), out, 1, seed=2, workers=1, progress=False,
                        overwrite=True)
    assert changed.computed == [("main", 0)] and changed.invalid == {}
    assert [p.name for p in (out / "runs" / "main").glob("run_*.json")] == ["run_00000.json"]


def test_a_file_of_another_cell_or_index_is_not_used(tmp_path):
    result = RunResult(index=3, seed=0, curves={"A": np.zeros(3)}, cell="base")
    save_run(run_path(tmp_path, 3, "base"), result, "f")
    assert load_run(run_path(tmp_path, 3, "base"), "f", 3, "base")[1] == ""
    assert "not run 3 of 'plus'" in load_run(run_path(tmp_path, 3, "base"), "f", 3, "plus")[1]


def test_old_flat_layout_is_rejected(tmp_path):
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "run_00000.json").write_text("{}")
    with pytest.raises(ValueError, match="old flat layout"):
        run_sweep(CarIRLExperiment(**SMALL), tmp_path, 1, workers=1, progress=False)


def test_bad_cell_names_are_rejected(tmp_path):
    @dataclass(frozen=True)
    class BadCells(ShiftExperiment):
        cells = ("ok", "../escape")

    with pytest.raises(ValueError, match="cell names"):
        run_sweep(BadCells(), tmp_path, 1, workers=1, progress=False)
    with pytest.raises(ValueError, match="cell names"):
        run_path(tmp_path, 0, ".hidden")


def test_atomic_write_leaves_no_partial_file(tmp_path, monkeypatch):
    result = RunResult(index=0, seed=0, curves={"A": np.zeros(3)}, records={"picks": {"A": np.zeros(2, int)}})
    path = run_path(tmp_path, 0)

    def broken_dump(obj, stream):
        stream.write('{"format": "curteach-run-2", "data": ')
        raise OSError("disk full")

    monkeypatch.setattr(results_module.json, "dump", broken_dump)
    with pytest.raises(OSError):
        save_run(path, result, "f")
    assert not path.exists() and list(path.parent.iterdir()) == []
    monkeypatch.undo()
    save_run(path, result, "f")
    loaded, reason = load_run(path, "f", 0)
    assert reason == "" and loaded.curves["A"].tolist() == [0, 0, 0]
    assert loaded.records["picks"]["A"].dtype.kind == "i"  # integer records stay integers
    assert load_run(path, "f", 1)[0] is None


def _fake(index, values, crash=None):
    values = np.asarray(values, float)
    steps = values.shape[0] - 1
    zeros = {"X": np.zeros(steps, int)}
    return car_run_result(index=index, curves={"X": values}, picks=zeros, pick_types=zeros, crash_step=crash, extras={})


def test_car_summary_subsets_and_sem():
    runs = [_fake(0, [0, 1]), _fake(1, [0, 3]), _fake(2, [0, 8], crash=0)]
    rows = car_summary_rows(runs, ["X"])
    final = {row["subset"]: row for row in rows if row["t"] == 1}
    assert final["all"]["mean"] == pytest.approx(4.0) and final["all"]["n"] == 3
    assert final["all"]["sem"] == pytest.approx(np.std([1, 3, 8], ddof=1) / np.sqrt(3))
    assert final["finished"]["mean"] == pytest.approx(2.0) and final["finished"]["n"] == 2
    assert final["finished"]["sem"] == pytest.approx(1.0)
    assert flagged_fraction(runs) == pytest.approx(1 / 3)


def test_car_report_writes_the_outputs(tmp_path, capsys):
    experiment = CarIRLExperiment(**SMALL)
    sweep = run_sweep(experiment, tmp_path, 2, seed=0, workers=1, progress=False)
    report = CarReport(experiment, heatmap_teacher="Cur").write(sweep, tmp_path)
    with open(tmp_path / "summary.csv") as stream:
        header = next(csv.reader(stream))
    assert header == ["teacher", "subset", "t", "mean", "sem", "n"]
    rows = read_summary(tmp_path / "summary.csv")
    assert {r["subset"] for r in rows} == {"all", "finished"}
    assert {r["teacher"] for r in rows} == {"Agn", "Scot", "Cur"}
    assert len(rows) == 3 * 2 * 5
    saved = json.loads((tmp_path / "report.json").read_text())
    assert saved["flagged_fraction"] == report["flagged_fraction"]
    assert "crash_step" not in saved["extras_mean"] and "expert_reward" in saved["extras_mean"]
    assert (tmp_path / "learning_curves_all.png").exists()
    assert (tmp_path / "curriculum_Cur_all.png").exists()
    assert "flagged" in capsys.readouterr().out
    with pytest.raises(ValueError, match="heat-map teacher"):
        CarReport(experiment, heatmap_teacher="Nobody")


def test_generic_report_with_cells(tmp_path, capsys):
    sweep = run_sweep(ShiftExperiment(), tmp_path, 3, seed=1, workers=1, progress=False)
    report = Report(ShiftExperiment(), title="shift").write(sweep, tmp_path)
    rows = read_summary(tmp_path / "summary.csv")
    with open(tmp_path / "summary.csv") as stream:
        assert next(csv.reader(stream)) == ["cell", "teacher", "subset", "t", "mean", "sem", "n"]
    assert len(rows) == 2 * 2 * 6
    base = {(r["teacher"], r["t"]): r["mean"] for r in rows if r["cell"] == "base"}
    plus = {(r["teacher"], r["t"]): r["mean"] for r in rows if r["cell"] == "plus"}
    assert plus[("x", 5)] == pytest.approx(base[("x", 5)] + 1.0)
    expected = np.mean([r.curves["x"][5] for r in sweep.cells["plus"]])
    assert report["final"]["plus"]["all"]["x"]["mean"] == pytest.approx(expected)
    assert report["cells"] == ["base", "plus"] and report["runs"] == 3
    assert {"learning_curves_base_all.png", "learning_curves_plus_all.png"} <= set(report["files"])
    assert all((tmp_path / name).exists() for name in report["files"])
    out = capsys.readouterr().out
    # every report opens with one line of the runs it covers (all cells), then the experiment's own summary
    assert out.startswith(f"6 runs (6 computed, 0 reused) in {tmp_path}\n")
    assert out.count(" computed, ") == 1 and "final value, plus, all (n=3)" in out


def test_bad_sweep_arguments(tmp_path):
    experiment = CarIRLExperiment(**SMALL)
    bad = (({"runs": 0}, "runs"), ({"runs": 1, "seed": -1}, "seed"), ({"runs": 1, "workers": 0}, "workers"))
    for kwargs, match in bad:
        with pytest.raises(ValueError, match=match):
            run_sweep(experiment, tmp_path, progress=False, **kwargs)
    with pytest.raises(ValueError, match="backend must be one of"):
        make_backend("threads")
    assert isinstance(make_backend("serial"), SerialBackend)
    assert make_backend("processes", 3).workers == 3
    assert sweep_module.BACKENDS.keys() == {"serial", "processes", "ray"}


@dataclass(frozen=True)
class WithModel(ShiftExperiment):
    """Each run returns a binary artifact (a stand-in for a trained model's state_dict)."""

    def run_cell(self, cell, index, seed_sequence):
        result = super().run_cell(cell, index, seed_sequence)
        return replace(result, artifacts={"model.bin": result.curves["x"].tobytes()})


def test_artifacts_are_written_by_the_driver_and_checked_on_resume(tmp_path, capsys):
    sweep = run_sweep(WithModel(), tmp_path, 2, seed=3, workers=2, progress=False)
    path = run_path(tmp_path, 1, "plus").with_suffix(".model.bin")
    assert path.read_bytes() == sweep.cells["plus"][1].curves["x"].tobytes()
    again = run_sweep(WithModel(), tmp_path, 2, seed=3, workers=1, progress=False)
    assert again.computed == [] and again.cells["plus"][1].artifacts["model.bin"] == path.read_bytes()
    path.write_bytes(b"damaged")
    run_path(tmp_path, 0, "base").with_suffix(".model.bin").unlink()
    third = run_sweep(WithModel(), tmp_path, 2, seed=3, workers=1, progress=False)
    assert third.computed == [("base", 0), ("plus", 1)]
    assert "missing" in third.invalid[("base", 0)] and "checksum" in third.invalid[("plus", 1)]
    assert path.read_bytes() == sweep.cells["plus"][1].curves["x"].tobytes()
    with pytest.raises(ValueError, match="artifact names"):
        save_run(tmp_path / "x.json", RunResult(index=0, seed=0, curves={"a": np.zeros(1)}, artifacts={"../up": b""}),
                 "f")


def test_report_only_uses_the_saved_runs(tmp_path, capsys):
    with pytest.raises(ValueError, match="no finished run"):
        run_sweep(ShiftExperiment(), tmp_path, 3, seed=0, workers=1, progress=False, compute=False)
    run_sweep(ShiftExperiment(), tmp_path, 2, seed=0, workers=1, progress=False)
    run_path(tmp_path, 1, "plus").unlink()
    partial = run_sweep(ShiftExperiment(), tmp_path, 3, seed=0, workers=1, progress=False, compute=False)
    assert [r.index for r in partial.cells["base"]] == [0, 1] and [r.index for r in partial.cells["plus"]] == [0]
    assert partial.computed == [] and not run_path(tmp_path, 2, "base").exists()
    report = Report(ShiftExperiment()).write(partial, tmp_path)
    assert report["final"]["plus"]["all"]["x"]["n"] == 1 and report["final"]["base"]["all"]["x"]["n"] == 2


def test_report_only_command(tmp_path, capsys):
    from curteach_teaching.cli import main

    args = ["car-irl", "--steps", "3", "--teachers", "Agn,Cur", "--no-progress", "--no-figures", "--out", str(tmp_path)]
    assert main([*args, "--runs", "2", "--report-only"]) == 2
    assert "no finished run" in capsys.readouterr().err
    assert main([*args, "--runs", "1", "--workers", "1"]) == 0
    capsys.readouterr()
    assert main([*args, "--runs", "3", "--report-only"]) == 0
    out = capsys.readouterr().out
    assert "report of the 1 of 3 runs saved so far" in out and "1 run (0 computed, 1 reused)" in out
    assert not run_path(tmp_path, 1).exists()


@dataclass(frozen=True)
class CountingExperiment(ShiftExperiment):
    """ShiftExperiment that records its ``settings()`` calls (in this process)."""

    calls: list = field(default_factory=list, compare=False)

    def settings(self):
        self.calls.append("settings")
        return super().settings()


def test_a_session_claims_the_folder_once_and_fingerprints_once(tmp_path):
    from curteach_teaching.sweeps.folders import LOCK_NAME
    from curteach_teaching.sweeps.sweep import SweepSession

    experiment = CountingExperiment()
    session = SweepSession(tmp_path / "out", 2, seed=3, backend=SerialBackend(), progress=False)
    assert not session.claimed and not (tmp_path / "out").exists()  # nothing is written before it is entered
    with session:
        assert session.claimed and (tmp_path / "out" / LOCK_NAME).exists()
        with pytest.raises(RuntimeError, match="enter it once"):
            session.__enter__()
        with pytest.raises(ValueError, match="in use by pid"):  # the lock is really held (not only re-entered)
            _lock_elsewhere(tmp_path / "out")
        sweep = session.run(experiment)
        with pytest.raises(ValueError, match="runs one experiment"):
            session.run(ShiftExperiment())
    assert not session.claimed and experiment.calls == ["settings"]
    alone = run_sweep(ShiftExperiment(), tmp_path / "alone", 2, seed=3, backend=SerialBackend(), progress=False)
    for a, b in zip(sweep.all_results, alone.all_results, strict=True):
        _same(a, b)
    with pytest.raises(ValueError, match="runs must be"):
        SweepSession(tmp_path / "bad", 0)
    assert not (tmp_path / "bad").exists()


def _lock_elsewhere(out_dir) -> None:
    """Take ``out_dir``'s lock in another process (``ValueError`` with its message if it is held)."""
    import subprocess
    import sys

    code = ("import sys\nfrom curteach_teaching.sweeps.folders import folder_lock\n"
            "try:\n    folder_lock(sys.argv[1]).__enter__()\nexcept ValueError as e:\n    sys.exit(str(e))\n")
    done = subprocess.run([sys.executable, "-c", code, str(out_dir)], capture_output=True, text=True)
    if done.returncode:
        raise ValueError(done.stderr.strip())


@dataclass(frozen=True)
class ControlledExperiment:
    """Three cells on the same draws, shifted by 0 (Agn), 1 (ctrl) and 3 (cur)."""

    cells = ("Agn", "ctrl", "cur")

    def settings(self):
        return {}

    def run_cell(self, cell, index, seed_sequence):
        curve = np.random.default_rng(seed_sequence).normal(size=4) + {"Agn": 0.0, "ctrl": 1.0, "cur": 3.0}[cell]
        return RunResult(index=index, seed=0, curves={"x": curve})


def test_further_baselines_are_paired_with_every_other_cell(tmp_path, capsys):
    sweep = run_sweep(ControlledExperiment(), tmp_path, 4, seed=2, workers=1, progress=False)
    report = Report(ControlledExperiment())
    report.more_baselines = ("ctrl",)
    written = report.write(sweep, tmp_path, figures=False)
    against = written["paired_against"]["ctrl"]["statistics"]
    assert list(against) == ["Agn", "cur"] and list(written["paired"]["statistics"]) == ["ctrl", "cur"]
    # shifted draws: every pair differs by the shift, so the mean is it and the 4 pairs' signed-rank p is 2/2^4
    assert against["cur"]["final"]["mean_difference"] == pytest.approx(2.0)
    assert against["Agn"]["final"]["mean_difference"] == pytest.approx(-1.0)
    assert against["cur"]["final"]["wilcoxon_p"] == pytest.approx(0.125) and against["cur"]["final"]["better"] == 4
    assert written["paired"]["statistics"]["cur"]["final"]["mean_difference"] == pytest.approx(3.0)
    assert json.loads((tmp_path / "report.json").read_text())["paired_against"]["ctrl"]["lines"]
    out = capsys.readouterr().out
    assert out.index("paired against Agn") < out.index("paired against ctrl") < out.index("  cur - ctrl: final +2")


@dataclass(frozen=True)
class WorseningExperiment:
    """Agn's curves fall from 10 to 0; cur's from 10 to 5: the default target (90 % of Agn's improvement) lies
    behind every start."""

    cells = ("Agn", "cur")

    def settings(self):
        return {}

    def run_cell(self, cell, index, seed_sequence):
        noise = np.random.default_rng(seed_sequence).normal(scale=0.1, size=3)
        end = {"Agn": 0.0, "cur": 5.0}[cell]
        return RunResult(index=index, seed=0, curves={"x": np.array([10.0, (10.0 + end) / 2, end]) + noise})


def test_no_steps_to_a_target_every_run_starts_at(tmp_path, capsys):
    sweep = run_sweep(WorseningExperiment(), tmp_path, 3, seed=0, workers=1, progress=False)
    written = Report(WorseningExperiment()).write(sweep, tmp_path, figures=False)
    paired = written["paired"]
    start = np.mean([r.curves["x"][0] for r in sweep.cells["Agn"]])
    end = np.mean([r.curves["x"][-1] for r in sweep.cells["Agn"]])
    assert paired["target"] == pytest.approx(start + 0.9 * (end - start))  # below the start
    assert paired["statistics"]["cur"]["steps_to_target"] is None
    assert paired["statistics"]["cur"]["final"]["mean_difference"] > 4  # the final values are still compared
    out = capsys.readouterr().out
    assert out.index("paired statistics, run i of a cell against run i of the other: mean difference [95 %") < \
        out.index("paired against Agn:") < out.index(paired["target_note"])
    assert paired["target_note"].startswith(f"note: steps to target not compared: Agn's runs start at {start:.4g} on "
                                            "average, which already reaches the target")
    assert "steps to target" not in "".join(paired["lines"])


def test_cells_without_the_baseline_say_why_nothing_is_paired(tmp_path, capsys):
    sweep = run_sweep(ShiftExperiment(), tmp_path, 2, seed=0, workers=1, progress=False)
    written = Report(ShiftExperiment()).write(sweep, tmp_path, figures=False)
    note = "note: no paired statistics against Agn: no Agn cell to pair the others with (add it to the cells)"
    assert written["paired"] == {"note": note} and note in capsys.readouterr().out


def test_a_smaller_runs_says_what_it_leaves_out(tmp_path, capsys):
    run_sweep(ShiftExperiment(), tmp_path, 4, seed=1, workers=1, progress=False)
    sweep = run_sweep(ShiftExperiment(), tmp_path, 2, seed=1, workers=1, progress=False)
    capsys.readouterr()
    Report(ShiftExperiment()).write(sweep, tmp_path, figures=False)
    assert (f"note: {tmp_path} holds 4 more run files of these cells that this report leaves out (run indices up to "
            "3); --runs 4 covers them") in capsys.readouterr().out
