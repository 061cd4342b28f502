"""Learners for any tabular MDP (cyclic ones included), for ``curteach teach`` and user experiments.

* :class:`LinearMaxEntIRL`: MaxEnt-IRL with a linear state reward ``R_theta(s) = phi(s) . theta``, soft value iteration
  for its policy, exact per-start occupancies; one step per lesson, ``theta <- theta - eta (rho_L^(s) - rho_E^(s))
  Phi`` (the paper's MaxEnt-IRL update, Section 4). Offers the views of Cur, Cur-L, BBox and Omn.
* :class:`TabularSoftmaxBC`: CrossEnt-BC over a free ``(S, A)`` table of logits: one gradient step of the mean
  log-likelihood of the lesson's state-action pairs.

Both keep their last finite parameters when a step would make them non-finite (``LearnerDiverged``), as the car
learners do. Unlike :class:`~curteach_teaching.learners.maxent_irl.MaxEntIRLLearner` (the car original's, which
needs disjoint tasks), nothing here assumes a structure of the MDP.
"""

from __future__ import annotations

import numpy as np

from curteach_envs._util import check_positive
from curteach_teaching.learners.divergence import LearnerDiverged, all_finite

__all__ = ["LinearMaxEntIRL", "TabularSoftmaxBC", "maxent_irl_learner", "bc_learner"]


def _is_policy(log_policy: np.ndarray, tolerance: float = 1e-6) -> bool:
    """Whether every row of ``exp(log_policy)`` sums to 1. Rewards near the largest floats pass the finiteness check
    yet lose the log-normaliser to rounding (``top + log k == top``), so tied actions each get probability 1: an
    overflow too, and the step is refused as one."""
    return bool(np.all(np.abs(np.exp(log_policy).sum(axis=1) - 1.0) <= tolerance))


class LinearMaxEntIRL:
    """MaxEnt-IRL with a linear state reward on any tabular MDP.

    Args:
        mdp: the MDP (only its dynamics, features ``(S, d)`` and discount are used).
        start_states: ``(K,)`` the states lessons start from (default ``mdp.start_states``).
        learning_rate: ``eta > 0``.
        initial_parameters: ``(d,)``; default zeros (the uniform policy).

    Attributes: ``parameters`` ``(d,)``, ``log_policy`` ``(S, A)``, ``occupancy_by_start`` ``(K, S)``.
    """

    name = "maxent-irl"

    def __init__(self, mdp, *, start_states=None, learning_rate: float = 0.1, initial_parameters=None):
        self.mdp = mdp
        self.start_states = np.asarray(mdp.start_states if start_states is None else start_states, dtype=np.int64)
        self.start_index = {int(s): k for k, s in enumerate(self.start_states)}
        self._initial = mdp.state_indicator(self.start_states)
        self.learning_rate = check_positive("learning_rate", learning_rate)
        d = mdp.n_features
        theta = np.zeros(d) if initial_parameters is None else np.array(initial_parameters, dtype=np.float64)
        if theta.shape != (d,):
            raise ValueError(f"initial_parameters must have shape ({d},); got {theta.shape}")
        self.parameters = theta
        S, A = mdp.n_states, mdp.n_actions
        # dense live dynamics: every step re-solves the soft Bellman equation and K occupancies, and at the sizes a
        # transition table has (hundreds of states) dense algebra with a warm start beats the generic sparse sweeps
        self._live = mdp.live_transitions.toarray().reshape(S, A, S)
        self._values = np.zeros(S)
        self._refresh()

    def _refresh(self, tol: float = 1e-12, max_iterations: int = 1000) -> None:
        """Soft policy iteration from the last values (each iteration solves the soft Bellman equation of the current
        policy exactly, so a warm start converges in a few iterations), then the per-start occupancies by one solve."""
        gamma, reward = self.mdp.gamma, self.mdp.features @ self.parameters
        identity = np.eye(self.mdp.n_states)
        values = self._values
        for _ in range(max_iterations):
            q = reward[:, None] + gamma * (self._live @ values)
            top = q.max(axis=1)
            log_norm = top + np.log(np.exp(q - top[:, None]).sum(axis=1))
            log_policy = q - log_norm[:, None]
            policy = np.exp(log_policy)
            flow = np.einsum("sa,sat->st", policy, self._live)  # P_pi over live states (absorbing rows are zero)
            entropy = -(policy * np.where(policy > 0, log_policy, 0.0)).sum(axis=1)
            new = np.linalg.solve(identity - gamma * flow, reward + entropy)
            done = np.max(np.abs(new - values)) <= tol * max(1.0, np.max(np.abs(new)))
            values = new
            if done:
                break
        q = reward[:, None] + gamma * (self._live @ values)
        top = q.max(axis=1)
        self.log_policy = q - (top + np.log(np.exp(q - top[:, None]).sum(axis=1)))[:, None]
        self._values = values
        flow = np.einsum("sa,sat->st", np.exp(self.log_policy), self._live)
        self.occupancy_by_start = np.linalg.solve(identity - gamma * flow.T, self._initial.T).T

    # views
    def action_log_probabilities(self) -> np.ndarray:
        """``(S, A)`` log-policy (soft-optimal for ``R_theta``)."""
        return self.log_policy

    def occupancy_per_start(self) -> np.ndarray:
        """``(K, S)`` the learner's discounted occupancy from each start."""
        return self.occupancy_by_start

    def gradients_per_start(self, expert_occupancy_per_start: np.ndarray) -> np.ndarray:
        """``(K, d)`` the gradient a lesson from each start would give (Omn's look-ahead)."""
        return (self.occupancy_by_start - expert_occupancy_per_start) @ self.mdp.features

    # update
    def step(self, expert_occupancy: np.ndarray, start_state: int) -> np.ndarray:
        """One step on the teacher's exact ``(S,)`` occupancy from ``start_state``; returns the gradient.

        Raises:
            ValueError: ``start_state`` is not one of :attr:`start_states`.
            LearnerDiverged: the step would make the parameters or the policy non-finite (nothing changes).
        """
        k = self.start_index.get(int(start_state))
        if k is None:
            raise ValueError(f"state {start_state} is not a start state of this learner")
        gradient = (self.occupancy_by_start[k] - np.asarray(expert_occupancy)) @ self.mdp.features
        before = (self.parameters, self.log_policy, self.occupancy_by_start)
        with np.errstate(over="ignore", invalid="ignore"):
            self.parameters = self.parameters - self.learning_rate * gradient
            if all_finite(self.parameters):
                self._refresh()
        if not all_finite(self.parameters, self.log_policy, self.occupancy_by_start) or not _is_policy(self.log_policy):
            self.parameters, self.log_policy, self.occupancy_by_start = before
            self._values = np.zeros(self.mdp.n_states)
            raise LearnerDiverged(f"a step of rate {self.learning_rate:g} made the MaxEnt-IRL learner non-finite")
        return gradient

    def fit(self, expert_occupancy_per_start: np.ndarray, n_steps: int, rate: float = 0.5) -> LinearMaxEntIRL:
        """``n_steps`` steps on every start's occupancy at once (uniform weights over the starts), with
        ``eta_i = rate / sqrt(i + 1)``: how ``theta*`` (what Omn steers to) is found."""
        weights = np.full(self.start_states.size, 1.0 / self.start_states.size)
        for i in range(n_steps):
            gradient = weights @ self.gradients_per_start(expert_occupancy_per_start)
            self.parameters = self.parameters - rate / np.sqrt(i + 1.0) * gradient
            self._refresh()
        return self

    def learn(self, lesson) -> None:
        """The :class:`~curteach_teaching.teaching.loop.Learner` update: :meth:`step` on the lesson's occupancy."""
        if lesson.occupancy is None:
            raise ValueError("the MaxEnt-IRL learner learns from the teacher's occupancy measure; this lesson has none")
        self.step(lesson.occupancy, lesson.start_state)


