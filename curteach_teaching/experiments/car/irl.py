"""The MaxEnt-IRL experiments on the car: the paper's Fig. 3 (seven teachers) and Fig. 5 (limited observability).

One run, exactly as the original ``IRL/main.py`` (docs/experiments/car-irl.md), from one seed:

1. a fresh road (``sample_road``) and its MDP (gamma = 0.99);
2. the expert (hard VI, tie-uniform), its exact occupancy from every start;
3. ``theta*`` for Omn: 500 steps on the expert's full occupancy from ``theta = 1`` with ``eta_i = 0.5/sqrt(i+1)``;
4. the demonstration pool: 10 expert trajectories of 10 steps per start;
5. the learner, pre-trained 500 steps on T0..T(k-1) with the same decaying rate, then copied once per teacher,
   each teaching at a constant ``eta = 0.17``;
6. 200 steps; at each step every teacher, in the order Agn, Omn, Scot, Cur, Cur-T, Cur-L, BBox, picks a start
   state and its learner takes one step on the expert's exact occupancy from it; the metric ``R_true . rho^{pi_L}``
   (uniform start) is recorded after each step.

**Crash flag** (docs/experiments/car-irl.md): before Cur scores at step ``t``, we check whether the original would have
raised its assertion -- whether Cur's learner gives probability exactly 0.0 in float64, computed as the original
did (``exp(Q - max Q) / sum``), to an action of Cur's demonstration pool. The first such ``t`` is the run's
``crash_step``; our scores are computed in log space and the run continues.

**Divergence** (docs/teaching/learners.md#divergence): a teaching step that would make a learner's parameters or
policy non-finite (a teaching rate too large for it) is not applied; the step is recorded in ``extras["diverged"]``
(teacher -> step) and that learner keeps its last finite parameters for the rest of the run, so its curve stays
at its last finite value. Its teacher still picks (the picks are recorded), but teaches nothing more.

Randomness: the run's ``SeedSequence`` is split into independent generators for the road, the demonstration pool,
Agn, Scot and each probed view, so a teacher subset or an extra teacher changes nothing else.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from curteach_envs._util import check_int, check_positive
from curteach_envs.car import INIT_CHOICES, N_TASK_TYPES, car_tabular, parse_init, sample_road
from curteach_teaching.demonstrations import sample_demonstrations
from curteach_teaching.difficulty import AGGREGATIONS
from curteach_teaching.experiments.car.result import car_run_result
from curteach_teaching.learners.maxent_irl import REWARD_MODELS, MaxEntIRLLearner
from curteach_teaching.names import MAX_STEPS
from curteach_teaching.planning import hard_value_iteration
from curteach_teaching.sweeps.results import RunResult
from curteach_teaching.sweeps.sweep import SingleCellExperiment
from curteach_teaching.teaching.factories import TEACHERS, make_teachers, plugin_seed_sequence, teacher_specs
from curteach_teaching.teaching.loop import LessonBook, TeacherContext, teach
from curteach_teaching.teaching.observability import ProbedPolicyView
from curteach_teaching.teaching.scot import FEATURE_MAPS
from curteach_teaching.teaching.teachers import SCOT_VARIANTS, TEACHER_NAMES, CurriculumTeacher

__all__ = [
    "CarIRLExperiment",
    "CarIRLSetup",
    "original_would_crash",
    "parse_init",
    "observability_name",
    "INIT_CHOICES",
]

# INIT_CHOICES and parse_init (the car's task-type parsing) live in curteach_envs.car; re-exported here.


def observability_name(refresh_every: int, probes: int | None) -> str:
    """Teacher name of Cur under observability ``(B, k)``, e.g. ``"Cur B=40 k=inf"``."""
    return f"Cur B={refresh_every} k={'inf' if probes is None else probes}"


def original_would_crash(q_values: np.ndarray, states: np.ndarray, actions: np.ndarray) -> bool:
    """Whether the original's Cur assertion fires: some demonstrated action has ``pi^L(a|s) == 0.0`` in float64.

    The original computed ``pi = exp(Q - max_a Q) / sum_b exp(Q - max_b Q)`` from the soft Q-values.

    Args:
        q_values: ``(S, A)`` the learner's soft Q-values.
        states, actions: ``(...)`` demonstrated pairs (Cur's whole pool).
    """
    q = q_values[states]  # (..., A)
    shifted = np.exp(q - q.max(axis=-1, keepdims=True))
    chosen = np.take_along_axis(shifted, np.asarray(actions)[..., None], axis=-1)[..., 0]
    return bool(((chosen / shifted.sum(axis=-1)) == 0.0).any())


@dataclass
class CarIRLSetup:
    """Everything a run builds before teaching (exposed for the notebook, tests and benchmarks).

    Attributes: ``mdp``; ``expert`` (PlanningResult); ``expert_occupancy_per_start`` ``(K, S)``;
    ``expert_features_per_start`` ``(K, d)``; ``target`` (the theta* learner); ``pool``; ``learner`` (pre-trained,
    teaching rate set).
    """

    mdp: object
    expert: object
    expert_log_policy: np.ndarray
    expert_occupancy_per_start: np.ndarray
    expert_features_per_start: np.ndarray
    target: MaxEntIRLLearner
    pool: object
    learner: MaxEntIRLLearner
    rngs: dict


@dataclass(frozen=True)
class CarIRLExperiment(SingleCellExperiment):
    """Settings of the car MaxEnt-IRL experiment; :meth:`run` performs one run.

    Defaults are the original's (``init_types = 4`` is ``--init T0-T3``). ``observability`` switches to the Fig. 5
    experiment: one Cur teacher per ``(B, k)`` setting (``k = None`` for infinity), each with its own learner.
    """

    init_types: int = 4
    steps: int = 200
    teachers: tuple = TEACHER_NAMES
    gamma: float = 0.99
    n_per_start: int = 10
    demo_length: int = 10
    target_steps: int = 500
    pretrain_steps: int = 500
    pretrain_rate: float = 0.5
    teaching_rate: float = 0.17
    projection_radius: float | None = None
    reward_model: str = "quadratic"
    cur_aggregation: str = "mean"
    cur_t_aggregation: str = "geometric"
    cur_l_aggregation: str = "geometric"
    observability: tuple | None = None
    smoothing: float = 0.5
    scot_variant: str = "original"
    scot_feature_map: str | None = None

    def __post_init__(self):
        check_int("init_types", self.init_types, 0, N_TASK_TYPES)
        # bounds keep one run's arrays (curves and picks per teacher and step, the demonstration pool) within memory
        check_int("steps", self.steps, 1, MAX_STEPS)
        for name in ("n_per_start", "demo_length"):
            check_int(name, getattr(self, name), 1, 10_000)
        for name in ("target_steps", "pretrain_steps"):
            check_int(name, getattr(self, name), 0)
        if not 0.0 <= self.gamma <= 1.0:
            raise ValueError(f"gamma must be in [0, 1]; got {self.gamma}")
        for name in ("teaching_rate", "pretrain_rate"):
            check_positive(name, getattr(self, name))
        if self.projection_radius is not None and not self.projection_radius > 0:
            raise ValueError(f"projection_radius must be > 0 or None; got {self.projection_radius}")
        if self.reward_model not in REWARD_MODELS:
            raise ValueError(f"reward_model must be one of {REWARD_MODELS}; got {self.reward_model!r}")
        for name in ("cur_aggregation", "cur_t_aggregation", "cur_l_aggregation"):
            if getattr(self, name) not in AGGREGATIONS:
                raise ValueError(f"{name} must be one of {AGGREGATIONS}; got {getattr(self, name)!r}")
        if self.scot_variant not in SCOT_VARIANTS:
            raise ValueError(f"scot_variant must be one of {SCOT_VARIANTS}; got {self.scot_variant!r}")
        if self.scot_feature_map is not None and self.scot_feature_map not in FEATURE_MAPS:
            raise ValueError(f"scot_feature_map must be one of {FEATURE_MAPS} or None; got {self.scot_feature_map!r}")
        if self.observability is None:
            # play in the original's order whatever order was given
            object.__setattr__(self, "teachers", teacher_specs(self.teachers, TEACHER_NAMES))
        else:
            settings = tuple((int(B), None if k is None else int(k)) for B, k in self.observability)
            if not settings or len(set(settings)) != len(settings):
                raise ValueError("observability needs at least one (B, k) setting, all distinct")
            object.__setattr__(self, "observability", settings)
            object.__setattr__(self, "teachers", tuple(observability_name(B, k) for B, k in settings))

    @property
    def teacher_names(self) -> tuple[str, ...]:
        """The teachers' names in summaries and figures (a plug-in's ``name`` attribute, else its spec's)."""
        if self.observability is not None:
            return self.teachers
        return tuple(TEACHERS.load(spec)[0] for spec in self.teachers)

    def settings(self) -> dict:
        """JSON-serialisable settings (fingerprinted into run files)."""
        data = asdict(self)
        data["teachers"] = list(self.teachers)
        data["observability"] = None if self.observability is None else [list(s) for s in self.observability]
        data["experiment"] = "car-irl" if self.observability is None else "car-irl-observability"
        # Scot's settings enter only when they differ from the original, so that runs made before they existed
        # keep their fingerprint
        if self.scot_variant == "original":
            del data["scot_variant"], data["scot_feature_map"]
        else:
            data["scot_feature_map"] = self.scot_features
        return data

    @property
    def scot_features(self) -> str:
        """The feature map of the bec Scot: ``scot_feature_map``, or by default the learner's reward class."""
        return self.scot_feature_map or self.reward_model

    # ----------------------------------------------------------------- setup
    def build_setup(self, seed_sequence: np.random.SeedSequence) -> CarIRLSetup:
        """Steps 1-5 of a run (road, expert, theta*, pool, pre-trained learner)."""
        road_seed, pool_seed, agn_seed, scot_seed, probe_seed = seed_sequence.spawn(5)
        rngs = {
            "agn": np.random.default_rng(agn_seed),
            "scot": np.random.default_rng(scot_seed),
            "probe": probe_seed,
        }
        mdp = car_tabular(sample_road(np.random.default_rng(road_seed)), gamma=self.gamma)
        expert = hard_value_iteration(mdp)
        learner_options = dict(reward_model=self.reward_model, projection_radius=self.projection_radius)

        target = MaxEntIRLLearner(mdp, learning_rate=self.pretrain_rate, **learner_options)
        tasks = target.tasks
        expert_occupancy = target.policy_occupancy(expert.policy)
        expert_per_start = tasks.per_start(expert_occupancy)  # (K, S), exact (the original's lane trick)
        expert_features = tasks.feature_expectations(expert_occupancy, mdp.features)
        uniform = mdp.initial_state_dist[tasks.start_states]
        target.fit(uniform @ expert_per_start, uniform, self.target_steps, self.pretrain_rate)

        pool = sample_demonstrations(
            mdp, expert.policy, np.random.default_rng(pool_seed), n_per_start=self.n_per_start, length=self.demo_length
        )

        learner = MaxEntIRLLearner(mdp, learning_rate=self.pretrain_rate, **learner_options)
        if self.init_types > 0:
            types = mdp.task_of_state[tasks.start_states]
            weights = (types < self.init_types).astype(np.float64)
            weights /= weights.sum()
            learner.fit(weights @ expert_per_start, weights, self.pretrain_steps, self.pretrain_rate)
        learner.learning_rate = self.teaching_rate
        return CarIRLSetup(
            mdp=mdp,
            expert=expert,
            expert_log_policy=expert.log_policy,
            expert_occupancy_per_start=expert_per_start,
            expert_features_per_start=expert_features,
            target=target,
            pool=pool,
            learner=learner,
            rngs=rngs,
        )

    def teacher_context(self, setup: CarIRLSetup, spec: str, seed_sequence: np.random.SeedSequence | None = None):
        """The :class:`~curteach_teaching.teaching.loop.TeacherContext` teacher ``spec`` is built from: Agn and Scot
        draw
        from the run's generators for them; a plug-in from one derived from the run's seed and its spec."""
        rng = setup.rngs.get({"Agn": "agn", "Scot": "scot"}.get(spec, ""))
        if rng is None:
            rng = np.random.default_rng(plugin_seed_sequence(seed_sequence, spec))
        return TeacherContext(
            mdp=setup.mdp, pool=setup.pool, expert=setup.expert, start_states=setup.pool.start_states, rng=rng,
            expert_occupancy_per_start=setup.expert_occupancy_per_start,
            expert_features_per_start=setup.expert_features_per_start, theta_star=setup.target.parameters,
            options={"cur_aggregation": self.cur_aggregation, "cur_t_aggregation": self.cur_t_aggregation,
                     "cur_l_aggregation": self.cur_l_aggregation, "scot_variant": self.scot_variant,
                     "scot_features": self.scot_features},
        )

    def make_teachers(self, setup: CarIRLSetup, seed_sequence: np.random.SeedSequence | None = None) -> dict:
        """The teachers of the experiment, by name, in the order of play (built-ins, then plug-ins)."""
        return make_teachers(self.teachers, lambda spec: self.teacher_context(setup, spec, seed_sequence))

    # ------------------------------------------------------------------- run
    def run(self, index: int, seed_sequence: np.random.SeedSequence) -> RunResult:
        """One full run; see the module docstring."""
        setup = self.build_setup(seed_sequence)
        mdp, pool = setup.mdp, setup.pool
        if self.observability is None:
            teachers = self.make_teachers(setup, seed_sequence)
            learners = {name: setup.learner.copy() for name in teachers}
            views = dict(learners)  # the teachers see their learner itself
            crash_teacher = "Cur" if "Cur" in teachers else None
        else:
            probe_seeds = setup.rngs["probe"].spawn(len(self.observability))
            teachers, learners, views = {}, {}, {}
            crash_teacher = None
            for (B, k), probe_seed, name in zip(self.observability, probe_seeds, self.teachers):
                teachers[name] = CurriculumTeacher(pool, setup.expert_log_policy, self.cur_aggregation)
                learners[name] = setup.learner.copy()
                views[name] = ProbedPolicyView(
                    learners[name], B, k, np.random.default_rng(probe_seed), smoothing=self.smoothing
                )
                if (B, k) == (1, None):
                    crash_teacher = name

        crash_step = None

        def check_crash(name: str, t: int, learner) -> None:
            nonlocal crash_step
            if name == crash_teacher and crash_step is None:
                if original_would_crash(learner.q_values, pool.states, pool.actions):
                    crash_step = t

        lanes = teach(teachers, learners, self.steps, views=views, before_select=check_crash,
                      lessons=LessonBook(pool, setup.expert_occupancy_per_start),
                      evaluate=lambda learner: learner.expected_reward)
        curves = {name: lane.curve for name, lane in lanes.items()}
        picks = {name: lane.picks for name, lane in lanes.items()}
        diverged = {name: lane.diverged_at for name, lane in lanes.items() if lane.diverged_at is not None}
        pick_types = {name: mdp.task_of_state[p] for name, p in picks.items()}
        extras = {
            "expert_reward": float(
                mdp.reward @ (mdp.initial_state_dist[pool.start_states] @ setup.expert_occupancy_per_start)
            ),
            "target_reward": setup.target.expected_reward,
            "initial_reward": setup.learner.expected_reward,
            "crash_checked": crash_teacher is not None,
        }
        scot = teachers.get("Scot")
        if scot is not None:
            extras["scot_batch_size"] = len(scot.batch)
            if scot.result is not None:
                extras["scot_bec_size"] = len(scot.result.bec)
                extras["scot_uncovered"] = int(scot.result.uncovered.sum())
        return car_run_result(index=index, curves=curves, picks=picks, pick_types=pick_types, crash_step=crash_step,
                              extras=extras, diverged=diverged)
