"""The one-hot task id of Meta-World's multi-task convention, appended by dataset-bc's observation codec."""

import importlib.util
import warnings

import gymnasium as gym
import numpy as np
import pytest

from curteach_teaching.datasets.codecs.task_one_hot import append_one_hot, one_hot_space


def test_append_one_hot_by_hand():
    observations = np.array([[0.5, -1.0], [2.0, 3.0]])
    np.testing.assert_array_equal(append_one_hot(observations, 2, 3),
                                  [[0.5, -1.0, 0.0, 0.0, 1.0], [2.0, 3.0, 0.0, 0.0, 1.0]])
    np.testing.assert_array_equal(append_one_hot(np.array([7.0]), 0, 2), [7.0, 1.0, 0.0])
    space = one_hot_space(gym.spaces.Box(-np.inf, np.inf, (2,), np.float64), 3)
    assert space.shape == (5,) and space.dtype == np.float64
    np.testing.assert_array_equal(space.low[2:], 0)
    np.testing.assert_array_equal(space.high[2:], 1)


pytest_metaworld = pytest.mark.skipif(
    importlib.util.find_spec("metaworld") is None,
    reason="Meta-World needs the metaworld extra (Gymnasium >= 1.1): today's stack only")


def _pool(tasks_by_group: dict):
    """A pool of one 3-step trajectory per group, each with its MetaWorldTask-v0 spec (random observations)."""
    from imitation.data.types import TrajectoryWithRew

    from curteach_envs.metaworld import METAWORLD_ENV_ID
    from curteach_teaching.datasets.pool import EpisodePool

    rng = np.random.default_rng(0)
    pools = []
    for group, task in tasks_by_group.items():
        env = gym.make(METAWORLD_ENV_ID, task=task)
        trajectory = TrajectoryWithRew(obs=rng.normal(size=(4, 39)), acts=rng.uniform(-1, 1, (3, 4)).astype(np.float32),
                                       infos=None, terminal=True, rews=np.zeros(3))
        pools.append(EpisodePool.from_trajectories([trajectory], env.observation_space, env.action_space, group=group,
                                                   env_spec=env.spec))
        env.close()
    return EpisodePool.concatenate(pools)


@pytest_metaworld
def test_the_codec_appends_the_task_over_the_pools_tasks_sorted_by_name():
    from curteach_teaching.datasets.codecs import codec_for

    pool = _pool({"metaworld-reach-v0": "reach-v3", "metaworld-push-v0": "push", "metaworld-door-open-v0": "door-open"})
    codec = codec_for(pool.observation_space, pool.env_specs)
    assert codec.name == "task-one-hot" and codec.tasks == ("door-open-v3", "push-v3", "reach-v3")
    assert codec.observation_space.shape == (42,)
    converted = codec.trajectories(pool.trajectories, pool.groups)
    for trajectory, original, one_hot in zip(converted, pool.trajectories, ([0, 0, 1], [0, 1, 0], [1, 0, 0])):
        np.testing.assert_array_equal(trajectory.obs[:, :39], original.obs)
        np.testing.assert_array_equal(trajectory.obs[:, 39:], np.tile(one_hot, (4, 1)))
        np.testing.assert_array_equal(trajectory.acts, original.acts)
    with pytest.raises(ValueError, match="needs each trajectory's group"):
        codec.trajectories(pool.trajectories)
    # the evaluation env, observed the same way: its reset observation with push's one-hot
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*A Box observation space", category=UserWarning)
        env = codec.wrap_env(pool.make_env("metaworld-push-v0"))
        observation, _ = env.reset(seed=3)
        plain, _ = pool.make_env("metaworld-push-v0").reset(seed=3)
    assert env.observation_space == codec.observation_space and env.observation_space.contains(observation)
    np.testing.assert_array_equal(observation, np.concatenate([plain, [0.0, 1.0, 0.0]]))
    with pytest.raises(ValueError, match="task 'pick-place-v3' is not one of the learner's"):
        codec.wrap_env(gym.make("MetaWorldTask-v0", task="pick-place"))


@pytest_metaworld
def test_one_task_or_other_environments_keep_the_observations_as_they_are():
    from curteach_teaching.datasets.codecs import codec_for

    pool = _pool({"metaworld-reach-v0": "reach", "metaworld-reach-again-v0": "reach-v3"})
    codec = codec_for(pool.observation_space, pool.env_specs)
    assert codec.name == "identity" and codec.observation_space == pool.observation_space
    assert codec_for(pool.observation_space).name == "identity"
    box = gym.spaces.Box(-1, 1, (39,))
    assert codec_for(box, {"a": gym.spec("CarTeach-v0"), "b": None}).name == "identity"


def _cartpole_pool(groups):
    """A pool of one 3-step CartPole trajectory per group (random observations), each group's env CartPole-v1."""
    from imitation.data.types import TrajectoryWithRew

    from curteach_teaching.datasets.pool import EpisodePool

    rng = np.random.default_rng(1)
    env = gym.make("CartPole-v1")
    pools = [EpisodePool.from_trajectories(
        [TrajectoryWithRew(obs=rng.normal(size=(4, 4)).astype(np.float32), acts=np.array([0, 1, 0]), infos=None,
                           terminal=True, rews=np.ones(3))], env.observation_space, env.action_space, group=group,
        env_spec=env.spec) for group in groups]
    env.close()
    return EpisodePool.concatenate(pools)


def test_a_one_hot_over_any_pools_groups_only_when_asked_for():
    from curteach_teaching.datasets.codecs import codec_for

    pool = _cartpole_pool(["lift", "can", "square"])
    assert codec_for(pool.observation_space, pool.env_specs, pool.groups).name == "identity"  # the default: as before
    codec = codec_for(pool.observation_space, pool.env_specs, pool.groups, task_one_hot=True)
    assert codec.name == "task-one-hot" and codec.by_group and codec.tasks == ("can", "lift", "square")
    converted = codec.trajectories(pool.trajectories, pool.groups)
    for trajectory, one_hot in zip(converted, ([0, 1, 0], [1, 0, 0], [0, 0, 1])):
        np.testing.assert_array_equal(trajectory.obs[:, 4:], np.tile(one_hot, (4, 1)))
    # an evaluation environment is told its group's task (it cannot say one of its own)
    env = codec.wrap_env(pool.make_env("square"), "square")
    observation, _ = env.reset(seed=0)
    plain, _ = pool.make_env("square").reset(seed=0)
    np.testing.assert_array_equal(observation, np.concatenate([plain, [0.0, 0.0, 1.0]]))
    with pytest.raises(ValueError, match="needs the group"):
        codec.wrap_env(pool.make_env("square"))
    # one group: nothing to tell apart
    single = _cartpole_pool(["lift"])
    assert codec_for(single.observation_space, single.env_specs, single.groups, task_one_hot=True).name == "identity"


def test_the_codecs_are_registered_and_asked_in_order():
    from curteach_teaching.datasets.codecs import CODECS

    assert CODECS.names()[:4] == ("babyai", "task-one-hot", "channels-first", "identity")
    assert [CODECS.load(name)[1].name for name in CODECS.names()[:4]] == list(CODECS.names()[:4])
