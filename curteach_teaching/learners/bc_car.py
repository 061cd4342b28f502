"""The CrossEnt-BC learner of the car experiment and its imitation ``BC`` trainer (docs: ``docs/teaching/learners.md``).

:class:`BCCarLearner` holds a :class:`~curteach_teaching.learners.bc.QuadraticSoftmaxPolicy` and offers the
teachers' :class:`~curteach_teaching.teaching.teachers.PolicyView` (its ``(S, A)`` action log-probabilities). It learns
from
demonstration *sets* (a start's stored trajectories, ``n_pairs`` state-action pairs) by one of two updates:

* ``"batch"`` (the paper's learner model): imitation's ``BC`` (:func:`make_bc_trainer`) takes one plain SGD step on
  the set. imitation's loss is the *mean* negative log-likelihood, so the SGD rate is ``learning_rate * n_pairs``:
  exactly a step of ``learning_rate`` on the *summed* log-likelihood.
* ``"sequential"`` (the original code): one SGD step of ``learning_rate`` per pair, in order
  (:func:`~curteach_teaching.learners.bc.sequential_sgd`, a direct NumPy implementation).

:func:`step_many` steps several learners at once, one set each, as the experiment's teachers do in lockstep.
"""

from __future__ import annotations

import numpy as np
import torch as th
from imitation.algorithms.bc import BC

from curteach_teaching.learners.bc import QuadraticSoftmaxPolicy, action_features, quadratic_log_policy, sequential_sgd
from curteach_teaching.learners.divergence import LearnerDiverged, all_finite
from curteach_teaching.learners.quiet_logger import silent_logger
from curteach_teaching.names import BC_UPDATES
from curteach_teaching.planning import expected_return

__all__ = ["UPDATES", "BCCarLearner", "make_bc_trainer", "step_many"]

#: The learner's update rules (``"batch"``, ``"sequential"``).
UPDATES = BC_UPDATES


def make_bc_trainer(policy: QuadraticSoftmaxPolicy, n_pairs: int, learning_rate: float, rng: np.random.Generator,
                    device: str = "cpu") -> BC:
    """imitation's ``BC`` that takes one plain SGD step of ``learning_rate`` on the summed log-likelihood of a set.

    Args:
        policy: the learner's policy (trained in place; BC moves it to ``device``).
        n_pairs: state-action pairs per set (the batch size); BC averages over them, so SGD's rate is
            ``learning_rate * n_pairs``.
        learning_rate: the step size on the summed log-likelihood (the original: 0.01).
        rng: BC's generator.
        device: where the policy trains (``"cpu"``, ``"cuda:0"``, ...; a run's
            :func:`~curteach_teaching.sweeps.devices.run_device`); BC puts each batch there.
    """
    return BC(
        observation_space=policy.observation_space,
        action_space=policy.action_space,
        rng=rng,
        policy=policy,
        batch_size=n_pairs,
        optimizer_cls=th.optim.SGD,
        optimizer_kwargs={"lr": learning_rate * n_pairs},
        ent_weight=0.0,
        l2_weight=0.0,
        device=device,
        custom_logger=silent_logger(),
    )


