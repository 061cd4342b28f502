"""LeRobot datasets (v3.0 and v2.1 folders written by the tests in lerobot's layouts) read into the episode pool."""

from __future__ import annotations

import json

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
pytest.importorskip("pandas")
pytest.importorskip("imitation")

import pyarrow.parquet as pq  # noqa: E402

from curteach_teaching.datasets import read_lerobot, read_pool, source_format  # noqa: E402


@pytest.fixture
def episodes(robot_files):
    return robot_files.reaching_episodes(7, seed=2)


def _check(robot_files, pool, episodes, with_quality: bool):
    assert len(pool) == len(episodes) and pool.episode_ids.tolist() == list(range(len(episodes)))
    assert pool.observation_space.shape == (4,) and pool.observation_space.dtype == np.float32
    assert pool.action_space.shape == (2,) and pool.has_rewards and pool.env_spec is None
    assert set(pool.group_names) == set(robot_files.TASKS)
    for i, (ep, trajectory) in enumerate(zip(episodes, pool.trajectories)):
        steps = len(ep["actions"])
        state = np.concatenate([ep["pos"][:steps, :2], ep["goal"][:steps, :2]], axis=1).astype(np.float32)
        np.testing.assert_array_equal(trajectory.obs[:-1], state)
        np.testing.assert_array_equal(trajectory.obs[-1], state[-1])  # no observation after the last action
        np.testing.assert_array_equal(trajectory.acts, ep["actions"].astype(np.float32))
        np.testing.assert_array_equal(trajectory.rews, ep["rewards"].astype(np.float32))
        assert trajectory.terminal == bool(ep["dones"][-1])
        assert pool.groups[i] == ep["task"]
        meta = pool.metadata[i]
        assert meta["episode_index"] == i and meta["length"] == steps and meta["tasks"] == ep["task"]
        assert not any(k.startswith(("stats/", "data/", "meta/")) or k.startswith("dataset_") for k in meta)
        assert ("quality" in meta) == with_quality and meta.get("quality", ep["quality"]) == ep["quality"]


def test_v3_round_trip(robot_files, tmp_path, episodes):
    root = robot_files.write_lerobot_v3(tmp_path / "point_reach", episodes, files=3)
    assert source_format(root) == "lerobot" and source_format(str(root)) == "lerobot"
    _check(robot_files, read_pool(root), episodes, with_quality=True)


def test_v21_round_trip(robot_files, tmp_path, episodes):
    root = robot_files.write_lerobot_v21(tmp_path / "point_reach_v21", episodes)
    _check(robot_files, read_pool(str(root)), episodes, with_quality=False)


def test_without_rewards_and_tasks_from_frames(robot_files, tmp_path, episodes):
    root = robot_files.write_lerobot_v3(tmp_path / "d", episodes, files=1)
    info = json.loads((root / "meta" / "info.json").read_text())
    del info["features"]["next.reward"], info["features"]["next.done"]
    (root / "meta" / "info.json").write_text(json.dumps(info))
    path = root / "meta" / "episodes" / "chunk-000" / "file-000.parquet"
    pq.write_table(pq.read_table(path).drop_columns(["tasks"]), path)
    pool = read_lerobot(root)
    assert not pool.has_rewards
    assert list(pool.groups) == [ep["task"] for ep in episodes]  # each frame's task_index, named by tasks.parquet
    assert [m["tasks"] for m in pool.metadata] == list(pool.groups)


def _refused(root, keys=None) -> str:
    with pytest.raises(ValueError) as caught:
        read_lerobot(root, keys)
    assert "\n" not in str(caught.value)
    return str(caught.value)


def test_bad_folders_are_refused_in_one_line(robot_files, tmp_path, episodes):
    root = robot_files.write_lerobot_v3(tmp_path / "bad", episodes)
    assert "image/video keys observation.images.top cannot be read" in _refused(root, ["observation.images.top"])
    assert "no feature 'observation.velocity'" in _refused(root, ["observation.velocity"])
    info_path = root / "meta" / "info.json"
    info = json.loads(info_path.read_text())

    def with_info(**changes):
        info_path.write_text(json.dumps({**info, **changes}))
        return _refused(root)

    assert "codebase_version v1.6 is not one curteach reads" in with_info(codebase_version="v1.6")
    assert "no 'observation.state' feature" in with_info(features={k: v for k, v in info["features"].items()
                                                                   if k != "observation.state"})
    assert "no 'action' feature" in with_info(features={k: v for k, v in info["features"].items() if k != "action"})
    wrong = dict(info["features"], action={"dtype": "float32", "shape": [3]})
    assert "column 'action' holds 2 values in row 0; meta/info.json says 3 (ragged)" in with_info(features=wrong)
    info_path.write_text(json.dumps(info))
    data = root / "data" / "chunk-000" / "file-001.parquet"
    table = pq.read_table(data)
    pq.write_table(table.drop_columns(["action"]), data)
    assert "data/chunk-000/file-001.parquet has no column 'action'" in _refused(root)
    ragged = table.column("observation.state").to_pylist()
    ragged[3] = ragged[3][:3]
    pq.write_table(table.set_column(table.schema.get_field_index("observation.state"), "observation.state",
                                    pa.array(ragged, type=pa.list_(pa.float32()))), data)
    assert "column 'observation.state' holds 3 values in row" in _refused(root)
    pq.write_table(table, data)
    episodes_file = root / "meta" / "episodes" / "chunk-000" / "file-000.parquet"
    listed = pq.read_table(episodes_file)
    pq.write_table(listed.slice(0, len(episodes) - 1), episodes_file)
    assert f"frames of episode {len(episodes) - 1}, which the episodes table does not list" in _refused(root)
    lengths = listed.column("length").to_pylist()
    lengths[2] += 1
    pq.write_table(listed.set_column(listed.schema.get_field_index("length"), "length", pa.array(lengths)),
                   episodes_file)
    assert "episode 2 has frames" in _refused(root)
    (root / "meta" / "info.json").write_text("{not json")
    assert "cannot read LeRobot dataset" in _refused(root)


