"""Experiment logging: a run's scalars (hand values), the SB3 output formats read back, the W&B writer, the flags."""

import csv
import importlib.machinery
import sys
import types

import numpy as np
import pytest

from curteach_teaching.sweeps.results import RunResult
from curteach_teaching.sweeps.run_scalars import run_scalars, tag_of_curve, window_shares
from curteach_teaching.sweeps.tracking import RunLogger, check_formats, parse_formats, rows_by_curve


def _car_like():
    """Two teachers, T = 3 steps: curves (4,), picks and pick types (3,)."""
    return RunResult(
        index=7, seed=0,
        curves={"Cur": np.array([0.0, 0.5, 0.75, 1.0]), "Agn": np.array([0.0, 0.25, 0.25, 0.5])},
        records={"picks": {"Cur": np.array([4, 9, 9]), "Agn": np.array([1, 4, 2])},
                 "pick_types": {"Cur": np.array([0, 1, 1]), "Agn": np.array([2, 0, 2])}},
        extras={"crash_step": None, "expert": 1.5, "diverged": {"Agn": 2}, "label": "text"},
    )


def _events(folder):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    accumulator = EventAccumulator(str(folder), size_guidance={"scalars": 0})
    accumulator.Reload()
    return {tag: [(e.step, e.value) for e in accumulator.Scalars(tag)] for tag in accumulator.Tags()["scalars"]}


def test_tags_of_curves():
    assert tag_of_curve("Cur") == "curves/Cur"
    assert tag_of_curve("feature:goal_distance") == "feature/goal_distance"
    assert tag_of_curve("irl/eta=0.1/spearman") == "irl/eta=0.1/spearman"


def test_window_shares_by_hand():
    shares = window_shares(np.array([0, 0, 1, 1, 2]), np.array([0, 1, 2]), window=2)
    expected = [[1, 0, 0], [1, 0, 0], [0.5, 0.5, 0], [0, 1, 0], [0, 0.5, 0.5]]
    np.testing.assert_array_equal(shares, expected)
    np.testing.assert_array_equal(window_shares(np.array([3, 5, 3]), np.array([3, 5]), window=20),
                                  [[1, 0], [0.5, 0.5], [2 / 3, 1 / 3]])
    with pytest.raises(ValueError, match="window must be >= 1"):
        window_shares(np.array([1]), np.array([1]), window=0)


def test_car_run_scalars_by_hand():
    rows = run_scalars(_car_like())
    assert [r[0] for r in rows] == sorted(r[0] for r in rows)
    by_tag = {}
    for step, tag, value in rows:
        by_tag.setdefault(tag, []).append((step, value))
    assert by_tag["curves/Cur"] == [(0, 0.0), (1, 0.5), (2, 0.75), (3, 1.0)]
    assert by_tag["curves/Agn"] == [(0, 0.0), (1, 0.25), (2, 0.25), (3, 0.5)]
    # the pick of step t made curve point t + 1
    assert by_tag["picks/Cur"] == [(1, 4.0), (2, 9.0), (3, 9.0)]
    # types 0, 1, 2 occur in the run, so every teacher gets all three shares (window 20 > T: shares so far)
    assert by_tag["pick_types_share/Cur/1"] == [(1, 0.0), (2, 0.5), (3, 2 / 3)]
    assert by_tag["pick_types_share/Agn/2"] == [(1, 1.0), (2, 0.5), (3, 2 / 3)]
    assert by_tag["pick_types_share/Agn/1"] == [(1, 0.0), (2, 0.0), (3, 0.0)]
    # numbers at the last step, dicts flattened; None and text left out
    assert by_tag["extras/expert"] == [(3, 1.5)] and by_tag["extras/diverged/Agn"] == [(3, 2.0)]
    assert not any(tag.startswith(("extras/crash_step", "extras/label")) for tag in by_tag)
    assert len(by_tag) == 2 + 2 + 6 + 2


def test_navigation_like_run_uses_its_batch_axis():
    result = RunResult(
        index=0, seed=0, cell="Cur",
        curves={"test": np.array([1.0, 2.0, 3.0]), "val": np.array([0.5, np.nan, 1.5]),
                "feature:length": np.array([0.2, 0.3, 0.4])},
        records={"batches": {"test": np.array([0, 10, 20])}, "seen": {"test": np.array([0, 32, 64])}},
        extras={"epoch_batches": [10, 20], "epoch_val": [0.25, 0.5], "best_test": 3.0, "epochs": 2},
    )
    rows = run_scalars(result)
    by_tag = {}
    for step, tag, value in rows:
        by_tag.setdefault(tag, []).append((step, value))
    assert by_tag["curves/test"] == [(0, 1.0), (10, 2.0), (20, 3.0)]
    assert by_tag["feature/length"] == [(0, 0.2), (10, 0.3), (20, 0.4)]
    assert by_tag["curves/val"][0] == (0, 0.5) and np.isnan(by_tag["curves/val"][1][1])
    assert by_tag["seen/test"] == [(0, 0.0), (10, 32.0), (20, 64.0)]  # as long as its curve: same steps
    assert by_tag["extras/epoch_val"] == [(10, 0.25), (20, 0.5)]
    assert by_tag["extras/best_test"] == [(20, 3.0)] and by_tag["extras/epochs"] == [(20, 2.0)]
    assert "extras/epoch_batches" not in by_tag and "batches/test" not in by_tag


