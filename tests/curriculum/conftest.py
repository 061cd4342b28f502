"""Fixtures of the curriculum tests: the car's demonstrations at gamma 0.999 and imitation's BC on the car."""

import numpy as np
import pytest
import torch as th
from imitation.algorithms.bc import BC
from imitation.data.types import Trajectory

from curteach_teaching.curriculum import silent_logger
from curteach_teaching.demonstrations import sample_demonstrations
from curteach_teaching.learners.bc import QuadraticSoftmaxPolicy
from curteach_teaching.planning import hard_value_iteration


@pytest.fixture(scope="module")
def car_pool(car_mdp):
    """``(mdp, log_expert, pool)``: the default road at gamma 0.999, its expert's log-policy (hard value iteration)
    and the expert's demonstrations, two per start, sampled with ``default_rng(0)``."""
    mdp = car_mdp.replace(gamma=0.999)
    expert = hard_value_iteration(mdp)
    pool = sample_demonstrations(mdp, expert.policy, np.random.default_rng(0), n_per_start=2)
    return mdp, expert.log_policy, pool


@pytest.fixture(scope="module")
def car_demos(car_pool):
    """``(mdp, log_expert, demos)``: :func:`car_pool` with its demonstrations as one list (start-major)."""
    mdp, log_expert, pool = car_pool
    return mdp, log_expert, pool.all_trajectories()


@pytest.fixture(scope="module")
def car_short_demos(car_pool):
    """``(mdp, log_expert, demos)``: the first 24 demonstrations of :func:`car_pool`, demonstration ``i`` cut to its
    first ``i % 9 + 1`` actions (so that lengths differ)."""
    mdp, log_expert, pool = car_pool
    demos = [Trajectory(obs=d.obs[: n + 1], acts=d.acts[:n], infos=None, terminal=True)
             for d, n in zip(pool.all_trajectories()[:24], np.arange(24) % 9 + 1, strict=True)]
    return mdp, log_expert, demos


@pytest.fixture
def bc_trainer():
    """``bc_trainer(mdp, **options)``: imitation's BC training a new ``QuadraticSoftmaxPolicy.from_mdp(mdp)``.

    Defaults: ``seed=0`` (BC's ``rng=default_rng(seed)``), ``batch_size=32``, ``optimizer=th.optim.SGD`` with
    ``lr=0.05`` (``lr=None``: no optimizer keywords, the optimizer's own rate), ``ent_weight=0.0`` and a silent
    logger (``logger=`` another); the other ``options`` (``minibatch_size``, ``l2_weight``) go to BC as given.
    """

    def make(mdp, *, seed=0, batch_size=32, optimizer=th.optim.SGD, lr=0.05, ent_weight=0.0, logger=None,
             **options):
        policy = QuadraticSoftmaxPolicy.from_mdp(mdp)
        return BC(observation_space=policy.observation_space, action_space=policy.action_space, policy=policy,
                  rng=np.random.default_rng(seed), batch_size=batch_size, optimizer_cls=optimizer,
                  optimizer_kwargs=None if lr is None else {"lr": lr}, ent_weight=ent_weight,
                  custom_logger=silent_logger() if logger is None else logger, **options)

    return make


def _count_training_pairs(trainer):
    """Wrap the policy's evaluate_actions to record the batch sizes BC trains on (scoring uses no_grad)."""
    seen = []
    original = trainer.policy.evaluate_actions

    def wrapped(obs, acts):
        if th.is_grad_enabled():
            seen.append(len(acts))
        return original(obs, acts)

    trainer.policy.evaluate_actions = wrapped
    return seen


@pytest.fixture
def count_training_pairs():
    """``count_training_pairs(trainer) -> seen``: ``seen`` gets the size of every batch ``trainer`` trains on."""
    return _count_training_pairs
