"""Writing an episode pool as a Minari dataset and reading it back gives exactly what was written."""

from __future__ import annotations

import warnings

import minari
import numpy as np
import pytest

from curteach_teaching.datasets import EpisodePool, read_pool, write_pool

KINDS = ("box", "discrete", "multidiscrete", "image", "text", "dict")


def _same_values(a, b):
    if hasattr(a, "keys"):
        assert set(a.keys()) == set(b.keys())
        for key in a.keys():
            _same_values(a.get(key), b.get(key))
        return
    assert a.dtype == b.dtype
    assert a.shape == b.shape
    assert np.array_equal(a, b)


def assert_same_pool(written: EpisodePool, read: EpisodePool, group: str):
    assert len(read) == len(written)
    assert read.observation_space == written.observation_space
    assert read.action_space == written.action_space
    assert read.groups == (group,) * len(written)
    assert read.episode_ids.tolist() == list(range(len(written)))
    assert read.seeds == written.seeds
    for i, (a, b) in enumerate(zip(written.trajectories, read.trajectories)):
        _same_values(a.obs, b.obs)
        _same_values(a.acts, b.acts)
        _same_values(a.rews, b.rews)
        assert a.terminal == b.terminal
        expected = {**written.metadata[i], "id": i, "total_steps": len(a.acts)}
        if written.seeds[i] is not None:
            expected["seed"] = written.seeds[i]
        assert read.metadata[i] == expected
        assert set(read.infos[i]) == set(written.infos[i])
        for key, value in written.infos[i].items():
            _same_values(np.asarray(value), read.infos[i][key])


@pytest.mark.parametrize("data_format", ["hdf5", "arrow"])
@pytest.mark.parametrize("kind", KINDS)
def test_round_trip_is_exact(make_pool, minari_root, kind, data_format):
    pool = make_pool(kind, seed=KINDS.index(kind))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # Minari's warnings about unset fields are satisfied or silenced
        folder = write_pool(pool, f"test/{kind}-v0", data_format=data_format)
    assert folder == minari_root / f"test/{kind}-v0"
    assert_same_pool(pool, read_pool(f"test/{kind}-v0"), f"test/{kind}-v0")


def test_minari_itself_loads_what_was_written(make_pool, minari_root):
    pool = make_pool("dict", n_episodes=2)
    write_pool(pool, "test/dict-v1", data_format="arrow", author="someone", description="two episodes")
    dataset = minari.load_dataset("test/dict-v1")
    assert dataset.total_episodes == 2
    assert dataset.storage.metadata["description"] == "two episodes"
    assert dataset.storage.metadata["jpeg_encoding"] is False
    episode = dataset[1]
    assert np.array_equal(episode.actions, pool.trajectories[1].acts)
    assert list(episode.observations["mission"]) == list(pool.trajectories[1].obs.get("mission"))
    assert [m.get("seed") for m in dataset.storage.get_episode_metadata([0, 1])] == [100, None]


def test_jpeg_encoding_is_lossy_and_off_by_default(make_pool):
    pool = make_pool("image", n_episodes=1)
    write_pool(pool, "test/lossy-v0", jpeg_encoding=True)
    lossy = read_pool("test/lossy-v0").trajectories[0].obs
    assert lossy.shape == pool.trajectories[0].obs.shape
    assert not np.array_equal(lossy, pool.trajectories[0].obs)  # random pixels do not survive JPEG


def test_a_read_pool_writes_back_unchanged(make_pool, minari_root):
    write_pool(make_pool("box", n_episodes=4), "test/first-v0", data_format="hdf5")
    first = read_pool("test/first-v0")
    write_pool(first, "test/second-v0", data_format="arrow")
    second = read_pool("test/second-v0")
    assert [m for m in second.metadata] == [m for m in first.metadata]
    assert all(a == b for a, b in zip(first.trajectories, second.trajectories))


def _tree(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")) if root.exists() else []


@pytest.mark.parametrize("change, message", [
    (lambda pool: ("bad id", {}), "malformed dataset id 'bad id'"),
    (lambda pool: ("test/x-v0", {"data_format": "csv"}), "data_format must be one of"),
    (lambda pool: ("test/x-v0", {"pool": pool.select([])}), "holds no episodes"),
    (lambda pool: ("test/x-v0", {"pool": _without_rewards(pool)}), "store rewards"),
    (lambda pool: ("test/x-v0", {"pool": _with_metadata(pool, {"bad": None})}), "metadata values must be"),
    (lambda pool: ("test/x-v0", {"pool": _with_metadata(pool, {"a/b": 1})}), "without '/'"),
    (lambda pool: ("test/x-v0", {"pool": _with_metadata(pool, {"mixed": [1, "a"]})}), "of one kind"),
    (lambda pool: ("test/x-v0", {"pool": _with_infos(pool, {"short": np.zeros(1)})}), "must have"),
])
def test_bad_writes_write_nothing(make_pool, minari_root, change, message):
    pool = make_pool("box", n_episodes=2)
    dataset_id, kwargs = change(pool)
    kwargs = {"pool": pool, **kwargs}
    with pytest.raises(ValueError, match=message) as error:
        write_pool(kwargs.pop("pool"), dataset_id, **kwargs)
    assert "\n" not in str(error.value)
    assert _tree(minari_root) == []


def test_an_existing_dataset_is_not_overwritten(make_pool, minari_root):
    write_pool(make_pool("box"), "test/once-v0")
    before = _tree(minari_root)
    with pytest.raises(ValueError, match="already exists"):
        write_pool(make_pool("discrete"), "test/once-v0")
    assert _tree(minari_root) == before


def _without_rewards(pool):
    from imitation.data.types import Trajectory

    plain = [Trajectory(obs=t.obs, acts=t.acts, infos=None, terminal=t.terminal) for t in pool.trajectories]
    return EpisodePool.from_trajectories(plain, pool.observation_space, pool.action_space)


def _with_metadata(pool, extra):
    return EpisodePool.from_trajectories(pool.trajectories, pool.observation_space, pool.action_space,
                                         metadata=[{**m, **extra} for m in pool.metadata])


def _with_infos(pool, extra):
    return EpisodePool.from_trajectories(pool.trajectories, pool.observation_space, pool.action_space,
                                         infos=[{**i, **extra} for i in pool.infos])