def test_tensorboard_and_csv_read_back_and_relogging_replaces(tmp_path):
    result = _car_like()
    logger = RunLogger(tmp_path, ["csv", "tensorboard", "json"])
    [folder] = logger.log_run(result)
    assert folder == tmp_path / "main" / "run_00007"
    events = _events(folder)
    for name, curve in result.curves.items():  # TensorBoard keeps 32-bit floats
        assert events[f"curves/{name}"] == [(t, float(np.float32(v))) for t, v in enumerate(curve)]
    assert events["pick_types_share/Cur/1"] == [(1, 0.0), (2, 0.5), (3, float(np.float32(2 / 3)))]
    assert "step" not in events
    with open(folder / "progress.csv", newline="") as stream:
        table = list(csv.DictReader(stream))
    assert [int(row["step"]) for row in table] == [0, 1, 2, 3]
    assert [float(row["curves/Cur"]) for row in table] == list(result.curves["Cur"])  # every digit
    logger.log_run(result)  # again: one copy, not two
    assert len(list(folder.glob("events.out.tfevents.*"))) == 1
    assert _events(folder) == events


def test_compared_curves_get_a_folder_each_and_one_tag(tmp_path):
    """TensorBoard overlays runs (folders) under one tag: the teachers of a car run become folders Agn/, Cur/ with the
    tag curves/expected_reward, and what names a teacher loses the name in its folder."""
    result = _car_like()
    split = rows_by_curve(run_scalars(result), ["Cur", "Agn"], "expected reward")
    tags = {curve: {tag for _, tag, _ in rows} for curve, rows in split.items()}
    assert tags["Cur"] == {"curves/expected_reward", "picks", "pick_types_share/0", "pick_types_share/1",
                           "pick_types_share/2", "extras/expert"}
    assert tags["Agn"] == tags["Cur"] | {"extras/diverged"}  # only Agn's learner diverged
    logger = RunLogger(tmp_path, ["tensorboard", "csv"], curves=["Cur", "Agn"], metric="expected reward",
                       cell_folders=False)
    assert logger.log_run(result) == [tmp_path / "Cur" / "run_00007", tmp_path / "Agn" / "run_00007"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["Agn", "Cur"]
    for name, curve in result.curves.items():
        events = _events(tmp_path / name / "run_00007")
        assert events["curves/expected_reward"] == [(t, float(np.float32(v))) for t, v in enumerate(curve)]
        assert events["extras/expert"] == [(3, 1.5)]
    assert _events(tmp_path / "Agn" / "run_00007")["picks"] == [(1, 1.0), (2, 4.0), (3, 2.0)]
    # several cells (a sensitivity sweep's rates): the cell first, then the teacher
    by_cell = RunLogger(tmp_path / "cells", ["csv"], curves=["Cur", "Agn"])
    assert by_cell.log_run(result)[0] == tmp_path / "cells" / "main" / "Cur" / "run_00007"
    assert "curves/value" in (tmp_path / "cells" / "main" / "Cur" / "run_00007" / "progress.csv").read_text()


def test_stdout_prints_each_runs_last_values(tmp_path, capsys):
    RunLogger(tmp_path, ["stdout"]).log_run(_car_like())
    out = capsys.readouterr().out
    assert "main/run_00007" in out and "| step" in out
    assert list(tmp_path.rglob("*.*")) == []  # stdout writes no file


def test_formats_are_checked():
    assert parse_formats("csv, tensorboard,csv") == ("csv", "tensorboard")
    for bad in ("csv,tensorbord", "", " , "):
        with pytest.raises(ValueError, match="log_format must be a comma-separated list of stdout, log"):
            parse_formats(bad)


def test_a_missing_package_is_named_with_its_extra(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "tensorboard" else real(name))
    with pytest.raises(ValueError, match=r"needs the tensorboard package.*pip install 'curteach\[tensorboard\]'"):
        check_formats(["csv", "tensorboard"])
    check_formats(["csv", "stdout"])


@pytest.fixture
def fake_wandb(monkeypatch):
    """A stand-in for the wandb package that records what the logger sends (wandb itself needs an account)."""
    calls = []
    module = types.ModuleType("wandb")
    module.__spec__ = importlib.machinery.ModuleSpec("wandb", None)
    module.init = lambda **kwargs: calls.append(("init", kwargs))
    module.log = lambda data, step=None, commit=None: calls.append(("log", dict(data), step))
    module.finish = lambda: calls.append(("finish",))
    monkeypatch.setitem(sys.modules, "wandb", module)
    return calls


def test_wandb_gets_one_run_per_result_with_the_curves(tmp_path, fake_wandb):
    result = _car_like()
    RunLogger(tmp_path, ["wandb"], config={"steps": 3}, group="car-irl-T0").log_run(result)
    assert fake_wandb[0] == ("init", {"project": "curteach", "group": "car-irl-T0", "name": "main/run_00007",
                                      "dir": str(tmp_path / "main" / "run_00007"),
                                      "config": {"steps": 3, "cell": "main", "run": 7, "seed": 0}})
    assert fake_wandb[-1] == ("finish",)
    logged = [(step, key, value) for kind, *rest in fake_wandb if kind == "log" for data, step in [rest]
              for key, value in data.items()]
    assert [(s, v) for s, k, v in logged if k == "curves/Cur"] == list(enumerate(result.curves["Cur"]))
    assert all(key != "step" for _, key, _ in logged)
