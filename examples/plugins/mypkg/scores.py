"""A trained score: how much each demonstration's actions disagree with what other demonstrations did in the
nearest states (k nearest neighbours). A demonstrator who acts unlike everyone else where everyone else agrees is
the first to drop."""

import numpy as np

from curteach_teaching.datasets.scores.trained import ScoreOption, TrainedScore


class ActionDisagreement(TrainedScore):
    """Per step: the share of the ``knn_k`` nearest states of *other* demonstrations whose action differs
    (discrete actions), or the mean distance to their actions (continuous); a demonstration's score is its mean
    over its steps (larger = dropped first). Flat observations only, standardised per dimension."""

    summary = "trained: disagreement of each step's action with the k nearest states' of other demonstrations"
    options = (ScoreOption("knn_k", int, 5, "neighbours per state (default 5)"),)

    def fit(self, data, learner, *, device="cpu", seed=0, cache=None, label="", progress=False, say=None):
        """``(N,)`` each demonstration's mean disagreement (needs no learner, device or cache: k-NN is cheap)."""
        k = self.values["knn_k"]
        states, actions, owner = [], [], []
        for i, trajectory in enumerate(data.trajectories):  # the observations as the codec encoded them
            obs = np.asarray(trajectory.obs, dtype=np.float64)  # (L + 1, D): the last one has no action
            if obs.ndim != 2:
                raise ValueError("ActionDisagreement reads flat observations (L + 1, D)")
            acts = np.asarray(trajectory.acts, dtype=np.float64).reshape(len(trajectory.acts), -1)
            states.append(obs[:-1])
            actions.append(acts)
            owner.append(np.full(len(acts), i))
        states, actions, owner = np.concatenate(states), np.concatenate(actions), np.concatenate(owner)
        states = (states - states.mean(0)) / np.maximum(states.std(0), 1e-8)
        discrete = not np.issubdtype(np.asarray(data.trajectories[0].acts).dtype, np.floating)
        per_step = np.empty(len(states))
        for start in range(0, len(states), 1024):  # a block of rows at a time: memory stays (1024, M)
            rows = slice(start, start + 1024)
            distance = ((states[rows, None, :] - states[None, :, :]) ** 2).sum(-1)
            distance[owner[rows, None] == owner[None, :]] = np.inf  # only other demonstrations vote
            nearest = np.argsort(distance, axis=1, kind="stable")[:, :k]
            theirs, mine = actions[nearest], actions[rows, None, :]
            if discrete:
                per_step[rows] = np.any(theirs != mine, axis=-1).mean(axis=1)
            else:
                per_step[rows] = np.linalg.norm(theirs - mine, axis=-1).mean(axis=1)
        if say is not None:
            say(f"action disagreement: {len(states)} states, {k} neighbours each")
        return np.bincount(owner, weights=per_step, minlength=len(data)) / np.bincount(owner, minlength=len(data))
