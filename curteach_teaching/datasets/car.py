"""The car's demonstration pool (:class:`~curteach_teaching.demonstrations.DemonstrationPool`) as an episode pool,
ready for :func:`~curteach_teaching.datasets.writing.write_pool`.

Each sampled trajectory is one episode whose observations are the state ids (``Discrete(S)``, as ``CarTeach-v0``
with ``observation="state"``), whose rewards are the road's ``reward_sa[s_t, a_t]`` (the reward of the cell a step
leaves, as the environment pays it), and whose reset options are ``{"start_state": s_0}`` (``CarTeachEnv.reset``
takes them). The seed is ``None``: the start is given, and the road is the environment's ``layout_seed``, not a reset
seed. The road's spec is known only when the caller gives it (a road drawn from a ``SeedSequence``, as the car
experiments draw theirs, has no ``layout_seed`` that rebuilds it).
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from curteach_teaching.datasets.pool import EpisodePool

__all__ = ["car_episode_pool"]


def car_episode_pool(pool, mdp, *, env_spec=None, group: str = "car") -> EpisodePool:
    """The ``K * n`` trajectories of a car demonstration pool as an :class:`EpisodePool`, start-major.

    Args:
        pool: a :class:`~curteach_teaching.demonstrations.DemonstrationPool` with ``(K, n, L)`` actions.
        mdp: the road's :class:`~curteach_envs.TabularMDP` the pool was sampled in (its rewards and task types).
        env_spec: the environment spec, e.g. ``gym.make("CarTeach-v0", layout_seed=3).spec`` when the road is that
            environment's; ``None`` when unknown.
        group: the pool's group name.

    Returns:
        Episode ``k * n + j``: ``obs (L + 1,)`` int64 state ids, ``acts (L,)`` int64, ``rews (L,)`` float64,
        ``terminal`` as sampled; metadata ``options = {"start_state": s_0}``, ``start_state`` and ``task_type``
        (``mdp.task_of_state[s_0]``).
    """
    from imitation.data.types import TrajectoryWithRew

    reward = mdp.reward_sa
    if pool.observations.max() >= mdp.n_states or pool.actions.max() >= mdp.n_actions:
        raise ValueError(f"the pool's states or actions lie outside the MDP ({mdp.n_states} states, "
                         f"{mdp.n_actions} actions)")
    trajectories, metadata = [], []
    for k in range(pool.n_starts):
        for j in range(pool.n_per_start):
            obs = np.array(pool.observations[k, j], dtype=np.int64)
            acts = np.array(pool.actions[k, j], dtype=np.int64)
            trajectories.append(TrajectoryWithRew(obs=obs, acts=acts, infos=None, terminal=bool(pool.terminal[k, j]),
                                                  rews=reward[obs[:-1], acts].astype(np.float64)))
            start = int(obs[0])
            metadata.append({"options": {"start_state": start}, "start_state": start,
                             "task_type": int(mdp.task_of_state[start])})
    return EpisodePool.from_trajectories(trajectories, spaces.Discrete(mdp.n_states), spaces.Discrete(mdp.n_actions),
                                         group=group, metadata=metadata, env_spec=env_spec)
