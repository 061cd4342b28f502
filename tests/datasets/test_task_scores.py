"""Task scores per demonstration: built-ins, fields from metadata and infos, a user's function, and their checks."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from curteach_teaching.datasets import EpisodePool, read_pool, score_fields, task_scores, write_pool


@pytest.fixture
def pool(make_pool):
    write_pool(make_pool("discrete", n_episodes=4), "test/scores-v0", data_format="arrow")
    return read_pool("test/scores-v0")


def test_length_and_return(pool):
    assert task_scores(pool, "length").tolist() == [len(t.acts) for t in pool.trajectories]
    expected = [float(np.sum(t.rews)) for t in pool.trajectories]
    assert np.allclose(task_scores(pool, "return"), expected)
    assert task_scores(pool, "length").dtype == np.float64


def test_fields_from_metadata_and_infos(pool):
    assert task_scores(pool, "level").tolist() == [0.0, 1.0, 2.0, 3.0]
    assert task_scores(pool, "difficulty").tolist() == [m["difficulty"] for m in pool.metadata]
    assert task_scores(pool, "success").tolist() == [1.0] * 4  # the info's value after the last step
    # numbers in every episode's metadata, then infos with a number at the last step; never strings or lists
    assert score_fields(pool) == ("length", "return", "difficulty", "level", "total_steps", "success")


def test_a_missing_field_lists_the_available_ones(pool):
    with pytest.raises(ValueError, match=r"^no task score field 'hardness'; available: length, return, difficulty, "
                                         r"level, total_steps, success \(or module:attr for your own function\)$"):
        task_scores(pool, "hardness")
    with pytest.raises(ValueError, match="'name' is missing or not a number in the metadata of episode 0"):
        task_scores(pool, "name")


def _with_difficulty(pool, values):
    metadata = [{**m, "difficulty": v} for m, v in zip(pool.metadata, values)]
    return EpisodePool(trajectories=pool.trajectories, episode_ids=pool.episode_ids, seeds=pool.seeds,
                       groups=pool.groups, metadata=metadata, infos=pool.infos,
                       observation_space=pool.observation_space, action_space=pool.action_space)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_scores_name_the_episode(pool, bad):
    broken = _with_difficulty(pool, [0.5, 0.1, bad, bad])
    with pytest.raises(ValueError, match=rf"^task score 'difficulty' is {bad} for episode 2 of 'test/scores-v0' "
                                         r"\(position 2\); scores must be finite \(2 episodes in all\)$"):
        task_scores(broken, "difficulty")


def test_a_users_function_by_name_or_object(pool, monkeypatch):
    module = types.ModuleType("my_scores")
    module.by_seed = lambda p: np.array([-1.0 if s is None else s for s in p.seeds])
    module.wrong_shape = lambda p: np.zeros(len(p) + 1)
    module.not_callable = 3
    monkeypatch.setitem(sys.modules, "my_scores", module)
    assert task_scores(pool, "my_scores:by_seed").tolist() == [100.0, -1.0, 102.0, 103.0]
    assert task_scores(pool, module.by_seed).tolist() == [100.0, -1.0, 102.0, 103.0]
    with pytest.raises(ValueError, match=r"must give one number per episode, shape \(4,\); got \(5,\)"):
        task_scores(pool, "my_scores:wrong_shape")
    with pytest.raises(ValueError, match="is not callable"):
        task_scores(pool, "my_scores:not_callable")
    with pytest.raises(ValueError, match="^cannot load task score 'no_such_module:f': ModuleNotFoundError"):
        task_scores(pool, "no_such_module:f")


def test_return_needs_rewards(make_pool):
    from imitation.data.types import Trajectory

    source = make_pool("box")
    plain = [Trajectory(obs=t.obs, acts=t.acts, infos=None, terminal=t.terminal) for t in source.trajectories]
    pool = EpisodePool.from_trajectories(plain, source.observation_space, source.action_space)
    with pytest.raises(ValueError, match="needs rewards"):
        task_scores(pool, "return")
    assert score_fields(pool) == ("length",)
