"""A teacher plug-in: Cur that explores.

A teacher factory takes a ``TeacherContext`` and returns an object with ``select(view, step) -> start state``.
A class whose constructor takes the context is such a factory.
"""

import numpy as np

from curteach_teaching.difficulty import curriculum_scores


class EpsilonCur:
    """With probability ``epsilon`` a uniformly random start, else Cur's choice (the start whose demonstrations are
    hardest for the learner relative to the teacher)."""

    name = "Cur-eps"  # how summaries, figures and --heatmap-teacher call it

    def __init__(self, context, epsilon=0.2):
        self.pool = context.pool  # (K starts x n demonstrations x L steps)
        self.start_states = context.start_states  # (K,) the starts it may pick
        self.expert_log_policy = context.expert.log_policy  # (S, A)
        self.rng = context.rng  # its own generator: derived from the run's seed and this teacher's spec
        self.epsilon = epsilon

    def select(self, view, step):
        """The start state to demonstrate from at teaching step ``step``."""
        if self.rng.random() < self.epsilon:
            return int(self.rng.choice(self.start_states))
        learner_log_policy = view.action_log_probabilities()  # (S, A), the only view Cur needs
        scores = curriculum_scores(self.expert_log_policy, learner_log_policy, self.pool.states, self.pool.actions)
        return int(self.start_states[np.argmax(scores)])
