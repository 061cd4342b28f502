"""Cur, Agn and the plug-in teacher teach the plug-in learner on FrozenLake through ``teach()``.

Run it as ``python examples/plugins/teach_in_python.py``: Python puts the script's folder, and so mypkg, on the path.
"""

import gymnasium as gym
import numpy as np
from mypkg.learners import RecencyImitator
from mypkg.teachers import EpsilonCur

from curteach_envs import TabularMDP
from curteach_teaching.demonstrations import occupancy_per_start, sample_demonstrations
from curteach_teaching.experiments.tabular.experiment import exact_return, teaching_starts
from curteach_teaching.planning import hard_value_iteration
from curteach_teaching.teaching.factories import TEACHERS
from curteach_teaching.teaching.loop import LearnerContext, LessonBook, TeacherContext, teach

seed = np.random.SeedSequence(0)
pool_seed, agn_seed, eps_seed = seed.spawn(3)

mdp = TabularMDP.from_gymnasium(gym.make("FrozenLake-v1"), gamma=0.95)  # 16 cells + 1 sink, slippery
starts = teaching_starts(mdp)  # (K,) the live states reachable from the start
expert = hard_value_iteration(mdp)
pool = sample_demonstrations(mdp, expert.policy, np.random.default_rng(pool_seed), n_per_start=5, length=20,
                             start_states=starts)
expert_occupancy = occupancy_per_start(mdp, expert.policy, starts)  # (K, S), for teachers that read it


def context(rng_seed):
    """What a teacher factory gets: the MDP, the pool, the expert, the starts and its own generator."""
    return TeacherContext(mdp=mdp, pool=pool, expert=expert, start_states=starts,
                          rng=np.random.default_rng(rng_seed), expert_occupancy_per_start=expert_occupancy)


_, cur_factory = TEACHERS.load("Cur")  # a built-in is a factory too
_, agn_factory = TEACHERS.load("Agn")
teachers = {"Cur": cur_factory(context(0)), "Agn": agn_factory(context(agn_seed)),
            "Cur-eps": EpsilonCur(context(eps_seed))}
learner_context = LearnerContext(mdp=mdp, start_states=starts, rng=np.random.default_rng(1), learning_rate=0.3)
learners = {name: RecencyImitator(learner_context) for name in teachers}  # one learner per teacher

value = exact_return(mdp)  # policy (S, A) -> exact expected discounted return
lanes = teach(teachers, learners, 30, lessons=LessonBook(pool, expert_occupancy),
              evaluate=lambda learner: value(np.exp(learner.action_log_probabilities())))

print(f"expert {value(expert.policy):.4f}, uniform {lanes['Cur'].curve[0]:.4f}")
for name, lane in lanes.items():
    print(f"{name:8s} after 10, 20, 30 steps: " + ", ".join(f"{lane.curve[t]:.4f}" for t in (10, 20, 30))
          + f"; first picks {lane.picks[:6].tolist()}")
