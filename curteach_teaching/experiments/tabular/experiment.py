"""The teacher-centric experiment on any tabular environment (``curteach teach``).

One run, from one seed:

1. the environment's exact export (:meth:`TabularMDP.from_gymnasium` for a transition table ``P``,
   :meth:`TabularMDP.from_seals` for a seals tabular model), one-hot state features, discount ``gamma``;
2. the teaching starts: every live state reachable from the initial distribution (a teacher may demonstrate from
   anywhere the learner can be); the expert: hard value iteration, tie-uniform;
3. the pool: ``n_per_start`` expert trajectories of ``length`` actions from each start; the expert's exact
   occupancy from each start;
4. one learner per teacher from the learner factory (``maxent-irl``, ``bc`` or a plug-in) and ``theta*`` for Omn
   (a learner with ``fit`` fitted on every start's occupancy);
5. ``steps`` steps of :func:`~curteach_teaching.teaching.loop.teach`; the curve is the exact expected return of the
learner's
   policy under the true reward from the environment's own initial distribution.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from curteach_envs._util import check_int, check_positive
from curteach_teaching.demonstrations import occupancy_per_start, sample_demonstrations
from curteach_teaching.planning import hard_value_iteration
from curteach_teaching.sweeps.results import RunResult
from curteach_teaching.sweeps.sweep import SingleCellExperiment
from curteach_teaching.teaching.factories import TEACHERS, make_teachers, plugin_seed_sequence, teacher_specs
from curteach_teaching.teaching.loop import LEARNERS, LearnerContext, LessonBook, TeacherContext, teach
from curteach_teaching.teaching.plugin_learner import CheckedLearner

__all__ = ["ENV_TEACHERS", "EnvTeachingExperiment", "environment_mdp", "exact_return", "teaching_starts"]

#: the built-in teachers this experiment offers (Scot needs the car's feature maps)
ENV_TEACHERS = ("Agn", "Omn", "Cur", "Cur-T", "Cur-L", "BBox")


def environment_mdp(env_id: str, env_kwargs: dict, gamma: float):
    """The exact export of a registered environment: its transition table, or its seals model.

    Raises:
        ValueError: the id is unknown, the environment cannot be made with these arguments, or it has neither.
    """
    import gymnasium as gym

    from curteach_envs import TabularMDP
    from curteach_envs.gymnasium_ids import check_registered_id, registered_id

    check_registered_id(env_id)  # e.g. CliffWalking-v0 on Gymnasium 1.x: one line naming CliffWalking-v1
    if env_id.startswith("seals/"):
        import seals  # noqa: F401  (registers the seals/ ids)
    try:
        env = gym.make(env_id, **env_kwargs)
    except gym.error.Error as error:
        raise ValueError(f"cannot make environment {env_id!r}: {error}") from None
    except TypeError as error:
        raise ValueError(f"environment {env_id!r} does not take these arguments ({error})") from None
    except Exception as error:  # an argument the environment refuses: a map name it lacks, a value of a wrong type
        raise ValueError(f"environment {env_id!r} refused the arguments {env_kwargs} "
                         f"({type(error).__name__}: {error})") from None
    try:
        if hasattr(env.unwrapped, "P"):
            return TabularMDP.from_gymnasium(env, gamma=gamma)
        if hasattr(env.unwrapped, "transition_matrix"):
            return TabularMDP.from_seals(env, gamma=gamma)
    finally:
        env.close()
    raise ValueError(f"{env_id} has no transition table (env.unwrapped.P) and is not a seals tabular model; only "
                     f"such environments have an exact export (e.g. FrozenLake-v1, {registered_id('CliffWalking-v0')}, "
                     f"{registered_id('Taxi-v3')})")


def exact_return(mdp):
    """``policy (S, A) -> float``: the exact expected discounted return from the initial distribution, by one dense
    solve ``rho = P0 (I - gamma P_pi)^-1`` (the same number as :func:`~curteach_teaching.planning.expected_return`,
    which iterates; at the sizes of a transition table the solve is much faster)."""
    S, A = mdp.n_states, mdp.n_actions
    live = mdp.live_transitions.toarray().reshape(S, A, S)
    reward, identity, initial = mdp.reward_sa, np.eye(S), mdp.initial_state_dist

    def value(policy: np.ndarray) -> float:
        flow = np.einsum("sa,sat->st", policy, live)
        rho = np.linalg.solve(identity - mdp.gamma * flow.T, initial)
        return float(rho @ (policy * reward).sum(axis=1))

    return value


def teaching_starts(mdp) -> np.ndarray:
    """``(K,)`` the live states reachable from the initial distribution, in increasing order."""
    reached = mdp.initial_state_dist > 0
    frontier = reached.copy()
    adjacency = mdp.adjacency
    while frontier.any():
        nxt = (adjacency.T @ frontier.astype(np.float64)) > 0
        frontier = nxt & ~reached
        reached |= nxt
    return np.flatnonzero(reached & ~mdp.absorbing)


@dataclass(frozen=True)
class EnvTeachingExperiment(SingleCellExperiment):
    """Settings of ``curteach teach``; :meth:`run` performs one run (module docstring)."""

    env_id: str = "FrozenLake-v1"
    env_kwargs: dict = field(default_factory=dict)
    learner: str = "maxent-irl"
    teachers: tuple = ("Agn", "Omn", "Cur")
    steps: int = 100
    gamma: float = 0.95
    learning_rate: float = 0.1
    n_per_start: int = 10
    length: int = 20
    target_steps: int = 300

    def __post_init__(self):
        if not isinstance(self.env_id, str) or not self.env_id:
            raise ValueError(f"env_id must be a registered environment id; got {self.env_id!r}")
        if not isinstance(self.env_kwargs, dict):
            raise ValueError(f"env_kwargs must be a dict; got {type(self.env_kwargs).__name__}")
        check_int("steps", self.steps, 1, 1_000_000)
        check_int("n_per_start", self.n_per_start, 1, 10_000)
        check_int("length", self.length, 1, 10_000)
        check_int("target_steps", self.target_steps, 0)
        if not 0.0 <= self.gamma < 1.0:
            raise ValueError(f"gamma must be in [0, 1) (cyclic environments need discounting); got {self.gamma}")
        check_positive("learning_rate", self.learning_rate)
        LEARNERS.load(self.learner)  # an unknown learner fails here, listing the names
        object.__setattr__(self, "teachers", teacher_specs(self.teachers, ENV_TEACHERS))

    @property
    def teacher_names(self) -> tuple[str, ...]:
        """The teachers' names in summaries and figures."""
        return tuple(TEACHERS.load(spec)[0] for spec in self.teachers)

    def check_environment(self):
        """Make the environment's export once and refuse what no run could do with it (before any file is
        written): returns the MDP.

        Raises:
            ValueError: the environment cannot be exported, BBox is asked for on an action-dependent reward, the
                learner factory fails, or Omn is asked for with a learner it cannot steer.
        """
        mdp = environment_mdp(self.env_id, self.env_kwargs, self.gamma)
        if "BBox" in self.teachers and mdp.reward.ndim != 1:
            raise ValueError(f"BBox scores starts by a state reward; {self.env_id}'s reward depends on the action "
                             "(leave BBox out)")
        if "Omn" in self.teachers:  # else a run would fail on a missing theta* that the user never asked for by name
            name, factory = LEARNERS.load(self.learner)
            learner = LEARNERS.call(name, factory, LearnerContext(mdp, teaching_starts(mdp), np.random.default_rng(0),
                                                                  self.learning_rate))
            missing = [view for view in ("fit", "gradients_per_start", "parameters")
                       if getattr(learner, view, None) is None]
            if missing:
                raise ValueError(f"Omn needs a learner with fit(), gradients_per_start() and parameters (to find "
                                 f"theta* and steer to it); learner {name!r} lacks {', '.join(missing)} "
                                 "(leave Omn out)")
        return mdp

    def settings(self) -> dict:
        """JSON-serialisable settings (fingerprinted into run files)."""
        data = {key: getattr(self, key) for key in self.__dataclass_fields__}
        data["teachers"] = list(self.teachers)
        data["env_kwargs"] = json.loads(json.dumps(self.env_kwargs, sort_keys=True))
        data["experiment"] = "teach"
        return data

    def run(self, index: int, seed_sequence: np.random.SeedSequence) -> RunResult:
        """One run; see the module docstring."""
        pool_seed, agn_seed, learner_seed = seed_sequence.spawn(3)
        mdp = environment_mdp(self.env_id, self.env_kwargs, self.gamma)
        starts = teaching_starts(mdp)
        expert = hard_value_iteration(mdp)
        pool = sample_demonstrations(mdp, expert.policy, np.random.default_rng(pool_seed),
                                     n_per_start=self.n_per_start, length=self.length, start_states=starts)
        expert_rho = occupancy_per_start(mdp, expert.policy, starts)
        learner_name, factory = LEARNERS.load(self.learner)

        def is_learner(obj) -> bool:
            return callable(getattr(obj, "learn", None)) and callable(getattr(obj, "action_log_probabilities", None))

        def new_learner(rng):
            context = LearnerContext(mdp, starts, rng, self.learning_rate)
            learner = LEARNERS.call(learner_name, factory, context, expect=is_learner)
            if LEARNERS.is_builtin(self.learner):
                return learner
            # a plug-in's outputs are checked where they enter, and its failures name it
            return CheckedLearner(learner, learner_name, mdp.n_states, mdp.n_actions)

        learner_rngs = [np.random.default_rng(s) for s in np.random.SeedSequence(learner_seed.entropy,
                        spawn_key=learner_seed.spawn_key).spawn(len(self.teachers) + 1)]
        target = new_learner(learner_rngs[-1])
        theta_star = None
        if "Omn" in self.teachers and hasattr(target, "fit"):
            theta_star = target.fit(expert_rho, self.target_steps).parameters

        def context(spec: str) -> TeacherContext:
            rng = np.random.default_rng(agn_seed if spec == "Agn" else plugin_seed_sequence(seed_sequence, spec))
            return TeacherContext(mdp=mdp, pool=pool, expert=expert, start_states=starts, rng=rng,
                                  expert_occupancy_per_start=expert_rho, theta_star=theta_star)

        teachers = make_teachers(self.teachers, context)
        learners = {name: new_learner(rng) for name, rng in zip(teachers, learner_rngs)}
        value = exact_return(mdp)
        lanes = teach(teachers, learners, self.steps, lessons=LessonBook(pool, expert_rho),
                      evaluate=lambda lr: value(np.exp(lr.action_log_probabilities())))
        extras = {"expert_reward": value(expert.policy), "n_starts": int(starts.size),
                  "diverged": {name: lane.diverged_at for name, lane in lanes.items() if lane.diverged_at is not None}}
        return RunResult(index=index, seed=0, curves={name: lane.curve for name, lane in lanes.items()},
                         records={"picks": {name: lane.picks for name, lane in lanes.items()}}, extras=extras)
