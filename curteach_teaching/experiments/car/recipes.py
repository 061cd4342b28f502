"""How each imitation trainer is built on the car and taught by its curriculum adapter (``curteach car-trainers``).

The recipes are the car trainers of :data:`CAR_TRAINERS` (registered here under their
names in :data:`RECIPES`); a user's own trainer is a recipe with the same signature, found by ``module:attr`` or a
``curteach.car_trainers`` entry point (docs/extending.md).

A recipe ``recipe(setup, curriculum, seed_sequence, *, callbacks=()) -> curve`` takes the run's :class:`CarSetup`
(road, expert, demonstration pool, the pre-trained BC parameters), a curriculum (a built-in's name, a plug-in's spec
or a preference object, as the adapters' ``variant=`` takes it) and a seed sequence, builds the trainer as a user of
imitation would, wraps it in its adapter (:mod:`curteach_teaching.curriculum.adapters`) and returns the learning
curve: the **exact** expected reward ``R_true . rho^{pi_L, D_init}`` (gamma of the MDP; :meth:`CarSetup.reward`) of
the learner's policy before teaching and after each of the ``setup.settings.steps`` curriculum epochs (one BC epoch,
one DAgger round, one adversarial round, or one MCE-IRL teaching step). ``callbacks`` are to be given to the
adapter's curriculum (the experiment's :class:`~curteach_teaching.curriculum.metrics.EpochMetricMean` keeps each
epoch's mean training loss).

* **bc**: imitation's ``BC`` with the paper's :class:`~curteach_teaching.learners.bc.QuadraticSoftmaxPolicy` (car-bc's
  learner: ``make_bc_trainer``, one SGD step of ``learning_rate`` on the summed log-likelihood of 100 pairs), started
  from car-bc's pre-trained parameters, on :class:`~curteach_teaching.curriculum.adapters.bc.CurriculumBC`.
* **dagger**: the same BC trainer inside imitation's ``DAggerTrainer`` on the car's seals export (states as
  observations), the pool as initial demonstrations, ``dagger_episodes`` expert-labelled episodes per round.
* **gail**, **airl**: SB3's PPO with the same quadratic policy as generator (it has no value function: PPO's
  advantages are discounted returns), imitation's ``BasicRewardNet`` / ``BasicShapedRewardNet`` discriminators;
  each round is ``adversarial_timesteps`` generator steps and ``disc_updates`` discriminator updates; with
  ``match_starts`` the generator's episodes start where the epoch's demonstrations start.
* **mce-irl**: imitation's ``MCEIRL`` with a linear reward on the car's 8 features (started at zero), its
  time-dependent policy evaluated exactly by :func:`finite_horizon_return`.

SB3 and torch draw from the global generators (network initialisation, PPO's sampling): a recipe that builds SB3 or
torch objects does so inside :func:`seeded_globals`, which seeds them from the run's seed sequence and restores them
after, so that a run gives the same numbers in any worker and after any other run.

Every network a recipe builds (the policies, the reward nets, PPO) trains on ``setup.device``, the device the runner
gave the run (``"cpu"`` or a GPU's ``"cuda:k"``); a network is initialised before it moves there, so its initial
weights are the same on every device.
"""

from __future__ import annotations

import contextlib
import io
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from curteach_teaching.curriculum.callbacks import AtEpochEnd
from curteach_teaching.learners.seeding import seeded_globals
from curteach_teaching.planning import expected_return
from curteach_teaching.registry import Registry

__all__ = ["CarSetup", "CAR_TRAINERS", "RECIPES", "finite_horizon_return"]


