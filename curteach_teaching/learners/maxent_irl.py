"""The MaxEnt-IRL learner of the car experiments (docs: ``docs/teaching/learners.md``).

* Reward ``R_theta(s) = theta[:d] . phi(s) + (theta[d:] . phi(s))^2`` (``"quadratic"``, the original, ``theta`` in
  ``R^{2d}``) or ``theta . phi(s)`` (``"linear"``, ``R^d``); ``theta`` starts at all ones.
* Policy: soft value iteration on ``R_theta`` (no temperature).
* Update, given the teacher's exact occupancy ``rho_E`` of the demonstrated starts:
  ``theta <- Proj(theta - eta (rho_L - rho_E)^T G(theta))``, with ``G`` the reward's Jacobian (row ``s``:
  ``[phi(s), 2 (theta[d:] . phi(s)) phi(s)]``) at the pre-update ``theta`` and ``rho_L`` the learner's own
  occupancy from the same start distribution. ``Proj`` is the paper's projection onto a ball (off by default, as
  in the original).

**Fast path.** The learner makes about 2,400 updates per car run, so each update (soft VI, occupancy, gradient,
expected reward) is computed by backward/forward induction over the levels of the acyclic MDP: one small gather
per level instead of full sparse sweeps (:class:`_LevelledMDP`). Per-start occupancies come from the *task
decomposition*: when the live states reachable from different start states are disjoint,
``rho^{(s)} = 1[reachable from s] * rho^{P0} / P0(s)`` exactly. Both are exact and cross-checked against the generic
planners in the tests. Cyclic MDPs use the generic planners instead (slower, same results).
"""

from __future__ import annotations

import copy

import numpy as np
import scipy.sparse as sp

from curteach_envs._util import check_int
from curteach_envs.tabular import TabularMDP
from curteach_teaching.learners.divergence import LearnerDiverged, all_finite
from curteach_teaching.planning import occupancy as generic_occupancy
from curteach_teaching.planning import soft_value_iteration

__all__ = ["MaxEntIRLLearner", "REWARD_MODELS", "TaskDecomposition", "pretraining_learning_rate"]

REWARD_MODELS = ("quadratic", "linear")
#: the arrays a learner owns (copied by ``copy``) and, with the expected reward, its whole state after a step
_ARRAYS = ("parameters", "values", "q_values", "log_policy", "policy", "occupancy")
_STATE = (*_ARRAYS, "expected_reward")


def pretraining_learning_rate(step: int, initial: float = 0.5) -> float:
    """The original's decaying rate ``eta_i = initial / sqrt(i + 1)`` for step ``i = 0, 1, ...``."""
    return initial / np.sqrt(step + 1.0)


class _LevelledMDP:
    """Backward/forward induction over the levels of an acyclic MDP with a state reward.

    Level 0 holds states without live successors (absorbing); level ``l`` the states whose deepest live successor is
    on level ``l - 1``. Per level, successors are stored as padded ``(n_l, A, m)`` index and probability arrays.
    """

    def __init__(self, mdp: TabularMDP):
        S, A = mdp.n_states, mdp.n_actions
        live = mdp.live_transitions
        counts = np.diff(live.indptr)
        m = max(int(counts.max()), 1)
        succ = np.zeros((S * A, m), dtype=np.int64)
        prob = np.zeros((S * A, m))
        position = np.arange(live.nnz) - np.repeat(live.indptr[:-1], counts)
        rows = np.repeat(np.arange(S * A), counts)
        succ[rows, position] = live.indices
        prob[rows, position] = live.data
        succ, prob = succ.reshape(S, A, m), prob.reshape(S, A, m)

        level = mdp.state_levels
        if level is None:
            raise ValueError("the MDP is not acyclic; use the generic planners")
        self.n_states, self.n_actions = S, A
        self.levels = [np.flatnonzero(level == depth) for depth in range(level.max() + 1)]
        self.succ = [succ[states] for states in self.levels]
        self.prob = [prob[states] for states in self.levels]
        self.flat_succ = [s.reshape(len(states), -1) for s, states in zip(self.succ, self.levels, strict=True)]

    def soft_backup(self, reward: np.ndarray, gamma: float):
        """Soft VI: ``(values (S,), q_values (S, A), log_policy (S, A))``; log-policy exact where ``pi`` underflows."""
        S, A = self.n_states, self.n_actions
        V = np.zeros(S)
        Q = np.zeros((S, A))
        log_policy = np.zeros((S, A))
        for states, succ, prob in zip(self.levels, self.succ, self.prob, strict=True):
            q = reward[states, None] + gamma * (prob * V[succ]).sum(axis=2)
            shifted = q - q.max(axis=1, keepdims=True)  # exact zeros for tied actions
            log_norm = np.log(np.exp(shifted).sum(axis=1))
            V[states] = q.max(axis=1) + log_norm
            Q[states] = q
            log_policy[states] = shifted - log_norm[:, None]
        return V, Q, log_policy

    def occupancy(self, policy: np.ndarray, initial: np.ndarray, gamma: float) -> np.ndarray:
        """Discounted occupancy ``(S,)`` from ``initial`` (absorbing states visited once, pass nothing on)."""
        rho = np.array(initial, dtype=np.float64)
        for states, flat_succ, prob in zip(self.levels[::-1], self.flat_succ[::-1], self.prob[::-1], strict=True):
            flow = (gamma * rho[states])[:, None, None] * policy[states][:, :, None] * prob
            rho += np.bincount(flat_succ.ravel(), weights=flow.ravel(), minlength=self.n_states)
        return rho


