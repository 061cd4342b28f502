"""A diffusion policy as a dataset learner: DDPM training of a noise predictor, DDIM sampling to act.

:class:`DiffusionLearner` learns ``pi(a | s)`` for vector observations and ``Box`` actions as Diffusion Policy
(Chi et al., 2023) and LeRobot's ``diffusion`` policy do, with ``diffusers``' schedulers (only the two schedulers
are imported, never a pipeline or weights):

* **what it denoises**: one action, not an action chunk: ``dataset-bc``'s curricula, held-out scores and evaluator
  work per demonstrated step (a weight, a log-likelihood and an action per step), so a chunk with a receding horizon
  would need a per-step reading of a chunk's loss that no other learner has;
* **actions normalised** to ``[-1, 1]`` by the ``Box``'s bounds (LeRobot's min-max normalisation); a dimension
  without finite bounds is standardised by the mean and standard deviation of the first batch the learner trains on
  (then fixed; the identity until then), and is not clipped;
* **training** (:meth:`DiffusionLearner.train_step`): the DDPM objective: a timestep ``t`` uniform in
  ``0..T-1`` and a noise ``eps ~ N(0, I)`` per step, ``a_t = sqrt(abar_t) a + sqrt(1 - abar_t) eps``
  (``DDPMScheduler.add_noise``, squared-cosine betas, ``T = 100`` as LeRobot uses), the per-step loss the mean over
  the action's dimensions of ``(epsilon(a_t, t, s) - eps)^2``, Adam on the batch's (weighted) mean;
* **acting** (:meth:`DiffusionLearner.act`): DDIM (``DDIMScheduler``, ``eta = 0``) in a fixed number of steps
  (10), the predicted clean action clipped to ``[-1, 1]`` at every step as LeRobot's ``clip_sample`` does; greedy
  starts from zero noise, sampled from a noise drawn per row from that row's stream;
* **the per-step score** (:meth:`DiffusionLearner.log_likelihood`): minus the denoising loss averaged over ``K = 8``
  pairs of a timestep and a noise, the same ``K`` pairs for every step of a call (drawn from a generator seeded by
  the learner's seed alone), so a step's score does not depend on the call or the batch it is scored in. It is not
  a log-density (only a bound on one, up to a constant and the timesteps' weights), but larger is better fitted, as
  the learner protocol asks.

Randomness: the weights, the training noise and the scoring noise each come from their own ``torch.Generator``
seeded from ``seed`` (never torch's or NumPy's global generators); the ``rng`` a learner kind is given is unused.
The training draws are laid out row by row (a timestep's uniform then the noise's uniforms for step ``b``), so the
first steps of a batch get the same draws as a shorter batch of those steps alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from curteach_teaching.learners.divergence import LearnerDiverged

__all__ = ["DiffusionLearner"]

# spawn keys of the learner's three generators (numpy.random.SeedSequence(seed, spawn_key=...))
_WEIGHTS, _TRAINING, _SCORING = 0, 1, 2


def _torch_seed(seed: int, stream: int) -> int:
    """A 63-bit seed of one of the learner's generators, from its seed and the generator's spawn key."""
    state = np.random.SeedSequence(int(seed), spawn_key=(stream,)).generate_state(1, dtype=np.uint64)[0]
    return int(state) >> 1


def _normal_from_uniforms(first: Any, second: Any) -> Any:
    """Box-Muller: standard normals of the shape of two tensors of uniforms in ``[0, 1)`` (elementwise, so a row's
    normals depend on that row's uniforms only)."""
    import torch

    return torch.sqrt(-2.0 * torch.log1p(-first)) * torch.cos(2.0 * torch.pi * second)


class DiffusionLearner:
    """A diffusion policy of ``Box`` actions given vector observations (see the module docstring).

    The class is its own learner kind: :meth:`check` refuses spaces it cannot learn, and the constructor takes the
    arguments every learner kind takes.

    Args:
        observation_space: a ``Box`` of shape ``(S,)``; action_space: a ``Box`` of shape ``(D,)``.
        seed: the seed of the weights, the training noise and the scoring noise.
        device: where the network trains and acts ("cpu", "cuda", a ``torch.device``).
        batch_size: kept for the protocol (the curriculum chooses the batches).
        learning_rate: Adam's rate (3e-3: the pilot of docs/learners-diffusion.md).
        rng: unused (the learner's randomness comes from ``seed``).
        hidden_sizes: the denoiser's hidden widths; embedding_dim: the timestep embedding's width.
        train_timesteps: ``T``, the DDPM's number of noise levels; ddim_steps: the DDIM steps of an action.
        score_draws: ``K``, the (timestep, noise) pairs a step's score averages.
        beta_schedule: the schedulers' noise schedule.

    Attributes:
        denoiser: the :class:`~curteach_teaching.learners.diffusion_denoiser.Denoiser`; optimizer: its Adam.
    """

    #: the rate ``dataset-bc`` and ``rank`` train it at where ``--learning-rate`` is not given (the pilot of
    #: docs/learners-diffusion.md: 3e-3 acts far better than their 1e-3 after 1500 steps)
    default_learning_rate = 3e-3

    def __init__(self, observation_space: gym.Space, action_space: gym.Space, *, seed: int, device: Any = "cpu",
                 batch_size: int = 256, learning_rate: float = 3e-3, rng: np.random.Generator | None = None,
                 hidden_sizes: Sequence[int] = (256, 256, 256), embedding_dim: int = 32, train_timesteps: int = 100,
                 ddim_steps: int = 10, score_draws: int = 8, beta_schedule: str = "squaredcos_cap_v2"):
        import torch
        from diffusers import DDIMScheduler, DDPMScheduler

        from curteach_teaching.learners.diffusion_denoiser import Denoiser

        self.check(observation_space, action_space)
        if ddim_steps < 1 or ddim_steps > train_timesteps or score_draws < 1:
            raise ValueError(f"diffusion needs 1 <= ddim_steps <= train_timesteps and score_draws >= 1; got "
                             f"ddim_steps={ddim_steps}, train_timesteps={train_timesteps}, score_draws={score_draws}")
        self.observation_space, self.action_space = observation_space, action_space
        self.seed, self.batch_size = int(seed), int(batch_size)
        self.device = torch.device(device)
        self.train_timesteps, self.ddim_steps, self.score_draws = train_timesteps, ddim_steps, score_draws
        self.action_dim = int(np.prod(action_space.shape))
        self.observation_dim = int(np.prod(observation_space.shape))

        low = np.asarray(action_space.low, dtype=np.float64).reshape(-1)
        high = np.asarray(action_space.high, dtype=np.float64).reshape(-1)
        self._bounded = np.isfinite(low) & np.isfinite(high)
        finite_low, finite_high = np.where(self._bounded, low, -1.0), np.where(self._bounded, high, 1.0)
        half = (finite_high - finite_low) / 2
        self._center = np.where(self._bounded, (finite_high + finite_low) / 2, 0.0)
        self._scale = np.where(self._bounded & (half > 0), half, 1.0)
        self._statistics_fixed = bool(self._bounded.all())  # unbounded dimensions wait for the first batch
        self._set_normalisation(self._center, self._scale)

        self.denoiser = Denoiser(self.action_dim, self.observation_dim, hidden_sizes, embedding_dim,
                                 torch.Generator().manual_seed(_torch_seed(seed, _WEIGHTS))).to(self.device)
        self.optimizer = torch.optim.Adam(self.denoiser.parameters(), lr=learning_rate)
        self._training_generator = torch.Generator().manual_seed(_torch_seed(seed, _TRAINING))
        # LeRobot's clip_sample: every DDIM step clips the predicted clean action to [-1, 1], which only the
        # bounded dimensions are normalised to; with an unbounded one the bounded ones are clipped at the end
        clip = bool(self._bounded.all())
        schedule = dict(num_train_timesteps=train_timesteps, beta_schedule=beta_schedule, clip_sample=clip,
                        clip_sample_range=1.0, prediction_type="epsilon")
        self.noise_scheduler = DDPMScheduler(**schedule)
        self.sampler = DDIMScheduler(**schedule)
        self.sampler.set_timesteps(ddim_steps)

    @classmethod
    def check(cls, observation_space: gym.Space, action_space: gym.Space) -> None:
        """Raise a one-line ``ValueError`` unless the observations are a 1-D ``Box`` and the actions a 1-D ``Box``
        (the denoiser concatenates them; discrete actions have no noise to add)."""
        if not isinstance(action_space, gym.spaces.Box):
            raise ValueError(f"diffusion needs Box actions; got {action_space}")
        if len(action_space.shape) != 1:
            raise ValueError(f"diffusion needs 1-D Box actions; got {action_space}")
        if not isinstance(observation_space, gym.spaces.Box) or len(observation_space.shape) != 1:
            raise ValueError(f"diffusion needs vector (1-D Box) observations; got {observation_space}")

    def _set_normalisation(self, center: np.ndarray, scale: np.ndarray) -> None:
        import torch

        self._center, self._scale = center, scale
        self._center_t = torch.as_tensor(center, dtype=torch.float32, device=self.device)
        self._scale_t = torch.as_tensor(scale, dtype=torch.float32, device=self.device)

    def _fix_statistics(self, acts: np.ndarray) -> None:
        """Standardise the unbounded dimensions by this batch's mean and standard deviation, once."""
        mean, std = acts.mean(axis=0), acts.std(axis=0)
        unbounded = ~self._bounded
        center = np.where(unbounded, mean, self._center)
        scale = np.where(unbounded, np.where(std > 0, std, 1.0), self._scale)
        self._set_normalisation(center, scale)
        self._statistics_fixed = True

    def _tensors(self, obs: Any, acts: Any | None = None) -> tuple[Any, Any]:
        """``(B, S)`` observations and ``(B, D)`` normalised actions (or ``None``) as float32 tensors on the
        device."""
        import torch

        # a read-only array (the pool's) is copied: torch warns on wrapping memory it may not write
        obs = np.require(np.asarray(obs, dtype=np.float32).reshape(-1, self.observation_dim), requirements="W")
        obs_t = torch.as_tensor(obs, device=self.device)
        if acts is None:
            return obs_t, None
        acts = np.asarray(acts, dtype=np.float64).reshape(-1, self.action_dim)
        if not self._statistics_fixed:
            self._fix_statistics(acts)
        acts_t = torch.as_tensor(acts.astype(np.float32), device=self.device)
        return obs_t, (acts_t - self._center_t) / self._scale_t

    def _draws(self, n: int, generator: Any) -> tuple[Any, Any]:
        """``n`` rows of ``(u, eps)`` on the device: ``u`` ``(n,)`` uniforms in ``[0, 1)`` (a timestep's) and
        ``eps`` ``(n, D)`` standard normals, row ``b`` from the ``b``-th block of ``1 + 2D`` uniforms of
        ``generator`` (CPU)."""
        import torch

        d = self.action_dim
        uniforms = torch.rand((n, 1 + 2 * d), dtype=torch.float64, generator=generator)
        noise = _normal_from_uniforms(uniforms[:, 1:1 + d], uniforms[:, 1 + d:]).to(torch.float32)
        return uniforms[:, 0].to(self.device), noise.to(self.device)

    def _per_step_loss(self, obs_t: Any, actions: Any, timesteps: Any, noise: Any) -> Any:
        """``(B,)`` the mean over the action's dimensions of ``(epsilon(a_t, t, s) - eps)^2``."""
        noisy = self.noise_scheduler.add_noise(actions, noise, timesteps)
        return (self.denoiser(noisy, timesteps, obs_t) - noise).square().mean(dim=1)

    def train_step(self, obs: Any, acts: Any, weights: Any | None) -> Any:
        """One Adam step on the DDPM loss of a batch of ``B`` steps: ``mean_b w_b l_b`` with ``l_b`` the step's
        denoising loss (``w_b = 1`` when ``weights`` is ``None``; weights that average 1 over the batch keep the
        loss's scale, as the BC learner's do).

        Args:
            obs: ``(B, S)`` observations; acts: ``(B, D)`` actions; weights: ``(B,)`` or ``None``.

        Returns:
            the loss, a 0-d tensor on the device.
        """
        import torch

        obs_t, actions = self._tensors(obs, acts)
        u, noise = self._draws(len(actions), self._training_generator)
        timesteps = (u * self.train_timesteps).long().clamp_(max=self.train_timesteps - 1)
        per_step = self._per_step_loss(obs_t, actions, timesteps, noise)
        if weights is None:
            loss = per_step.mean()
        else:
            w = torch.as_tensor(np.asarray(weights, dtype=np.float32), device=self.device)
            loss = (w * per_step).mean()
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss.detach()

    def score_pairs(self) -> tuple[Any, Any]:
        """The ``K`` ``(timestep, noise)`` pairs every score averages: ``(K,)`` timesteps stratified over ``0..T-1``
        (the ``k``-th uniform in the ``k``-th of ``K`` equal strata) and ``(K, D)`` noises, from a generator seeded by
        the learner's seed alone (the same pairs at every call)."""
        import torch

        generator = torch.Generator().manual_seed(_torch_seed(self.seed, _SCORING))
        u, noise = self._draws(self.score_draws, generator)
        strata = torch.arange(self.score_draws, device=self.device, dtype=torch.float64)
        timesteps = ((strata + u) / self.score_draws * self.train_timesteps).long()
        return timesteps.clamp_(max=self.train_timesteps - 1), noise

    def log_likelihood(self, obs: Any, acts: Any, *, chunk_size: int = 8192) -> np.ndarray:
        """``(T,)`` float64 minus each step's denoising loss averaged over the ``K`` pairs of
        :meth:`score_pairs` (without gradients); NaN for every step once the parameters are not finite.

        Args:
            obs: ``(T, S)`` observations; acts: ``(T, D)`` actions (as demonstrated).
            chunk_size: steps per forward pass (memory only: a step's score does not depend on it).
        """
        import torch

        n = len(acts)
        if self.diverged():
            return np.full(n, np.nan)
        timesteps, noise = self.score_pairs()
        scores = np.empty(n, dtype=np.float64)
        with torch.no_grad():
            for start in range(0, n, chunk_size):
                obs_t, actions = self._tensors(obs[start:start + chunk_size], acts[start:start + chunk_size])
                rows = len(actions)
                total = torch.zeros(rows, dtype=torch.float64, device=self.device)
                for k in range(self.score_draws):
                    loss = self._per_step_loss(obs_t, actions, timesteps[k].expand(rows),
                                               noise[k].expand(rows, -1))
                    total += loss.to(torch.float64)
                scores[start:start + rows] = (-total / self.score_draws).cpu().numpy()
        return scores

    def diverged(self) -> bool:
        """Whether a parameter of the denoiser is no longer finite."""
        import torch

        return not all(bool(torch.isfinite(p).all()) for p in self.denoiser.parameters())

    def act(self, obs: Any, streams: Sequence[np.random.Generator] | None = None) -> np.ndarray:
        """``(B, D)`` float64 actions by DDIM (``eta = 0``, :attr:`ddim_steps` steps): from zero noise (greedy,
        ``streams=None``), else from ``streams[b].standard_normal(D)`` for row ``b`` (its only draw).

        Raises:
            LearnerDiverged: the sampled actions are not finite.
        """
        import torch

        obs_t, _ = self._tensors(obs)
        rows = len(obs_t)
        if streams is None:
            initial = np.zeros((rows, self.action_dim), dtype=np.float32)
        else:
            if len(streams) != rows:
                raise ValueError(f"one stream per observation: {rows} observations, {len(streams)} streams")
            initial = np.stack([stream.standard_normal(self.action_dim) for stream in streams]).astype(np.float32)
        sample = torch.as_tensor(initial, device=self.device)
        with torch.no_grad():
            for t in self.sampler.timesteps:
                predicted = self.denoiser(sample, t.to(self.device).expand(rows), obs_t)
                sample = self.sampler.step(predicted, int(t), sample, eta=0.0).prev_sample
            bounded = torch.as_tensor(self._bounded, device=self.device)
            sample = torch.where(bounded, sample.clamp(-1.0, 1.0), sample)
            actions = (sample * self._scale_t + self._center_t).to(torch.float64).cpu().numpy()
        if not np.isfinite(actions).all():
            raise LearnerDiverged("the diffusion learner's sampled actions are not finite")
        return actions