class TabularSoftmaxBC:
    """CrossEnt-BC over a free table of logits ``(S, A)``.

    Args:
        n_states, n_actions: the table's size.
        learning_rate: ``eta > 0`` for one gradient step of the mean log-likelihood per lesson.
    """

    name = "bc"

    def __init__(self, n_states: int, n_actions: int, *, learning_rate: float = 1.0):
        self.logits = np.zeros((int(n_states), int(n_actions)))
        self.learning_rate = check_positive("learning_rate", learning_rate)

    def action_log_probabilities(self) -> np.ndarray:
        """``(S, A)`` ``log softmax(logits)`` (never underflows)."""
        shifted = self.logits - self.logits.max(axis=1, keepdims=True)
        return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))

    def learn(self, lesson) -> None:
        """One step ``logits += eta * mean over pairs of (onehot(a) - pi(.|s))`` at the pairs' states.

        Raises:
            LearnerDiverged: the step would make the logits non-finite (nothing changes).
        """
        states, actions = np.asarray(lesson.states).ravel(), np.asarray(lesson.actions).ravel()
        gradient = np.zeros_like(self.logits)
        np.add.at(gradient, (states, actions), 1.0)
        np.add.at(gradient, states, -np.exp(self.action_log_probabilities()[states]))
        with np.errstate(over="ignore", invalid="ignore"):  # an overflow is divergence, reported by the check below
            logits = self.logits + self.learning_rate * gradient / max(states.size, 1)
        if not all_finite(logits):
            raise LearnerDiverged(f"a step of rate {self.learning_rate:g} made the BC logits non-finite")
        self.logits = logits


def maxent_irl_learner(context) -> LinearMaxEntIRL:
    """The ``maxent-irl`` learner factory: :class:`LinearMaxEntIRL` from a
    :class:`~curteach_teaching.teaching.loop.LearnerContext`."""
    return LinearMaxEntIRL(context.mdp, start_states=context.start_states, learning_rate=context.learning_rate)


def bc_learner(context) -> TabularSoftmaxBC:
    """The ``bc`` learner factory: :class:`TabularSoftmaxBC` from a
    :class:`~curteach_teaching.teaching.loop.LearnerContext`."""
    return TabularSoftmaxBC(context.mdp.n_states, context.mdp.n_actions, learning_rate=context.learning_rate)
