"""``dataset-bc`` on a folder of robomimic files (a LIBERO suite: one file per task): every file read, one group
each, and, being a suite of tasks rather than a ladder, the length as the default task score."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("h5py")
pytest.importorskip("imitation")

from curteach_teaching.cli import main  # noqa: E402


def test_a_folder_of_robomimic_files_is_read_as_a_suite(robot_files, tmp_path, capsys):
    episodes = robot_files.reaching_episodes(12, seed=2)
    suite = tmp_path / "suite"
    suite.mkdir()
    robot_files.write_robomimic(suite / "open_drawer.hdf5", episodes[:6])
    robot_files.write_robomimic(suite / "close_drawer.hdf5", episodes[6:])
    out = tmp_path / "out"
    assert main(["dataset-bc", "--dataset", str(suite), "--obs-keys", "object,robot0_eef_pos", "--curricula",
                 "Agn,Cur-T", "--runs", "1", "--max-batches", "10", "--eval-every", "10", "--batch-size", "16",
                 "--backend", "serial", "--no-progress", "--no-figures", "--out", str(out)]) == 0
    report = json.loads((out / "report.json").read_text())
    assert set(report["held_out"]["ids"]) == {"close_drawer", "open_drawer"}  # name order, one group per file
    assert report["cell_settings"]["Cur-T"]["task"] == "length"
    assert "task score level" not in capsys.readouterr().out


def test_select_within_groups_trains_on_each_tasks_share(robot_files, tmp_path, capsys):
    """``--keep-within group``: the select cell trains on each file's shortest half (by hand from the training
    part's lengths), where one cut over the pool would take them from wherever they are shortest."""
    import numpy as np

    from curteach_teaching.datasets import read_pool
    from curteach_teaching.experiments.dataset_bc.experiment import DatasetBCExperiment

    episodes = robot_files.reaching_episodes(12, seed=2)
    suite = tmp_path / "suite"
    suite.mkdir()
    robot_files.write_robomimic(suite / "open_drawer.hdf5", episodes[:6])
    robot_files.write_robomimic(suite / "close_drawer.hdf5", episodes[6:])
    pool = read_pool(suite, obs_keys=("object", "robot0_eef_pos"))
    settings = dict(curricula=("Agn", "Cur-T@select/length"), keep=0.5, holdout=0.2, max_batches=4, eval_every=4,
                    batch_size=16, obs_keys=("object", "robot0_eef_pos"))
    within = DatasetBCExperiment(keep_within="group", **settings).prepare(pool)
    assert within.cell_settings("Cur-T+select+length")["keep_within"] == "group"
    assert "keep_within" not in DatasetBCExperiment(**settings).prepare(pool).cell_settings("Cur-T+select+length")
    data = within.data
    groups, lengths = np.asarray(data.groups), np.asarray(data.lengths)
    expected = []
    for group in dict.fromkeys(data.groups):
        members = np.flatnonzero(groups == group)
        shortest = members[np.argsort(lengths[members], kind="stable")]
        expected += shortest[: max(1, int(np.floor(0.5 * members.size + 0.5)))].tolist()
    result = within.run_cell("Cur-T+select+length", 0, np.random.SeedSequence([0, 0]))
    assert result.extras["selection"][0]["selected"] == sorted(expected)
    with pytest.raises(SystemExit) as stopped:
        main(["dataset-bc", "--dataset", str(suite), "--keep-within", "nowhere"])
    assert stopped.value.code == 2 and "--keep-within: invalid choice" in capsys.readouterr().err
