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
        assert meta["episode_index"] == i and meta["length"] == steps and meta["tasks"] == [ep["task"]]
        assert not any(k.startswith(("stats/", "data/", "meta/")) or k.startswith("dataset_") for k in meta)
        assert ("quality" in meta) == with_quality and meta.get("quality", ep["quality"]) == ep["quality"]


def test_v3_round_trip(robot_files, tmp_path, episodes):
    root = robot_files.write_lerobot_v3(tmp_path / "point_reach", episodes, files=3)
    assert source_format(root) == "lerobot" and source_format(str(root)) == "lerobot"
    _check(robot_files, read_pool(root), episodes, with_quality=True)
    chosen = read_lerobot(root, ["observation.state", "next.reward"])
    assert chosen.observation_space.shape == (5,)
    np.testing.assert_array_equal(chosen.trajectories[0].obs[:-1, 4], episodes[0]["rewards"].astype(np.float32))


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
    assert not pool.has_rewards and [m["tasks"] for m in pool.metadata] == [[]] * len(episodes)
    assert list(pool.groups) == [ep["task"] for ep in episodes]  # each frame's task_index, named by tasks.parquet


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