def _failed(ep: dict) -> dict:
    """``ep`` cut one step before it reached the goal: no success."""
    steps = len(ep["actions"]) - 1
    return {**ep, "actions": ep["actions"][:steps], "rewards": ep["rewards"][:steps], "dones": ep["dones"][:steps],
            "pos": ep["pos"][:steps + 1], "goal": ep["goal"][:steps + 1]}


@pytest.mark.parametrize("version", ["v3.0", "v2.1"])
def test_next_success_is_the_field_success_as_in_minari(robot_files, tmp_path, episodes, version):
    from curteach_teaching.datasets import EpisodePool, task_difficulty
    from curteach_teaching.datasets.labels import bad_episodes
    from curteach_teaching.datasets.prepared import success_defined
    from curteach_teaching.experiments.dataset_bc.held_out import trusted_episodes

    episodes = [_failed(ep) if i in (1, 4) else ep for i, ep in enumerate(episodes)]
    succeeded = np.array([bool(ep["dones"][-1]) for ep in episodes])
    assert succeeded.tolist() == [True, False, True, True, False, True, True]
    write = robot_files.write_lerobot_v3 if version == "v3.0" else robot_files.write_lerobot_v21
    pool = read_lerobot(write(tmp_path / "d", episodes, success=True))
    for ep, info, meta in zip(episodes, pool.infos, pool.metadata):
        flags = ep["dones"].astype(bool)
        assert set(info) == {"success"} and info["success"].dtype == bool
        np.testing.assert_array_equal(info["success"], np.concatenate([flags[:1], flags]))  # (L + 1,) as Minari's
        assert meta["success"] is bool(flags[-1])
    # the same answers as a pool that holds the step info as a Minari dataset does
    minari_like = EpisodePool.from_trajectories(pool.trajectories, pool.observation_space, pool.action_space,
                                                infos=[{"success": info["success"]} for info in pool.infos])
    for spec in ("success", "not:success", "length+10*not:success"):
        expected = task_difficulty(minari_like, spec)
        np.testing.assert_array_equal(task_difficulty(pool, spec), expected)
    np.testing.assert_array_equal(task_difficulty(pool, "not:success"), (~succeeded).astype(float))
    assert success_defined(pool) and success_defined(minari_like)
    np.testing.assert_array_equal(bad_episodes(pool, "not:success"), ~succeeded)  # dataset-bc --bad-field
    np.testing.assert_array_equal(trusted_episodes(pool.metadata, "success"), succeeded)  # --holdout-field
    with pytest.raises(ValueError, match=r"no episode has a field 'next.success' \(LeRobot's next.success is the "
                                         r"field 'success'\); fields: .*success"):
        task_difficulty(pool, "not:next.success")


def test_an_episodes_column_wins_over_the_last_frame(robot_files, tmp_path, episodes):
    root = robot_files.write_lerobot_v3(tmp_path / "d", episodes, files=1, success=True)
    path = root / "meta" / "episodes" / "chunk-000" / "file-000.parquet"
    table = pq.read_table(path)
    pq.write_table(table.append_column("success", pa.array([i % 2 == 0 for i in range(len(episodes))])), path)
    pool = read_lerobot(root)
    assert [m["success"] for m in pool.metadata] == [i % 2 == 0 for i in range(len(episodes))]
    assert all(info["success"][-1] for info in pool.infos)  # the frames' own flags stay the step info


def test_obs_keys_refuse_what_is_no_observation(robot_files, tmp_path, episodes):
    root = robot_files.write_lerobot_v3(tmp_path / "d", episodes, files=1, success=True)
    info_path, data = root / "meta" / "info.json", root / "data" / "chunk-000" / "file-000.parquet"
    info = json.loads(info_path.read_text())
    info["features"]["goal_x"] = {"dtype": "float32", "shape": [1], "names": None}  # a state without the prefix
    info_path.write_text(json.dumps(info))
    table = pq.read_table(data)
    goal_x = pa.array([row[2] for row in table.column("observation.state").to_pylist()], type=pa.float32())
    pq.write_table(table.append_column("goal_x", goal_x), data)
    for key in ("action", "next.reward", "next.done", "next.success", "timestamp", "frame_index", "episode_index",
                "index", "task_index"):
        message = _refused(root, ["observation.state", key])
        assert f"'{key}' is not an observation" in message
        assert message.endswith("observation features: observation.state, goal_x")
    chosen = read_lerobot(root, ["observation.state", "goal_x"])
    assert chosen.observation_space.shape == (5,)
    np.testing.assert_array_equal(chosen.trajectories[0].obs[:-1, 4], chosen.trajectories[0].obs[:-1, 2])


