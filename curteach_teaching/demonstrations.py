"""Demonstrations: seeded pools of sampled trajectories and the exact per-start occupancy of a policy.

A *demonstration pool* holds, for every start state of a :class:`~curteach_envs.TabularMDP`, a fixed number of
trajectories sampled from a (teacher) policy, as the original car experiments drew them once per run (10
trajectories of 10 steps per start; docs/teaching/teachers.md, "Demonstrations").

Every trajectory is an ``imitation.data.types.Trajectory`` whose observations *are the state ids* (``obs`` holds
``len(acts) + 1`` integer states: the visited states and the state reached after the last action), so a demonstration
carries its states without any companion array. For fast, vectorised scoring the pool also keeps the same data as
dense integer arrays (``states``, ``actions``).

IRL learners receive no sampled trajectory: they are given the *exact* expected discounted occupancy of the teacher's
policy from the chosen start (:func:`occupancy_per_start`), as in the original.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from curteach_envs._util import check_int
from curteach_envs.tabular import TabularMDP
from curteach_teaching.planning import occupancy

if TYPE_CHECKING:  # imitation imports torch (about 1 s); only trajectories() needs it, so it is imported there
    from imitation.data.types import Trajectory

__all__ = ["DemonstrationPool", "sample_demonstrations", "occupancy_per_start", "sample_actions"]


@dataclass(frozen=True)
class DemonstrationPool:
    """A fixed pool of sampled demonstrations, grouped by start state.

    Attributes:
        start_states: ``(K,)`` int, the start states, in increasing order of the MDP's ``start_states``.
        observations: ``(K, n, L + 1)`` int, the states of trajectory ``j`` from start ``k``: ``s_0 .. s_L``.
        actions: ``(K, n, L)`` int, its actions ``a_0 .. a_{L-1}``.
        terminal: ``(K, n)`` bool, whether the trajectory ended in an absorbing state.
    """

    start_states: np.ndarray
    observations: np.ndarray
    actions: np.ndarray
    terminal: np.ndarray

    def __post_init__(self) -> None:
        K, n, L = self.actions.shape
        if self.observations.shape != (K, n, L + 1):
            raise ValueError(f"observations must have shape ({K}, {n}, {L + 1}); got {self.observations.shape}")
        if self.start_states.shape != (K,) or self.terminal.shape != (K, n):
            raise ValueError("start_states must be (K,) and terminal (K, n)")
        for array in (self.start_states, self.observations, self.actions, self.terminal):
            array.setflags(write=False)

    @property
    def states(self) -> np.ndarray:
        """``(K, n, L)`` the states at which the actions were taken (``observations`` without the last)."""
        return self.observations[:, :, :-1]

    @property
    def n_starts(self) -> int:
        """K, the number of start states."""
        return self.actions.shape[0]

    @property
    def n_per_start(self) -> int:
        """n, trajectories per start state."""
        return self.actions.shape[1]

    @property
    def length(self) -> int:
        """L, actions per trajectory."""
        return self.actions.shape[2]

    def trajectories(self, start_index: int) -> list[Trajectory]:
        """The ``n`` demonstrations from start ``start_states[start_index]`` as imitation ``Trajectory``s.

        ``obs`` is the ``(L + 1,)`` int64 array of state ids, ``acts`` the ``(L,)`` int64 actions, ``infos`` is
        ``None``.
        """
        from imitation.data.types import Trajectory

        if not 0 <= start_index < self.n_starts:
            raise ValueError(f"start_index must be in [0, {self.n_starts - 1}]; got {start_index}")
        return [
            Trajectory(
                obs=np.array(self.observations[start_index, j], dtype=np.int64),
                acts=np.array(self.actions[start_index, j], dtype=np.int64),
                infos=None,
                terminal=bool(self.terminal[start_index, j]),
            )
            for j in range(self.n_per_start)
        ]

    def all_trajectories(self) -> list[Trajectory]:
        """All ``K * n`` demonstrations, start-major (the order of ``start_states``)."""
        return [traj for k in range(self.n_starts) for traj in self.trajectories(k)]


def sample_actions(policy: np.ndarray, states: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Draw one action per state from ``policy`` by inversion (one uniform number per state).

    Args:
        policy: ``(S, A)`` action probabilities.
        states: ``(N,)`` int states.
        rng: the generator.

    Returns:
        ``(N,)`` int actions.
    """
    cumulative = np.cumsum(policy[states], axis=1)
    u = rng.random(states.shape[0]) * cumulative[:, -1]  # rows that sum to 1 - 1e-16 stay valid
    actions = (cumulative <= u[:, None]).sum(axis=1)
    return np.minimum(actions, policy.shape[1] - 1)


def _sample_next_states(mdp: TabularMDP, states: np.ndarray, actions: np.ndarray, rng) -> np.ndarray:
    """Draw ``s' ~ P(. | s, a)`` for each pair, vectorised over the (few) non-zeros of each CSR row."""
    T = mdp.transitions
    rows = states * mdp.n_actions + actions
    begin, count = T.indptr[rows], np.diff(T.indptr)[rows]
    u = rng.random(rows.shape[0])
    next_states = T.indices[begin + count - 1].copy()  # the last non-zero catches rounding at the top
    cumulative = np.zeros(rows.shape[0])
    chosen = np.zeros(rows.shape[0], dtype=bool)
    for j in range(int(count.max())):
        valid = j < count
        idx = np.where(valid, begin + j, 0)
        cumulative = cumulative + np.where(valid, T.data[idx], 0.0)
        take = valid & ~chosen & (u < cumulative)
        next_states[take] = T.indices[idx[take]]
        chosen |= take
    return next_states


