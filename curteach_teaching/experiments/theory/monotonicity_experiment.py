"""The monotonicity measurement as a sweep experiment: one run's realizable learner (MDP, ``theta*``, teacher, pool
and learner), its teaching path, and the scoring of every candidate at each checkpoint; the quantities and the
statistics are those of :mod:`~curteach_teaching.experiments.theory.monotonicity`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from curteach_envs._util import check_int, check_positive
from curteach_envs.car import car_tabular, sample_road
from curteach_teaching.demonstrations import sample_demonstrations
from curteach_teaching.difficulty import curriculum_scores
from curteach_teaching.experiments.theory.monotonicity import (
    AGGREGATION,
    LEARNERS,
    LEVELS,
    STATISTICS,
    bc_gradients,
    candidate_statistics,
    demonstration_difficulties,
    irl_gradients,
    linear_softmax_log_policy,
    one_step_decrease,
    start_difficulties,
    step_size_ratio,
)
from curteach_teaching.learners.divergence import LearnerDiverged, all_finite
from curteach_teaching.sweeps.results import RunResult

__all__ = ["BCSetup", "IRLSetup", "MonotonicityExperiment", "monotonicity_setup"]


def monotonicity_setup(experiment, learner: str, seed_sequence: np.random.SeedSequence):
    """The :class:`IRLSetup` or :class:`BCSetup` of one run.

    Every learner model of run ``i`` draws the same road, ``theta*``, ``theta_1`` and sequence of Agn's random
    numbers (one spawn of the run's seed sequence each); the pools differ because the teachers' policies do.
    """
    from curteach_teaching.experiments.theory.theorem2 import random_layered_mdp

    road_seed, theta_seed, init_seed, pool_seed, agn_seed = seed_sequence.spawn(5)
    if experiment.mdp_kind == "car":
        mdp = car_tabular(sample_road(np.random.default_rng(road_seed)), gamma=experiment.gamma)
    else:
        mdp = random_layered_mdp(np.random.default_rng(road_seed), gamma=experiment.gamma)
    d = mdp.n_features
    theta_star = np.random.default_rng(theta_seed).normal(size=d) * experiment.theta_scale
    theta_1 = np.random.default_rng(init_seed).normal(size=d) * experiment.theta_scale
    rngs = {"pool": np.random.default_rng(pool_seed), "agn": np.random.default_rng(agn_seed)}
    kind = IRLSetup if learner == "irl" else BCSetup
    return kind(mdp, theta_star, theta_1, experiment.teaching_rate, experiment.n_per_start, rngs)


def _pick(log_ratio: np.ndarray) -> int:
    # the first maximum, as the teachers break ties
    return int(np.argmax(log_ratio))


@dataclass
class _Scored:
    """Shared scoring of the candidates of one level, given gradients and difficulties."""

    theta_star: np.ndarray

    def _values(self, theta, gradients, log_psi_e, log_psi_l, cur) -> dict:
        return {"gradients": gradients, "progress": -(gradients @ (self.theta_star - theta)),
                "log_psi_E": log_psi_e, "log_psi_L": log_psi_l, "cur": cur}


class IRLSetup(_Scored):
    """A linear MaxEnt-IRL learner and the soft-optimal teacher of ``theta*`` (the MDP's reward becomes
    ``phi . theta*``), on the MDP's full-length episodes.

    Attributes: ``mdp``, ``theta_star`` ``(d,)``, ``teacher`` and ``learner``
    (:class:`~curteach_teaching.learners.maxent_irl.MaxEntIRLLearner`), ``pool``, ``expert_per_start`` ``(K, S)``,
    ``diverged_steps`` (teaching steps refused because they made the learner non-finite).
    """

    aggregation = AGGREGATION["irl"]

    def __init__(self, mdp, theta_star, theta_1, teaching_rate, n_per_start, rngs):
        from curteach_teaching.learners.maxent_irl import MaxEntIRLLearner

        super().__init__(theta_star)
        self.mdp = mdp.replace(reward=mdp.features @ theta_star)
        self.teacher = MaxEntIRLLearner(self.mdp, reward_model="linear", initial_parameters=theta_star)
        self.pool = sample_demonstrations(self.mdp, self.teacher.policy, rngs["pool"], n_per_start=n_per_start,
                                          length=self.mdp.horizon)
        self.learner = MaxEntIRLLearner(self.mdp, reward_model="linear", learning_rate=teaching_rate,
                                        initial_parameters=theta_1)
        self.expert_per_start = self.teacher.occupancy_per_start()
        self.agn = rngs["agn"]
        self.diverged_steps = 0

    @property
    def theta(self) -> np.ndarray:
        """``(d,)`` the learner's current parameters."""
        return self.learner.parameters

    def teach_random_start(self) -> None:
        """One step of Agn: a uniformly random start, the learner's update on the teacher's exact occupancy."""
        k = int(self.agn.integers(self.pool.n_starts))
        try:
            self.learner.update(self.expert_per_start[k], int(self.pool.start_states[k]))
        except LearnerDiverged:
            self.diverged_steps += 1

    def score(self, level: str) -> dict:
        """Gradients ``(N, d)``, ``progress = -<theta* - theta, g>``, ``log_psi_E``, ``log_psi_L`` ``(N,)`` and Cur's
        pick ``cur`` of every candidate of ``level`` (``"demonstrations"`` or ``"starts"``)."""
        pool, teacher_log, learner_log = self.pool, self.teacher.log_policy, self.learner.log_policy
        log_psi_e, log_psi_l = demonstration_difficulties(teacher_log, learner_log, pool.states, pool.actions)
        if level == "demonstrations":
            gradients = irl_gradients(self.learner, pool.states.reshape(-1, pool.length))
            return self._values(self.theta, gradients, log_psi_e.ravel(), log_psi_l.ravel(),
                                _pick(log_psi_l.ravel() - log_psi_e.ravel()))
        gradients = self.learner.gradients_per_start(self.expert_per_start)
        start_e, start_l = start_difficulties(log_psi_e, log_psi_l, self.aggregation)
        cur = _pick(curriculum_scores(teacher_log, learner_log, pool.states, pool.actions, self.aggregation))
        return self._values(self.theta, gradients, start_e, start_l, cur)


class BCSetup(_Scored):
    """A linear CrossEnt-BC learner ``pi_theta = softmax_a(theta . psi(s, a))`` and the teacher ``pi_theta*``.

    Attributes: ``mdp``, ``features`` ``(S, A, d)``, ``theta_star``, ``theta`` ``(d,)``, ``teacher_log_policy``
    ``(S, A)``, ``pool``, ``teaching_rate``, ``diverged_steps``.
    """

    aggregation = AGGREGATION["bc"]

    def __init__(self, mdp, theta_star, theta_1, teaching_rate, n_per_start, rngs):
        super().__init__(theta_star)
        self.mdp = mdp
        # the car BC learner's psi(s, a) = sum_s' T(s, a, s') phi(s') (learners.bc.action_features, which would
        # import torch: seconds per worker for one matrix product)
        self.features = np.asarray(mdp.transitions @ mdp.features).reshape(mdp.n_states, mdp.n_actions, -1)
        self.teacher_log_policy = linear_softmax_log_policy(theta_star, self.features)
        self.pool = sample_demonstrations(mdp, np.exp(self.teacher_log_policy), rngs["pool"],
                                          n_per_start=n_per_start, length=mdp.horizon)
        self.theta = np.array(theta_1, dtype=np.float64)
        self.teaching_rate = float(teaching_rate)
        self.agn = rngs["agn"]
        self.diverged_steps = 0

    def _demonstration_gradients(self) -> np.ndarray:
        pool = self.pool
        return bc_gradients(self.theta, self.features, pool.states.reshape(-1, pool.length),
                            pool.actions.reshape(-1, pool.length))

    def teach_random_start(self) -> None:
        """One step of Agn: a uniformly random start, one step on the summed log-likelihood of its trajectories."""
        pool = self.pool
        k = int(self.agn.integers(pool.n_starts))
        g = bc_gradients(self.theta, self.features, pool.states[k], pool.actions[k]).sum(axis=0)
        with np.errstate(over="ignore", invalid="ignore"):
            theta = self.theta - self.teaching_rate * g
        if all_finite(theta):
            self.theta = theta
        else:
            self.diverged_steps += 1

    def score(self, level: str) -> dict:
        """As :meth:`IRLSetup.score`; a start's candidate is its trajectories as one set (gradients summed)."""
        pool = self.pool
        learner_log = linear_softmax_log_policy(self.theta, self.features)
        log_psi_e, log_psi_l = demonstration_difficulties(self.teacher_log_policy, learner_log, pool.states,
                                                          pool.actions)
        gradients = self._demonstration_gradients()
        if level == "demonstrations":
            return self._values(self.theta, gradients, log_psi_e.ravel(), log_psi_l.ravel(),
                                _pick(log_psi_l.ravel() - log_psi_e.ravel()))
        per_start = gradients.reshape(pool.n_starts, pool.n_per_start, -1).sum(axis=1)
        start_e, start_l = start_difficulties(log_psi_e, log_psi_l, self.aggregation)
        cur = _pick(curriculum_scores(self.teacher_log_policy, learner_log, pool.states, pool.actions,
                                      self.aggregation))
        return self._values(self.theta, per_start, start_e, start_l, cur)


@dataclass(frozen=True)
class MonotonicityExperiment:
    """Settings of the measurement (see the module docstring); one cell per learner model, paired by seed.

    Attributes:
        learners: a subset of :data:`LEARNERS`, one cell each.
        checkpoints: the teaching steps at which every candidate is scored (increasing, from 0).
        teaching_rate: Agn's constant rate along the learner's path.
        rates: the rates ``eta`` at which each candidate's one-step decrease is evaluated.
        theta_scale: ``theta*`` and ``theta_1`` are this times standard normal draws.
        gamma: the discount (IRL; BC's likelihood has none).
        n_per_start: trajectories per start in the pool (each is one ``demonstrations`` candidate).
        mdp_kind: ``"car"`` or ``"random"`` (the small deterministic MDP of the Theorem-2 experiment).
        inside_ratio: the step-size ratio at or below which a candidate counts as inside the condition.
    """

    learners: tuple = LEARNERS
    checkpoints: tuple = (0, 10, 30, 100, 300)
    teaching_rate: float = 0.05
    rates: tuple = (0.005, 0.05, 0.5)
    theta_scale: float = 1.0
    gamma: float = 0.99
    n_per_start: int = 10
    mdp_kind: str = "car"
    inside_ratio: float = 0.1

    def __post_init__(self):
        learners = tuple(self.learners)
        if not learners or len(set(learners)) != len(learners) or not set(learners) <= set(LEARNERS):
            raise ValueError(f"learners must be distinct names of {list(LEARNERS)}; got {list(learners)}")
        object.__setattr__(self, "learners", tuple(name for name in LEARNERS if name in learners))
        checkpoints = tuple(check_int("checkpoints", c, 0, 100_000) for c in self.checkpoints)
        if not checkpoints or any(b <= a for a, b in zip(checkpoints, checkpoints[1:])):
            raise ValueError(f"checkpoints must be increasing teaching steps; got {list(checkpoints)}")
        object.__setattr__(self, "checkpoints", checkpoints)
        rates = tuple(check_positive("rates", r) for r in self.rates)
        if not rates:
            raise ValueError("rates must name at least one step size")
        object.__setattr__(self, "rates", rates)
        for name in ("teaching_rate", "theta_scale", "inside_ratio"):
            check_positive(name, getattr(self, name))
        if not 0.0 <= self.gamma <= 1.0:
            raise ValueError(f"gamma must be in [0, 1]; got {self.gamma!r}")
        check_int("n_per_start", self.n_per_start, 1, 10_000)
        if self.mdp_kind not in ("car", "random"):
            raise ValueError(f"mdp_kind must be 'car' or 'random'; got {self.mdp_kind!r}")

    @property
    def cells(self) -> tuple:
        """One cell per learner model."""
        return self.learners

    def settings(self) -> dict:
        """JSON-serialisable settings (fingerprinted into run files)."""
        data = asdict(self)
        data.update(learners=list(self.learners), checkpoints=list(self.checkpoints), rates=list(self.rates))
        data["experiment"] = "monotonicity"
        return data

    def curve_names(self) -> list:
        """The curves of a run: ``LEVEL/eta=RATE/STAT`` per statistic of :func:`candidate_statistics`, and the
        rate-free ``LEVEL/lemma_pearson`` and ``LEVEL/lemma_residual_sd``."""
        names = []
        for level in LEVELS:
            names += [f"{level}/eta={rate:g}/{stat}" for rate in self.rates for stat in STATISTICS]
            names += [f"{level}/lemma_pearson", f"{level}/lemma_residual_sd"]
        return names

    def run_cell(self, cell: str, index: int, seed_sequence: np.random.SeedSequence) -> RunResult:
        """Run ``index`` of one learner model (see the module docstring)."""
        if cell not in self.learners:
            raise ValueError(f"cell must be one of {list(self.learners)}; got {cell!r}")
        setup = monotonicity_setup(self, cell, seed_sequence)
        columns = {name: [] for name in self.curve_names()}
        candidates = []
        step = 0
        for checkpoint in self.checkpoints:
            while step < checkpoint:
                setup.teach_random_start()
                step += 1
            scored = {level: setup.score(level) for level in LEVELS}
            candidates.append({level: _stored(values) for level, values in scored.items()})
            for level, values in scored.items():
                self._record(columns, level, values, setup)
        curves = {name: np.array(values, dtype=np.float64) for name, values in columns.items()}
        extras = {"theta_star_norm": float(np.linalg.norm(setup.theta_star)),
                  "final_distance": float(np.linalg.norm(setup.theta_star - setup.theta)),
                  "diverged_steps": setup.diverged_steps,
                  "candidates": candidates}
        return RunResult(index=index, seed=0, curves=curves, extras=extras, cell=cell)

    def _record(self, columns: dict, level: str, values: dict, setup) -> None:
        theta, theta_star, gradients = setup.theta, setup.theta_star, values["gradients"]
        progress = values["progress"]  # -<theta* - theta, g>
        log_ratio = values["log_psi_L"] - values["log_psi_E"]
        residual = progress - log_ratio
        pearson = (float(np.corrcoef(progress, log_ratio)[0, 1]) if np.ptp(progress) > 0 and np.ptp(log_ratio) > 0
                   else float("nan"))
        columns[f"{level}/lemma_pearson"].append(pearson)
        columns[f"{level}/lemma_residual_sd"].append(float(residual.std()))
        for rate in self.rates:
            decrease = one_step_decrease(theta, theta_star, gradients, rate)
            ratio = step_size_ratio(theta, theta_star, gradients, rate)
            stats = candidate_statistics(decrease, ratio, values["log_psi_E"], values["log_psi_L"], values["cur"],
                                         rate, self.inside_ratio)
            for stat, value in stats.items():
                columns[f"{level}/eta={rate:g}/{stat}"].append(value)


def _stored(values: dict) -> dict:
    """What a run keeps of a level's candidates (JSON): enough to redraw the decrease at any rate."""
    gradients = values["gradients"]
    return {"log_psi_E": values["log_psi_E"].tolist(), "log_psi_L": values["log_psi_L"].tolist(),
            "progress": values["progress"].tolist(), "gradient_norm2": np.einsum("nd,nd->n", gradients,
                                                                                 gradients).tolist(),
            "cur": int(values["cur"])}
