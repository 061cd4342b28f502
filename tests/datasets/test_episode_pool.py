"""The episode pool's own checks and views."""

from __future__ import annotations

import numpy as np
import pytest

from curteach_teaching.datasets import EpisodePool


def test_checks_on_construction(make_pool):
    pool = make_pool("box", n_episodes=3)
    fields = dict(trajectories=pool.trajectories, episode_ids=pool.episode_ids, seeds=pool.seeds, groups=pool.groups,
                  metadata=pool.metadata, infos=pool.infos, observation_space=pool.observation_space,
                  action_space=pool.action_space)
    with pytest.raises(ValueError, match=r"seeds must have one entry per trajectory \(3\); got 2"):
        EpisodePool(**{**fields, "seeds": (1, 2)})
    with pytest.raises(ValueError, match=r"seeds\[0\] must be an int or None; got 1.5"):
        EpisodePool(**{**fields, "seeds": (1.5, None, None)})
    with pytest.raises(ValueError, match="episode 0 of group '' appears twice"):
        EpisodePool(**{**fields, "episode_ids": [0, 0, 1]})
    with pytest.raises(ValueError, match=r"trajectories\[1\] must be an imitation Trajectory"):
        EpisodePool(**{**fields, "trajectories": (pool.trajectories[0], "x", pool.trajectories[2])})
    assert EpisodePool(**fields).env_specs == {"": None}
    assert not pool.episode_ids.flags.writeable


def test_views(make_pool):
    a, b = make_pool("discrete", 2, group="a"), make_pool("discrete", 3, seed=1, group="b")
    pool = EpisodePool.concatenate([a, b])
    assert pool.group_names == ("a", "b")
    assert pool.lengths.tolist() == [len(t.acts) for t in a.trajectories + b.trajectories]
    assert np.allclose(pool.returns, np.concatenate([a.returns, b.returns]))
    assert pool.index_of("b", 2) == 4
    with pytest.raises(ValueError, match="no episode 7 in group 'a'"):
        pool.index_of("a", 7)
    with pytest.raises(ValueError, match="no environment spec is known for group 'a'"):
        pool.make_env("a")
    assert pool.select([4, 0]).episode_ids.tolist() == [2, 0]


def test_non_finite_actions_or_observations_name_the_episode():
    import gymnasium as gym
    from imitation.data.types import DictObs, Trajectory

    def pool(obs, acts):
        clean = Trajectory(obs=np.zeros((3, 2)), acts=np.zeros((2, 1)), infos=None, terminal=True)
        return EpisodePool.from_trajectories([clean, Trajectory(obs=obs, acts=acts, infos=None, terminal=True)],
                                             gym.spaces.Box(-1, 1, (2,)), gym.spaces.Box(-1, 1, (1,)), group="g")

    with pytest.raises(ValueError, match=r"episode 1 of group 'g' \(pool index 1\) has NaN or infinite actions"):
        pool(np.zeros((3, 2)), np.array([[0.0], [np.nan]]))
    with pytest.raises(ValueError, match=r"has NaN or infinite observations;"):
        pool(np.array([[0.0, 0.0], [0.0, -np.inf], [0.0, 0.0]]), np.zeros((2, 1)))
    with pytest.raises(ValueError, match=r"has NaN or infinite observations\['x'\]"):
        pool(DictObs({"x": np.array([[np.nan], [0.0], [0.0]]), "k": np.zeros((3, 1), dtype=np.int64)}),
             np.zeros((2, 1)))
    pool(np.zeros((3, 2)), np.array([[5.0], [-5.0]]))  # outside the Box but finite: accepted (reported elsewhere)