def sample_demonstrations(
    mdp: TabularMDP,
    policy: np.ndarray,
    rng: np.random.Generator,
    *,
    n_per_start: int = 10,
    length: int | None = None,
    start_states: np.ndarray | None = None,
) -> DemonstrationPool:
    """Sample ``n_per_start`` trajectories of ``length`` actions from every start state.

    Args:
        mdp: the MDP (its ``transitions`` are sampled; an absorbing state loops on itself).
        policy: ``(S, A)`` the demonstrator's action probabilities.
        rng: the only source of randomness.
        n_per_start: trajectories per start state (the original: 10).
        length: actions per trajectory; defaults to ``mdp.horizon`` (10 on the car).
        start_states: ``(K,)`` start states; defaults to ``mdp.start_states``.

    Returns:
        A :class:`DemonstrationPool` with ``(K, n_per_start, length)`` actions.
    """
    policy = np.asarray(policy, dtype=np.float64)
    if policy.shape != (mdp.n_states, mdp.n_actions):
        raise ValueError(f"policy must have shape ({mdp.n_states}, {mdp.n_actions}); got {policy.shape}")
    check_int("n_per_start", n_per_start, 1)
    length = mdp.horizon if length is None else length
    if length is None or isinstance(length, bool) or not isinstance(length, (int, np.integer)) or length < 1:
        raise ValueError(f"length must be an integer >= 1 (or the MDP must have a horizon); got {length!r}")
    starts = mdp.start_states if start_states is None else np.asarray(start_states, dtype=np.int64)
    if starts.ndim != 1 or starts.size == 0 or starts.min() < 0 or starts.max() >= mdp.n_states:
        raise ValueError(f"start_states must be a non-empty 1-D array of states in [0, {mdp.n_states - 1}]")
    K = starts.size
    states = np.repeat(starts, n_per_start)  # start-major, the original's order
    observations = np.empty((K * n_per_start, length + 1), dtype=np.int64)
    actions = np.empty((K * n_per_start, length), dtype=np.int64)
    observations[:, 0] = states
    for t in range(length):
        actions[:, t] = sample_actions(policy, states, rng)
        states = _sample_next_states(mdp, states, actions[:, t], rng)
        observations[:, t + 1] = states
    terminal = mdp.absorbing[states]
    return DemonstrationPool(
        start_states=starts.copy(),
        observations=observations.reshape(K, n_per_start, length + 1),
        actions=actions.reshape(K, n_per_start, length),
        terminal=terminal.reshape(K, n_per_start),
    )


def occupancy_per_start(
    mdp: TabularMDP, policy: np.ndarray, start_states: np.ndarray | None = None
) -> np.ndarray:
    """Exact discounted state occupancy of ``policy`` from each start state (one row per start).

    This is what an IRL learner receives as "all demonstrations from ``s``": the probability-weighted average of
    the discounted visitation of every trajectory from ``s``.

    Args:
        mdp: the MDP.
        policy: ``(S, A)`` action probabilities.
        start_states: ``(K,)`` start states; defaults to ``mdp.start_states``.

    Returns:
        ``(K, S)`` occupancies; row ``k`` starts deterministically at ``start_states[k]``.
    """
    starts = mdp.start_states if start_states is None else np.asarray(start_states, dtype=np.int64)
    return occupancy(mdp, policy, mdp.state_indicator(starts))


# ----------------------------------------------------------------------------------------------------------------------
# Navigation demonstrations (formerly NavigationSplit.trajectories() in curteach_envs).

__all__ += ["navigation_trajectories"]


def navigation_trajectories(split, dtype=np.float32) -> list[Trajectory]:
    """The demonstrations of a navigation dataset split as imitation ``Trajectory`` objects with their observations.

    Each demonstration ``i`` (of ``L_i`` actions, in the split's order) is replayed in its task's dynamics
    (:func:`curteach_envs.navigation.env.replay`) and becomes a ``Trajectory`` with ``obs (L_i + 1, 7, 6, 6)``
    (``dtype``, float32 by default; the last one after the final action, as the environment returns it),
    ``acts (L_i,)`` int64, ``infos=None`` and ``terminal=True``.

    Args:
        split: a :class:`~curteach_envs.navigation.dataset.NavigationSplit` with ``N`` demonstrations.
        dtype: the observations' dtype.

    Returns:
        ``N`` trajectories.
    """
    from imitation.data.types import Trajectory

    from curteach_envs.navigation.env import replay

    out = []
    for i in range(split.n_demos):
        task = split.task(i)
        acts = split.actions(i).astype(np.int64)
        poses, masks, _, _ = replay(task, acts)
        obs = task.observations(poses, masks).astype(dtype, copy=False)
        out.append(Trajectory(obs=obs, acts=acts, infos=None, terminal=True))
    return out
