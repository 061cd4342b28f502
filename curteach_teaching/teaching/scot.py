"""SCOT (Brown & Niekum, AAAI 2019): machine teaching for IRL by a set cover of the behavioural equivalence class.

The paper's Scot baseline cites this algorithm; the authors' code used a stand-in (:func:`~curteach_teaching.
teachers.scot_batch`, a cover of start states by exactly equal feature expectations). This module implements the
published algorithm for a linear reward ``R(s) = w . psi(s)`` over a feature map ``psi``:

1. **BEC.** With ``mu(s)`` the feature expectations of the optimal policy from ``s`` and
   ``mu(s, a) = psi(s) + gamma sum_s' P(s'|s, a) mu(s')``, the optimal policy's behavioural equivalence class is
   ``{w : w . (mu(s, a) - mu(s, b)) >= 0}`` for every non-terminal state ``s`` (not only the starts), every optimal
   action ``a`` (ties included) and every other action ``b`` (:func:`bec_constraints`). A normal is zero when it is
   not longer than ``tol`` times ``|mu(s, a)| + |mu(s, b)|``, a test that scaling the features leaves unchanged.
2. **Minimal BEC.** Each half-space normal is scaled to unit length; zero normals and duplicates (within ``tol``
   of a normal already kept) are dropped (:func:`unique_directions`), then redundant half-spaces are removed one at
   a time with a linear programme: ``a_k`` is redundant if ``min a_k . w`` over
   ``{w : a_j . w >= 0, j != k, -1 <= w <= 1}`` is not negative (:func:`remove_redundant`; SciPy's HiGHS). The box
   keeps every programme bounded; the cone is homogeneous, so the box changes no answer.
3. **Candidates.** Demonstrations of the optimal policy (here: the teacher's pool). A demonstration's own
   constraints are those of step 1 along its visited pairs ``(s_t, a_t)``: ``mu(s_t, a_t) - mu(s_t, b)`` for every
   ``b != a_t`` (:func:`demonstration_constraints`).
4. **Greedy set cover** (:func:`greedy_cover`): repeatedly take the candidate whose constraints cover the most
   still-uncovered constraints of the minimal BEC (ties: the first candidate), until all are covered or no
   candidate covers anything new (then the rest is reported as uncovered).

**Feature maps.** ``"linear"`` is ``psi = phi``, the class Brown & Niekum assume. ``"quadratic"`` is
``psi = [phi, phi_i phi_j for i <= j]``: the car learner's reward ``theta_1 . phi + (theta_2 . phi)^2`` is linear
in this lift (with weights ``[theta_1, theta_2 theta_2^T]``), so its BEC is the relaxation of the learner's class
to every weight of the lifted space. It is the map that applies on the car: the original's true reward puts
``-4.5`` on HOV cells with police although ``w . phi`` gives them ``+1.5``; that interaction is a product of two
features, which the linear map cannot express (docs/teaching/scot.md shows what this does to the linear BEC).

Shapes: ``S`` states, ``A`` actions, ``d`` lifted features, ``m`` constraints, ``N`` candidates of ``L`` steps.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog

from curteach_envs.tabular import TabularMDP
from curteach_teaching.planning import state_feature_expectations

__all__ = [
    "FEATURE_MAPS",
    "SCOTResult",
    "feature_map",
    "state_action_feature_expectations",
    "optimal_actions",
    "bec_constraints",
    "unique_directions",
    "remove_redundant",
    "minimal_bec",
    "demonstration_constraints",
    "greedy_cover",
    "scot",
]

FEATURE_MAPS = ("linear", "quadratic")

#: two unit normals closer than this (Euclidean) are one constraint; also the matching rule of the cover
DEFAULT_TOL = 1e-6
#: an LP minimum above ``-REDUNDANCY_TOL`` counts as "not negative"; the LPs run with HiGHS' primal and dual
#: feasibility tolerances at ``LP_TOL``, below it
REDUNDANCY_TOL = 1e-8
LP_TOL = 1e-10


def feature_map(features: np.ndarray, kind: str = "linear") -> np.ndarray:
    """The feature map ``psi`` of the reward class.

    Args:
        features: ``(S, d0)`` state features ``phi``.
        kind: ``"linear"`` (``psi = phi``) or ``"quadratic"`` (``[phi, phi_i phi_j for i <= j]``, in the order
            of ``numpy.triu_indices``).

    Returns:
        ``(S, d0)`` or ``(S, d0 + d0 (d0 + 1) / 2)``.
    """
    phi = np.asarray(features, dtype=np.float64)
    if phi.ndim != 2:
        raise ValueError(f"features must be a 2-D (S, d) array; got shape {phi.shape}")
    if kind == "linear":
        return phi
    if kind != "quadratic":
        raise ValueError(f"feature map must be one of {FEATURE_MAPS}; got {kind!r}")
    i, j = np.triu_indices(phi.shape[1])
    return np.hstack([phi, phi[:, i] * phi[:, j]])


def state_action_feature_expectations(mdp: TabularMDP, policy: np.ndarray, features: np.ndarray) -> np.ndarray:
    """``mu(s, a) = psi(s) + gamma sum_s' P(s'|s, a) mu^pi(s')``: take ``a`` once, then follow ``policy``.

    Args:
        mdp: the MDP (absorbing states pass nothing on, as in :mod:`curteach_teaching.planning`).
        policy: ``(S, A)`` the policy followed after the first action.
        features: ``(S, d)`` the mapped features ``psi``.

    Returns:
        ``(S, A, d)``.
    """
    mu = state_feature_expectations(mdp, policy, features=features)  # (S, d)
    S, A = mdp.n_states, mdp.n_actions
    onward = (mdp.live_transitions @ mu).reshape(S, A, -1)
    return features[:, None, :] + mdp.gamma * onward


def optimal_actions(mdp: TabularMDP, policy: np.ndarray) -> np.ndarray:
    """``(S, A)`` bool: the support of an optimal policy given as deterministic or tie-uniform.

    Raises:
        ValueError: ``policy`` has the wrong shape, or a row of a non-absorbing state is not a uniform distribution
            over its support (a soft policy, or a row of zeros): SCOT needs the set of optimal actions, as
            :func:`~curteach_teaching.planning.hard_value_iteration` returns it in ``policy``.
    """
    policy = np.asarray(policy, dtype=np.float64)
    if policy.shape != (mdp.n_states, mdp.n_actions):
        raise ValueError(f"policy must have shape ({mdp.n_states}, {mdp.n_actions}); got {policy.shape}")
    support = policy > 0.0
    live = ~mdp.absorbing
    n = support.sum(axis=1)
    uniform = np.where(support, np.abs(policy - 1.0 / np.maximum(n, 1)[:, None]), 0.0).max(axis=1) <= 1e-9
    bad = np.flatnonzero(live & ~((n > 0) & uniform & np.isfinite(policy).all(axis=1)))
    if bad.size:
        raise ValueError(
            f"policy row {int(bad[0])} is not uniform over a set of optimal actions; SCOT needs a deterministic or "
            "tie-uniform optimal policy (hard_value_iteration(...).policy)"
        )
    return support


def _pair_normals(mu_sa: np.ndarray, s: np.ndarray, a: np.ndarray, b: np.ndarray, tol: float):
    """``mu(s, a) - mu(s, b)`` and whether each is non-zero: longer than ``tol`` times
    ``|mu(s, a)| + |mu(s, b)|`` (relative to its own terms, so scaling the features changes nothing)."""
    first, second = mu_sa[s, a], mu_sa[s, b]
    normals = first - second
    size = np.linalg.norm(first, axis=-1) + np.linalg.norm(second, axis=-1)
    return normals, np.linalg.norm(normals, axis=-1) > tol * size


def _raw_constraints(mdp: TabularMDP, optimal: np.ndarray, mu_sa: np.ndarray, tol: float):
    A = mdp.n_actions
    pairs = optimal[:, :, None] & ~np.eye(A, dtype=bool)[None, :, :]  # (S, A, A): (s, a, b)
    pairs &= ~mdp.absorbing[:, None, None]
    s, a, b = np.nonzero(pairs)
    return _pair_normals(mu_sa, s, a, b, tol)


def bec_constraints(
    mdp: TabularMDP, policy: np.ndarray, features: np.ndarray, tol: float = DEFAULT_TOL
) -> tuple[np.ndarray, np.ndarray]:
    """The raw half-space normals of the BEC of ``policy``.

    One normal ``mu(s, a) - mu(s, b)`` per non-absorbing state ``s``, optimal action ``a`` (:func:`optimal_actions`)
    and action ``b != a``.

    Args:
        mdp: the MDP.
        policy: ``(S, A)`` the optimal policy, deterministic or tie-uniform (as :func:`~curteach_teaching.planning.
            hard_value_iteration` returns it).
        features: ``(S, d)`` the mapped features.
        tol: a normal counts as zero when it is not longer than ``tol * (|mu(s, a)| + |mu(s, b)|)``.

    Returns:
        ``(normals, nonzero)``: ``(m, d)`` ordered by ``(s, a, b)``, and ``(m,)`` bool.
    """
    optimal = optimal_actions(mdp, policy)
    return _raw_constraints(mdp, optimal, state_action_feature_expectations(mdp, policy, features), tol)


def unique_directions(
    normals: np.ndarray, tol: float = DEFAULT_TOL, nonzero: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Unit-length normals without zeros and duplicates.

    Rows that are exactly zero, or marked false in ``nonzero``, are dropped. The rest are scaled to unit length and
    taken in order: a unit normal within ``tol`` (Euclidean) of one already kept is a duplicate of it.

    Args:
        normals: ``(m, d)``.
        tol: the duplicate tolerance.
        nonzero: ``(m,)`` bool, the rows to consider (default: every row that is not exactly zero).

    Returns:
        ``(units, index)``: ``(m', d)`` unit normals and ``(m',)`` the row of ``normals`` each came from, in
        increasing order. Every dropped duplicate lies within ``tol`` of a kept row.
    """
    normals = np.asarray(normals, dtype=np.float64)
    if normals.ndim != 2:
        raise ValueError(f"normals must be a 2-D (m, d) array; got shape {normals.shape}")
    if not np.all(np.isfinite(normals)):
        raise ValueError("normals must be finite")
    norms = np.linalg.norm(normals, axis=1)
    keep = norms > 0.0
    if nonzero is not None:
        keep &= np.asarray(nonzero, dtype=bool)
    index = np.flatnonzero(keep)
    units = normals[index] / norms[index, None]
    _, first = np.unique(units, axis=0, return_index=True)  # exact repeats, cheaply
    first = np.sort(first)
    kept = np.empty((len(first), normals.shape[1]))
    chosen = []
    for row in first:  # one pass over the distinct directions, each compared with the kept ones only
        if chosen and np.min(np.sum((kept[: len(chosen)] - units[row]) ** 2, axis=1)) <= tol * tol:
            continue
        kept[len(chosen)] = units[row]
        chosen.append(row)
    chosen = np.array(chosen, dtype=np.int64)
    return units[chosen].reshape(-1, normals.shape[1]), index[chosen]


def _lp_minimum(objective: np.ndarray, others: np.ndarray, box: float) -> float:
    d = objective.size
    result = linprog(
        objective,
        A_ub=-others if len(others) else None,
        b_ub=np.zeros(len(others)) if len(others) else None,
        bounds=[(-box, box)] * d,
        method="highs",
        options={"primal_feasibility_tolerance": LP_TOL, "dual_feasibility_tolerance": LP_TOL},
    )
    if result.status != 0:  # the box makes "unbounded" impossible and w = 0 is always feasible
        raise RuntimeError(f"the redundancy LP failed: {result.message}")
    return float(result.fun)


def remove_redundant(units: np.ndarray, box: float = 1.0, tol: float = REDUNDANCY_TOL) -> np.ndarray:
    """Indices of a minimal subset of half-spaces ``{w : units[k] . w >= 0}`` with the same intersection.

    Constraints are tested in order, each against those not yet removed: ``k`` goes if ``min units[k] . w`` over
    the others and the box ``|w_i| <= box`` is ``>= -tol`` (removing a redundant half-space leaves the
    intersection unchanged, so later tests stay valid). Feed it :func:`unique_directions`' output: of two equal
    half-spaces this would drop one anyway, at the cost of an LP.

    Args:
        units: ``(m, d)`` normals (any positive scale: rows are scaled to unit length first).
        box: half-width of the bounding box.
        tol: tolerance of "not negative", for unit normals and a unit box.

    Returns:
        ``(m',)`` increasing row indices of the kept constraints.
    """
    units = np.asarray(units, dtype=np.float64)
    if units.ndim != 2:
        raise ValueError(f"units must be a 2-D (m, d) array; got shape {units.shape}")
    if not box > 0:
        raise ValueError(f"box must be > 0; got {box!r}")
    lengths = np.linalg.norm(units, axis=1)
    # unit rows for the solver: its tolerances are absolute, so a very short normal would otherwise count as none
    units = units / np.where(lengths > 0, lengths, 1.0)[:, None]
    kept = lengths > 0.0  # a zero normal constrains nothing
    for k in np.flatnonzero(kept):
        kept[k] = False  # tested against the others only
        kept[k] = _lp_minimum(units[k], units[kept], box) < -tol * box
    return np.flatnonzero(kept)


def minimal_bec(mdp: TabularMDP, policy: np.ndarray, features: np.ndarray, tol: float = DEFAULT_TOL) -> np.ndarray:
    """Steps 1-2: the non-redundant unit normals of the BEC of ``policy``, ``(m, d)``."""
    optimal = optimal_actions(mdp, policy)
    mu_sa = state_action_feature_expectations(mdp, policy, features)
    return _minimal_bec(mdp, optimal, mu_sa, tol)[0]


def _minimal_bec(mdp: TabularMDP, optimal: np.ndarray, mu_sa: np.ndarray, tol: float):
    """``(bec (m, d), n_raw, n_unique)``: steps 1-2 from the optimal actions and ``mu(s, a)``."""
    raw, nonzero = _raw_constraints(mdp, optimal, mu_sa, tol)
    units, _ = unique_directions(raw, tol, nonzero)
    return units[remove_redundant(units)], len(raw), len(units)


def demonstration_constraints(
    mdp: TabularMDP, mu_sa: np.ndarray, states: np.ndarray, actions: np.ndarray, tol: float = DEFAULT_TOL
) -> tuple[np.ndarray, np.ndarray]:
    """The constraints each demonstration implies, as unit normals.

    Args:
        mdp: the MDP (pairs at absorbing states imply nothing).
        mu_sa: ``(S, A, d)`` from :func:`state_action_feature_expectations`.
        states: ``(N, L)`` the states at which the demonstrations act.
        actions: ``(N, L)`` their actions.
        tol: the zero test of :func:`bec_constraints`.

    Returns:
        ``(units, valid)``: ``(N, L, A - 1, d)`` unit normals ``mu(s_t, a_t) - mu(s_t, b)`` over ``b != a_t``
        (in increasing ``b``), and ``(N, L, A - 1)`` bool, false for zero normals and absorbing states.
    """
    states = np.asarray(states, dtype=np.int64)
    actions = np.asarray(actions, dtype=np.int64)
    if states.shape != actions.shape or states.ndim != 2:
        raise ValueError(f"states and actions must both be (N, L); got {states.shape} and {actions.shape}")
    S, A = mdp.n_states, mdp.n_actions
    if actions.size and (actions.min() < 0 or actions.max() >= A):
        raise ValueError(f"actions must be in [0, {A - 1}]")
    if states.size and (states.min() < 0 or states.max() >= S):
        raise ValueError(f"states must be in [0, {S - 1}]")
    others = np.array([[b for b in range(A) if b != a] for a in range(A)], dtype=np.int64).reshape(A, A - 1)
    other = others[actions]  # (N, L, A - 1)
    taken = np.broadcast_to(actions[..., None], other.shape)
    normals, nonzero = _pair_normals(mu_sa, np.broadcast_to(states[..., None], other.shape), taken, other, tol)
    valid = nonzero & ~mdp.absorbing[states][..., None]  # (N, L, A - 1)
    norms = np.linalg.norm(normals, axis=-1)
    units = np.where(valid[..., None], normals / np.where(valid, norms, 1.0)[..., None], 0.0)
    return units, valid


def greedy_cover(
    targets: np.ndarray, candidate_units: np.ndarray, candidate_valid: np.ndarray, tol: float = DEFAULT_TOL
) -> tuple[list[int], np.ndarray]:
    """Step 4: greedy set cover of ``targets`` by the candidates' constraints.

    A candidate covers a target when one of its valid unit normals lies within ``tol`` of it (Euclidean).

    Args:
        targets: ``(m, d)`` unit normals (the minimal BEC).
        candidate_units: ``(N, c, d)`` unit normals per candidate (``c`` constraints each, padded).
        candidate_valid: ``(N, c)`` bool, which are real.
        tol: the matching tolerance.

    Returns:
        ``(picks, uncovered)``: candidate indices in cover order, and ``(m,)`` bool for the targets no candidate
        covers (all false when the cover is complete).
    """
    targets = np.asarray(targets, dtype=np.float64)
    candidate_units = np.asarray(candidate_units, dtype=np.float64)
    N, d = candidate_units.shape[0], candidate_units.shape[-1]
    if targets.ndim != 2 or targets.shape[1] != d:
        raise ValueError(f"targets must be (m, {d}) like the candidates' normals; got shape {targets.shape}")
    c = int(np.prod(candidate_units.shape[1:-1]))
    if N == 0 or c == 0:
        return [], np.ones(len(targets), dtype=bool)
    flat = candidate_units.reshape(N, c, d)
    valid = np.asarray(candidate_valid, dtype=bool).reshape(N, c)
    close = np.sum((flat[:, :, None, :] - targets[None, None, :, :]) ** 2, axis=-1) <= tol * tol  # (N, c, m)
    covers = (close & valid[:, :, None]).any(axis=1)  # (N, m)
    uncovered = np.ones(len(targets), dtype=bool)
    picks: list[int] = []
    while uncovered.any():
        gains = (covers & uncovered[None, :]).sum(axis=1)
        best = int(np.argmax(gains))  # first of the largest
        if gains[best] == 0:
            break
        picks.append(best)
        uncovered &= ~covers[best]
    return picks, uncovered


@dataclass(frozen=True)
class SCOTResult:
    """What :func:`scot` computed.

    Attributes:
        bec: ``(m, d)`` the minimal BEC's unit normals.
        n_raw: number of raw BEC constraints (step 1, zero normals included).
        n_unique: after dropping zeros and duplicates.
        picks: candidate indices, in cover order.
        uncovered: ``(m,)`` bool, the BEC constraints no candidate covers.
        feature_map: the feature map used.
    """

    bec: np.ndarray
    n_raw: int
    n_unique: int
    picks: list
    uncovered: np.ndarray
    feature_map: str

    @property
    def complete(self) -> bool:
        """Whether the picks cover the whole minimal BEC."""
        return not bool(self.uncovered.any())


def scot(
    mdp: TabularMDP,
    policy: np.ndarray,
    candidate_states: np.ndarray,
    candidate_actions: np.ndarray,
    *,
    kind: str = "linear",
    tol: float = DEFAULT_TOL,
) -> SCOTResult:
    """SCOT: the minimal BEC of ``policy`` and a greedy cover of it by the candidate demonstrations.

    Args:
        mdp: the MDP; its ``features`` are mapped by ``kind`` (:func:`feature_map`).
        policy: ``(S, A)`` the optimal policy, deterministic or tie-uniform (its support is the optimal actions).
        candidate_states: ``(N, L)`` states of the ``N`` candidate demonstrations.
        candidate_actions: ``(N, L)`` their actions.
        kind: ``"linear"`` or ``"quadratic"``.
        tol: duplicate and matching tolerance between unit normals.

    Returns:
        A :class:`SCOTResult`; ``picks`` index the candidates.
    """
    psi = feature_map(mdp.features, kind)
    policy = np.asarray(policy, dtype=np.float64)
    optimal = optimal_actions(mdp, policy)  # the checks, before any work
    mu_sa = state_action_feature_expectations(mdp, policy, psi)
    bec, n_raw, n_unique = _minimal_bec(mdp, optimal, mu_sa, tol)
    cand_units, cand_valid = demonstration_constraints(mdp, mu_sa, candidate_states, candidate_actions, tol)
    picks, uncovered = greedy_cover(bec, cand_units, cand_valid, tol)
    return SCOTResult(bec=bec, n_raw=n_raw, n_unique=n_unique, picks=picks, uncovered=uncovered, feature_map=kind)