class TaskDecomposition:
    """Start states whose reachable live states are disjoint (the car's 40 tasks).

    Attributes:
        start_states: ``(K,)`` start states.
        start_probability: ``(K,)`` ``P0`` of each start (all must be > 0).
        member: ``(K, S)`` float 0/1, live (non-absorbing) states reachable from each start.
        task_states: ``(K, m)`` the reachable states of each start in increasing order (padded with the start
            itself and masked by ``task_mask`` when tasks differ in size).
    """

    def __init__(self, mdp: TabularMDP):
        S = mdp.n_states
        adjacency = mdp.adjacency
        starts = mdp.start_states
        K = starts.size
        reach = sp.csr_matrix((np.ones(K), (np.arange(K), starts)), shape=(K, S))
        frontier = reach
        for _ in range(S):
            frontier = frontier @ adjacency
            frontier.data[:] = 1.0
            new = ((reach + frontier) > 0).astype(np.float64)
            if (new != reach).nnz == 0:
                break
            reach = new
        member = reach.toarray() > 0
        member[:, mdp.absorbing] = False
        if (member.sum(axis=0) > 1).any():
            raise ValueError("the live states reachable from different start states overlap; no task decomposition")
        p0 = mdp.initial_state_dist[starts]
        if (p0 <= 0).any():
            raise ValueError("every start state needs initial probability > 0 for the per-start occupancy trick")
        sizes = member.sum(axis=1)
        m = int(sizes.max())
        task_states = np.repeat(starts[:, None], m, axis=1)
        task_mask = np.zeros((K, m), dtype=bool)
        for k in range(K):  # once per MDP
            idx = np.flatnonzero(member[k])
            task_states[k, : idx.size] = idx
            task_mask[k, : idx.size] = True
        self.start_states = starts
        self.start_index = {int(s): k for k, s in enumerate(starts)}
        self.start_probability = p0
        self.member = member.astype(np.float64)
        self.task_states = task_states
        self.task_mask = task_mask

    def per_start(self, occupancy: np.ndarray) -> np.ndarray:
        """``(K, S)`` per-start occupancies ``member_k * rho / P0(s_k)`` from a ``(S,)`` occupancy under ``P0``."""
        return self.member * (occupancy / self.start_probability[:, None])

    def feature_expectations(self, occupancy: np.ndarray, features: np.ndarray) -> np.ndarray:
        """``(K, d)`` per-start feature expectations ``mu_k = sum_x rho^{(s_k)}(x) phi(x)``.

        Summed sequentially over each task's states in increasing order, so identical tasks (e.g. the 5 identical
        T7 instances) get bit-identical ``mu`` -- Scot's cover compares them for exact equality.
        """
        local = self.local(occupancy)
        mu = np.zeros((local.shape[0], features.shape[1]))
        for j in range(local.shape[1]):
            mu += local[:, j, None] * features[self.task_states[:, j]]
        return mu

    def local(self, occupancy: np.ndarray) -> np.ndarray:
        """``(K, m)`` per-start occupancy on each task's own states (padding = 0)."""
        values = occupancy[self.task_states] / self.start_probability[:, None]
        return np.where(self.task_mask, values, 0.0)