@dataclass(frozen=True)
class CarSetup:
    """What every trainer of one run shares.

    Attributes:
        mdp: the car's :class:`~curteach_envs.tabular.TabularMDP`; expert: its hard-VI planning result.
        demonstrations: the pool's ``K * n`` imitation ``Trajectory`` objects (start-major).
        init_demonstrations: those of the pre-training starts (``--init``).
        theta: ``(16,)`` the pre-trained BC parameters (car-bc's learner after pre-training).
        settings: the experiment (its sizes and rates).
        device: where the run's networks train (``"cpu"``, ``"cuda:0"``, ...;
            :func:`~curteach_teaching.sweeps.devices.run_device` of the experiment's ``device``).
    """

    mdp: Any
    expert: Any
    demonstrations: list
    init_demonstrations: list
    theta: np.ndarray
    settings: Any
    device: str = "cpu"

    def teacher(self) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
        """The teacher's per-step ``log pi^E(a | s)`` of state-index observations (hard VI, tie-uniform)."""
        log_expert = self.expert.log_policy
        return lambda obs, acts: log_expert[np.asarray(obs, dtype=np.int64).reshape(-1), np.asarray(acts).reshape(-1)]

    def teacher_for(self, curriculum: Any) -> Callable[[np.ndarray, np.ndarray], np.ndarray] | None:
        """What an adapter's ``teacher=`` takes for ``curriculum`` (a name, ``module:attr`` or preference object):
        :meth:`teacher` when the curriculum reads the teacher difficulty (Cur, Cur-T, most plug-ins), else ``None``."""
        from curteach_teaching.curriculum.selection import needs_teacher_difficulty

        return self.teacher() if needs_teacher_difficulty(curriculum) else None

    def reward(self, policy: Any) -> float:
        """The exact expected reward ``R_true . rho^{pi, D_init}`` (the MDP's gamma) of a stationary policy over
        state-index observations: an SB3 policy with discrete actions (``get_distribution``; the quadratic BC policy
        through its own ``log_policy_table``) or an ``(S, A)`` table of action probabilities."""
        if isinstance(policy, np.ndarray):
            table = policy
        elif hasattr(policy, "log_policy_table"):
            table = np.exp(policy.log_policy_table())
        else:
            from curteach_teaching.teaching.observability import sb3_log_policy

            table = np.exp(sb3_log_policy(policy, np.arange(self.mdp.n_states)))
        return float(expected_return(self.mdp, table))


def finite_horizon_return(mdp: Any, pi: np.ndarray, gamma: float | None = None) -> float:
    """``sum_t gamma^t E[r(s_t)]`` of a time-dependent policy ``pi`` (``(H, S, A)``) over its H steps from the MDP's
    initial distribution, with the reward of the state entered after the last step; on the car, whose episodes
    end in the zero-reward sink after H = L steps, this is the infinite discounted return.

    Args:
        mdp: a :class:`~curteach_envs.tabular.TabularMDP` with state rewards ``(S,)``.
        pi: ``(H, S, A)`` action probabilities per time step.
        gamma: default the MDP's.
    """
    gamma = mdp.gamma if gamma is None else gamma
    reward = np.asarray(mdp.reward, dtype=np.float64).reshape(mdp.n_states, -1)[:, 0]
    transitions = mdp.transitions
    distribution = np.asarray(mdp.initial_state_dist, dtype=np.float64)
    total, discount = 0.0, 1.0
    for t in range(pi.shape[0]):
        total += discount * float(distribution @ reward)
        joint = (distribution[:, None] * pi[t]).reshape(-1)  # (S * A,), row s * A + a
        distribution = np.asarray(transitions.T @ joint).reshape(-1)
        discount *= gamma
    return total + discount * float(distribution @ reward)


def _bc_trainer(setup: CarSetup, rng: np.random.Generator):
    from curteach_teaching.learners.bc import QuadraticSoftmaxPolicy
    from curteach_teaching.learners.bc_car import make_bc_trainer

    policy = QuadraticSoftmaxPolicy.from_mdp(setup.mdp)
    policy.set_theta(setup.theta)
    s = setup.settings
    return make_bc_trainer(policy, s.n_per_start * s.demo_length, s.learning_rate, rng, setup.device)


def _folder_logger(folder: str):
    """An imitation logger that writes nothing but has a folder (the adversarial trainers' ``accumulate_means``
    needs one)."""
    from imitation.util import logger as imit_logger

    return imit_logger.configure(folder, format_strs=[])


def run_bc(setup: CarSetup, variant: str, seed_sequence: np.random.SeedSequence, *, callbacks: Sequence = ()
           ) -> list[float]:
    """The bc recipe (see the module docstring); returns the curve ``(steps + 1,)``."""
    from curteach_teaching.curriculum.adapters.bc import CurriculumBC

    trainer = _bc_trainer(setup, np.random.default_rng(seed_sequence))
    curriculum = CurriculumBC(trainer, setup.demonstrations, variant=variant, teacher=setup.teacher_for(variant),
                              callbacks=callbacks)
    curve = [setup.reward(trainer.policy)]
    curriculum.add_callback(AtEpochEnd(lambda _: curve.append(setup.reward(trainer.policy))))
    curriculum.train(setup.settings.steps)
    return curve


