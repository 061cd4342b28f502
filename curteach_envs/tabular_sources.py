"""Tabular environments from elsewhere: the arrays of a :class:`~curteach_envs.tabular.TabularMDP` read from a
Gymnasium toy-text environment's transition table or from a seals tabular model.

Both functions return the constructor's keyword arguments (plain arrays), so this module needs nothing of
``tabular.py`` and :meth:`TabularMDP.from_gymnasium` / :meth:`TabularMDP.from_seals` build and validate the MDP.

**Rewards.** Gymnasium pays a reward on a transition ``(s, a, s')``; the export keeps the exact expected return by
paying its expectation ``R(s, a) = sum_s' P(s' | s, a) r(s, a, s')`` on the state-action pair, so the reward is
``(S, A)`` whenever it depends on the action (FrozenLake's slippery ice, CliffWalking's cliff, Taxi's pick-up and
drop-off). Every planner, teacher and evaluation of the library takes ``(S, A)`` rewards; the learners still model a
state reward ``phi(s) . theta`` and are judged by the true one.

**Episode ends.** A transition Gymnasium marks ``terminated`` goes to one added *sink* state (the last, index ``S``):
absorbing, with zero reward and zero features, which the planners treat as the end of the episode (see
:mod:`curteach_envs.tabular`). A state whose every action is a terminated self-loop (FrozenLake's holes and goal)
becomes unreachable instead of looping.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["gymnasium_arrays", "seals_arrays", "onehot_features"]


def onehot_features(n_states: int, sink: bool = False) -> np.ndarray:
    """``(S, S)`` identity features, or ``(S + 1, S)`` with a zero row for an added sink."""
    features = np.eye(n_states)
    return np.vstack([features, np.zeros((1, n_states))]) if sink else features


def _features(features: Any, n_states: int, sink: bool) -> np.ndarray:
    """The user's ``(S, d)`` features (a zero row appended for the sink), or one-hot ones."""
    if features is None:
        return onehot_features(n_states, sink)
    features = np.asarray(features, dtype=np.float64)
    if features.ndim != 2 or features.shape[0] != n_states:
        raise ValueError(f"features must have shape ({n_states}, d), one row per state of the environment; "
                         f"got {features.shape}")
    return np.vstack([features, np.zeros((1, features.shape[1]))]) if sink else features


