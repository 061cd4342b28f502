"""``deminf`` in the score registry: Demonstration Information (Hejna et al., 2025, arXiv 2502.08623), minus a
demonstration's mean contribution to the mutual information between the pool's states and actions
(:func:`~curteach_teaching.datasets.deminf.deminf_scores`; its module says the estimator and its departures from the
authors' code). No learner and no environment: the ``--policy`` learner the prepare step builds is not used.

Options (flags of ``rank`` and ``dataset-bc``, fields of the sweep's settings): ``deminf_k`` (the KSG neighbour rank),
``deminf_encoder`` (``pca`` or ``vae``), ``deminf_state_latent``, ``deminf_action_latent`` (the codes' sizes) and
``deminf_vae_steps`` (Adam steps per VAE). The scores are cached in the caller's folder as ``deminf-<key>.npz``,
keyed by these settings, the seed, the data's digest and the caller's label; a damaged file is fitted again.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from curteach_envs._util import check_int
from curteach_teaching.datasets.scores.npz_cache import cached_difficulty, write_arrays
from curteach_teaching.datasets.scores.trained import ScoreOption, TrainedScore

__all__ = ["DemInfScore", "flat_steps"]


def flat_steps(trajectories) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(obs (T, do), acts (T, da), episode_of_step (T,))`` float64, float64, int64: every step of ``trajectories``
    (imitation trajectories, their final observations left out), each observation flattened (a ``DictObs``'s arrays
    flattened and joined in their keys' sorted order) and each action flattened (a ``Discrete`` index as one
    column)."""
    obs_rows, act_rows, episodes = [], [], []
    for i, trajectory in enumerate(trajectories):
        steps = len(trajectory.acts)
        obs = trajectory.obs
        if hasattr(obs, "keys"):  # a DictObs or a dict: every key's values side by side
            as_dict = obs if isinstance(obs, dict) else dict(obs.items())
            parts = [np.asarray(as_dict[key])[:steps].reshape(steps, -1) for key in sorted(as_dict)]
            obs_rows.append(np.concatenate(parts, axis=1).astype(np.float64))
        else:
            obs_rows.append(np.asarray(obs)[:steps].reshape(steps, -1).astype(np.float64))
        act_rows.append(np.asarray(trajectory.acts).reshape(steps, -1).astype(np.float64))
        episodes.append(np.full(steps, i, dtype=np.int64))
    return np.concatenate(obs_rows), np.concatenate(act_rows), np.concatenate(episodes)


class DemInfScore(TrainedScore):
    """``deminf``: minus a demonstration's mean KSG contribution to ``I(S; A)`` (larger = less information =
    dropped first), fitted on the prepared data's states and actions."""

    summary = ("fitted: DemInf, minus a demonstration's mean contribution to the mutual information between states "
               "and actions (k-nearest-neighbour estimate on low-dimensional codes; Hejna et al. 2025)")
    options = (ScoreOption("deminf_k", int, 5, "score deminf: the KSG estimator's neighbour rank k (default 5)"),
               ScoreOption("deminf_encoder", str, "pca", "score deminf: the codes of states and actions: pca "
                           "(standardised principal components, no training) or vae (two small beta-VAEs, as the "
                           "paper's; default pca)"),
               ScoreOption("deminf_state_latent", int, 8, "score deminf: the states' code size (default 8)"),
               ScoreOption("deminf_action_latent", int, 3, "score deminf: the actions' code size (default 3)"),
               ScoreOption("deminf_vae_steps", int, 2000, "score deminf: Adam steps per VAE with --deminf-encoder "
                           "vae (default 2000)"))

    def __init__(self, **values: Any):
        super().__init__(**values)
        from curteach_teaching.datasets.deminf import ENCODERS

        for name in ("deminf_k", "deminf_state_latent", "deminf_action_latent", "deminf_vae_steps"):
            check_int(name, self.values[name], 1)
        if self.values["deminf_encoder"] not in ENCODERS:
            raise ValueError(f"deminf_encoder must be one of {', '.join(ENCODERS)}; got "
                             f"{self.values['deminf_encoder']!r}")

    def keywords(self) -> dict:
        """The keyword arguments of :func:`~curteach_teaching.datasets.deminf.deminf_scores` these settings give."""
        v = self.values
        return {"k": v["deminf_k"], "encoder": v["deminf_encoder"], "state_latent": v["deminf_state_latent"],
                "action_latent": v["deminf_action_latent"], "vae_steps": v["deminf_vae_steps"]}

    def fit(self, data, learner, *, device="cpu", seed=0, cache=None, label="", progress=False, say=None):
        """``(N,)`` the DemInf difficulty of every episode of ``data`` (``learner`` unused), read from ``cache``
        where fitted before with these settings, ``seed``, data and ``label``, else computed and written there.

        Raises:
            ValueError: fewer than ``deminf_k + 1`` steps (no ``k`` neighbours to find).
        """
        from curteach_teaching.datasets.deminf import deminf_scores
        from curteach_teaching.digests import trajectories_digest

        trajectories = list(data.trajectories)
        n = len(trajectories)
        obs, acts, episodes = flat_steps(trajectories)
        if len(obs) <= self.values["deminf_k"]:
            raise ValueError(f"deminf needs more than deminf_k = {self.values['deminf_k']} steps; the data has "
                             f"{len(obs)}")
        if say is not None:
            say(f"deminf: KSG (k {self.values['deminf_k']}) on {self.values['deminf_encoder']} codes of {len(obs)} "
                "steps" + ("" if cache is None else f" (cached in {cache})"))
        started = time.perf_counter()
        path, found = cached_difficulty(cache, "deminf", lambda: {
            **self.settings(), "seed": int(seed), "data": trajectories_digest(trajectories), "label": label}, n, say)
        if found is not None:
            return found
        difficulty = deminf_scores(obs, acts, episodes, seed=int(seed), device=str(device), **self.keywords())
        if path is not None:
            write_arrays(path, difficulty=difficulty)
        if say is not None:
            say(f"deminf ready (fitted in {time.perf_counter() - started:.0f} s)")
        return difficulty