def _venv(setup: CarSetup, seed: int):
    from seals.base_envs import ExposePOMDPStateWrapper
    from stable_baselines3.common.vec_env import DummyVecEnv

    env = setup.mdp.to_seals()
    venv = DummyVecEnv([lambda: ExposePOMDPStateWrapper(env)])
    venv.seed(seed)
    return venv


def _expert_policy(setup: CarSetup, rng: np.random.Generator):
    import gymnasium as gym
    from imitation.algorithms.mce_irl import TabularPolicy

    mdp = setup.mdp
    pi = np.broadcast_to(setup.expert.policy, (mdp.horizon, mdp.n_states, mdp.n_actions)).copy()
    return TabularPolicy(gym.spaces.Discrete(mdp.n_states), gym.spaces.Discrete(mdp.n_actions), pi, rng)


def run_dagger(setup: CarSetup, variant: str, seed_sequence: np.random.SeedSequence, *, callbacks: Sequence = ()
               ) -> list[float]:
    """The dagger recipe: one curriculum epoch of BC per DAgger round."""
    from imitation.algorithms.dagger import DAggerTrainer

    from curteach_teaching.curriculum import silent_logger
    from curteach_teaching.curriculum.adapters.dagger import CurriculumDAgger

    bc_seed, dagger_seed, env_seed, expert_seed, torch_seed = seed_sequence.spawn(5)
    s = setup.settings
    trainer = _bc_trainer(setup, np.random.default_rng(bc_seed))
    with (tempfile.TemporaryDirectory(prefix="curteach-dagger-") as scratch,
          seeded_globals(_int(torch_seed), setup.device),
          contextlib.redirect_stderr(io.StringIO())):  # the progress bars of the demonstration files DAgger saves
        dagger = DAggerTrainer(venv=_venv(setup, _int(env_seed)), scratch_dir=scratch,
                               rng=np.random.default_rng(dagger_seed), bc_trainer=trainer,
                               custom_logger=silent_logger())
        curriculum = CurriculumDAgger(dagger, setup.demonstrations, n_rounds=s.steps, epochs_per_round=1,
                                      variant=variant, teacher=setup.teacher_for(variant), callbacks=callbacks)
        expert = _expert_policy(setup, np.random.default_rng(expert_seed))
        curve = [setup.reward(trainer.policy)]
        for _ in range(s.steps):
            curriculum.train_round(expert, min_episodes=s.dagger_episodes,
                                   min_timesteps=s.dagger_episodes * setup.mdp.horizon)
            curve.append(setup.reward(trainer.policy))
    return curve


def _adversarial(setup: CarSetup, variant: str, seed_sequence: np.random.SeedSequence, kind: str,
                 callbacks: Sequence = ()) -> list[float]:
    import torch as th
    from imitation.algorithms.adversarial.airl import AIRL
    from imitation.algorithms.adversarial.gail import GAIL
    from imitation.rewards.reward_nets import BasicRewardNet, BasicShapedRewardNet
    from stable_baselines3 import PPO

    from curteach_teaching.curriculum.adapters.adversarial import CurriculumAdversarial
    from curteach_teaching.learners.bc import QuadraticSoftmaxPolicy, action_features

    env_seed, torch_seed = seed_sequence.spawn(2)
    s = setup.settings
    with (tempfile.TemporaryDirectory(prefix="curteach-adversarial-") as folder,
          seeded_globals(_int(torch_seed), setup.device)):
        venv = _venv(setup, _int(env_seed))
        n_steps = s.adversarial_timesteps
        generator = PPO(QuadraticSoftmaxPolicy, venv, n_steps=n_steps, batch_size=min(n_steps, 100), n_epochs=4,
                        learning_rate=s.generator_learning_rate, gamma=setup.mdp.gamma, ent_coef=0.0,
                        device=setup.device,
                        policy_kwargs={"action_features": action_features(setup.mdp),
                                       "optimizer_class": th.optim.Adam})
        generator.policy.set_theta(setup.theta)
        net_class, trainer_class = (BasicRewardNet, GAIL) if kind == "gail" else (BasicShapedRewardNet, AIRL)
        reward_net = net_class(venv.observation_space, venv.action_space)  # the trainer moves it to PPO's device
        trainer = trainer_class(demonstrations=setup.demonstrations, demo_batch_size=s.n_per_start * s.demo_length,
                                venv=venv, gen_algo=generator, reward_net=reward_net,
                                n_disc_updates_per_round=s.disc_updates, custom_logger=_folder_logger(folder),
                                log_dir=folder)
        curriculum = CurriculumAdversarial(trainer, setup.demonstrations, variant=variant,
                                           teacher=setup.teacher_for(variant), callbacks=callbacks,
                                           match_starts=s.match_starts)
        curve = [setup.reward(generator.policy)]
        with contextlib.redirect_stderr(io.StringIO()):  # imitation's per-round progress bar
            curriculum.add_callback(AtEpochEnd(lambda _: curve.append(setup.reward(generator.policy))))
            curriculum.train(s.steps)
    return curve


