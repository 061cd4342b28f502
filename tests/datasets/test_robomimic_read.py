"""robomimic-format HDF5 files written by the tests, read into the episode pool: what was written comes back, and bad
files are refused in one line."""

from __future__ import annotations

import json

import numpy as np
import pytest

h5py = pytest.importorskip("h5py")
pytest.importorskip("imitation")


from curteach_teaching.datasets import read_pool, read_robomimic, source_format  # noqa: E402

KEYS = ["object", "robot0_eef_pos"]


@pytest.fixture
def episodes(robot_files):
    return robot_files.reaching_episodes(9, seed=1)


def test_round_trip(robot_files, tmp_path, episodes):
    path = robot_files.write_robomimic(tmp_path / "low_dim.hdf5", episodes)
    assert source_format(path) == "robomimic"
    pool = read_pool(path, obs_keys=KEYS)
    assert len(pool) == 9 and pool.group_names == ("low_dim",)
    assert pool.episode_ids.tolist() == list(range(9))
    assert pool.observation_space.shape == (6,) and pool.action_space.shape == (2,)
    assert pool.observation_space.dtype == np.float64 and pool.env_spec is None
    for i, (ep, trajectory) in enumerate(zip(episodes, pool.trajectories)):
        # the keys in the order named, one row per step, then the last next_obs
        np.testing.assert_array_equal(trajectory.obs, np.concatenate([ep["goal"], ep["pos"]], axis=1))
        np.testing.assert_array_equal(trajectory.acts, ep["actions"])
        np.testing.assert_array_equal(trajectory.rews, ep["rewards"])
        assert trajectory.terminal == bool(ep["dones"][-1])
        meta = pool.metadata[i]
        assert meta["demo"] == f"demo_{i}" and meta["num_samples"] == len(ep["actions"])
        assert {q: meta[q] for q in robot_files.QUALITIES} == {q: ep["quality"] == q for q in robot_files.QUALITIES}
        assert meta["train"] == bool(i % 10) and meta["valid"] == (not i % 10)
        assert meta["env_args"] == {"env_name": "PointReach", "type": 1, "env_kwargs": {"horizon": 80}}
    reversed_keys = read_robomimic(path, ["robot0_eef_pos", "object"])
    np.testing.assert_array_equal(reversed_keys.trajectories[0].obs[:, :3], episodes[0]["pos"])


def test_demos_sorted_by_their_integer_and_no_next_obs(robot_files, tmp_path, episodes):
    import shutil

    path = robot_files.write_robomimic(tmp_path / "d.hdf5", episodes, image=False, next_obs=False)
    with h5py.File(path, "a") as f:  # demo_10 must come after demo_9, not after demo_1
        f.move("data/demo_2", "data/demo_10")
        del f["mask"]
    pool = read_robomimic(path)  # no image keys: every key, sorted
    assert pool.episode_ids.tolist() == [0, 1, 3, 4, 5, 6, 7, 8, 10]
    last = pool.trajectories[-1]
    np.testing.assert_array_equal(last.obs[:-1], np.concatenate([episodes[2]["goal"], episodes[2]["pos"]], 1)[:-1])
    np.testing.assert_array_equal(last.obs[-1], last.obs[-2])  # no next_obs: the last observation stands in
    shutil.copy(path, tmp_path / "d.h5")
    assert len(read_pool(tmp_path / "d.h5")) == 9


def test_rewards_optional(robot_files, tmp_path, episodes):
    path = robot_files.write_robomimic(tmp_path / "r.hdf5", episodes)
    with h5py.File(path, "a") as f:
        del f["data/demo_4/rewards"]
    pool = read_robomimic(path, KEYS)
    assert not pool.has_rewards and len(pool) == 9


