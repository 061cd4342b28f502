"""Reading local Minari datasets: by id or folder, several as one pool, BabyAI's Dict/Text observations, an explicit
environment, and never a download."""

from __future__ import annotations

import gymnasium as gym
import minari
import numpy as np
import pytest
from gymnasium import spaces

from curteach_teaching.datasets import find_datasets, read_pool, write_pool

BABYAI = "BabyAI-GoToRedBallGrey-v0"


def babyai_dataset(dataset_id: str, n_episodes: int, data_format: str, seed: int = 0):
    """A BabyAI dataset as another engineer writes one: minigrid's env, random actions, whole-array buffers and a
    ``Text`` mission (Minari cannot store Minigrid's ``MissionSpace``)."""
    import minigrid  # noqa: F401  (registers the BabyAI ids)
    from minari.data_collector.episode_buffer import EpisodeBuffer

    env = gym.make(BABYAI, max_steps=6)
    rng = np.random.default_rng(seed)
    buffers = []
    for i in range(n_episodes):
        obs, _ = env.reset(seed=seed * 1000 + i)
        observations, actions, rewards, terminations, truncations = [obs], [], [], [], []
        done = False
        while not done:
            action = int(rng.integers(0, 7))
            obs, reward, terminated, truncated, _ = env.step(action)
            observations.append(obs)
            actions.append(action)
            rewards.append(reward)
            terminations.append(terminated)
            truncations.append(truncated)
            done = terminated or truncated
        buffers.append(EpisodeBuffer(
            id=i, seed=seed * 1000 + i, observations={
                "image": np.stack([o["image"] for o in observations]),
                "direction": np.array([o["direction"] for o in observations], dtype=np.int64),
                "mission": [o["mission"] for o in observations]},
            actions=np.array(actions, dtype=np.int64), rewards=rewards, terminations=terminations,
            truncations=truncations, infos={}))
    observation_space = spaces.Dict({"image": env.observation_space["image"], "direction": spaces.Discrete(4),
                                     "mission": spaces.Text(max_length=200)})
    minari.create_dataset_from_buffers(dataset_id, buffers, env=env, observation_space=observation_space,
                                       data_format=data_format, author="test", author_email="test@example.org",
                                       code_permalink="https://example.org", algorithm_name="random",
                                       description="random BabyAI episodes", eval_env=env.spec)
    return buffers


@pytest.mark.parametrize("data_format", ["hdf5", "arrow"])
def test_babyai_dataset_is_read_with_its_environment(data_format):
    buffers = babyai_dataset(f"babyai/random-{data_format}-v0", 3, data_format)
    pool = read_pool(f"babyai/random-{data_format}-v0")
    assert len(pool) == 3
    assert pool.seeds == (0, 1, 2)
    assert pool.env_spec is not None and pool.env_spec.id == BABYAI
    for buffer, trajectory in zip(buffers, pool.trajectories):
        n = len(buffer.actions)
        assert trajectory.obs.get("image").shape == (n + 1, 7, 7, 3)
        assert trajectory.obs.get("image").dtype == np.uint8
        assert np.array_equal(trajectory.obs.get("image"), buffer.observations["image"])
        assert np.array_equal(trajectory.obs.get("direction"), buffer.observations["direction"])
        mission = trajectory.obs.get("mission")
        assert mission.dtype == object and list(mission) == buffer.observations["mission"]
        assert np.array_equal(trajectory.acts, buffer.actions)
        assert trajectory.terminal == bool(buffer.terminations[-1])
    env = pool.make_env()  # the recovered environment replays an episode from its seed
    obs, _ = env.reset(seed=pool.seeds[0])
    assert np.array_equal(obs["image"], pool.trajectories[0].obs.get("image")[0])
    assert obs["mission"] == pool.trajectories[0].obs.get("mission")[0]
    # the BabyAI env's MissionSpace matches the dataset's Text
    assert read_pool(f"babyai/random-{data_format}-v0", env_id=BABYAI).env_spec.id == BABYAI