class BCCarLearner:
    """A CrossEnt-BC learner on the car; offers the teachers' :class:`~curteach_teaching.teaching.teachers.PolicyView`.

    Args:
        mdp: the car MDP.
        update: ``"batch"`` (imitation's BC, one step on the set's summed log-likelihood) or ``"sequential"``.
        learning_rate: the original's 0.01.
        n_pairs: pairs per demonstration set (batch size of the BC trainer).
        rng: the BC trainer's generator (batch mode).
        device: where the policy lives and (batch mode) trains; the sequential update is NumPy's and only writes
            the parameters there.
    """

    def __init__(self, mdp, *, update: str, learning_rate: float, n_pairs: int, rng: np.random.Generator,
                 device: str = "cpu"):
        if update not in UPDATES:
            raise ValueError(f"update must be one of {UPDATES}; got {update!r}")
        self.mdp = mdp
        self.update_rule = update
        self.learning_rate = float(learning_rate)
        self.n_pairs = int(n_pairs)
        self.features = action_features(mdp)
        self.policy = QuadraticSoftmaxPolicy.from_mdp(mdp).to(device)
        batch = update == "batch"
        self.trainer = make_bc_trainer(self.policy, self.n_pairs, self.learning_rate, rng, device) if batch else None
        self._log_policy: np.ndarray | None = None

    @property
    def theta(self) -> np.ndarray:
        """``(16,)`` current parameters (a copy of the policy's)."""
        return self.policy.theta_numpy()

    def set_theta(self, theta: np.ndarray) -> None:
        """Overwrite the parameters (e.g. after pre-training)."""
        self.policy.set_theta(theta)
        self._log_policy = None

    def action_log_probabilities(self) -> np.ndarray:
        """``(S, A)`` log-probabilities of the current policy (cached until the next update)."""
        if self._log_policy is None:
            self._log_policy = quadratic_log_policy(self.theta, self.features)
        return self._log_policy

    def expected_reward(self) -> float:
        """``R_true . rho^{pi_L, D_init}`` (the plotted metric)."""
        return float(expected_return(self.mdp, np.exp(self.action_log_probabilities())))

    def train_sets(self, states: np.ndarray, actions: np.ndarray, repeats: int = 1) -> None:
        """Train on demonstration sets in order, ``repeats`` times over the list.

        Args:
            states, actions: ``(m, n_pairs)`` the sets' pairs (one row per set, in order).
            repeats: passes over the m sets (pre-training sweeps).

        Raises:
            LearnerDiverged: the parameters or the policy became non-finite; the learner is left with the parameters
                it had before this call.
        """
        states, actions = np.asarray(states), np.asarray(actions)
        # a set whose every pair has psi = 0 (a T0 set) has exactly zero gradient under both rules: skip it
        informative = np.any(self.features[states] != 0.0, axis=(1, 2, 3))
        states, actions = states[informative], actions[informative]
        if states.shape[0] == 0 or repeats == 0:
            return
        before = self.theta
        if self.update_rule == "sequential":
            # sets chain exactly: every pair's step starts from the previous one's parameters
            flat_states = np.tile(states.reshape(-1), repeats)
            flat_actions = np.tile(actions.reshape(-1), repeats)
            with np.errstate(over="ignore", invalid="ignore"):
                theta = sequential_sgd(self.theta, self.features, flat_states, flat_actions, self.learning_rate)
            if not all_finite(theta):
                raise LearnerDiverged(self._diverged_message())
            self.policy.set_theta(theta)
        else:
            batches = [{"obs": s, "acts": a} for s, a in zip(states, actions, strict=True)]
            self.trainer.set_demonstrations(batches)
            self.trainer.train(n_epochs=repeats, progress_bar=False, log_interval=10**9)
        self._log_policy = None
        self._check_finite(before)

    def learn(self, lesson) -> None:
        """The :class:`~curteach_teaching.teaching.loop.Learner` update: one step on the lesson's demonstration set (its
        ``(n, L)`` pairs as one set, in order).

        Raises:
            LearnerDiverged: as :meth:`train_sets`.
        """
        self.train_sets(np.asarray(lesson.states).reshape(1, -1), np.asarray(lesson.actions).reshape(1, -1))

    def _diverged_message(self) -> str:
        return (f"a {self.update_rule} step of rate {self.learning_rate:g} made the BC learner's parameters or policy "
                "non-finite; the learner keeps its previous parameters")

    def _check_finite(self, before: np.ndarray) -> None:
        """Raise :class:`LearnerDiverged` after restoring ``before`` if the parameters or the policy are not finite."""
        theta = self.theta
        finite = all_finite(theta)
        if finite:  # a finite log-policy gives a finite policy and a finite expected reward
            with np.errstate(over="ignore", invalid="ignore"):
                finite = all_finite(self.action_log_probabilities())
        if not finite:
            with th.no_grad():  # set_theta refuses non-finite values; the previous ones are finite
                self.policy.theta.copy_(th.as_tensor(before, dtype=self.policy.dtype, device=self.policy.theta.device))
            self._log_policy = None
            raise LearnerDiverged(self._diverged_message())


def step_many(learners: list, states: np.ndarray, actions: np.ndarray) -> list:
    """One teaching step of several learners at once, learner ``i`` on its own set ``i``.

    The sequential learners share one vectorised :func:`~curteach_teaching.learners.bc.sequential_sgd` call (they
    must share the MDP and learning rate); batch learners step one by one. A learner whose step would make its
    parameters or policy non-finite is left as it was (see :mod:`curteach_teaching.learners.divergence`).

    Args:
        learners: the :class:`BCCarLearner` s.
        states, actions: ``(len(learners), n_pairs)`` the set of each learner.

    Returns:
        The indices of the learners whose step diverged (usually empty).
    """
    diverged = []
    sequential = [i for i, learner in enumerate(learners) if learner.update_rule == "sequential"]
    if sequential:
        first = learners[sequential[0]]
        before = np.stack([learners[i].theta for i in sequential])
        with np.errstate(over="ignore", invalid="ignore"):
            theta = sequential_sgd(before, first.features, states[sequential], actions[sequential], first.learning_rate)
        for row, i in enumerate(sequential):
            if not all_finite(theta[row]):
                diverged.append(i)
                continue
            learners[i].set_theta(theta[row])
            try:
                learners[i]._check_finite(before[row])
            except LearnerDiverged:
                diverged.append(i)
    for i, learner in enumerate(learners):
        if learner.update_rule == "batch":
            try:
                learner.train_sets(states[i : i + 1], actions[i : i + 1])
            except LearnerDiverged:
                diverged.append(i)
    return sorted(diverged)