def test_tasks_is_a_field_that_reads_as_the_group(robot_files, tmp_path, episodes):
    from curteach_teaching.datasets.curation import episode_groups

    pool = read_lerobot(robot_files.write_lerobot_v3(tmp_path / "d", episodes))
    assert episode_groups(pool, "tasks") == list(pool.groups) == [ep["task"] for ep in episodes]
    with pytest.raises(ValueError, match=r"fields: episode_index, length, quality, tasks$"):
        episode_groups(pool, "operator")


def test_episode_ids_other_than_0_to_n_are_read_and_noted(robot_files, tmp_path, episodes):
    from curteach_teaching.datasets import episode_indices_note

    root = robot_files.write_lerobot_v3(tmp_path / "d", episodes, files=3)
    assert episode_indices_note(read_lerobot(root)) == ""
    assert episode_indices_note(np.array([2, 0, 1])) == ""
    ids = [3, 4, 5, 7, 8, 10, 12]
    robot_files.renumber_lerobot(root, ids)
    pool = read_lerobot(root)
    assert pool.episode_ids.tolist() == ids and [m["episode_index"] for m in pool.metadata] == ids
    for ep, trajectory in zip(episodes, pool.trajectories):
        np.testing.assert_array_equal(trajectory.acts, ep["actions"].astype(np.float32))
    note = episode_indices_note(pool)
    assert note.startswith("the 7 episode_index values run 3..12, not 0..6: lerobot 0.4+ ")
    assert "ids >= 7 (4 of these)" in note and "\n" not in note


def test_a_damaged_file_is_named(robot_files, tmp_path, episodes):
    root = robot_files.write_lerobot_v3(tmp_path / "d", episodes, files=2)
    data = root / "data" / "chunk-000" / "file-001.parquet"
    whole = data.read_bytes()
    data.write_bytes(whole[:200])
    assert "(damaged?): data/chunk-000/file-001.parquet: ArrowInvalid: " in _refused(root)
    data.write_bytes(whole)
    table = root / "meta" / "episodes" / "chunk-000" / "file-000.parquet"
    table.write_bytes(table.read_bytes()[:100])
    assert "(damaged?): meta/episodes/chunk-000/file-000.parquet: ArrowInvalid: " in _refused(root)
    old = robot_files.write_lerobot_v21(tmp_path / "v21", episodes)
    with open(old / "meta" / "episodes.jsonl", "a") as lines:
        lines.write("{not json\n")
    assert "(damaged?): meta/episodes.jsonl: JSONDecodeError: " in _refused(old)


@pytest.mark.parametrize("version", ["v3.0", "v2.1"])
def test_a_folder_lerobot_cannot_load_is_refused_naming_the_tasks_file(robot_files, tmp_path, episodes, version):
    """lerobot reads the tasks file whenever it loads a dataset: without it the folder is refused, although the
    episodes table names each episode's task."""
    if version == "v3.0":
        root, name = robot_files.write_lerobot_v3(tmp_path / "ds", episodes), "meta/tasks.parquet"
    else:
        root, name = robot_files.write_lerobot_v21(tmp_path / "ds", episodes), "meta/tasks.jsonl"
    (root / name).unlink()
    with pytest.raises(ValueError, match=f"^LeRobot dataset .*: no {name} \\(the tasks file; LeRobotDataset cannot "
                                         "load the dataset without it\\)$"):
        read_lerobot(root)


@pytest.mark.parametrize("version", ["v3.0", "v2.1"])
def test_a_missing_data_file_is_named(robot_files, tmp_path, episodes, version):
    """The episodes table (v3.0: its data/chunk_index and data/file_index; v2.1: the episode's own file) says which
    data file should hold an episode's frames: a missing one is named, not only the episode."""
    if version == "v3.0":  # 7 episodes over two files: 0-3 in file-000, 4-6 in file-001
        root = robot_files.write_lerobot_v3(tmp_path / "ds", episodes, files=2)
        gone, first, count = "data/chunk-000/file-001.parquet", 4, " (3 episodes without frames in all)"
    else:
        root = robot_files.write_lerobot_v21(tmp_path / "ds", episodes)
        gone, first, count = "data/chunk-000/episode_000002.parquet", 2, ""
    (root / gone).unlink()
    with pytest.raises(ValueError) as caught:
        read_lerobot(root)
    assert str(caught.value) == (f"LeRobot dataset {str(root)!r}: no {gone}, the data file that the episodes table "
                                 f"says holds the frames of episode {first}{count}")
