"""Recurrent BC with a Gaussian-mixture head as a dataset learner (robomimic's BC-RNN-GMM).

:class:`BCRNNLearner` learns ``pi(a_t | o_{t-W+1..t})`` for vector observations and ``Box`` actions as robomimic's
``BC_RNN_GMM`` does (an LSTM over the observations, a mixture of ``K`` diagonal Gaussians read off its output):

* **windows**: it declares ``window = W`` (10, robomimic's ``rnn.horizon``), so everything it is handed is a window
  ``(B, W, S)`` of the ``W`` observations ending at a step, padded before its episode's start with the episode's
  first observation (:mod:`~curteach_teaching.learners.windows`);
* **the network**: a ``L``-layer LSTM (400 units, 2 layers: robomimic's defaults) from a zero state over the window,
  its last output mapped linearly to the mixture's ``K`` logits (5 modes), ``K x D`` means (``tanh``: robomimic's
  actions are in ``[-1, 1]``) and ``K x D`` standard deviations (``softplus + min_std``, ``min_std = 0.1`` in the
  normalised units, not robomimic's 1e-4: with 1e-4, actions clipped at the bounds (point masses at +-1) drew
  components of deviation 1e-4 onto the bounds, worth about 8 nats a step whatever the state, and the greedy
  component became a broad one that ignores the state: the pilot of docs/learners-bc-rnn.md);
* **actions normalised** to ``[-1, 1]`` by the ``Box``'s bounds; a dimension without finite bounds is not normalised
  and its means take no ``tanh``. The log-density is of the demonstrated action itself (the normalisation's Jacobian
  is added), so it compares with the Gaussian MLP's;
* **training** (:meth:`BCRNNLearner.train_step`, :attr:`loss`): ``sequence`` (the default, robomimic's): the LSTM
  runs once over each window from a zero state and the loss is the (weighted) mean of ``-log pi(a_j | o_1..o_j)``
  over every step ``j`` of every window of the batch, each step labelled with its own action and carrying its own
  weight (:func:`~curteach_teaching.learners.windows.sequence_batch`); ``last``: the window's last step only;
* **the per-step score** (:meth:`BCRNNLearner.log_likelihood`): ``log pi(a_t | window_t)``, the mixture's
  log-density by a log-sum-exp (``torch.distributions.MixtureSameFamily``);
* **acting** (:meth:`BCRNNLearner.act_step`, from the state the evaluator carries per environment, reset at each
  episode's start: :mod:`~curteach_teaching.learners.carried_state`) by :attr:`acting` (:data:`ACTING`): ``window``
  runs the LSTM from a zero state over the episode's last ``W`` observations, the computation of
  training and scoring, step for step (:meth:`BCRNNLearner.act` on a window); ``carried`` carries ``(h, c)`` through
  the episode; ``horizon`` (the default) resets it every ``W`` steps, as robomimic's rollout: what the sequence loss
  trains (at most ``W`` steps from a zero state), and the best of the three in the pilot. Greedy: the mean
  of the most probable component (the first on ties; robomimic's ``low_noise_eval`` samples a component and shrinks
  its deviation to ``1e-4``: nearly the same action when one component dominates, without a draw). Sampled: row
  ``b``'s component by the inverse CDF of one uniform from ``streams[b]``, then ``D`` standard normals from
  ``streams[b]``.

Randomness: the weights come from ``seed`` alone (torch's generator seeded inside a fork that restores the global
state); training draws nothing (the curriculum chooses the batches); the ``rng`` a learner kind is given is unused.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from curteach_teaching.learners.divergence import LearnerDiverged

__all__ = ["ACTING", "LOSSES", "BCRNNLearner", "mixture_log_density"]

#: how the learner acts in the evaluator, from the state it carries per episode (:meth:`BCRNNLearner.act_step`):
#: ``window``: the LSTM run from a zero state over the episode's last ``W`` observations at every step (training's
#: computation); ``carried``: one LSTM step per environment step, its ``(h, c)`` carried through the whole episode;
#: ``horizon``: carried, and reset to zero every ``W`` steps of the episode (robomimic's ``BC_RNN.get_action``)
ACTING = ("window", "carried", "horizon")

#: what a training window's loss is on (:meth:`BCRNNLearner.train_step`): ``sequence``: every step of the window,
#: each with its own demonstrated action (robomimic's ``BC_RNN``); ``last``: the window's last step only
LOSSES = ("sequence", "last")


def mixture_log_density(logits: Any, means: Any, stds: Any, actions: Any) -> Any:
    """``(B,)`` ``log sum_k softmax(logits)_k N(a; mu_k, diag(sigma_k^2))``.

    Args:
        logits: ``(B, K)``; means, stds: ``(B, K, D)``; actions: ``(B, D)`` (torch tensors).
    """
    import torch.distributions as D

    components = D.Independent(D.Normal(means, stds, validate_args=False), 1)
    mixture = D.MixtureSameFamily(D.Categorical(logits=logits, validate_args=False), components,
                                  validate_args=False)
    return mixture.log_prob(actions)


class _Network:
    """Builds the torch module lazily (torch imported on use): an LSTM and the mixture's three linear heads."""

    @staticmethod
    def build(observation_dim: int, action_dim: int, hidden_size: int, layers: int, modes: int) -> Any:
        import torch

        class RNNGMM(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.lstm = torch.nn.LSTM(observation_dim, hidden_size, num_layers=layers, batch_first=True)
                self.logits = torch.nn.Linear(hidden_size, modes)
                self.means = torch.nn.Linear(hidden_size, modes * action_dim)
                self.stds = torch.nn.Linear(hidden_size, modes * action_dim)

            def forward(self, windows: Any) -> tuple[Any, Any, Any]:
                """``(B, W, S)`` -> logits ``(B, K)``, raw means and raw deviations ``(B, K, D)``."""
                return self.heads(self.lstm(windows)[0][:, -1])

            def sequence(self, windows: Any) -> tuple[Any, Any, Any]:
                """``(B, W, S)`` -> the heads at every step of the window: logits ``(B, W, K)``, raw means and
                raw deviations ``(B, W, K, D)``."""
                return self.heads(self.lstm(windows)[0])

            def heads(self, outputs: Any) -> tuple[Any, Any, Any]:
                """The LSTM's outputs ``(..., H)`` -> logits ``(..., K)``, raw means and deviations
                ``(..., K, D)``."""
                lead = tuple(outputs.shape[:-1])
                return (self.logits(outputs), self.means(outputs).view(*lead, modes, action_dim),
                        self.stds(outputs).view(*lead, modes, action_dim))

        return RNNGMM()


class BCRNNLearner:
    """An LSTM with a Gaussian-mixture head over windows of vector observations (see the module docstring).

    The class is its own learner kind: :meth:`check` refuses spaces it cannot learn, and the constructor takes the
    arguments every learner kind takes.

    Args:
        observation_space: a ``Box`` of shape ``(S,)``; action_space: a ``Box`` of shape ``(D,)``.
        seed: the weights' seed; device: where the network trains and acts.
        batch_size: kept for the protocol (the curriculum chooses the batches).
        learning_rate: Adam's rate.
        rng: unused.
        window: ``W``, the steps of a window; hidden_size, layers: the LSTM's; modes: ``K``; min_std: the floor
            of every deviation; acting: how it acts in an environment, one of :data:`ACTING`.

    Attributes:
        window: ``W`` (read by the curriculum adapter, the held-out scoring and the evaluator).
        network: the torch module; optimizer: its Adam.
    """

    def __init__(self, observation_space: gym.Space, action_space: gym.Space, *, seed: int, device: Any = "cpu",
                 batch_size: int = 256, learning_rate: float = 1e-3, rng: np.random.Generator | None = None,
                 window: int = 10, hidden_size: int = 400, layers: int = 2, modes: int = 5,
                 min_std: float = 0.1, acting: str = "horizon", loss: str = "sequence"):
        import torch

        self.check(observation_space, action_space)
        if window < 1 or hidden_size < 1 or layers < 1 or modes < 1 or not min_std > 0:
            raise ValueError(f"bc-rnn needs window, hidden_size, layers, modes >= 1 and min_std > 0; got "
                             f"{window}, {hidden_size}, {layers}, {modes}, {min_std}")
        if acting not in ACTING:
            raise ValueError(f"bc-rnn acts by one of {', '.join(ACTING)}; got {acting!r}")
        if loss not in LOSSES:
            raise ValueError(f"bc-rnn's loss is on one of {', '.join(LOSSES)}; got {loss!r}")
        self.loss = loss
        # read by the curriculum adapter (learners.windows.learner_sequences): hand each window's W actions
        self.sequence_targets = loss == "sequence"
        self.observation_space, self.action_space = observation_space, action_space
        self.window, self.modes, self.min_std = int(window), int(modes), float(min_std)
        self.acting, self.layers, self.hidden_size = acting, int(layers), int(hidden_size)
        self.batch_size = int(batch_size)
        self.device = torch.device(device)
        self.observation_dim = int(observation_space.shape[0])
        self.action_dim = int(action_space.shape[0])

        low = np.asarray(action_space.low, dtype=np.float64)
        high = np.asarray(action_space.high, dtype=np.float64)
        self._bounded = np.isfinite(low) & np.isfinite(high) & (high > low)
        finite_low, finite_high = np.where(self._bounded, low, -1.0), np.where(self._bounded, high, 1.0)
        center, scale = (finite_high + finite_low) / 2, (finite_high - finite_low) / 2  # unbounded: 0 and 1
        self._center, self._scale = center, scale
        # the log-density of an action is its normalised one's minus the log of the map's scale
        self._log_jacobian = float(np.log(scale).sum())
        self._center_t = torch.as_tensor(center, dtype=torch.float32, device=self.device)
        self._scale_t = torch.as_tensor(scale, dtype=torch.float32, device=self.device)
        self._squash_t = torch.as_tensor(self._bounded, device=self.device)

        with torch.random.fork_rng(devices=[]):  # the global generator is left as found
            torch.manual_seed(int(seed))
            self.network = _Network.build(self.observation_dim, self.action_dim, hidden_size, layers, modes)
        self.network.to(self.device)
        self.optimizer = torch.optim.Adam(self.network.parameters(), lr=learning_rate)

    @classmethod
    def check(cls, observation_space: gym.Space, action_space: gym.Space) -> None:
        """Raise a one-line ``ValueError`` unless the observations are a 1-D ``Box`` and the actions a 1-D ``Box``
        (the LSTM reads vectors; the mixture is of Gaussians)."""
        if not isinstance(observation_space, gym.spaces.Box) or len(observation_space.shape) != 1:
            raise ValueError(f"bc-rnn takes vector observations; got {observation_space}")
        if not isinstance(action_space, gym.spaces.Box) or len(action_space.shape) != 1:
            raise ValueError(f"bc-rnn learns continuous (1-D Box) actions; got {action_space}")

    def _windows(self, obs: Any) -> Any:
        """``(B, W, S)`` float32 windows on the device.

        Raises:
            ValueError: observations that are not windows of this learner's ``W`` steps.
        """
        import torch

        obs = np.asarray(obs, dtype=np.float32)
        if obs.ndim != 3 or obs.shape[1:] != (self.window, self.observation_dim):
            raise ValueError(f"bc-rnn reads windows (B, {self.window}, {self.observation_dim}) of observations; "
                             f"got {obs.shape}")
        # a read-only array (the pool's) is copied: torch warns on wrapping memory it may not write
        return torch.as_tensor(np.require(obs, requirements="W"), device=self.device)

    def mixture(self, obs: Any) -> tuple[Any, Any, Any]:
        """The mixture of a batch of windows in the normalised action space: logits ``(B, K)``, means and
        deviations ``(B, K, D)`` (with gradients)."""
        return self._squashed(*self.network(self._windows(obs)))

    def _squashed(self, logits: Any, means: Any, stds: Any) -> tuple[Any, Any, Any]:
        """The heads' raw outputs as the mixture's parameters (``tanh`` on the bounded means, ``softplus +
        min_std`` on the deviations)."""
        import torch

        means = torch.where(self._squash_t, torch.tanh(means), means)
        return logits, means, torch.nn.functional.softplus(stds) + self.min_std

    def _step_log_density(self, obs: Any, acts: Any) -> Any:
        """``(B,)`` ``log pi(a_t | window_t)`` of the actions as given (with gradients)."""
        import torch

        acts = np.require(np.asarray(acts, dtype=np.float32).reshape(-1, self.action_dim), requirements="W")
        actions = torch.as_tensor(acts, device=self.device)
        logits, means, stds = self.mixture(obs)
        return mixture_log_density(logits, means, stds, (actions - self._center_t) / self._scale_t) \
            - self._log_jacobian

    def _sequence_log_density(self, obs: Any, acts: Any) -> Any:
        """``(B, W)`` ``log pi(a_{b,j} | o_{b,1..j})``: the mixture at step ``j`` of each window, the LSTM run from
        a zero state over the window's first ``j`` observations, of that step's action ``acts`` ``(B, W, D)``."""
        import torch

        acts = np.require(np.asarray(acts, dtype=np.float32), requirements="W")
        if acts.shape != (len(acts), self.window, self.action_dim):
            raise ValueError(f"bc-rnn's sequence loss reads the actions of every step of a window (B, {self.window}, "
                             f"{self.action_dim}); got {acts.shape}")
        actions = torch.as_tensor(acts, device=self.device)
        logits, means, stds = self._squashed(*self.network.sequence(self._windows(obs)))
        return mixture_log_density(logits, means, stds, (actions - self._center_t) / self._scale_t) \
            - self._log_jacobian

    def train_step(self, obs: Any, acts: Any, weights: Any | None) -> Any:
        """One Adam step on the (weighted) mean negative log-likelihood of the demonstrated actions.

        With ``acts`` ``(B, D)`` (each window's last action): ``mean_b w_b (-log pi(a_b | window_b))``. With
        ``acts`` ``(B, W, D)`` (every step's action, what the adapter hands a learner with
        :attr:`sequence_targets`): ``mean_{b,j} w_{b,j} (-log pi(a_{b,j} | o_{b,1..j}))`` over the ``B x W``
        steps, the LSTM run once over each window from a zero state (robomimic's ``BC_RNN``). ``w = 1`` when
        ``weights`` is ``None``.

        Args:
            obs: ``(B, W, S)`` windows; acts: ``(B, D)`` or ``(B, W, D)``; weights: ``(B,)`` or ``(B, W)`` as
                ``acts``' leading axes, or ``None``.

        Returns:
            the loss, a 0-d tensor on the device.
        """
        import torch

        if np.ndim(acts) == 3:
            nll = -self._sequence_log_density(obs, acts)
        else:
            nll = -self._step_log_density(obs, acts)
        if weights is None:
            loss = nll.mean()
        else:
            weights = np.asarray(weights, dtype=np.float32)
            if weights.shape != tuple(nll.shape):  # a (B,) weight would broadcast along a window's steps
                raise ValueError(f"bc-rnn's loss weights must be one per step of the loss {tuple(nll.shape)}; got "
                                 f"{weights.shape}")
            loss = (torch.as_tensor(weights, device=self.device) * nll).mean()
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss.detach()

    def log_likelihood(self, obs: Any, acts: Any, *, chunk_size: int = 8192) -> np.ndarray:
        """``(T,)`` float64 ``log pi(a_t | window_t)`` (without gradients); NaN for every step once diverged.

        Args:
            obs: ``(T, W, S)`` windows; acts: ``(T, D)`` their last actions.
            chunk_size: windows per forward pass (memory only).
        """
        import torch

        n = len(acts)
        if self.diverged():
            return np.full(n, np.nan)
        scores = np.empty(n, dtype=np.float64)
        with torch.no_grad():
            for begin in range(0, n, chunk_size):
                end = min(n, begin + chunk_size)
                scores[begin:end] = self._step_log_density(obs[begin:end], acts[begin:end]).double().cpu().numpy()
        return scores

    def diverged(self) -> bool:
        """Whether a parameter of the network is no longer finite."""
        import torch

        return not all(bool(torch.isfinite(p).all()) for p in self.network.parameters())

    def act(self, obs: Any, streams: Sequence[np.random.Generator] | None = None) -> np.ndarray:
        """``(B, D)`` float64 actions of ``(B, W, S)`` windows: the mean of each row's most probable component
        (greedy, ``streams=None``), else row ``b``'s component by the inverse CDF of ``streams[b].random()`` and its
        Gaussian by ``streams[b].standard_normal(D)`` (its only draws).

        Raises:
            LearnerDiverged: the mixture's outputs are not finite.
        """
        import torch

        with torch.no_grad():
            mixture = self.mixture(obs)
        return self._choose(*mixture, streams)

    def _choose(self, logits: Any, means: Any, stds: Any, streams: Sequence[np.random.Generator] | None) -> np.ndarray:
        """``(B, D)`` float64 actions of a mixture ``(B, K)``, ``(B, K, D)`` x 2 (see :meth:`act`)."""
        import torch

        probabilities = torch.softmax(logits.double(), dim=1).cpu().numpy()
        means, stds = means.double().cpu().numpy(), stds.double().cpu().numpy()
        if not (np.isfinite(probabilities).all() and np.isfinite(means).all() and np.isfinite(stds).all()):
            raise LearnerDiverged("the bc-rnn learner's mixture is not finite")
        rows = np.arange(len(means))
        if streams is None:
            chosen = means[rows, probabilities.argmax(axis=1)]
        else:
            if len(streams) != len(rows):
                raise ValueError(f"one stream per observation: {len(rows)} windows, {len(streams)} streams")
            cumulative = np.cumsum(probabilities, axis=1)
            components, noise = [], []
            for b, stream in enumerate(streams):
                u = stream.random() * cumulative[b, -1]  # the last sum is 1 up to rounding
                components.append(min(int(np.searchsorted(cumulative[b], u, side="right")), self.modes - 1))
                noise.append(stream.standard_normal(self.action_dim))
            k = np.asarray(components)
            chosen = means[rows, k] + stds[rows, k] * np.asarray(noise)
        return chosen * self._scale + self._center

    def initial_state(self, n: int) -> tuple:
        """The state of ``n`` episodes before their first step (:mod:`~curteach_teaching.learners.carried_state`):
        the LSTM's ``h`` and ``c`` ``(n, L, H)`` (zeros), the steps taken ``(n,)`` int64 and the last ``W``
        observations ``(n, W, S)`` (filled at the first step), torch tensors on the device."""
        import torch

        zeros = torch.zeros((n, self.layers, self.hidden_size), device=self.device)
        return (zeros, zeros.clone(), torch.zeros(n, dtype=torch.int64, device=self.device),
                torch.zeros((n, self.window, self.observation_dim), device=self.device))

    def act_step(self, obs: Any, state: tuple, streams: Sequence[np.random.Generator] | None = None
                 ) -> tuple[np.ndarray, tuple]:
        """``(B, D)`` actions of the current observations ``(B, S)`` from the rows' states, and the next states, by
        :attr:`acting` (see :data:`ACTING`): ``window`` acts as :meth:`act` on the window the state keeps (the
        first observation repeated at an episode's start); ``carried`` takes one LSTM step from ``(h, c)``;
        ``horizon`` does so from a zero ``(h, c)`` at every ``W``-th step. Greedy or sampled as :meth:`act`.

        Raises:
            LearnerDiverged: the mixture's outputs are not finite.
        """
        import torch

        h, c, steps, recent = state
        current = torch.as_tensor(np.require(np.asarray(obs, dtype=np.float32), requirements="W"),
                                  device=self.device).reshape(-1, self.observation_dim)
        first = (steps == 0)[:, None, None]
        # the window: at an episode's first step the observation W times, else shifted by one step
        recent = torch.where(first, current[:, None].expand(-1, self.window, -1),
                             torch.cat([recent[:, 1:], current[:, None]], dim=1))
        with torch.no_grad():
            if self.acting == "window":
                mixture = self.mixture(recent)
            else:
                if self.acting == "horizon":  # robomimic: a zero state every W steps of the episode
                    restart = (steps % self.window == 0)[:, None, None]
                    h, c = torch.where(restart, torch.zeros_like(h), h), torch.where(restart, torch.zeros_like(c), c)
                out, (h, c) = self.network.lstm(current[:, None], (h.transpose(0, 1).contiguous(),
                                                                   c.transpose(0, 1).contiguous()))
                h, c = h.transpose(0, 1), c.transpose(0, 1)
                mixture = self._squashed(*self.network.heads(out[:, -1]))
        return self._choose(*mixture, streams), (h, c, steps + 1, recent)