def run_gail(setup: CarSetup, variant: str, seed_sequence: np.random.SeedSequence, *, callbacks: Sequence = ()
             ) -> list[float]:
    """The gail recipe: one curriculum epoch per adversarial round."""
    return _adversarial(setup, variant, seed_sequence, "gail", callbacks)


def run_airl(setup: CarSetup, variant: str, seed_sequence: np.random.SeedSequence, *, callbacks: Sequence = ()
             ) -> list[float]:
    """The airl recipe: one curriculum epoch per adversarial round."""
    return _adversarial(setup, variant, seed_sequence, "airl", callbacks)


def run_mce_irl(setup: CarSetup, variant: str, seed_sequence: np.random.SeedSequence, *, callbacks: Sequence = ()
                ) -> list[float]:
    """The mce-irl recipe: ``mce_iterations`` reward steps per teaching step, after ``pretrain_iterations`` on the
    pre-training starts' demonstrations."""
    import torch as th
    from imitation.algorithms.mce_irl import MCEIRL
    from imitation.rewards.reward_nets import BasicRewardNet

    from curteach_teaching.curriculum import silent_logger
    from curteach_teaching.curriculum.adapters.mce_irl import CurriculumMCEIRL

    s = setup.settings
    env = setup.mdp.to_seals()
    reward_net = BasicRewardNet(env.observation_space, env.action_space, use_action=False, hid_sizes=())
    with th.no_grad():  # a linear reward on the features, started at zero (no draw from torch's generator counts)
        for parameter in reward_net.parameters():
            parameter.zero_()
    reward_net.to(setup.device)  # MCEIRL computes on its reward net's device
    trainer = MCEIRL(None, env, reward_net, np.random.default_rng(seed_sequence), discount=1.0, log_interval=None,
                     optimizer_kwargs={"lr": s.mce_learning_rate}, custom_logger=silent_logger())
    if setup.init_demonstrations and s.pretrain_iterations:
        CurriculumMCEIRL(trainer, setup.init_demonstrations, variant="Agn", log=False,
                         iterations_per_epoch=s.pretrain_iterations).train(1)
    curriculum = CurriculumMCEIRL(trainer, setup.demonstrations, variant=variant, teacher=setup.teacher_for(variant),
                                  iterations_per_epoch=s.mce_iterations, callbacks=callbacks)
    curve = [finite_horizon_return(setup.mdp, trainer.policy.pi)]
    curriculum.add_callback(AtEpochEnd(lambda _: curve.append(finite_horizon_return(setup.mdp, trainer.policy.pi))))
    curriculum.train(s.steps)
    return curve


def _int(seed_sequence: np.random.SeedSequence) -> int:
    return int(seed_sequence.generate_state(1, dtype=np.uint32)[0])


#: The car recipe of each built-in trainer adapter (:mod:`curteach_teaching.curriculum.adapters`), by name.
RECIPES: dict[str, Callable[..., list[float]]] = {  # (setup, variant, seed_sequence, *, callbacks=()) -> curve
    "bc": run_bc,
    "dagger": run_dagger,
    "gail": run_gail,
    "airl": run_airl,
    "mce-irl": run_mce_irl,
}

#: The trainers ``curteach car-trainers`` runs: car recipes ``recipe(setup, curriculum, seed_sequence, *, callbacks)
#: -> (steps + 1,) expected rewards``; the built-ins are :data:`RECIPES`.
CAR_TRAINERS = Registry("car trainer", "curteach.car_trainers")
for _name, _recipe in RECIPES.items():
    CAR_TRAINERS.add(_name, lambda recipe=_recipe: recipe)
