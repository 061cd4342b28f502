"""Teaching a learner that only acts: ProbedPolicyView around a callable, and around a Stable-Baselines3 policy.

Run it as ``python examples/plugins/probing.py``.
"""

import gymnasium as gym
import numpy as np
import torch
from mypkg.learners import RecencyImitator
from stable_baselines3.common.policies import ActorCriticPolicy

from curteach_envs import TabularMDP
from curteach_teaching.demonstrations import sample_demonstrations
from curteach_teaching.experiments.tabular.experiment import exact_return, teaching_starts
from curteach_teaching.planning import hard_value_iteration
from curteach_teaching.teaching.loop import LearnerContext, LessonBook, teach
from curteach_teaching.teaching.observability import ProbedPolicyView
from curteach_teaching.teaching.teachers import CurriculumTeacher

mdp = TabularMDP.from_gymnasium(gym.make("FrozenLake-v1"), gamma=0.95)
S, A = mdp.n_states, mdp.n_actions
starts = teaching_starts(mdp)
expert = hard_value_iteration(mdp)
pool = sample_demonstrations(mdp, expert.policy, np.random.default_rng(0), n_per_start=5, length=20,
                             start_states=starts)
observations = np.arange(S)  # (S,): what the learner sees in each state (here its id)


class BlackBox:
    """A learner the teacher may only watch act: its policy stays inside ``act``."""

    def __init__(self, seed):
        self.inner = RecencyImitator(LearnerContext(mdp, starts, None, learning_rate=0.3))
        self.rng = np.random.default_rng(seed)

    def act(self, obs):
        """``(N,)`` states -> ``(N,)`` sampled actions."""
        policy = self.inner.policy[obs]
        return (policy.cumsum(axis=1) > self.rng.random((len(obs), 1))).argmax(axis=1)

    def learn(self, lesson):
        """The teaching loop's update; the teacher never sees the result."""
        self.inner.learn(lesson)


learners = {"exact": BlackBox(1), "B=5, k=20": BlackBox(1)}
views = {"exact": learners["exact"].inner,  # Cur reads the true policy
         "B=5, k=20": ProbedPolicyView(learners["B=5, k=20"].act, refresh_every=5, probes_per_state=20,
                                       observations=observations, n_actions=A)}
teachers = {name: CurriculumTeacher(pool, expert.log_policy) for name in learners}
value = exact_return(mdp)
lanes = teach(teachers, learners, 20, lessons=LessonBook(pool), views=views,
              evaluate=lambda learner: value(learner.inner.policy))
for name, lane in lanes.items():
    print(f"Cur seeing {name:9s}: return after 20 steps {lane.curve[-1]:.4f}, first picks {lane.picks[:6].tolist()}")
print("probe refreshes:", views["B=5, k=20"].n_refreshes)  # at steps 0, 5, 10, 15

# An SB3 policy (e.g. an imitation BC trainer's trainer.policy): probes drawn from its action distribution.
torch.manual_seed(0)
policy = ActorCriticPolicy(gym.spaces.Discrete(S), gym.spaces.Discrete(A), lambda _: 1e-3)
exact = ProbedPolicyView(policy, refresh_every=1, probes_per_state=None, observations=observations)
probed = ProbedPolicyView(policy, refresh_every=1, probes_per_state=200, rng=np.random.default_rng(0),
                          observations=observations)
exact.at_step(0)
probed.at_step(0)
gap = np.abs(np.exp(probed.action_log_probabilities()) - np.exp(exact.action_log_probabilities())).max()
print(f"SB3 policy: (S, A) = {exact.action_log_probabilities().shape}, largest probability error of 200 probes "
      f"{gap:.3f}")
