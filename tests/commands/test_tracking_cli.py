"""``--log-dir``/``--log-format`` on the sweep commands: event files per run whose scalars equal the saved run's curves
(process pool and Ray), logged once when computed, all saved runs with ``--report-only``, refused before writing."""

import csv
import importlib.util
import json

import numpy as np
import pytest

from curteach_teaching.cli import main

pytest.importorskip("tensorboard")

CAR = ["car-irl", "--steps", "3", "--teachers", "Agn,Cur,Omn", "--no-progress", "--no-figures"]


def _events(folder):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    accumulator = EventAccumulator(str(folder), size_guidance={"scalars": 0})
    accumulator.Reload()
    return {tag: [(e.step, e.value) for e in accumulator.Scalars(tag)] for tag in accumulator.Tags()["scalars"]}


def _saved_curves(out, index, cell="main"):
    return json.loads((out / "runs" / cell / f"run_{index:05d}.json").read_text())["data"]["curves"]


def _check_run_logged(logs, out, index):
    """Each teacher's folder of the run (one per compared curve, so that TensorBoard overlays them) holds exactly its
    saved curve under the one tag curves/expected_reward (as TensorBoard's 32-bit floats, at steps 0..T), and its
    progress.csv every digit of it."""
    curves = _saved_curves(out, index)
    assert set(curves) == {"Agn", "Cur", "Omn"}
    for name, curve in curves.items():
        folder = logs / name / f"run_{index:05d}"
        events = _events(folder)
        assert events["curves/expected_reward"] == [(t, float(np.float32(v))) for t, v in enumerate(curve)]
        with open(folder / "progress.csv", newline="") as stream:
            table = list(csv.DictReader(stream))
        assert [float(row["curves/expected_reward"]) for row in table] == curve
        # what the teacher selected: the share of every task type over the trailing window sums to one
        shares = [tag for tag in events if tag.startswith("pick_types_share/")]
        totals = np.sum([[value for _, value in events[tag]] for tag in shares], axis=0)
        np.testing.assert_allclose(totals, 1.0, rtol=1e-6)


def test_process_backend_logs_each_run_once_and_report_only_logs_all(tmp_path):
    out, logs = tmp_path / "out", tmp_path / "logs"
    args = [*CAR, "--out", str(out), "--log-dir", str(logs), "--log-format", "tensorboard,csv"]
    assert main([*args, "--runs", "2", "--workers", "2"]) == 0
    assert sorted(p.name for p in logs.iterdir()) == ["Agn", "Cur", "Omn"]
    assert sorted(p.name for p in (logs / "Cur").iterdir()) == ["run_00000", "run_00001"]
    for index in (0, 1):
        _check_run_logged(logs, out, index)

    # resumed: the two saved runs are reused, not logged again; the new run is
    stamps = {p: p.stat().st_mtime_ns for p in logs.rglob("events.out.tfevents.*")}
    assert main([*args, "--runs", "3", "--workers", "1"]) == 0
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps
    _check_run_logged(logs, out, 2)

    # --report-only logs every saved run, e.g. into a new folder
    fresh = tmp_path / "fresh"
    assert main([*CAR, "--out", str(out), "--runs", "3", "--report-only", "--log-dir", str(fresh),
                 "--log-format", "tensorboard,csv"]) == 0
    for index in range(3):
        _check_run_logged(fresh, out, index)
        assert len(list((fresh / "Cur" / f"run_{index:05d}").glob("events.out.tfevents.*"))) == 1


@pytest.mark.parametrize("extra, message", [
    (["--log-format", "csv"], "--log-format needs --log-dir"),
    (["--log-dir", "LOGS", "--log-format", "csv,tensorbord"], "--log-format must be a comma-separated list"),
    (["--log-dir", "LOGS", "--log-format", "csv,wandb"], "--log-format wandb needs the wandb package"),
])
def test_refused_before_anything_is_written(tmp_path, capsys, monkeypatch, extra, message):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "wandb" else real(name))
    out, logs = tmp_path / "out", tmp_path / "logs"
    extra = [str(logs) if item == "LOGS" else item for item in extra]
    assert main([*CAR, "--runs", "1", "--out", str(out), *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    assert not out.exists() and not logs.exists()


def test_a_log_dir_that_is_a_file_is_refused(tmp_path, capsys):
    (tmp_path / "file").write_text("")
    assert main([*CAR, "--runs", "1", "--out", str(tmp_path / "out"), "--log-dir", str(tmp_path / "file"),
                 "--log-format", "csv"]) == 2
    assert "--log-dir" in capsys.readouterr().err and not (tmp_path / "out").exists()


@pytest.mark.slow  # a local Ray instance starts: about 80 s on a busy 2-core machine
def test_ray_backend_logs_on_the_driver(tmp_path):
    """Ray tasks only return results; the driver logs them."""
    pytest.importorskip("ray")
    out, logs = tmp_path / "out", tmp_path / "logs"
    assert main([*CAR, "--runs", "2", "--workers", "2", "--backend", "ray", "--out", str(out), "--log-dir",
                 str(logs), "--log-format", "tensorboard,csv"]) == 0
    for index in (0, 1):
        _check_run_logged(logs, out, index)


def test_the_help_lists_the_formats_of_the_logger():
    from curteach_teaching.commands import log_options
    from curteach_teaching.sweeps import tracking

    assert log_options._FORMATS == tracking.FORMATS and log_options._DEFAULT_FORMATS == tracking.DEFAULT_FORMATS


def test_nav_logs_the_training_loss_on_its_batch_axis(tmp_path):
    out, logs = tmp_path / "out", tmp_path / "logs"
    assert main(["nav", "--scale", "small", "--runs", "1", "--curricula", "Cur", "--epochs", "1", "--workers", "1",
                 "--no-progress", "--no-figures", "--out", str(out), "--log-dir", str(logs),
                 "--log-format", "tensorboard"]) == 0
    data = json.loads((out / "runs" / "Cur" / "run_00000.json").read_text())["data"]
    loss, batches = data["curves"]["train:loss"], data["records"]["batches"]["test"]
    assert np.isnan(loss[0]) and np.all(np.isfinite(loss[1:])) and len(loss) == len(batches)
    events = _events(logs / "Cur" / "run_00000")
    logged = events["train/loss"]
    assert [step for step, _ in logged] == batches
    np.testing.assert_array_equal([value for _, value in logged], np.float32(loss))  # NaN where NaN
    assert [step for step, _ in events["curves/test"]] == batches
