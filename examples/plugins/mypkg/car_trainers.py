"""A car trainer plug-in for ``curteach car-trainers``: imitation's BC with a neural network policy.

A car trainer is a recipe ``recipe(setup, curriculum, seed_sequence, *, callbacks=()) -> rewards``: build the trainer
on the run's car (``setup``: the MDP, the expert, the demonstration pool), teach it with a curriculum adapter for
``setup.settings.steps`` epochs, and return the exact expected reward before teaching and after each epoch.
"""

import gymnasium as gym
import numpy as np
from imitation.algorithms.bc import BC

from curteach_teaching.curriculum import AtEpochEnd, CurriculumBC, silent_logger
from curteach_teaching.learners.seeding import seeded_globals


def mlp_bc(setup, curriculum, seed_sequence, *, callbacks=()):
    """imitation's BC with its default policy (two hidden layers of 32 units, Adam), from scratch, batches of 32."""
    mdp = setup.mdp
    bc_seed, torch_seed = seed_sequence.spawn(2)
    # the network's initial weights come from torch's global generator: seed it from the run, restore it after
    with seeded_globals(int(torch_seed.generate_state(1)[0])):
        trainer = BC(observation_space=gym.spaces.Discrete(mdp.n_states),  # the car's observations are states
                     action_space=gym.spaces.Discrete(mdp.n_actions), rng=np.random.default_rng(bc_seed),
                     batch_size=32, custom_logger=silent_logger())
        adapter = CurriculumBC(trainer, setup.demonstrations, variant=curriculum,
                               teacher=setup.teacher_for(curriculum), callbacks=callbacks)
        rewards = [setup.reward(trainer.policy)]
        adapter.add_callback(AtEpochEnd(lambda _: rewards.append(setup.reward(trainer.policy))))
        adapter.train(setup.settings.steps)
    return rewards


mlp_bc.name = "mlp-bc"  # its name in the cells (mlp-bc_Cur), the summary and the figures