def _refused(path, keys=KEYS) -> str:
    with pytest.raises(ValueError) as caught:
        read_pool(path, obs_keys=keys)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_bad_files_are_refused_in_one_line(robot_files, tmp_path, episodes):
    path = robot_files.write_robomimic(tmp_path / "bad.hdf5", episodes)
    assert "image observation keys agentview_image cannot be read" in _refused(path, None)
    assert "name low-dimensional keys only" in _refused(path, ["object", "agentview_image"])
    assert "no observation key 'cube'" in _refused(path, ["cube"])
    assert "no robomimic file" in _refused(tmp_path / "missing.hdf5")
    (tmp_path / "text.hdf5").write_text("not hdf5")
    assert "cannot read" in _refused(tmp_path / "text.hdf5")
    with pytest.raises(ValueError, match="apply|choose among"):
        read_pool("some-minari-id-v0", obs_keys=KEYS)

    def damaged(edit):
        target = tmp_path / "edited.hdf5"
        robot_files.write_robomimic(target, episodes) if not target.exists() else None
        target.unlink()
        robot_files.write_robomimic(target, episodes)
        with h5py.File(target, "a") as f:
            edit(f)
        return _refused(target)

    assert "data/demo_3 has no 'actions'" in damaged(lambda f: f.__delitem__("data/demo_3/actions"))
    assert "data/demo_5 has no obs/object" in damaged(lambda f: f.__delitem__("data/demo_5/obs/object"))

    def ragged_length(f):
        del f["data/demo_1/obs/robot0_eef_pos"]
        f["data/demo_1/obs/robot0_eef_pos"] = np.zeros((2, 3))

    assert "data/demo_1/obs/robot0_eef_pos has shape (2, 3)" in damaged(ragged_length)

    def ragged_width(f):
        steps = len(f["data/demo_6/actions"])
        del f["data/demo_6/obs/object"]
        f["data/demo_6/obs/object"] = np.zeros((steps, 4))

    assert "obs/object has 4 values per step; earlier demonstrations 3" in damaged(ragged_width)

    def nan_at(name, step):
        def edit(f):
            values = f[name][()]
            values[step, 0] = np.nan
            f[name][...] = values
        return edit

    # a NaN is named by its place in the file, whatever score is asked for
    refused = damaged(nan_at("data/demo_3/obs/object", 2))
    assert refused.startswith("robomimic file")
    assert "data/demo_3/obs/object holds NaN or infinite values (step 2)" in refused
    assert "data/demo_4/actions holds NaN or infinite values (step 1)" in damaged(nan_at("data/demo_4/actions", 1))

    def ragged_actions(f):
        steps = len(f["data/demo_2/actions"])
        del f["data/demo_2/actions"]
        f["data/demo_2/actions"] = np.zeros((steps, 3))

    assert "actions has 3 dimensions; earlier demonstrations 2" in damaged(ragged_actions)
    assert "num_samples says 99" in damaged(lambda f: f["data/demo_0"].attrs.__setitem__("num_samples", 99))

    def missing_demo(f):
        f["mask/extra"] = np.array(["demo_0", "demo_99"], dtype="S")

    assert "mask/extra names demo_99, which is not in data/" in damaged(missing_demo)
    assert "no demonstrations" in damaged(lambda f: [f.move(f"data/demo_{i}", f"data/x_{i}") for i in range(9)])

    def no_data(f):
        del f["data"]

    assert "no group 'data'" in damaged(no_data)


def test_env_args_kept_as_text_when_not_json(robot_files, tmp_path, episodes):
    path = robot_files.write_robomimic(tmp_path / "t.hdf5", episodes)
    with h5py.File(path, "a") as f:
        f["data"].attrs["env_args"] = "Lift, panda"
    assert read_robomimic(path, KEYS).metadata[0]["env_args"] == "Lift, panda"
    json.dumps(read_robomimic(path, KEYS).metadata[0])  # plain Python throughout


def test_env_args_absent(robot_files, tmp_path, episodes):
    path = robot_files.write_robomimic(tmp_path / "n.hdf5", episodes)
    with h5py.File(path, "a") as f:
        del f["data"].attrs["env_args"]
    assert "env_args" not in read_robomimic(path, KEYS).metadata[0]