def gymnasium_arrays(env: Any, *, gamma: float = 0.99, horizon: int | None = None, features: Any = None) -> dict:
    """The :class:`TabularMDP` arguments of a Gymnasium environment with a transition table ``P``.

    Args:
        env: an environment (wrapped or not) whose ``unwrapped`` has ``P[s][a] = [(prob, next_state, reward,
            terminated), ...]`` and discrete observation and action spaces, as Gymnasium's toy-text environments
            (FrozenLake, CliffWalking, Taxi).
        gamma: the discount (Gymnasium environments do not define one; default 0.99).
        horizon: actions per episode; defaults to the registered ``max_episode_steps`` (``None`` when there is
            none).
        features: ``(S, d)`` state features; defaults to one-hot ``(S, S)``.

    Returns:
        keyword arguments of ``TabularMDP``: ``transitions`` ``(S' * A, S')``, ``reward`` ``(S',)`` or ``(S', A)``,
        ``features`` ``(S', d)`` and the rest, with ``S' = S + 1`` when some transition terminates (the sink).

    Raises:
        ValueError: the environment has no transition table, its spaces are not discrete, a table entry is
            malformed, or the initial-state distribution cannot be read.
    """
    base = getattr(env, "unwrapped", env)
    table = getattr(base, "P", None)
    name = getattr(getattr(env, "spec", None), "id", None) or type(base).__name__
    if not isinstance(table, dict) or not table:
        raise ValueError(f"{name} has no transition table (env.unwrapped.P); only environments that expose one, "
                         "like Gymnasium's toy-text FrozenLake, CliffWalking and Taxi, can be exported")
    n_states = getattr(base.observation_space, "n", None)
    n_actions = getattr(base.action_space, "n", None)
    if n_states is None or n_actions is None:
        raise ValueError(f"{name}: observation and action spaces must be Discrete; got {base.observation_space} "
                         f"and {base.action_space}")
    n_states, n_actions = int(n_states), int(n_actions)
    entries = []  # (row, next_state, prob, reward, terminated)
    for s in range(n_states):
        actions = table.get(s)
        if not isinstance(actions, dict) or len(actions) != n_actions:
            raise ValueError(f"{name}: P[{s}] must map each of the {n_actions} actions to a list of outcomes")
        for a in range(n_actions):
            outcomes = actions.get(a)
            if not outcomes:
                raise ValueError(f"{name}: P[{s}][{a}] has no outcome")
            for outcome in outcomes:
                if len(outcome) != 4:
                    raise ValueError(f"{name}: P[{s}][{a}] entries must be (prob, next_state, reward, terminated); "
                                     f"got {outcome!r}")
                prob, nxt, reward, terminated = outcome
                entries.append((s * n_actions + a, int(nxt), float(prob), float(reward), bool(terminated)))
    rows, nxt, prob, reward, terminated = (np.array(column) for column in zip(*entries))
    if np.any((nxt < 0) | (nxt >= n_states)):
        raise ValueError(f"{name}: a next state of P is outside [0, {n_states - 1}]")
    sink = bool(terminated.any())
    total = n_states + int(sink)
    nxt = np.where(terminated, n_states, nxt) if sink else nxt
    transitions = np.zeros((total * n_actions, total))
    np.add.at(transitions, (rows, nxt), prob)
    reward_sa = np.zeros(total * n_actions)
    np.add.at(reward_sa, rows, prob * reward)
    if sink:
        transitions[n_states * n_actions:, n_states] = 1.0  # the sink's self-loops
    reward_sa = reward_sa.reshape(total, n_actions)
    state_reward = np.allclose(reward_sa, reward_sa[:, :1], rtol=0.0, atol=1e-12)

    init = getattr(base, "initial_state_distrib", None)
    if init is None:
        raise ValueError(f"{name} has no initial_state_distrib; build TabularMDP(...) from P yourself with the "
                         "initial distribution you want")
    init = np.asarray(init, dtype=np.float64).ravel()
    if init.shape != (n_states,):
        raise ValueError(f"{name}: initial_state_distrib must have shape ({n_states},); got {init.shape}")
    if horizon is None:
        horizon = getattr(getattr(env, "spec", None), "max_episode_steps", None)
    names = getattr(base, "action_names", None)
    return {
        "transitions": transitions,
        "reward": reward_sa[:, 0] if state_reward else reward_sa,
        "features": _features(features, n_states, sink),
        "initial_state_dist": np.append(init, 0.0) if sink else init,
        "gamma": gamma,
        "horizon": horizon,
        "action_names": tuple(names) if names is not None and len(names) == n_actions else (),
        "name": str(name),
    }


def seals_arrays(env: Any, *, gamma: float = 0.99, features: Any = None) -> dict:
    """The :class:`TabularMDP` arguments of a seals tabular model (``seals.base_envs.BaseTabularModelPOMDP``).

    Args:
        env: the seals environment (wrapped or not): ``transition_matrix`` ``(S, A, S)``, ``reward_matrix``
            ``(S,)``, ``(S, A)`` or ``(S, A, S)``, ``horizon``, ``initial_state_dist`` ``(S,)``.
        gamma: the discount (default 0.99).
        features: ``(S, d)`` state features; defaults to one-hot ``(S, S)`` (not seals' observation matrix, which
            may be partial: pass ``env.observation_matrix`` to use it).

    Raises:
        ValueError: the environment is not a seals tabular model.
    """
    base = getattr(env, "unwrapped", env)
    missing = [key for key in ("transition_matrix", "reward_matrix", "initial_state_dist")
               if getattr(base, key, None) is None]
    if missing:
        raise ValueError(f"{type(base).__name__} is not a seals tabular model (no {', '.join(missing)})")
    transition = np.asarray(base.transition_matrix, dtype=np.float64)
    if transition.ndim != 3 or transition.shape[0] != transition.shape[2]:
        raise ValueError(f"transition_matrix must have shape (S, A, S); got {transition.shape}")
    n_states, n_actions, _ = transition.shape
    reward = np.asarray(base.reward_matrix, dtype=np.float64)
    if reward.ndim == 3:
        reward = (transition * reward).sum(axis=2)  # expected over the next state
    return {
        "transitions": transition.reshape(n_states * n_actions, n_states),
        "reward": reward,
        "features": _features(features, n_states, sink=False),
        "initial_state_dist": np.asarray(base.initial_state_dist, dtype=np.float64),
        "gamma": gamma,
        "horizon": getattr(base, "horizon", None),
        "name": type(base).__name__,
    }
