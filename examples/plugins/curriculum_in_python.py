"""The plug-in curriculum in CurriculumSelection (by hand-made difficulties) and in CurriculumBC (imitation's BC on
FrozenLake demonstrations of varied quality).

Run it as ``python examples/plugins/curriculum_in_python.py``.
"""

import warnings

import gymnasium as gym
import numpy as np
import torch
from imitation.algorithms.bc import BC
from mypkg.curricula import TeacherWeighted

from curteach_envs import TabularMDP
from curteach_teaching.curriculum import CurriculumBC, silent_logger
from curteach_teaching.curriculum.selection import CurriculumSelection, check_variant
from curteach_teaching.demonstrations import sample_demonstrations
from curteach_teaching.planning import hard_value_iteration

warnings.filterwarnings("ignore", message="Converting a tensor")  # from imitation's BC logger

# 1. The selection alone: N = 5 demonstrations, log Psi^L and log Psi^E given, keep 2 per epoch.
learner = np.array([3.0, 1.0, 2.0, 2.0, 0.5])
teacher = np.array([1.0, 0.0, 2.0, -1.0, 0.0])
selection = CurriculumSelection(5, TeacherWeighted(), teacher, pacing=lambda epoch, n_epochs, n: 2)
chosen = selection.select(1, 4, learner)
print("preference", chosen.preference.tolist(), "-> kept", chosen.selected.tolist())  # [1, 1, -2, 4, 0.5] -> [3, 0]
print("by module:attr:", type(check_variant("mypkg.curricula:TeacherWeighted")).__name__)  # a class is instantiated

# 2. CurriculumBC: 4 demonstrators from careful (noise 0) to careless (noise 0.6), 10 demonstrations each.
mdp = TabularMDP.from_gymnasium(gym.make("FrozenLake-v1"), gamma=0.95)
expert = hard_value_iteration(mdp)
rng = np.random.default_rng(0)
noise = np.repeat([0.0, 0.2, 0.4, 0.6], 10)
demos = []
for level in np.unique(noise):
    policy = (1.0 - level) * expert.policy + level / mdp.n_actions
    pool = sample_demonstrations(mdp, policy, rng, n_per_start=10, length=12, start_states=np.array([0]))
    demos += pool.all_trajectories()  # imitation Trajectories whose obs are state ids
log_expert = np.maximum(expert.log_policy, -20.0)  # log pi^E, floored: a careless action is very unlikely

torch.manual_seed(0)  # imitation's default policy draws its initial weights from torch's global generator
trainer = BC(observation_space=gym.spaces.Discrete(mdp.n_states), action_space=gym.spaces.Discrete(mdp.n_actions),
             rng=np.random.default_rng(1), batch_size=32, custom_logger=silent_logger())
curriculum = CurriculumBC(trainer, demos, variant=TeacherWeighted(),
                          teacher=lambda obs, acts: log_expert[obs, acts])  # per step log pi^E(a | s)
for record in curriculum.train(n_epochs=4):
    kept = record.selected
    print(f"epoch {record.epoch}: kept {record.n_selected} of {len(demos)}, mean noise of the kept "
          f"{noise[kept].mean():.2f} (all {noise.mean():.2f})")
print("recorded as", curriculum.config()["variant"])  # the name attribute
