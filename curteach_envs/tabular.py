"""`TabularMDP`: the tabular export shared by every environment and planner.

An environment exports its dynamics once as plain arrays; planners, teachers and imitation's MCE-IRL consume them.

Conventions (S states, A actions, d features):

* ``transitions``: ``(S * A, S)`` CSR matrix, row ``s * A + a`` is ``P(. | s, a)``. Every row sums to 1.
* ``reward``: ``(S,)`` state reward, or ``(S, A)`` state-action reward (expected over the next state).
* ``features``: ``(S, d)`` state features, with ``feature_names`` of length d.
* ``initial_state_dist``: ``(S,)``; ``start_states``: the states a teacher may start an episode from.
* ``task_of_state``: ``(S,)`` int, the task (or task type) a state belongs to, ``-1`` for none.

**Absorbing states.** A state whose every action leads back to itself with probability 1 is *absorbing*
(a sink after the end of an episode). Planners treat it as the end of the episode: it is visited once and no value
or occupancy flows out of it. This is exactly the original car code, whose sink had all-zero outgoing rows, and it
keeps values finite for ``gamma = 1``. Because an absorbing state must carry zero reward and zero features in our
exports, the self-loop changes no value of any other state.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import scipy.sparse as sp

__all__ = ["TabularMDP"]

_ROW_SUM_TOL = 1e-9


def _readonly(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


@dataclass(frozen=True, eq=False)
class TabularMDP:
    """A finite MDP as arrays, validated once at construction.

    Args:
        transitions: ``(S * A, S)`` sparse (or dense) matrix, row ``s * A + a`` is ``P(. | s, a)``.
        reward: ``(S,)`` state reward or ``(S, A)`` state-action reward.
        features: ``(S, d)`` state features.
        initial_state_dist: ``(S,)`` initial-state distribution.
        gamma: discount factor in ``[0, 1]``.
        horizon: number of actions in an episode (``None`` for unbounded).
        feature_names: ``d`` names; defaults to ``f0, f1, ...``.
        start_states: ``(K,)`` int array of start states; defaults to the support of ``initial_state_dist``.
        task_of_state: ``(S,)`` int array; defaults to all zeros.
        action_names: ``A`` names; defaults to ``a0, a1, ...``.
        name: free-form label.

    Raises:
        ValueError: an array has the wrong shape, holds non-finite or negative probabilities, a row does not sum to
            one, or an index is out of range. The message names the array and the allowed values.
    """

    transitions: sp.csr_matrix
    reward: np.ndarray
    features: np.ndarray
    initial_state_dist: np.ndarray
    gamma: float
    horizon: int | None
    feature_names: tuple = ()
    start_states: np.ndarray | None = None
    task_of_state: np.ndarray | None = None
    action_names: tuple = ()
    name: str = ""

    def __post_init__(self) -> None:
        put = lambda key, value: object.__setattr__(self, key, value)  # noqa: E731  (frozen dataclass)

        transitions = self.transitions
        if not sp.issparse(transitions):
            transitions = np.asarray(transitions, dtype=np.float64)
            if transitions.ndim != 2:
                raise ValueError(
                    f"transitions must be a 2-D (S * A, S) matrix; got an array of shape {transitions.shape}"
                )
        transitions = sp.csr_matrix(transitions, dtype=np.float64)
        n_rows, n_states = transitions.shape
        if n_states < 1 or n_rows < n_states or n_rows % n_states != 0:
            raise ValueError(
                f"transitions must have shape (S * A, S) with S >= 1 and A >= 1; got {transitions.shape}"
            )
        transitions.sum_duplicates()
        transitions.sort_indices()
        if not np.all(np.isfinite(transitions.data)) or np.any(transitions.data < 0):
            raise ValueError("transitions must hold finite probabilities >= 0")
        n_actions = n_rows // n_states
        row_sums = np.asarray(transitions.sum(axis=1)).ravel()
        bad = np.flatnonzero(np.abs(row_sums - 1.0) > _ROW_SUM_TOL)
        if bad.size:
            row = int(bad[0])
            raise ValueError(
                f"transitions row {row} (state {row // n_actions}, action {row % n_actions}) sums to "
                f"{row_sums[row]:.6g}; every row must sum to 1 (make terminal states absorbing self-loops)"
            )
        transitions.data.setflags(write=False)
        put("transitions", transitions)

        reward = np.array(self.reward, dtype=np.float64)
        if reward.shape not in {(n_states,), (n_states, n_actions)}:
            raise ValueError(
                f"reward must have shape ({n_states},) or ({n_states}, {n_actions}); got {reward.shape}"
            )
        if not np.all(np.isfinite(reward)):
            raise ValueError("reward must be finite")
        put("reward", _readonly(reward))

        features = np.array(self.features, dtype=np.float64)
        if features.ndim != 2 or features.shape[0] != n_states:
            raise ValueError(f"features must have shape ({n_states}, d); got {features.shape}")
        if not np.all(np.isfinite(features)):
            raise ValueError("features must be finite")
        put("features", _readonly(features))
        n_features = features.shape[1]
        names = tuple(self.feature_names) or tuple(f"f{i}" for i in range(n_features))
        if len(names) != n_features:
            raise ValueError(f"feature_names must have {n_features} entries; got {len(names)}")
        put("feature_names", names)
        actions = tuple(self.action_names) or tuple(f"a{i}" for i in range(n_actions))
        if len(actions) != n_actions:
            raise ValueError(f"action_names must have {n_actions} entries; got {len(actions)}")
        put("action_names", actions)

        init = np.array(self.initial_state_dist, dtype=np.float64)
        if init.shape != (n_states,):
            raise ValueError(f"initial_state_dist must have shape ({n_states},); got {init.shape}")
        if not np.all(np.isfinite(init)) or np.any(init < 0) or abs(init.sum() - 1.0) > 1e-9:
            raise ValueError(f"initial_state_dist must be >= 0 and sum to 1; its sum is {init.sum():.6g}")
        put("initial_state_dist", _readonly(init))

        gamma = float(self.gamma)
        if not 0.0 <= gamma <= 1.0:
            raise ValueError(f"gamma must be in [0, 1]; got {self.gamma}")
        put("gamma", gamma)
        if self.horizon is not None:
            if int(self.horizon) != self.horizon or self.horizon < 1:
                raise ValueError(f"horizon must be a positive integer or None; got {self.horizon}")
            put("horizon", int(self.horizon))

        start = np.flatnonzero(init > 0) if self.start_states is None else np.array(self.start_states)
        if start.ndim != 1 or start.size == 0 or not np.issubdtype(start.dtype, np.integer):
            raise ValueError(f"start_states must be a non-empty 1-D integer array; got {start!r}")
        if start.min() < 0 or start.max() >= n_states or np.unique(start).size != start.size:
            raise ValueError(f"start_states must be distinct states in [0, {n_states - 1}]")
        put("start_states", _readonly(start.astype(np.int64)))

        tasks = np.zeros(n_states, dtype=np.int64) if self.task_of_state is None else np.array(self.task_of_state)
        if tasks.shape != (n_states,) or not np.issubdtype(tasks.dtype, np.integer):
            raise ValueError(f"task_of_state must be an integer array of shape ({n_states},); got {tasks.shape}")
        put("task_of_state", _readonly(tasks.astype(np.int64)))

    # ------------------------------------------------------------------ sizes
    @property
    def n_states(self) -> int:
        """Number of states S."""
        return self.transitions.shape[1]

    @property
    def n_actions(self) -> int:
        """Number of actions A."""
        return self.transitions.shape[0] // self.transitions.shape[1]

    @property
    def n_features(self) -> int:
        """Number of state features d."""
        return self.features.shape[1]

    # ------------------------------------------------------------ derived views
    @cached_property
    def transition_matrix(self) -> np.ndarray:
        """Dense ``(S, A, S)`` transition tensor (seals' convention)."""
        dense = self.transitions.toarray().reshape(self.n_states, self.n_actions, self.n_states)
        return _readonly(dense)

    @cached_property
    def reward_sa(self) -> np.ndarray:
        """``(S, A)`` reward, broadcast from a state reward where needed."""
        if self.reward.ndim == 2:
            return self.reward
        return _readonly(np.repeat(self.reward[:, None], self.n_actions, axis=1))

    @cached_property
    def absorbing(self) -> np.ndarray:
        """``(S,)`` bool: every action returns to the state with probability 1."""
        S, A = self.n_states, self.n_actions
        self_prob = np.asarray(self.transitions[np.arange(S * A), np.repeat(np.arange(S), A)]).ravel()
        return _readonly((self_prob.reshape(S, A) >= 1.0 - _ROW_SUM_TOL).all(axis=1))

    @cached_property
    def live_transitions(self) -> sp.csr_matrix:
        """``(S * A, S)`` transitions with the rows of absorbing states set to zero (what planners iterate)."""
        keep = np.repeat(~self.absorbing, self.n_actions).astype(np.float64)
        live = sp.csr_matrix(sp.diags(keep) @ self.transitions)
        live.eliminate_zeros()
        return live

    @cached_property
    def live_transitions_T(self) -> sp.csr_matrix:
        """Transpose of :attr:`live_transitions` as CSR, ``(S, S * A)``."""
        return sp.csr_matrix(self.live_transitions.T)

    @cached_property
    def adjacency(self) -> sp.csr_matrix:
        """``(S, S)`` CSR 0/1 matrix: 1 where some action moves ``s`` to ``s'`` along :attr:`live_transitions`."""
        S, A = self.n_states, self.n_actions
        live = self.live_transitions
        rows = np.repeat(np.arange(S * A), np.diff(live.indptr)) // A
        adjacency = sp.csr_matrix((np.ones(rows.size), (rows, live.indices)), shape=(S, S))
        adjacency.data[:] = 1.0
        return adjacency

    @cached_property
    def state_levels(self) -> np.ndarray | None:
        """``(S,)`` level of each state if the live transition graph is acyclic, else ``None``.

        Level 0 holds the states with no live successor (absorbing states); a state is on level k if its deepest
        successor is on level k - 1.
        """
        adjacency = self.adjacency
        level = np.full(self.n_states, -1, dtype=np.int64)
        remaining = np.ones(self.n_states, dtype=bool)
        out_degree = np.asarray(adjacency.sum(axis=1)).ravel()
        current = 0
        while remaining.any():
            leaves = remaining & (out_degree == 0)
            if not leaves.any():
                return None
            level[leaves] = current
            remaining &= ~leaves
            out_degree = out_degree - adjacency @ leaves.astype(np.float64)
            current += 1
        return _readonly(level)

    @property
    def depth(self) -> int | None:
        """Number of levels of the live transition graph if it is acyclic, else ``None``.

        Backward induction over an acyclic MDP is exact after ``depth`` sweeps (see :attr:`state_levels`).
        """
        levels = self.state_levels
        return None if levels is None else int(levels.max()) + 1

    # ------------------------------------------------------------- conversions
    def replace(self, **changes: Any) -> TabularMDP:
        """A copy with some fields changed (and validated again), e.g. ``mdp.replace(gamma=1.0)``."""
        return dataclasses.replace(self, **changes)

    @classmethod
    def from_gymnasium(cls, env: Any, *, gamma: float = 0.99, horizon: int | None = None,
                       features: Any = None) -> TabularMDP:
        """The exact export of a Gymnasium environment that exposes a transition table ``P`` (the toy-text
        FrozenLake, CliffWalking and Taxi): expected rewards per state-action pair, terminated transitions into an
        added absorbing sink, one-hot state features unless ``features`` ``(S, d)`` is given. See
        :func:`curteach_envs.tabular_sources.gymnasium_arrays` for the conventions.

        Raises:
            ValueError: no transition table, spaces that are not discrete, or a malformed table.
        """
        from curteach_envs.tabular_sources import gymnasium_arrays

        return cls(**gymnasium_arrays(env, gamma=gamma, horizon=horizon, features=features))

    @classmethod
    def from_seals(cls, env: Any, *, gamma: float = 0.99, features: Any = None) -> TabularMDP:
        """The export of a seals tabular model (``TabularModelPOMDP`` and kin): its transition and reward
        matrices, horizon and initial distribution; one-hot state features unless ``features`` is given.

        Raises:
            ValueError: ``env`` is not a seals tabular model.
        """
        from curteach_envs.tabular_sources import seals_arrays

        return cls(**seals_arrays(env, gamma=gamma, features=features))

    def to_seals(self, horizon: int | None = None, observation: str = "features"):
        """This MDP as a ``seals.base_envs.TabularModelPOMDP``.

        imitation's ``mce_partition_fh`` and ``mce_occupancy_measures`` run on it (they need a finite horizon).

        Args:
            horizon: episode length; defaults to ``self.horizon``.
            observation: ``"features"`` (observation matrix = ``features``) or ``"onehot"`` (identity).

        Raises:
            ValueError: no finite horizon is known, or ``observation`` is not one of the two choices.
        """
        from seals.base_envs import TabularModelPOMDP

        horizon = self.horizon if horizon is None else horizon
        if horizon is None or int(horizon) < 1:
            raise ValueError(f"to_seals needs a positive finite horizon; got {horizon}")
        if observation == "features":
            observations = np.array(self.features, dtype=np.float32)
        elif observation == "onehot":
            observations = np.eye(self.n_states, dtype=np.float32)
        else:
            raise ValueError(f"observation must be 'features' or 'onehot'; got {observation!r}")
        return TabularModelPOMDP(
            transition_matrix=np.array(self.transition_matrix),
            observation_matrix=observations,
            reward_matrix=np.array(self.reward),
            horizon=int(horizon),
            initial_state_dist=np.array(self.initial_state_dist),
        )

    def state_indicator(self, states: Sequence[int] | np.ndarray) -> np.ndarray:
        """``(K, S)`` one-hot rows for ``states`` (initial distributions for per-start planning)."""
        states = np.asarray(states, dtype=np.int64).ravel()
        if states.size and (states.min() < 0 or states.max() >= self.n_states):
            raise ValueError(f"states must be in [0, {self.n_states - 1}]")
        out = np.zeros((states.size, self.n_states))
        out[np.arange(states.size), states] = 1.0
        return out
