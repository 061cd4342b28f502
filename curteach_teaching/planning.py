"""Planning on a :class:`~curteach_envs.TabularMDP`: hard and soft value iteration, occupancy, feature expectations.

Everything is vectorised over states (sparse matrix products, no Python loop over states). On an acyclic MDP
(every environment of this library) backward induction is exact after ``mdp.depth`` sweeps; otherwise the
iteration runs until the sup-norm change falls below ``tol``.

Absorbing states end the episode: they are visited once and pass on no value or occupancy (see
:mod:`curteach_envs.tabular`). On the car MDP this reproduces the original code's sink exactly: the hard value of
the sink is 0, its soft value is ``log A``, and each start puts occupancy ``gamma ** horizon`` on it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from curteach_envs.tabular import TabularMDP

__all__ = [
    "PlanningResult",
    "hard_value_iteration",
    "soft_value_iteration",
    "policy_transition_matrix",
    "occupancy",
    "feature_expectations",
    "state_feature_expectations",
    "expected_return",
]

_DEFAULT_MAX_SWEEPS = 100_000


@dataclass(frozen=True)
class PlanningResult:
    """Output of a value iteration.

    Attributes:
        values: ``(S,)`` state values.
        q_values: ``(S, A)`` action values.
        policy: ``(S, A)`` action probabilities, rows sum to 1.
        log_policy: ``(S, A)`` log-probabilities. For the soft policy this is ``Q - V`` and never underflows,
            even where ``policy`` is exactly 0 in float64; for the hard policy it is ``-log(n)`` on the ``n`` tied
            optimal actions and ``-inf`` elsewhere.
        n_sweeps: number of Bellman sweeps performed.
    """

    values: np.ndarray
    q_values: np.ndarray
    policy: np.ndarray
    log_policy: np.ndarray
    n_sweeps: int


def _gamma(mdp: TabularMDP, gamma: float | None) -> float:
    if gamma is None:
        return mdp.gamma
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must be in [0, 1]; got {gamma}")
    return float(gamma)


def _reward_sa(mdp: TabularMDP, reward: np.ndarray | None) -> np.ndarray:
    """``(S, A)`` reward (a ``(S, 1)`` view for state rewards, broadcast in the backup)."""
    if reward is None:
        reward = mdp.reward
    reward = np.asarray(reward, dtype=np.float64)
    S, A = mdp.n_states, mdp.n_actions
    if reward.shape == (S,):
        return reward[:, None]
    if reward.shape == (S, A):
        return reward
    raise ValueError(f"reward must have shape ({S},) or ({S}, {A}); got {reward.shape}")


def _iterate(mdp: TabularMDP, backup, start: np.ndarray, tol: float, max_sweeps: int, what: str):
    """Apply ``backup`` exactly ``mdp.depth`` times (acyclic) or until the change is below ``tol``."""
    depth = mdp.depth
    state = start
    if depth is not None:
        extra = None
        for _ in range(depth):
            state, extra = backup(state)
        return state, extra, depth
    for sweep in range(1, max_sweeps + 1):
        new_state, extra = backup(state)
        change = np.max(np.abs(new_state - state)) if new_state.size else 0.0
        state = new_state
        if change < tol:
            return state, extra, sweep
    raise RuntimeError(
        f"{what} did not converge within {max_sweeps} sweeps (tol={tol}); "
        "with gamma = 1 the MDP must be acyclic or every policy must terminate"
    )


def _bellman_sweeps(mdp: TabularMDP, reward, gamma, combine, tol: float, max_sweeps: int, what: str):
    """Iterate ``Q = R + gamma * P V``, ``V = combine(Q)`` from ``V = 0``; returns ``(V, Q, n_sweeps)``."""
    R = _reward_sa(mdp, reward)
    g = _gamma(mdp, gamma)
    T = mdp.live_transitions
    S, A = mdp.n_states, mdp.n_actions

    def backup(V):
        Q = R + g * (T @ V).reshape(S, A)
        return combine(Q), Q

    return _iterate(mdp, backup, np.zeros(S), tol, max_sweeps, what)


def hard_value_iteration(
    mdp: TabularMDP,
    reward: np.ndarray | None = None,
    *,
    gamma: float | None = None,
    tie_tol: float = 1e-12,
    tol: float = 1e-10,
    max_sweeps: int = _DEFAULT_MAX_SWEEPS,
) -> PlanningResult:
    """Optimal values and the tie-uniform optimal policy.

    Actions whose Q-value lies within ``tie_tol`` of the state's maximum share the probability uniformly (the
    original expert's rule).

    Args:
        mdp: the MDP.
        reward: ``(S,)`` or ``(S, A)`` reward; defaults to ``mdp.reward``.
        gamma: discount; defaults to ``mdp.gamma``.
        tie_tol: absolute tolerance for ties between optimal actions.
        tol, max_sweeps: stopping rule for cyclic MDPs (unused on acyclic ones, which are solved exactly).
    """
    V, Q, sweeps = _bellman_sweeps(mdp, reward, gamma, lambda Q: Q.max(axis=1), tol, max_sweeps, "hard value iteration")
    optimal = (Q - V[:, None]) >= -tie_tol
    n_optimal = optimal.sum(axis=1, keepdims=True)
    policy = optimal / n_optimal
    # -log(n) directly, independent of how 1/n rounds: exact ties give exactly equal log-probabilities
    log_policy = np.where(optimal, -np.log(n_optimal.astype(np.float64)), -np.inf)
    return PlanningResult(values=V, q_values=Q, policy=policy, log_policy=log_policy, n_sweeps=sweeps)


def _logsumexp_rows(Q: np.ndarray) -> np.ndarray:
    top = Q.max(axis=1)
    return top + np.log(np.exp(Q - top[:, None]).sum(axis=1))


def soft_value_iteration(
    mdp: TabularMDP,
    reward: np.ndarray | None = None,
    *,
    gamma: float | None = None,
    tol: float = 1e-10,
    max_sweeps: int = _DEFAULT_MAX_SWEEPS,
) -> PlanningResult:
    """Soft (maximum-entropy) value iteration: ``V(s) = logsumexp_a Q(s, a)``, ``pi(a|s) = exp(Q(s,a) - V(s))``.

    Computed stably (max-shifted log-sum-exp); ``log_policy`` is exact even where ``policy`` underflows to 0.
    There is no temperature (as in the original learner).

    Args: as :func:`hard_value_iteration`.
    """
    V, Q, sweeps = _bellman_sweeps(mdp, reward, gamma, _logsumexp_rows, tol, max_sweeps, "soft value iteration")
    log_policy = Q - V[:, None]
    return PlanningResult(values=V, q_values=Q, policy=np.exp(log_policy), log_policy=log_policy, n_sweeps=sweeps)


def _check_policy(mdp: TabularMDP, policy: np.ndarray) -> np.ndarray:
    policy = np.asarray(policy, dtype=np.float64)
    S, A = mdp.n_states, mdp.n_actions
    if policy.shape != (S, A):
        raise ValueError(f"policy must have shape ({S}, {A}); got {policy.shape}")
    if not np.all(np.isfinite(policy)) or policy.min() < 0:
        raise ValueError("policy must hold finite probabilities >= 0")
    return policy


def policy_transition_matrix(mdp: TabularMDP, policy: np.ndarray) -> sp.csr_matrix:
    """``(S, S)`` CSR matrix ``P_pi[s, s'] = sum_a pi(a|s) P(s' | s, a)`` over live (non-absorbing) rows."""
    policy = _check_policy(mdp, policy)
    S, A = mdp.n_states, mdp.n_actions
    mix = sp.csr_matrix((policy.ravel(), np.arange(S * A), np.arange(0, S * A + 1, A)), shape=(S, S * A))
    return sp.csr_matrix(mix @ mdp.live_transitions)


def occupancy(
    mdp: TabularMDP,
    policy: np.ndarray,
    initial: np.ndarray | None = None,
    *,
    gamma: float | None = None,
    tol: float = 1e-12,
    max_sweeps: int = _DEFAULT_MAX_SWEEPS,
) -> np.ndarray:
    """Discounted state occupancy ``rho(s) = sum_t gamma^t P(S_t = s)`` of ``policy``.

    Args:
        mdp: the MDP.
        policy: ``(S, A)`` action probabilities.
        initial: ``(S,)`` initial distribution (default ``mdp.initial_state_dist``), or ``(K, S)`` for K
            distributions at once, e.g. ``mdp.state_indicator(mdp.start_states)`` for per-start occupancies.
        gamma: discount; defaults to ``mdp.gamma``.

    Returns:
        ``(S,)`` or ``(K, S)``, matching ``initial``. Not normalised: each row sums to the expected discounted
        episode length (absorbing states counted once).
    """
    g = _gamma(mdp, gamma)
    init = mdp.initial_state_dist if initial is None else np.asarray(initial, dtype=np.float64)
    S, A = mdp.n_states, mdp.n_actions
    if init.ndim not in (1, 2) or init.shape[-1] != S:
        raise ValueError(f"initial must have shape ({S},) or (K, {S}); got {init.shape}")
    policy = _check_policy(mdp, policy)
    # P_pi^T directly: (S, S*A) transposed transitions times the (S*A, S) matrix with pi(a|s) at row s*A + a, col s
    spread = sp.csr_matrix((policy.ravel(), np.repeat(np.arange(S), A), np.arange(S * A + 1)), shape=(S * A, S))
    flow_T = mdp.live_transitions_T @ spread
    start = init.T.copy()  # (S,) or (S, K)

    def backup(rho):
        return start + g * (flow_T @ rho), None

    rho, _, _ = _iterate(mdp, backup, np.zeros_like(start), tol, max_sweeps, "occupancy")
    return rho.T.copy()


def feature_expectations(
    mdp: TabularMDP,
    policy: np.ndarray,
    initial: np.ndarray | None = None,
    *,
    features: np.ndarray | None = None,
    gamma: float | None = None,
) -> np.ndarray:
    """Discounted feature expectations ``mu = rho^T Phi``: ``(d,)``, or ``(K, d)`` for ``(K, S)`` initials."""
    phi = mdp.features if features is None else np.asarray(features, dtype=np.float64)
    if phi.ndim != 2 or phi.shape[0] != mdp.n_states:
        raise ValueError(f"features must have shape ({mdp.n_states}, d); got {phi.shape}")
    return occupancy(mdp, policy, initial, gamma=gamma) @ phi


def state_feature_expectations(
    mdp: TabularMDP,
    policy: np.ndarray,
    *,
    features: np.ndarray | None = None,
    gamma: float | None = None,
    tol: float = 1e-12,
    max_sweeps: int = _DEFAULT_MAX_SWEEPS,
) -> np.ndarray:
    """Feature expectations of ``policy`` from every state: ``mu(s) = phi(s) + gamma sum_s' P_pi(s'|s) mu(s')``.

    Row ``s`` equals :func:`feature_expectations` started from the indicator of ``s``, for all states in one
    backward pass instead of ``S`` forward ones. Absorbing states count once (``mu(s) = phi(s)``).

    Args:
        mdp: the MDP.
        policy: ``(S, A)`` action probabilities.
        features: ``(S, d)`` state features; defaults to ``mdp.features``.
        gamma: discount; defaults to ``mdp.gamma``.

    Returns:
        ``(S, d)``.
    """
    phi = mdp.features if features is None else np.asarray(features, dtype=np.float64)
    if phi.ndim != 2 or phi.shape[0] != mdp.n_states:
        raise ValueError(f"features must have shape ({mdp.n_states}, d); got {phi.shape}")
    g = _gamma(mdp, gamma)
    flow = policy_transition_matrix(mdp, policy)

    def backup(mu):
        return phi + g * (flow @ mu), None

    mu, _, _ = _iterate(mdp, backup, np.zeros_like(phi), tol, max_sweeps, "feature expectations")
    return mu


def expected_return(
    mdp: TabularMDP,
    policy: np.ndarray,
    initial: np.ndarray | None = None,
    *,
    reward: np.ndarray | None = None,
    gamma: float | None = None,
) -> np.ndarray | float:
    """Expected discounted return of ``policy``: ``sum_s rho(s) sum_a pi(a|s) r(s, a)``.

    A float for a 1-D ``initial``, ``(K,)`` for ``(K, S)`` initials.
    """
    policy = _check_policy(mdp, policy)
    rho = occupancy(mdp, policy, initial, gamma=gamma)
    R = _reward_sa(mdp, reward)
    per_state = (R * policy).sum(axis=1) if R.shape[1] > 1 else R[:, 0]
    result = rho @ per_state
    return float(result) if np.ndim(result) == 0 else result
