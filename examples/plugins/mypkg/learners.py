"""A learner plug-in: a tabular policy that imitates the most recent demonstrations.

A learner offers ``action_log_probabilities() -> (S, A)`` (what Cur, Cur-L and a probing view read) and
``learn(lesson)``. A learner factory takes a ``LearnerContext``; a class whose constructor takes it is one.
"""

import numpy as np


class RecencyImitator:
    """In every state a lesson visits, ``pi(.|s) <- (1 - eta) pi(.|s) + eta * (the lesson's action frequencies in s)``;
    other states keep their policy. Starts uniform; ``eta`` is the experiment's learning rate."""

    name = "recency"

    def __init__(self, context):
        if not 0.0 < context.learning_rate <= 1.0:
            raise ValueError(f"RecencyImitator needs a learning rate in (0, 1]; got {context.learning_rate}")
        self.eta = context.learning_rate
        self.policy = np.full((context.mdp.n_states, context.mdp.n_actions), 1.0 / context.mdp.n_actions)

    def action_log_probabilities(self):
        """``(S, A)`` log pi; never -inf (every update mixes with the old, positive policy)."""
        return np.log(self.policy)

    def learn(self, lesson):
        """Move towards the action frequencies of ``lesson.states``, ``lesson.actions`` (``(n, L)`` each)."""
        states, actions = lesson.states.ravel(), lesson.actions.ravel()
        counts = np.zeros_like(self.policy)
        np.add.at(counts, (states, actions), 1.0)
        seen = counts.sum(axis=1) > 0
        frequencies = counts[seen] / counts[seen].sum(axis=1, keepdims=True)
        self.policy[seen] = (1.0 - self.eta) * self.policy[seen] + self.eta * frequencies
