"""A dataset learner plug-in: a linear-Gaussian policy trained by its own NumPy gradient steps.

``dataset-bc --policy mypkg.dataset_learners:LinearGaussian`` trains it under every curriculum, selects and weights
its demonstrations, scores it on held-out data and rolls it out, with nothing else changed. A learner kind is a class
with a ``check`` classmethod; its instances offer ``train_step``, ``log_likelihood``, ``diverged`` and ``act``.
"""

import math

import gymnasium as gym
import numpy as np


class LinearGaussian:
    """``pi(a | s) = N(W^T [s, 1], diag(exp(log_std))^2)``, for vector observations and ``Box`` actions.

    Each ``train_step`` is one plain gradient step of ``learning_rate`` on the batch's weighted mean negative
    log-likelihood, for ``W`` and ``log_std`` alike; ``log_std`` stays in ``[-3, 1]`` so that a step never divides by
    a vanishing variance. The weights start from ``seed`` alone (small normals), the standard deviation at 1.
    """

    name = "linear-gaussian"

    @classmethod
    def check(cls, observation_space, action_space):
        """Refuse, in one line, spaces this policy cannot learn (called before any training)."""
        if not isinstance(action_space, gym.spaces.Box):
            raise ValueError(f"linear-gaussian learns continuous (Box) actions; the dataset's are {action_space}")
        if not isinstance(observation_space, gym.spaces.Box) or len(observation_space.shape) != 1:
            raise ValueError(f"linear-gaussian reads vector observations; the dataset's are {observation_space}")

    def __init__(self, observation_space, action_space, *, seed, device, batch_size, learning_rate, rng):
        self.check(observation_space, action_space)
        self.observation_space, self.action_space = observation_space, action_space
        self.width = int(np.prod(action_space.shape))
        self.learning_rate = float(learning_rate)
        self.weights = np.random.default_rng(seed).normal(0.0, 0.01, (observation_space.shape[0] + 1, self.width))
        self.log_std = np.zeros(self.width)

    def _mean(self, obs):
        """``(B, D)`` the Gaussian's mean of ``B`` observations."""
        obs = np.asarray(obs, dtype=np.float64).reshape(len(obs), -1)
        return np.hstack([obs, np.ones((len(obs), 1))]) @ self.weights

    def _nll(self, obs, acts):
        """``(B,)`` ``-log pi(a | s)`` and the residuals ``(B, D)``."""
        residual = np.asarray(acts, dtype=np.float64).reshape(len(acts), -1) - self._mean(obs)
        variance = np.exp(2.0 * self.log_std)
        nll = 0.5 * (residual**2 / variance + 2.0 * self.log_std + math.log(2.0 * math.pi)).sum(axis=1)
        return nll, residual

    def train_step(self, obs, acts, weights):
        """One gradient step on ``mean_b w_b (-log pi(a_b | s_b))``; returns that loss (a float)."""
        nll, residual = self._nll(obs, acts)
        w = np.ones(len(nll)) if weights is None else np.asarray(weights, dtype=np.float64)
        variance = np.exp(2.0 * self.log_std)
        features = np.hstack([np.asarray(obs, dtype=np.float64).reshape(len(obs), -1), np.ones((len(obs), 1))])
        grad_weights = -features.T @ (w[:, None] * residual / variance) / len(nll)
        grad_log_std = (w[:, None] * (1.0 - residual**2 / variance)).mean(axis=0)
        self.weights -= self.learning_rate * grad_weights
        self.log_std = np.clip(self.log_std - self.learning_rate * grad_log_std, -3.0, 1.0)
        return float((w * nll).mean())

    def log_likelihood(self, obs, acts):
        """``(T,)`` ``log pi(a_t | s_t)``, NaN everywhere once diverged."""
        if self.diverged():
            return np.full(len(acts), np.nan)
        return -self._nll(obs, acts)[0]

    def diverged(self):
        """Whether a parameter is no longer finite."""
        return not (np.isfinite(self.weights).all() and np.isfinite(self.log_std).all())

    def act(self, obs, streams=None):
        """``(B, D)`` the mean (greedy), or the mean plus ``std`` times standard normals from each row's stream."""
        mean = self._mean(obs)
        if streams is None:
            return mean
        return mean + np.exp(self.log_std) * np.stack([stream.standard_normal(self.width) for stream in streams])
