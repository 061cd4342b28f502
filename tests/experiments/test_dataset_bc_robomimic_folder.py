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


def test_a_task_one_hot_over_the_files_only_when_asked_for(robot_files, tmp_path, capsys):
    """``--task-one-hot``: each file a task, its one-hot appended to the observations, said on stdout and in the
    settings; without the flag the observations and the settings are as before."""
    episodes = robot_files.reaching_episodes(12, seed=2)
    suite = tmp_path / "suite"
    suite.mkdir()
    robot_files.write_robomimic(suite / "open_drawer.hdf5", episodes[:6])
    robot_files.write_robomimic(suite / "close_drawer.hdf5", episodes[6:])
    argv = ["dataset-bc", "--dataset", str(suite), "--obs-keys", "object,robot0_eef_pos", "--curricula", "Agn",
            "--runs", "1", "--max-batches", "4", "--eval-every", "4", "--batch-size", "16", "--backend", "serial",
            "--no-progress", "--no-figures"]
    assert main([*argv, "--out", str(tmp_path / "plain")]) == 0
    assert "task one-hot" not in capsys.readouterr().out
    plain = json.loads((tmp_path / "plain" / "sweep.json").read_text())["settings"]
    assert "task_one_hot" not in plain
    assert main([*argv, "--task-one-hot", "--out", str(tmp_path / "one-hot")]) == 0
    assert ("task one-hot: the learner sees which of the pool's 2 groups an episode is from (close_drawer, "
            "open_drawer)") in capsys.readouterr().out
    settings = json.loads((tmp_path / "one-hot" / "sweep.json").read_text())["settings"]
    assert settings["task_one_hot"] is True and {k: v for k, v in settings.items() if k != "task_one_hot"} == plain

    from curteach_teaching.datasets import read_pool
    from curteach_teaching.experiments.dataset_bc.experiment import DatasetBCExperiment

    pool = read_pool(suite, obs_keys=("object", "robot0_eef_pos"))
    data = DatasetBCExperiment(task_one_hot=True, holdout=0.2).prepare(pool).data
    assert data.codec.observation_space.shape == (8,)  # 3 + 3 read, 2 tasks
    first = data.trajectories[0].obs
    assert first.shape[1] == 8 and set(map(tuple, first[:, 6:])) == {(0.0, 1.0) if data.groups[0] == "open_drawer"
                                                                      else (1.0, 0.0)}