class MaxEntIRLLearner:
    """The original's ``quadratic_learner``: MaxEnt-IRL by gradient steps on given expert occupancies.

    Args:
        mdp: the MDP; its ``reward`` is the *true* reward, used only for :attr:`expected_reward` (the metric).
        reward_model: ``"quadratic"`` (default, the original) or ``"linear"``.
        learning_rate: ``eta`` (the original constructs the learner with 0.5 and teaches with 0.17).
        projection_radius: ``None`` (default, the original: no projection) or the radius of the ball onto which
            ``theta`` is projected after every step (the paper's ``Proj_Theta``; the original defined
            ``10 sqrt(8)`` but never used it).
        initial_parameters: ``(p,)``; defaults to all ones.

    Attributes (refreshed after every update): ``parameters`` ``(p,)``, ``values`` ``(S,)``, ``q_values`` and
    ``log_policy`` ``(S, A)``, ``occupancy`` ``(S,)`` (from ``mdp.initial_state_dist``), ``expected_reward``.
    """

    def __init__(
        self,
        mdp: TabularMDP,
        *,
        reward_model: str = "quadratic",
        learning_rate: float = 0.5,
        projection_radius: float | None = None,
        initial_parameters: np.ndarray | None = None,
    ):
        if reward_model not in REWARD_MODELS:
            raise ValueError(f"reward_model must be one of {REWARD_MODELS}; got {reward_model!r}")
        if projection_radius is not None and not projection_radius > 0:
            raise ValueError(f"projection_radius must be > 0 or None; got {projection_radius!r}")
        self.mdp = mdp
        self.reward_model = reward_model
        self.features = mdp.features
        self.n_features = mdp.n_features
        n_params = 2 * self.n_features if reward_model == "quadratic" else self.n_features
        theta = np.ones(n_params) if initial_parameters is None else np.array(initial_parameters, dtype=np.float64)
        if theta.shape != (n_params,):
            raise ValueError(f"initial_parameters must have shape ({n_params},); got {theta.shape}")
        self.learning_rate = float(learning_rate)
        self.projection_radius = projection_radius
        self.true_reward = np.asarray(mdp.reward, dtype=np.float64)
        if self.true_reward.ndim != 1:
            raise ValueError("the MaxEnt-IRL learner needs a state reward of shape (S,)")
        self._levelled = _LevelledMDP(mdp) if mdp.depth is not None else None
        self.tasks = TaskDecomposition(mdp)
        self.parameters = self._project(theta)
        self._refresh()

    # ------------------------------------------------------------------ model
    def reward(self, parameters: np.ndarray | None = None) -> np.ndarray:
        """``(S,)`` learned reward ``R_theta``."""
        theta = self.parameters if parameters is None else parameters
        d = self.n_features
        linear = self.features @ theta[:d]
        if self.reward_model == "linear":
            return linear
        return linear + (self.features @ theta[d:]) ** 2

    def reward_jacobian(self, parameters: np.ndarray | None = None) -> np.ndarray:
        """``(S, p)`` Jacobian ``G(theta)``, row ``s`` = ``[phi(s), 2 (theta[d:] . phi(s)) phi(s)]``."""
        theta = self.parameters if parameters is None else parameters
        if self.reward_model == "linear":
            return self.features
        d = self.n_features
        return np.hstack([self.features, 2.0 * (self.features @ theta[d:])[:, None] * self.features])

    def _project(self, theta: np.ndarray) -> np.ndarray:
        if self.projection_radius is None:
            return theta
        norm = np.linalg.norm(theta)
        return theta if norm <= self.projection_radius else theta * (self.projection_radius / norm)

    def _refresh(self) -> None:
        reward = self.reward()
        gamma = self.mdp.gamma
        if self._levelled is not None:
            self.values, self.q_values, self.log_policy = self._levelled.soft_backup(reward, gamma)
        else:
            result = soft_value_iteration(self.mdp, reward)
            self.values, self.q_values, self.log_policy = result.values, result.q_values, result.log_policy
        self.policy = np.exp(self.log_policy)
        self.occupancy = self.policy_occupancy(self.policy)
        self.expected_reward = float(self.true_reward @ self.occupancy)

    def policy_occupancy(self, policy: np.ndarray) -> np.ndarray:
        """``(S,)`` discounted occupancy of any ``(S, A)`` policy on the learner's MDP, from its initial distribution.

        By level induction on an acyclic MDP (exact, fast), else by the generic planner; e.g. the teacher's
        ``rho_E`` for the same MDP, computed as the learner computes its own :attr:`occupancy`.
        """
        if self._levelled is not None:
            return self._levelled.occupancy(policy, self.mdp.initial_state_dist, self.mdp.gamma)
        return generic_occupancy(self.mdp, policy)

    # ------------------------------------------------------------ teacher view
    def action_log_probabilities(self) -> np.ndarray:
        """``(S, A)`` ``log pi_theta(a|s) = Q - V`` (never underflows)."""
        return self.log_policy

    def occupancy_per_start(self) -> np.ndarray:
        """``(K, S)`` the learner's discounted occupancy from each start state (absorbing states excluded)."""
        return self.tasks.per_start(self.occupancy)

    def start_distribution(self, start) -> np.ndarray:
        """``(K,)`` weights over the start states: from a start state id, or validated ``(K,)`` weights."""
        K = self.tasks.start_states.size
        if np.ndim(start) == 0:
            index = self.tasks.start_index.get(int(start))
            if index is None:
                raise ValueError(f"{start} is not a start state; start states are {self.tasks.start_states.tolist()}")
            weights = np.zeros(K)
            weights[index] = 1.0
            return weights
        weights = np.asarray(start, dtype=np.float64)
        if weights.shape != (K,) or (weights < 0).any():
            raise ValueError(f"start weights must be a non-negative array of shape ({K},)")
        return weights

    def learner_occupancy(self, start) -> np.ndarray:
        """``(S,)`` ``sum_k w_k rho_L^{(s_k)}`` for a start state id or ``(K,)`` start weights."""
        weights = self.start_distribution(start)
        scale = weights / self.tasks.start_probability
        return (scale @ self.tasks.member) * self.occupancy

    def gradient(self, expert_occupancy: np.ndarray, start) -> np.ndarray:
        """``(p,)`` ``g = (rho_L - rho_E)^T G(theta)`` for one start state id or ``(K,)`` start weights.

        Args:
            expert_occupancy: ``(S,)`` the teacher's exact occupancy from the same start distribution.
            start: a start state id (teaching over states) or ``(K,)`` weights (pre-training, theta* fit).
        """
        expert_occupancy = np.asarray(expert_occupancy, dtype=np.float64)
        if expert_occupancy.shape != (self.mdp.n_states,):
            raise ValueError(f"expert_occupancy must have shape ({self.mdp.n_states},); got {expert_occupancy.shape}")
        difference = self.learner_occupancy(start) - expert_occupancy
        if self.reward_model == "linear":
            return difference @ self.features
        d = self.n_features
        first = difference @ self.features
        second = 2.0 * ((difference * (self.features @ self.parameters[d:])) @ self.features)
        return np.concatenate([first, second])

    def gradients_per_start(self, expert_occupancy_per_start: np.ndarray) -> np.ndarray:
        """``(K, p)`` the gradient each start state would give (Omn's look-ahead); input ``(K, S)``."""
        difference = self.occupancy_per_start() - expert_occupancy_per_start
        return difference @ self.reward_jacobian()

    # ----------------------------------------------------------------- update
    def update(self, expert_occupancy: np.ndarray, start, learning_rate: float | None = None) -> np.ndarray:
        """One step ``theta <- Proj(theta - eta g)``; then policy, occupancy and expected reward are refreshed.

        Args:
            expert_occupancy: ``(S,)`` teacher occupancy from ``start``.
            start: a start state id, or ``(K,)`` start weights.
            learning_rate: overrides :attr:`learning_rate` for this step.

        Returns:
            ``(p,)`` the gradient applied.

        Raises:
            LearnerDiverged: the step would make the parameters or the policy non-finite; the learner is left as it
                was before the step.
        """
        eta = self.learning_rate if learning_rate is None else float(learning_rate)
        g = self.gradient(expert_occupancy, start)
        before = {name: getattr(self, name) for name in _STATE}  # _refresh replaces these arrays, never edits them
        with np.errstate(over="ignore", invalid="ignore"):
            self.parameters = self._project(self.parameters - eta * g)
            if all_finite(self.parameters):
                self._refresh()
        if not all_finite(self.parameters, self.log_policy, self.occupancy, self.expected_reward):
            for name, value in before.items():
                setattr(self, name, value)
            raise LearnerDiverged(f"a step of rate {eta:g} made the MaxEnt-IRL learner's parameters or policy "
                                  "non-finite; the learner keeps its previous parameters")
        return g

    def learn(self, lesson) -> None:
        """The :class:`~curteach_teaching.teaching.loop.Learner` update: one :meth:`update` on the lesson's exact
        teacher
        occupancy from its start.

        Raises:
            ValueError: the lesson carries no occupancy (MaxEnt-IRL matches occupancy measures).
            LearnerDiverged: as :meth:`update`.
        """
        if lesson.occupancy is None:
            raise ValueError("the MaxEnt-IRL learner learns from the teacher's occupancy measure; this lesson has none "
                             "(build the LessonBook with occupancy_per_start)")
        self.update(lesson.occupancy, lesson.start_state)

    def fit(self, expert_occupancy: np.ndarray, start, n_steps: int, initial_rate: float = 0.5) -> MaxEntIRLLearner:
        """``n_steps`` updates on one target with ``eta_i = initial_rate / sqrt(i + 1)`` (pre-training, theta*)."""
        check_int("n_steps", n_steps, 0)
        for i in range(n_steps):
            self.update(expert_occupancy, start, learning_rate=pretraining_learning_rate(i, initial_rate))
        return self

    def copy(self) -> MaxEntIRLLearner:
        """An independent copy (shares the immutable MDP and precomputed structure)."""
        clone = copy.copy(self)
        for name in _ARRAYS:
            setattr(clone, name, getattr(self, name).copy())
        return clone
