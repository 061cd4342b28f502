"""Output folders are never mixed or silently overwritten: the folder lock (real subprocesses), the sweep record,
outputs of an older report, unwritable paths."""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from curteach_teaching.cli import main
from curteach_teaching.experiments.car.irl import CarIRLExperiment
from curteach_teaching.sweeps.folders import LOCK_NAME, RECORD_NAME, folder_lock
from curteach_teaching.sweeps.sweep import run_sweep

SMALL = dict(steps=4, target_steps=10, pretrain_steps=10, teachers=("Agn", "Cur", "Scot"))
IRL = ["car-irl", "--steps", "4", "--workers", "1", "--no-progress"]


def test_a_folder_in_use_is_refused_and_freed_when_its_sweep_dies(tmp_path, capsys):
    out = tmp_path / "sweep"
    args = ["car-bc", "--runs", "8", "--steps", "300", "--workers", "1", "--no-progress", "--no-figures",
            "--out", str(out)]
    proc = subprocess.Popen([sys.executable, "-m", "curteach_teaching.cli", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not (out / LOCK_NAME).exists() or (out / LOCK_NAME).read_text().strip() != str(proc.pid):
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        assert main([*args, "--seed", "1"]) == 2
        err = capsys.readouterr().err
        # refused at once, not after waiting for the lock: the sweep holding it is still running
        assert f"is in use by pid {proc.pid}" in err and proc.poll() is None
        os.killpg(proc.pid, signal.SIGKILL)  # a crash: the operating system releases the lock
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    saved = len(list((out / "runs" / "main").glob("run_*.json")))
    assert main([*args[:2], "1", *args[3:]]) == 0  # the folder is free again; its runs are resumed
    assert saved <= 1 or "reused" in capsys.readouterr().out


def test_the_lock_is_reentrant_and_released(tmp_path):
    with folder_lock(tmp_path), folder_lock(tmp_path):  # the driver and its report share one lock
        assert (tmp_path / LOCK_NAME).read_text() == str(os.getpid())
    with folder_lock(tmp_path):  # released on leaving the block
        pass


def test_the_record_refuses_another_sweep_and_names_the_difference(tmp_path, capsys):
    out = tmp_path / "irl"
    assert main([*IRL, "--runs", "2", "--no-figures", "--out", str(out)]) == 0
    record = json.loads((out / RECORD_NAME).read_text())
    assert record["seed"] == 0 and record["settings"]["steps"] == 4 and record["curteach"]
    capsys.readouterr()
    assert main([*IRL, "--runs", "2", "--seed", "1", "--out", str(out)]) == 2
    assert "seed: 0 -> 1" in capsys.readouterr().err
    assert main(["car-bc", "--runs", "1", "--steps", "4", "--out", str(out)]) == 2  # another experiment
    assert "experiment: 'car-irl' -> 'car-bc'" in capsys.readouterr().err
    record["curteach"] = "0.0.1"
    (out / RECORD_NAME).write_text(json.dumps(record))
    assert main([*IRL, "--runs", "2", "--out", str(out)]) == 2  # runs of another version are not reused silently
    assert "curteach: '0.0.1' -> " in capsys.readouterr().err
    assert main([*IRL, "--runs", "2", "--out", str(out), "--overwrite"]) == 0
    assert "2 computed, 0 reused" in capsys.readouterr().out


def test_a_folder_from_before_the_record_is_adopted_or_refused(tmp_path):
    out = tmp_path / "old"
    run_sweep(CarIRLExperiment(**SMALL), out, 2, seed=5, workers=1, progress=False)
    (out / RECORD_NAME).unlink()
    assert len(run_sweep(CarIRLExperiment(**SMALL), out, 2, seed=5, workers=1, progress=False).reused) == 2
    (out / RECORD_NAME).unlink()
    with pytest.raises(ValueError, match="2 run file\\(s\\) of other settings or another seed"):
        run_sweep(CarIRLExperiment(**SMALL), out, 2, seed=6, workers=1, progress=False)


def test_outputs_of_an_older_report_are_removed_and_nothing_else(tmp_path):
    out = tmp_path / "irl"
    assert main([*IRL, "--runs", "2", "--out", str(out)]) == 0
    figures = sorted(p.name for p in out.glob("*.png"))
    assert "learning_curves_all.png" in figures
    (out / "notes.txt").write_text("mine")
    assert main([*IRL, "--runs", "2", "--no-figures", "--out", str(out)]) == 0
    assert not list(out.glob("*.png"))  # figures of the earlier report would describe other runs
    assert (out / "notes.txt").read_text() == "mine"
    assert json.loads((out / "report.json").read_text())["files"] == ["summary.csv", "report.json", "steps_to_gap.csv"]


def test_unwritable_output_paths_are_one_line_errors(tmp_path, capsys):
    a_file = tmp_path / "file"
    a_file.write_text("x")
    for out, message in ((a_file, "is not a folder"), (a_file / "below", "cannot create the output folder"),
                         ("", "must not be empty")):
        assert main([*IRL, "--runs", "1", "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1
    if os.geteuid() != 0:  # root writes anywhere
        locked = tmp_path / "read-only"
        locked.mkdir(mode=0o555)
        assert main([*IRL, "--runs", "1", "--out", str(locked)]) == 2
        assert "permission denied" in capsys.readouterr().err


def test_report_only_changes_nothing(tmp_path, capsys):
    out = tmp_path / "irl"
    assert main([*IRL, "--runs", "1", "--no-figures", "--out", str(out)]) == 0
    (out / "runs" / "main" / ".run_00001.json.abc.tmp").write_text("a write in flight elsewhere")
    assert main([*IRL, "--runs", "2", "--report-only", "--no-figures", "--out", str(out)]) == 0
    assert (out / "runs" / "main" / ".run_00001.json.abc.tmp").exists()
    assert main([*IRL, "--runs", "2", "--report-only", "--overwrite", "--out", str(out)]) == 2
    assert "cannot --overwrite" in capsys.readouterr().err


def test_report_json_is_strict_and_records_the_sweep(tmp_path, capsys):
    out = tmp_path / "irl"
    args = [*IRL, "--runs", "1", "--seed", "3", "--steps", "200", "--teaching-rate", "0.5", "--no-figures",
            "--out", str(out)]
    assert main(args) == 0
    text = (out / "report.json").read_text()
    assert "NaN" not in text and "Infinity" not in text  # one run: every SEM is null
    report = json.loads(text)
    assert report["seed"] == 3 and report["command"] == ["curteach", *args] and report["curteach"]
    assert report["settings"]["teaching_rate"] == 0.5
    assert next(iter(report["final"]["all"].values()))["sem"] is None
    assert report["flagged_fraction"] == 1.0  # this run would have crashed in the original: "finished" is empty
    printed = capsys.readouterr().out
    assert "finished: no run is in this subset (n=0)" in printed and " nan" not in printed


def test_every_byte_flip_of_a_dataset_file_is_a_clear_error_or_harmless(tmp_path):
    """A fuzz over single-byte damage: loading never raises anything but a ValueError naming the file."""
    from curteach_envs.navigation.dataset import load_dataset, save_dataset
    from curteach_envs.navigation.generate import generate_dataset

    sizes = {"train": 2, "test": 1, "val": 1}
    original = generate_dataset("tsp", sizes, seed=2, workers=1, progress=False)
    good = save_dataset(original, tmp_path / "good.npz")
    blob = good.read_bytes()
    rng = np.random.default_rng(0)
    damaged = tmp_path / "damaged.npz"
    failures = 0
    for position in rng.choice(len(blob), size=min(400, len(blob)), replace=False):
        flipped = bytearray(blob)
        flipped[position] ^= int(rng.integers(1, 256))
        damaged.write_bytes(bytes(flipped))
        try:
            loaded = load_dataset(damaged, verify=True)
        except ValueError as error:
            assert "damaged.npz" in str(error)
            failures += 1
            continue
        # a flip the loader accepts hit a field without meaning (a zip timestamp, ...): the data are intact
        for name, split in original.splits.items():
            for column, values in split.columns.items():
                np.testing.assert_array_equal(loaded[name].columns[column], values)
    assert failures > 0


def test_verify_catches_a_demonstration_that_does_not_replay(tmp_path, capsys):
    from curteach_envs.navigation.dataset import load_dataset, save_dataset
    from curteach_envs.navigation.generate import generate_dataset

    data = generate_dataset("shortest_path", {"train": 3, "test": 1, "val": 1}, seed=4, workers=1, progress=False)
    data["train"].columns["reward"][1] -= 1  # still valid, but not what the actions earn
    path = save_dataset(data, tmp_path / "tampered.npz")
    load_dataset(path)  # the file itself is sound
    with pytest.raises(ValueError, match=r"1 demonstration\(s\) of split 'train' do not replay .*first: 1"):
        load_dataset(path, verify=True)
    assert main(["dataset-info", str(path), "--verify"]) == 2
    assert "do not replay" in capsys.readouterr().err
    assert main(["dataset-info", str(path)]) == 0


@pytest.mark.parametrize("args, message", [
    (["car-irl", "--steps", "2000000"], "steps must be an integer in [1, 1000000]"),
    (["car-bc", "--steps", "2000000"], "steps must be an integer in [1, 1000000]"),
    (["car-irl", "--runs", "100001"], "runs must be an integer in [1, 100000]"),
    (["car-irl-observability", "--settings", "1:10000000000000"], "k in [1, 10^12]"),
    (["car-irl", "--teaching-rate", "-1"], "--teaching-rate must be a finite number > 0; got -1.0"),
    (["car-bc", "--learning-rate", "nan"], "--learning-rate must be a finite number > 0; got nan"),
])
def test_sizes_that_would_exhaust_memory_are_refused_up_front(tmp_path, capsys, args, message):
    assert main([*args, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out" / "runs").exists()


def test_road_sizes_are_bounded():
    from curteach_envs.car import sample_road

    with pytest.raises(ValueError, match="n_instances must be an integer in \\[1, 1000\\]"):
        sample_road(np.random.default_rng(0), n_instances=10**6)
    with pytest.raises(ValueError, match="road_length must be an integer in \\[2, 100\\]"):
        sample_road(np.random.default_rng(0), road_length=10**6)


def test_a_full_disk_is_a_one_line_error_and_keeps_the_saved_runs(tmp_path, capsys, monkeypatch):
    import errno

    from curteach_teaching.sweeps import sweep as sweep_module

    real_save = sweep_module.save_run
    saved = []

    def save_until_full(path, result, fingerprint):
        if len(saved) == 2:
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        real_save(path, result, fingerprint)
        saved.append(path)

    monkeypatch.setattr(sweep_module, "save_run", save_until_full)
    out = tmp_path / "irl"
    assert main([*IRL, "--runs", "4", "--no-figures", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "No space left on device" in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert sorted(p.name for p in (out / "runs" / "main").glob("run_*.json")) == ["run_00000.json", "run_00001.json"]


def test_a_file_system_without_locks_does_not_block_sweeps(tmp_path, monkeypatch):
    import errno
    import fcntl

    def no_locks(fd, operation):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_locks)
    with folder_lock(tmp_path):  # goes on unlocked
        pass


@pytest.mark.parametrize("value", [0, -1.0, float("nan"), float("inf"), True, "1", None, np.bool_(True)])
def test_check_positive_refuses(value):
    from curteach_envs._util import check_positive

    with pytest.raises(ValueError, match=r"^rate must be a finite number > 0; got "):
        check_positive("rate", value)


@pytest.mark.parametrize("value", [1, 0.17, np.float32(2.5), np.int64(3), 1e-300])
def test_check_positive_accepts(value):
    from curteach_envs._util import check_positive

    assert check_positive("rate", value) == float(value)


def test_ordered_subset():
    from curteach_teaching.names import ordered_subset

    assert ordered_subset("teachers", ["Cur", "Agn"], ("Agn", "Omn", "Cur")) == ("Agn", "Cur")
    for bad in ([], ["Cur", "Cur"], ["Agn", "Nobody"]):
        with pytest.raises(ValueError, match=r"^teachers must be distinct names from \['Agn', 'Omn', 'Cur'\]; got "):
            ordered_subset("teachers", bad, ("Agn", "Omn", "Cur"))
