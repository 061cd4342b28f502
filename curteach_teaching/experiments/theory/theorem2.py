"""Theorem 2 of the paper, measured where its assumptions hold: a realizable, linear MaxEnt-IRL learner.

One run, from one seed:

1. a fresh car road (``sample_road``) and its MDP;
2. ``theta*``: ``(d,)`` normal draws times ``theta_scale``; the MDP's true reward becomes ``R(s) = phi(s) . theta*``,
   so the teacher is *realizable*: its policy is the soft-optimal (MaxEnt) policy of ``theta*``, exactly the policy a
   linear learner with parameters ``theta*`` has;
3. the teacher's demonstrations are exact occupancies from each start (for the learner's update), and a pool of
   ``n_per_start`` sampled trajectories per start (for Cur, Cur-T and Cur-L's difficulty scores);
4. one linear learner per teacher, from ``theta_0 = 0``, updated ``theta <- theta - eta g`` with the teacher's exact
   occupancy from the start state the teacher picks, for ``steps`` steps at a constant small ``eta``;
5. the curve of each teacher is ``||theta* - theta_t||`` for ``t = 0..steps``.

:func:`contraction_rate` fits the per-step factor of a distance curve (a straight line through the log-distance),
the quantity Theorem 2 bounds: a teacher whose learner converges linearly has a factor below 1, constant in t.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from curteach_envs._util import check_int, check_positive
from curteach_envs.car import car_tabular, sample_road
from curteach_teaching.demonstrations import sample_demonstrations
from curteach_teaching.learners.maxent_irl import MaxEntIRLLearner
from curteach_teaching.names import ordered_subset
from curteach_teaching.sweeps.reports import Report
from curteach_teaching.sweeps.results import RunResult
from curteach_teaching.sweeps.sweep import SingleCellExperiment

__all__ = [
    "REALIZABLE_TEACHERS",
    "RealizableExperiment",
    "Theorem2Report",
    "contraction_rate",
    "lemma1_spread",
    "random_layered_mdp",
]

#: the teachers of the realizable experiment (Scot teaches by a cover of start states, not by a learner's state)
REALIZABLE_TEACHERS = ("Agn", "Omn", "Cur", "Cur-T", "Cur-L", "BBox")


def contraction_rate(distance: np.ndarray, start: int = 0) -> float:
    """The per-step factor ``exp(slope)`` of a least-squares line through ``log distance[start:]`` against t.

    Args:
        distance: ``(T + 1,)`` positive distances ``||theta* - theta_t||``.
        start: the first step of the fit.
    """
    distance = np.asarray(distance, dtype=np.float64)[start:]
    if distance.size < 2 or not np.all(distance > 0):
        raise ValueError("contraction_rate needs at least two positive distances")
    t = np.arange(distance.size, dtype=np.float64)
    slope = np.polyfit(t, np.log(distance), 1)[0]
    return float(np.exp(slope))


def random_layered_mdp(
    rng: np.random.Generator,
    n_tasks: int = 6,
    depth: int = 5,
    width: int = 3,
    n_actions: int = 3,
    n_features: int = 4,
    gamma: float = 1.0,
):
    """A small random deterministic MDP of ``n_tasks`` disjoint tasks (the structure the MaxEnt-IRL learner's task
    decomposition needs): each task is a start state followed by ``depth - 1`` levels of ``width`` states; every
    action moves to a random state of the next level of the same task (deterministically), and from the last level
    to the shared absorbing state. Features are standard normal (zero in the absorbing state); the start states are
    equally likely; the reward is zero (the realizable experiment replaces it).

    Returns:
        a :class:`~curteach_envs.tabular.TabularMDP` with ``n_tasks * (1 + (depth - 1) * width) + 1`` states.
    """
    import scipy.sparse as sp

    from curteach_envs.tabular import TabularMDP

    per_task = 1 + (depth - 1) * width
    S = n_tasks * per_task + 1
    absorbing = S - 1
    nxt = np.full((S, n_actions), absorbing, dtype=np.int64)
    task_of_state = np.full(S, -1, dtype=np.int64)
    for k in range(n_tasks):
        base = k * per_task
        levels = [[base]] + [list(range(base + 1 + (h - 1) * width, base + 1 + h * width)) for h in range(1, depth)]
        task_of_state[base: base + per_task] = k
        for h in range(depth - 1):
            for state in levels[h]:
                nxt[state] = rng.choice(levels[h + 1], size=n_actions)
    rows = np.arange(S * n_actions)
    transitions = sp.csr_matrix((np.ones(rows.size), (rows, nxt.reshape(-1))), shape=(S * n_actions, S))
    features = rng.normal(size=(S, n_features))
    features[absorbing] = 0.0
    starts = np.arange(n_tasks) * per_task
    initial = np.zeros(S)
    initial[starts] = 1.0 / n_tasks
    return TabularMDP(transitions=transitions, reward=np.zeros(S), features=features, initial_state_dist=initial,
                      gamma=gamma, horizon=depth, start_states=starts, task_of_state=task_of_state,
                      name="random layered MDP")


def lemma1_spread(learner, teacher, theta_star: np.ndarray, pool) -> float:
    """The largest spread, over start states, of Lemma 1's residual
    ``log Psi^L(xi) - log Psi^E(xi) - <theta* - theta, mu^xi>`` across the pool's demonstrations of one start.

    Lemma 1 says the residual depends only on the start state (it is ``V_theta(s_0) - V_theta*(s_0)``) when the
    learner's model is linear, the MDP deterministic, ``gamma = 1`` and every demonstration runs to the end of its
    episode; then the spread is zero up to rounding.

    Args:
        learner, teacher: linear :class:`~curteach_teaching.learners.maxent_irl.MaxEntIRLLearner` s.
        theta_star: ``(d,)`` the teacher's parameters.
        pool: the demonstrations (``states``, ``actions`` of shape ``(K, n, L)``).
    """
    states, actions = pool.states, pool.actions
    log_l = learner.log_policy[states, actions].sum(axis=-1)  # (K, n)
    log_e = teacher.log_policy[states, actions].sum(axis=-1)
    mu = learner.features[states].sum(axis=-2)  # (K, n, d) undiscounted feature counts
    residual = (log_e - log_l) - mu @ (theta_star - learner.parameters)
    return float((residual.max(axis=1) - residual.min(axis=1)).max())


@dataclass(frozen=True)
class RealizableExperiment(SingleCellExperiment):
    """Settings of the realizable Theorem-2 experiment; :meth:`run` performs one run (see the module docstring)."""

    steps: int = 300
    teaching_rate: float = 0.05
    theta_scale: float = 1.0
    teachers: tuple = REALIZABLE_TEACHERS
    gamma: float = 0.99
    n_per_start: int = 10
    demo_length: int = 10
    mdp_kind: str = "car"

    def __post_init__(self):
        if self.mdp_kind not in ("car", "random"):
            raise ValueError(f"mdp_kind must be 'car' or 'random'; got {self.mdp_kind!r}")
        if not 0.0 <= self.gamma <= 1.0:
            raise ValueError(f"gamma must be in [0, 1]; got {self.gamma!r}")
        check_int("steps", self.steps, 1, 100_000)
        check_int("n_per_start", self.n_per_start, 1, 10_000)
        check_int("demo_length", self.demo_length, 1, 10_000)
        for name in ("teaching_rate", "theta_scale"):
            check_positive(name, getattr(self, name))
        object.__setattr__(self, "teachers", ordered_subset("teachers", self.teachers, REALIZABLE_TEACHERS))

    def settings(self) -> dict:
        """JSON-serialisable settings (fingerprinted into run files)."""
        data = asdict(self)
        data["teachers"] = list(self.teachers)
        data["experiment"] = "theorem2-realizable"
        return data

    def build(self, seed_sequence: np.random.SeedSequence):
        """``(mdp, theta_star, teacher, pool, rngs)`` of a run: the MDP carries the reward ``phi . theta*``."""
        road_seed, theta_seed, pool_seed, agn_seed = seed_sequence.spawn(4)
        if self.mdp_kind == "car":
            mdp = car_tabular(sample_road(np.random.default_rng(road_seed)), gamma=self.gamma)
        else:
            mdp = random_layered_mdp(np.random.default_rng(road_seed), gamma=self.gamma)
        theta_star = np.random.default_rng(theta_seed).normal(size=mdp.n_features) * self.theta_scale
        mdp = mdp.replace(reward=mdp.features @ theta_star)
        teacher = MaxEntIRLLearner(mdp, reward_model="linear", initial_parameters=theta_star)
        length = self.demo_length if self.mdp_kind == "car" else mdp.horizon
        pool = sample_demonstrations(mdp, teacher.policy, np.random.default_rng(pool_seed),
                                     n_per_start=self.n_per_start, length=length)
        return mdp, theta_star, teacher, pool, {"agn": np.random.default_rng(agn_seed)}

    def run(self, index: int, seed_sequence: np.random.SeedSequence) -> RunResult:
        """One run; see the module docstring."""
        from curteach_teaching.teaching.teachers import (
            AgnosticTeacher,
            BlackBoxTeacher,
            CurriculumTeacher,
            LearnerDifficultyTeacher,
            OmniscientTeacher,
            TeacherDifficultyTeacher,
        )

        mdp, theta_star, teacher, pool, rngs = self.build(seed_sequence)
        per_start = teacher.occupancy_per_start()  # (K, S): the exact demonstrations
        starts = pool.start_states
        factories = {
            "Agn": lambda: AgnosticTeacher(starts, rngs["agn"]),
            "Omn": lambda: OmniscientTeacher(starts, theta_star, per_start),
            "Cur": lambda: CurriculumTeacher(pool, teacher.log_policy, "mean"),
            "Cur-T": lambda: TeacherDifficultyTeacher(pool, teacher.log_policy, "geometric"),
            "Cur-L": lambda: LearnerDifficultyTeacher(pool, "geometric"),
            "BBox": lambda: BlackBoxTeacher(starts, mdp.reward, per_start),
        }
        teachers = {name: factories[name]() for name in self.teachers}
        start = MaxEntIRLLearner(mdp, reward_model="linear", learning_rate=self.teaching_rate,
                                 initial_parameters=np.zeros(mdp.n_features))
        learners = {name: start.copy() for name in teachers}
        start_index = start.tasks.start_index
        T = self.steps
        curves = {name: np.empty(T + 1) for name in teachers}
        picks = {name: np.empty(T, dtype=np.int64) for name in teachers}
        check_lemma = self.gamma == 1.0 and "Cur" in teachers
        spread = lemma1_spread(learners["Cur"], teacher, theta_star, pool) if check_lemma else None
        for name in teachers:
            curves[name][0] = np.linalg.norm(theta_star - learners[name].parameters)
        for t in range(T):
            for name, chooser in teachers.items():
                learner = learners[name]
                state = chooser.select(learner, t)
                learner.update(per_start[start_index[state]], state)
                curves[name][t + 1] = np.linalg.norm(theta_star - learner.parameters)
                picks[name][t] = state
                if check_lemma and name == "Cur":
                    spread = max(spread, lemma1_spread(learner, teacher, theta_star, pool))
        extras = {"theta_star_norm": float(np.linalg.norm(theta_star))}
        if check_lemma:  # Lemma 1 along Cur's run: the largest spread of its residual over all steps
            extras["lemma1_max_spread"] = spread
        return RunResult(index=index, seed=0, curves=curves, records={"picks": picks}, extras=extras)


class Theorem2Report(Report):
    """Outputs of a :class:`RealizableExperiment` sweep: the generic summary (the curve of each teacher is its
    distance to ``theta*``), ``report.json`` with the per-teacher contraction, and ``distance_to_theta_star.png``
    (mean distance on a log scale, ± 1 SEM)."""

    label = "teacher"
    metric_name = "distance to theta*"
    curves_compared = True

    def __init__(self, experiment: RealizableExperiment, title: str = ""):
        super().__init__(experiment, curves=experiment.teachers, title=title)

    def report_data(self, sweep, rows: list) -> dict:
        """Per teacher: the per-step factor fitted to the geometric mean distance (whole run and each half), the
        geometric mean initial and final distance, the share of steps at which the distance grew (all runs and
        steps), and with ``gamma = 1`` the largest spread of Lemma 1's residual along Cur's runs."""
        results = sweep.results
        data = {}
        for name in self.curve_names(sweep):
            stack = np.array([r.curves[name] for r in results])  # (R, T + 1)
            mean_log = np.exp(np.log(stack).mean(axis=0))  # the geometric mean distance per step
            half = mean_log.size // 2
            grew = np.diff(stack, axis=1) > 1e-12 * stack[:, :-1]
            data[name] = {
                "factor_per_step": contraction_rate(mean_log),
                "factor_first_half": contraction_rate(mean_log[: max(half, 2)]),
                "factor_second_half": contraction_rate(mean_log[half:]),
                # geometric means: distances shrink by factors, and a few slow runs dominate an arithmetic mean
                "initial_distance_geomean": float(mean_log[0]),
                "final_distance_geomean": float(mean_log[-1]),
                "share_of_steps_distance_grew": float(grew.mean()),
            }
            if all("lemma1_max_spread" in r.extras for r in results):
                data[name]["lemma1_max_spread"] = max(r.extras["lemma1_max_spread"] for r in results)
        return {"contraction": data}

    def figures(self, sweep, rows: list, out_dir: Path, extras: dict) -> list:
        """The distance curves on a log scale."""
        from curteach_teaching.plots import plot_learning_curves

        name = "distance_to_theta_star.png"
        plot_learning_curves([r for r in rows if r["subset"] == "all"], out_dir / name,
                             teachers=self.curve_names(sweep), title=self.title,
                             ylabel="||theta* - theta_t|| (log scale)", log_y=True)
        return [name]

    def print_summary(self, sweep, report: dict, out_dir: Path) -> None:
        """Per teacher: the distance and the fitted factor per step."""
        ranked = sorted(report["contraction"].items(), key=lambda item: item[1]["final_distance_geomean"])
        for name, entry in ranked:
            print(f"{name:6s} distance (geometric mean) {entry['initial_distance_geomean']:.3f} -> "
                  f"{entry['final_distance_geomean']:.4f}, factor per step {entry['factor_first_half']:.4f} "
                  f"then {entry['factor_second_half']:.4f}, grew at {entry['share_of_steps_distance_grew']:.1%} of "
                  "steps")
        spreads = [e["lemma1_max_spread"] for e in report["contraction"].values() if "lemma1_max_spread" in e]
        if spreads:
            print(f"Lemma 1: the residual's largest spread across one start's demonstrations along Cur's runs: "
                  f"{spreads[0]:.3g}")
