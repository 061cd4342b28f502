"""A flag recorded per step only (``success`` in Gymnasium-Robotics' datasets, no metadata field): ``--bad-field``,
``--holdout-field`` and the task scores read its value at each episode's last step alike."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("imitation")

from curteach_teaching.datasets import EpisodePool  # noqa: E402
from curteach_teaching.datasets.labels import bad_episodes  # noqa: E402
from curteach_teaching.datasets.scores.registry import last_step_flags, task_difficulty  # noqa: E402
from curteach_teaching.experiments.dataset_bc.held_out import trusted_episodes  # noqa: E402


def _pool(last_values, kind=float):
    from imitation.data.types import TrajectoryWithRew

    trajectories, infos = [], []
    for i, last in enumerate(last_values):
        n = 3 + i
        trajectories.append(TrajectoryWithRew(obs=np.zeros((n + 1, 2), np.float32), acts=np.zeros((n, 1), np.float32),
                                              infos=None, terminal=True, rews=np.zeros(n)))
        infos.append({"success": np.array([kind(0)] * n + [kind(last)])})  # reset, then one per step
    return EpisodePool.from_trajectories(trajectories, gym.spaces.Box(-1, 1, (2,), np.float32),
                                         gym.spaces.Box(-1, 1, (1,), np.float32), infos=infos)


def test_a_per_step_flag_is_read_at_the_last_step_alike_everywhere():
    for kind in (float, bool):
        pool = _pool([1, 0, 1, 0], kind)
        expected = np.array([True, False, True, False])
        np.testing.assert_array_equal(last_step_flags(pool.metadata, pool.infos, "success"), expected)
        np.testing.assert_array_equal(bad_episodes(pool, "not:success"), ~expected)  # --bad-field not:success
        np.testing.assert_array_equal(trusted_episodes(pool.metadata, "success", pool.infos), expected)
        np.testing.assert_array_equal(task_difficulty(pool, "not:success"), (~expected).astype(float))
    assert last_step_flags(_pool([1, 0]).metadata, _pool([1, 0]).infos, "shiny") is None
    with pytest.raises(ValueError, match=r"step info 'success' of episode 1 of the pool is 0.5 at its last step"):
        last_step_flags(_pool([1, 0.5]).metadata, _pool([1, 0.5]).infos, "success")
    with pytest.raises(ValueError, match="holdout_field must be a boolean metadata field of every episode"):
        trusted_episodes(_pool([1, 0]).metadata, "success")  # without the infos: the metadata alone, as before
