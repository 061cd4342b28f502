"""Demonstration Information (DemInf; Hejna et al., "Robot Data Curation with Mutual Information Estimators", 2025,
arXiv 2502.08623): how much a demonstration adds to the mutual information between a pool's states and actions.

A demonstration whose actions follow from its states (one operator, consistent) sits where states and actions are
dependent and raises ``I(S; A)``; one whose actions are noise or contradict other operators' lowers it. DemInf
encodes states and actions into low-dimensional spaces, estimates ``I(S; A)`` over the whole pool with KSG's
k-nearest-neighbour estimator (:mod:`curteach_teaching.datasets.mutual_information`), and scores each demonstration by
its steps' mean contribution. The paper keeps the demonstrations of highest information; here the score is the
difficulty of the library's rankings (larger = dropped first), so :func:`deminf_scores` returns MINUS the mean
contribution.

Encoders (``encoder=``):
    ``"vae"``: the paper's: two small beta-VAEs, one on the standardised states and one on the standardised actions,
        each an MLP (:data:`VAE_HIDDEN` hidden units, two ReLU layers) to a Gaussian latent of ``state_latent`` /
        ``action_latent`` dimensions, trained with Adam on reconstruction + ``beta`` KL; a step's code is the
        encoder's mean. Seeded from one ``torch.Generator`` (initialisation, minibatches, the reparameterisation's
        noise); no global generator is read.
    ``"pca"``: every column standardised over the pool (constant columns dropped), then the leading principal
        components (``state_latent`` / ``action_latent`` of them; all when there are fewer columns). No training.

Departures from the authors' code (``scripts/quality/quality_estimators.py``, ``ksg_estimator``), with reasons:
    * The neighbour search: theirs computes all-pairs distances within shuffled batches of 1024 steps (four passes,
      half the data dropped on each), so a step's neighbours come from about 1023 others; ours finds them in the
      whole pool with k-d trees (exact and deterministic for given codes), or, with ``batch=B``, within ``B``-step
      batches of ``repeats`` seeded partitions as theirs does, each step's contribution averaged over its passes.
    * The norm: theirs takes the Euclidean distance within each space and the larger of the two across; ours is
      KSG's max-norm throughout (the largest absolute coordinate difference), which k-d trees count exactly.
    * ``k``: theirs averages the terms over ``k`` in 5, 6, 7; ours uses one ``k`` (default 5).
    * Constants: theirs drops ``psi(k) + psi(n)`` (the same for every step of a batch); ours keeps them, so a
      contribution's mean is the estimate itself. Equal samples: theirs yields ``digamma(0)`` (not finite) and drops
      the step; ours follows Gao et al.'s mixed-data rule (see the estimator's module).
    * Aggregation: theirs clips the step values at their 1st and 99th percentiles, standardises them and averages per
      episode; ours clips the same way and averages (standardising is affine and does not change a ranking).
    * The VAEs: theirs have two hidden layers of 512, latents of 12 (states) and 6 (actions) for robomimic, beta
      0.05, Adam at 1e-4, 50,000 steps of batch 256; ours have two of :data:`VAE_HIDDEN`, latents of
      ``state_latent`` and ``action_latent`` (capped at the columns), beta 0.05, Adam at 1e-3 and ``vae_steps`` steps
      of batch 256, so that the score costs about as much as the BC ensemble's fit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from curteach_teaching.datasets.mutual_information import ksg_mutual_information

if TYPE_CHECKING:
    import torch as th

__all__ = ["DEFAULT_SETTINGS", "ENCODERS", "VAE_HIDDEN", "deminf_contributions", "deminf_scores", "encode",
           "pca_codes", "vae_codes"]

ENCODERS = ("vae", "pca")
VAE_HIDDEN = 256
VAE_BETA = 0.05
VAE_BATCH = 256
VAE_LEARNING_RATE = 1e-3

#: :func:`deminf_scores`'s keyword defaults besides ``seed`` and ``device``: what a fitted score's settings (and a cache
#: key) must hold, since each of them changes the scores.
DEFAULT_SETTINGS = {"k": 5, "encoder": "pca", "state_latent": 8, "action_latent": 3, "vae_steps": 2000, "batch": None,
                    "repeats": 4}


def _standardise(values: np.ndarray) -> np.ndarray:
    """``(T, d')`` float64: the non-constant columns of ``values`` ``(T, d)``, each to mean 0 and standard deviation
    1 over the pool (a constant column carries no information and would divide by 0)."""
    values = np.asarray(values, dtype=np.float64).reshape(len(values), -1)
    spread = values.std(axis=0)
    varying = spread > 1e-12 * np.maximum(1.0, np.abs(values).max(axis=0))
    if not varying.any():
        raise ValueError("every column is constant: nothing to encode")
    return (values[:, varying] - values[:, varying].mean(axis=0)) / spread[varying]


def pca_codes(values: np.ndarray, latent: int) -> np.ndarray:
    """``(T, min(latent, d'))`` float64: the standardised ``values`` ``(T, d)`` projected on their ``latent`` leading
    principal components (an SVD, deterministic; a component's sign does not change max-norm distances)."""
    standard = _standardise(values)
    if latent >= standard.shape[1]:
        return standard
    _, _, right = np.linalg.svd(standard, full_matrices=False)
    return standard @ right[:latent].T


def vae_codes(values: np.ndarray, latent: int, *, steps: int, generator: th.Generator, device: str = "cpu",
              beta: float = VAE_BETA) -> np.ndarray:
    """Train a beta-VAE on the standardised ``values`` ``(T, d)`` and return ``(T, min(latent, d'))`` float64, each
    row's encoder mean.

    ``generator``: a CPU ``torch.Generator``, the only source of randomness (weights, minibatches, noise), advanced
    by the call. Weights are drawn as torch's default ``nn.Linear`` initialisation draws them (uniform in
    ``+-1/sqrt(fan_in)``) but from ``generator``."""
    import torch as th

    data = th.as_tensor(_standardise(values), dtype=th.float32)
    width = data.shape[1]
    latent = min(int(latent), width)

    def layer(fan_in: int, fan_out: int) -> th.nn.Linear:
        linear = th.nn.utils.skip_init(th.nn.Linear, fan_in, fan_out)  # torch's own init would draw globally
        bound = 1.0 / fan_in**0.5
        with th.no_grad():
            linear.weight.copy_(th.rand(linear.weight.shape, generator=generator) * 2 * bound - bound)
            linear.bias.copy_(th.rand(linear.bias.shape, generator=generator) * 2 * bound - bound)
        return linear

    encoder = th.nn.Sequential(layer(width, VAE_HIDDEN), th.nn.ReLU(), layer(VAE_HIDDEN, VAE_HIDDEN), th.nn.ReLU(),
                               layer(VAE_HIDDEN, 2 * latent)).to(device)
    decoder = th.nn.Sequential(layer(latent, VAE_HIDDEN), th.nn.ReLU(), layer(VAE_HIDDEN, VAE_HIDDEN), th.nn.ReLU(),
                               layer(VAE_HIDDEN, width)).to(device)
    optimiser = th.optim.Adam([*encoder.parameters(), *decoder.parameters()], lr=VAE_LEARNING_RATE)
    resident = data.to(device)
    for _ in range(int(steps)):
        rows = th.randint(0, data.shape[0], (min(VAE_BATCH, data.shape[0]),), generator=generator).to(device)
        batch = resident[rows]
        mean, log_var = encoder(batch).chunk(2, dim=1)
        noise = th.randn(mean.shape, generator=generator).to(device)
        decoded = decoder(mean + th.exp(0.5 * log_var) * noise)
        reconstruction = ((decoded - batch) ** 2).sum(dim=1).mean()
        kl = 0.5 * (th.exp(log_var) + mean**2 - 1.0 - log_var).sum(dim=1).mean()
        loss = reconstruction + beta * kl
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    with th.no_grad():
        codes = th.cat([encoder(part).chunk(2, dim=1)[0] for part in resident.split(65536)])
    return codes.double().cpu().numpy()


def encode(obs: np.ndarray, acts: np.ndarray, *, encoder: str, seed: int, device: str = "cpu",
           state_latent: int = 8, action_latent: int = 3, vae_steps: int = 2000) -> tuple[np.ndarray, np.ndarray]:
    """The state codes ``(T, <= state_latent)`` and action codes ``(T, <= action_latent)`` of ``obs`` ``(T, do)`` and
    ``acts`` ``(T, da)`` by ``encoder`` (:data:`ENCODERS`); the VAEs draw from one generator of ``seed``, the state
    VAE's draws first."""
    if encoder == "pca":
        return pca_codes(obs, state_latent), pca_codes(acts, action_latent)
    if encoder == "vae":
        from curteach_teaching.learners.seeding import make_generator

        generator = make_generator(seed)
        states = vae_codes(obs, state_latent, steps=vae_steps, generator=generator, device=device)
        return states, vae_codes(acts, action_latent, steps=vae_steps, generator=generator, device=device)
    raise ValueError(f"unknown DemInf encoder {encoder!r}; encoders: {', '.join(ENCODERS)}")


def deminf_contributions(states: np.ndarray, actions: np.ndarray, *, k: int, batch: int | None = None,
                         repeats: int = 4, seed: int = 0) -> np.ndarray:
    """``(T,)`` float64: each step's KSG contribution to ``I(S; A)`` from codes ``states`` ``(T, ds)`` and
    ``actions`` ``(T, da)``.

    ``batch=None``: one estimate over all ``T`` steps. ``batch=B``: ``repeats`` seeded random partitions of the steps
    into batches of about ``B`` (as the authors' batched estimate), each step's contributions averaged over the
    ``repeats`` batches that held it (``n`` in ``psi(n)`` is then the batch's size)."""
    total = states.shape[0]
    if batch is not None and (isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch <= 2 * k):
        raise ValueError(f"batch must be None or an integer above 2 k = {2 * k}; got {batch!r}")
    if isinstance(repeats, bool) or not isinstance(repeats, (int, np.integer)) or repeats < 1:
        raise ValueError(f"repeats must be a positive integer; got {repeats!r}")
    if batch is None or batch >= total:
        return ksg_mutual_information(states, actions, k).contributions
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0x6465]))
    sums = np.zeros(total, dtype=np.float64)
    pieces = max(1, round(total / batch))
    for _ in range(repeats):
        for rows in np.array_split(rng.permutation(total), pieces):
            sums[rows] += ksg_mutual_information(states[rows], actions[rows], k).contributions
    return sums / repeats


def deminf_scores(obs: np.ndarray, acts: np.ndarray, episode_of_step: np.ndarray, *, k: int = 5,
                  encoder: str = "pca", seed: int = 0, device: str = "cpu", state_latent: int = 8,
                  action_latent: int = 3, vae_steps: int = 2000, batch: int | None = None,
                  repeats: int = 4) -> np.ndarray:
    """DemInf's difficulty of each demonstration: MINUS its steps' mean KSG contribution to ``I(S; A)`` (larger =
    less information = dropped first).

    Args:
        obs: ``(T, do)`` the pool's states, every demonstration's steps (not its final observation), finite.
        acts: ``(T, da)`` the action taken at each of those states.
        episode_of_step: ``(T,)`` int, the demonstration ``0..N-1`` of each step; each of ``0..N-1`` must occur.
        k: the KSG neighbour rank.
        encoder: ``"pca"`` or ``"vae"`` (the module docstring).
        seed: the VAEs' generator and the batches' partitions.
        device: where the VAEs train (``"cpu"``, ``"cuda:0"``).
        state_latent, action_latent: the codes' sizes (capped at the varying columns).
        vae_steps: Adam steps per VAE.
        batch, repeats: :func:`deminf_contributions`.

    Returns:
        ``(N,)`` float64.

    Raises:
        ValueError: mismatched lengths, an episode with no step, or an unknown encoder.
    """
    obs = np.asarray(obs, dtype=np.float64).reshape(len(obs), -1)
    acts = np.asarray(acts, dtype=np.float64).reshape(len(acts), -1)
    episodes = np.asarray(episode_of_step).reshape(-1)
    if not obs.shape[0] == acts.shape[0] == episodes.shape[0]:
        raise ValueError(f"obs, acts and episode_of_step must hold one row per step; got {obs.shape[0]}, "
                         f"{acts.shape[0]} and {episodes.shape[0]}")
    if episodes.size == 0 or not np.issubdtype(episodes.dtype, np.integer) or episodes.min() < 0:
        raise ValueError("episode_of_step must be non-negative integers, one per step")
    n_episodes = int(episodes.max()) + 1
    steps_per_episode = np.bincount(episodes, minlength=n_episodes)
    if (steps_per_episode == 0).any():
        raise ValueError(f"episode {int(np.argmin(steps_per_episode))} has no step")
    states, actions = encode(obs, acts, encoder=encoder, seed=seed, device=device, state_latent=state_latent,
                             action_latent=action_latent, vae_steps=vae_steps)
    contributions = deminf_contributions(states, actions, k=k, batch=batch, repeats=repeats, seed=seed)
    # The authors' clip: a few steps in empty or crowded corners of the code space would otherwise decide an
    # episode's mean.
    low, high = np.percentile(contributions, [1.0, 99.0])
    clipped = np.clip(contributions, low, high)
    return -np.bincount(episodes, weights=clipped, minlength=n_episodes) / steps_per_episode