def test_sources_by_id_root_data_folder_and_parent(make_pool, minari_root):
    folder = write_pool(make_pool("box"), "test/nested/one-v0")
    write_pool(make_pool("box", seed=1), "test/nested/one-v2")
    write_pool(make_pool("box", seed=2), "test/two-v0", data_format="arrow")
    assert find_datasets("test/nested/one-v0") == [folder / "data"]
    assert find_datasets(folder) == [folder / "data"]
    assert find_datasets(str(folder / "data")) == [folder / "data"]
    assert find_datasets("test/nested/one") == [minari_root / "test/nested/one-v2/data"]  # the newest version
    # a folder holding several datasets: every one, sorted, without searching inside an Arrow dataset's episodes
    assert find_datasets(minari_root) == [minari_root / "test/nested/one-v0/data",
                                          minari_root / "test/nested/one-v2/data", minari_root / "test/two-v0/data"]
    pool = read_pool(minari_root)
    assert pool.group_names == ("test/nested/one-v0", "test/nested/one-v2", "test/two-v0")
    assert len(pool) == 9
    assert pool.index_of("test/two-v0", 2) == 8


def test_several_datasets_are_one_pool_grouped_by_dataset(make_pool):
    write_pool(make_pool("discrete", n_episodes=2), "test/a-v0")
    write_pool(make_pool("discrete", n_episodes=3, seed=1), "test/b-v0", data_format="arrow")
    pool = read_pool(["test/b-v0", "test/a-v0"])
    assert pool.groups == ("test/b-v0",) * 3 + ("test/a-v0",) * 2
    assert pool.episode_ids.tolist() == [0, 1, 2, 0, 1]
    assert pool.select([3, 0]).groups == ("test/a-v0", "test/b-v0")
    with pytest.raises(ValueError, match="appears in two pools"):
        read_pool(["test/a-v0", "test/a-v0"])


def test_datasets_whose_spaces_differ_are_refused(make_pool):
    write_pool(make_pool("discrete"), "test/a-v0")
    write_pool(make_pool("box"), "test/b-v0")
    with pytest.raises(ValueError, match="observation spaces differ: Discrete.* 'test/a-v0'.* Box.* 'test/b-v0'"):
        read_pool(["test/a-v0", "test/b-v0"])


def test_an_explicit_environment_must_match(make_pool):
    import curteach_envs  # noqa: F401
    from curteach_teaching.datasets import EpisodePool

    car = gym.make("CarTeach-v0")
    pool = make_pool("discrete")
    pool = EpisodePool.from_trajectories(
        [type(t)(obs=t.obs, acts=t.acts, infos=None, terminal=t.terminal, rews=t.rews) for t in pool.trajectories],
        car.observation_space, car.action_space)
    write_pool(pool, "test/car-like-v0")
    assert read_pool("test/car-like-v0").env_spec is None
    assert read_pool("test/car-like-v0", env_id="CarTeach-v0").env_spec.id == "CarTeach-v0"
    with pytest.raises(ValueError, match=r"^the observation space of environment 'CartPole-v1', Box.*, does not match "
                                         r"the dataset's \(test/car-like-v0\), Discrete\(801\)$"):
        read_pool("test/car-like-v0", env_id="CartPole-v1")
    with pytest.raises(ValueError, match="^no environment 'NoSuchEnv-v0' is registered, also after importing"):
        read_pool("test/car-like-v0", env_id="NoSuchEnv-v0")


def test_no_code_path_downloads(monkeypatch, minari_root):
    import minari.storage.hosting as hosting

    def refuse(*args, **kwargs):
        raise AssertionError("a download was attempted")

    for name in ("download_dataset", "list_remote_datasets", "get_remote_dataset_versions"):
        if hasattr(hosting, name):
            monkeypatch.setattr(hosting, name, refuse)
    monkeypatch.setattr(minari, "download_dataset", refuse)
    with pytest.raises(ValueError, match="^no local Minari dataset 'D4RL/door/human-v2' under .*never downloads"):
        read_pool("D4RL/door/human-v2")
    assert not minari_root.exists()  # not even the datasets folder is created


def test_a_read_pool_pickles(make_pool):
    import pickle

    write_pool(make_pool("dict"), "test/pickled-v0")
    pool = read_pool("test/pickled-v0")
    again = pickle.loads(pickle.dumps(pool))
    assert again.groups == pool.groups and again.metadata == pool.metadata
    assert all(a == b for a, b in zip(pool.trajectories, again.trajectories))
