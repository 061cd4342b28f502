"""The CrossEnt-BC experiment on the car: the paper's Fig. 4 (teachers Agn, Cur, Cur-T, Cur-L).

One run, as the original ``BC/main.py`` (docs/experiments/car-bc.md), from one seed:

1. a fresh road and its MDP with gamma = 0.999;
2. the expert (hard VI, tie-uniform) and the demonstration pool: 10 expert trajectories of 10 steps per start;
3. the learner, ``theta = 1``, pre-trained for 1000 sweeps over the starts of T0..T(k-1) (instance-major order),
   each start's 10 stored trajectories in turn, then copied once per teacher;
4. 400 steps; at each step every teacher, in the order Agn, Cur, Cur-T, Cur-L, picks a start state (greedy on the
   ``geometric`` aggregation of :mod:`curteach_teaching.difficulty`, ties to the lowest start) and its learner is
   trained on that start's 10 stored trajectories (100 state-action pairs), without entropy or L2 term; the metric
   ``R_true . rho^{pi_L, D_init}`` (gamma = 0.999) is recorded after each step.

Two learner updates (``update``):

* ``"batch"`` (default; the paper's learner model): imitation's ``BC`` with :class:`QuadraticSoftmaxPolicy` takes one
  SGD step on the 100 pairs. imitation's loss is the *mean* negative log-likelihood, so the SGD rate is
  ``learning_rate * 100``: exactly a step of ``learning_rate`` on the *summed* log-likelihood.
* ``"sequential"`` (the original code): 100 sequential per-pair SGD steps with ``learning_rate``
  (:func:`~curteach_teaching.learners.bc.sequential_sgd`, a direct NumPy implementation).

The original BC has no assertion, so no run is flagged (``crash_step`` is always ``None``).

Randomness: the run's ``SeedSequence`` is split into independent generators for the road, the pool and Agn (and the
BC trainers' ``rng``, which one full-batch step never draws from).

Device: the learners' policies live and (batch update) train on the experiment's ``device`` (``"cpu"``, or
``"cuda"``: the GPU the runner gives the run, :func:`~curteach_teaching.sweeps.devices.run_device`).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from curteach_envs._util import check_int, check_positive
from curteach_envs.car import N_TASK_TYPES, car_tabular, sample_road
from curteach_teaching.demonstrations import DemonstrationPool, sample_demonstrations
from curteach_teaching.difficulty import AGGREGATIONS
from curteach_teaching.experiments.car.result import car_run_result
from curteach_teaching.learners.bc_car import UPDATES, BCCarLearner, make_bc_trainer
from curteach_teaching.learners.bc_car import step_many as _step_many
from curteach_teaching.learners.divergence import LearnerDiverged
from curteach_teaching.names import BC_TEACHER_NAMES, MAX_STEPS
from curteach_teaching.planning import expected_return, hard_value_iteration
from curteach_teaching.sweeps.fingerprints import WHEN_NOT_DEFAULT, setting, shared_settings
from curteach_teaching.sweeps.results import RunResult
from curteach_teaching.sweeps.sweep import SingleCellExperiment
from curteach_teaching.teaching.factories import TEACHERS, make_teachers, plugin_seed_sequence, teacher_specs
from curteach_teaching.teaching.loop import LessonBook, TeacherContext, teach

__all__ = [
    "BC_TEACHER_NAMES",
    "UPDATES",
    "CarBCExperiment",
    "BCCarLearner",
    "pretraining_starts",
    "make_bc_trainer",
]


def pretraining_starts(start_states: np.ndarray, task_of_state: np.ndarray, init_types: int) -> np.ndarray:
    """The original's ``states_for_tasks(k)``: starts of types ``0..k-1``, instance-major (``(K_k,)`` start indices).

    Args:
        start_states: ``(K,)`` start states, instance-major (block ``b = 8 i + type``).
        task_of_state: ``(S,)`` task type per state.
        init_types: k.

    Returns:
        ``(5 k,)`` indices into ``start_states`` (increasing, which is instance-major on the car).
    """
    return np.flatnonzero(task_of_state[start_states] < init_types)


@dataclass(frozen=True)
class CarBCExperiment(SingleCellExperiment):
    """Settings of the car CrossEnt-BC experiment; :meth:`run` performs one run.

    Defaults are the original's (``init_types = 1`` is ``--init T0``, the BC original's default), with the paper's
    batch update. ``device``: ``"cpu"`` or ``"cuda"`` (resolve ``"auto"`` with
    :func:`~curteach_teaching.sweeps.devices.sweep_device` first), where the learners' policies train; a setting
    away from ``"cpu"`` (a GPU's numbers may differ in the last bits), see :meth:`settings`.
    """

    init_types: int = 1
    steps: int = 400
    teachers: tuple = BC_TEACHER_NAMES
    update: str = "batch"
    gamma: float = 0.999
    n_per_start: int = 10
    demo_length: int = 10
    learning_rate: float = 0.01
    pretrain_sweeps: int = 1000
    aggregation: str = "geometric"
    # added after runs were saved on the CPU (a GPU's numbers may differ in the last bits): those keep their fingerprint
    device: str = setting("cpu", fingerprint=WHEN_NOT_DEFAULT)

    def __post_init__(self):
        check_int("init_types", self.init_types, 0, N_TASK_TYPES)
        # bounds keep one run's arrays (curves and picks per teacher and step, the demonstration pool) within memory
        check_int("steps", self.steps, 1, MAX_STEPS)
        for name in ("n_per_start", "demo_length"):
            check_int(name, getattr(self, name), 1, 10_000)
        check_int("pretrain_sweeps", self.pretrain_sweeps, 0)
        if self.update not in UPDATES:
            raise ValueError(f"update must be one of {UPDATES}; got {self.update!r}")
        if not 0.0 <= self.gamma <= 1.0:
            raise ValueError(f"gamma must be in [0, 1]; got {self.gamma}")
        check_positive("learning_rate", self.learning_rate)
        if self.aggregation not in AGGREGATIONS:
            raise ValueError(f"aggregation must be one of {AGGREGATIONS}; got {self.aggregation!r}")
        if self.device not in ("cpu", "cuda"):
            raise ValueError(f"device must be 'cpu' or 'cuda' (resolve 'auto' first); got {self.device!r}")
        object.__setattr__(self, "teachers", teacher_specs(self.teachers, BC_TEACHER_NAMES))

    @property
    def teacher_names(self) -> tuple[str, ...]:
        """The teachers' names in summaries and figures (a plug-in's ``name`` attribute, else its spec's)."""
        return tuple(TEACHERS.load(spec)[0] for spec in self.teachers)

    def settings(self) -> dict:
        """JSON-serialisable settings (fingerprinted into run files), each field by its declared rule
        (:mod:`~curteach_teaching.sweeps.fingerprints`). ``device`` only away from ``"cpu"``: the runs saved before
        the setting existed were computed on the CPU and keep their fingerprint (and resume), while a GPU's runs are
        another sweep's."""
        data = shared_settings(self)
        data["teachers"] = list(self.teachers)
        data["experiment"] = "car-bc"
        return data

    def build(self, seed_sequence: np.random.SeedSequence, device: str | None = None):
        """Road, expert, pool and the pre-trained learner of a run: ``(mdp, expert, pool, learner, rngs)``.

        ``learner.pretraining_diverged`` says whether pre-training diverged (the learner then keeps its initial
        parameters). ``device``: where the learner trains (``"cpu"``, ``"cuda:0"``, ...); default this process's
        for the experiment's :attr:`device` (:func:`~curteach_teaching.sweeps.devices.run_device`)."""
        if device is None:
            from curteach_teaching.sweeps.devices import run_device

            device = run_device(self.device)
        road_seed, pool_seed, agn_seed, trainer_seed = seed_sequence.spawn(4)
        mdp = car_tabular(sample_road(np.random.default_rng(road_seed)), gamma=self.gamma)
        expert = hard_value_iteration(mdp)
        pool = sample_demonstrations(
            mdp, expert.policy, np.random.default_rng(pool_seed), n_per_start=self.n_per_start, length=self.demo_length
        )
        learner = BCCarLearner(mdp, update=self.update, learning_rate=self.learning_rate,
                               n_pairs=self.n_per_start * self.demo_length, rng=np.random.default_rng(trainer_seed),
                               device=device)
        starts = pretraining_starts(pool.start_states, mdp.task_of_state, self.init_types)
        learner.pretraining_diverged = False
        if starts.size and self.pretrain_sweeps:
            set_states, set_actions = _sets(pool)
            try:
                learner.train_sets(set_states[starts], set_actions[starts], repeats=self.pretrain_sweeps)
            except LearnerDiverged:  # the learner keeps its initial parameters; see _run
                learner.pretraining_diverged = True
        rngs = {"agn": np.random.default_rng(agn_seed), "trainer": trainer_seed}
        return mdp, expert, pool, learner, rngs

    def run(self, index: int, seed_sequence: np.random.SeedSequence) -> RunResult:
        """One full run; see the module docstring."""
        from curteach_teaching.sweeps.devices import run_device

        try:
            device = run_device(self.device)  # "cuda" -> this worker's GPU
        except ValueError as error:
            raise ValueError(f"run {index} {error}") from None
        with warnings.catch_warnings():
            # imitation's BC logger calls float() on tensors that require grad (harmless, once per process)
            warnings.filterwarnings("ignore", message="Converting a tensor with requires_grad=True to a scalar")
            return self._run(index, seed_sequence, device)

    def _run(self, index: int, seed_sequence: np.random.SeedSequence, device: str) -> RunResult:
        mdp, expert, pool, learner, rngs = self.build(seed_sequence, device)
        aggregation = self.aggregation
        options = {"cur_aggregation": aggregation, "cur_t_aggregation": aggregation, "cur_l_aggregation": aggregation}

        def context(spec: str) -> TeacherContext:
            rng = rngs["agn"] if spec == "Agn" else np.random.default_rng(plugin_seed_sequence(seed_sequence, spec))
            return TeacherContext(mdp=mdp, pool=pool, expert=expert, start_states=pool.start_states, rng=rng,
                                  options=options)

        teachers = make_teachers(self.teachers, context)
        trainer_seeds = rngs["trainer"].spawn(len(teachers))
        learners = []
        for seed in trainer_seeds:
            copy = BCCarLearner(mdp, update=self.update, learning_rate=self.learning_rate, n_pairs=learner.n_pairs,
                                rng=np.random.default_rng(seed), device=device)
            copy.set_theta(learner.theta)
            learners.append(copy)
        set_states, set_actions = _sets(pool)

        def learn_many(students, lessons) -> list:
            # the sequential learners of all lanes share one vectorised SGD call
            taught = np.array([lesson.start_index for lesson in lessons], dtype=np.int64)
            return _step_many(list(students), set_states[taught], set_actions[taught])

        # a learner that diverged keeps its last finite parameters: taught no more (pre-training counts as step 0)
        diverged = {name: 0 for name in teachers} if learner.pretraining_diverged else {}
        lanes = teach(teachers, dict(zip(teachers, learners)), self.steps, lessons=LessonBook(pool),
                      evaluate=lambda student: student.expected_reward(), learn_many=learn_many, diverged=diverged)
        curves = {name: lane.curve for name, lane in lanes.items()}
        picks = {name: lane.picks for name, lane in lanes.items()}
        diverged = {name: lane.diverged_at for name, lane in lanes.items() if lane.diverged_at is not None}
        pick_types = {name: mdp.task_of_state[p] for name, p in picks.items()}
        extras = {
            "expert_reward": float(expected_return(mdp, expert.policy)),
            "initial_reward": float(curves[next(iter(teachers))][0]),
        }
        if learner.pretraining_diverged:
            extras["pretraining_diverged"] = True
        return car_run_result(index=index, curves=curves, picks=picks, pick_types=pick_types, crash_step=None,
                              extras=extras, diverged=diverged)


def _sets(pool: DemonstrationPool) -> tuple[np.ndarray, np.ndarray]:
    """``(K, n * L)`` states and actions of every start's demonstration set (trajectories in order)."""
    return pool.states.reshape(pool.n_starts, -1), pool.actions.reshape(pool.n_starts, -1)
