"""``cupid`` in the score registry: CUPID's performance influence (Agia et al., 2025, arXiv 2506.19121), the
estimated change in a policy's closed-loop success when a demonstration is up-weighted in its training, negated
(larger = dropped first). Needs an environment.

1. **The policy**: one learner of ``--policy`` trained on every demonstration, the very policy of the CUPID
   baselines (:class:`~curteach_teaching.datasets.scores.fitted_policy.FittedPolicy`, ``policy_steps`` steps).
2. **Its rollouts**: ``cupid_rollouts`` episodes per dataset (group) in the data's environment, actions *sampled*
   from the policy (a REINFORCE gradient needs the policy's own draws: at a greedy Gaussian action, the mean, the
   log-density's gradient with respect to the mean is zero), their observations and actions recorded
   (:func:`_rollouts`, over :func:`~curteach_teaching.datasets.scores.env_rollouts.roll_out`). Each rollout is
   weighted by its outcome: ``+1`` success, ``-1`` failure where every rollout's environment reports success, else
   its return minus the rollouts' mean return (:func:`~curteach_teaching.datasets.influence.rollout_weights`);
   ``cupid_weights="centred"`` weights successes by ``1`` or ``0`` minus the rollouts' success rate instead.
3. **The influence** (:mod:`~curteach_teaching.datasets.influence`): every step's loss gradient (the learner's
   :mod:`~curteach_teaching.learners.step_loss`), projected to at most ``cupid_projection_dim`` numbers by seeded
   Rademacher matrices: where the learner's network is linear layers (BC's MLPs, diffusion's denoiser), layer by
   layer by a Kronecker-factored projection of each layer's inputs and output gradients, never forming a gradient
   (:mod:`~curteach_teaching.datasets.layer_gradients`, LoGra's); else the whole gradient by one dense matrix
   (:func:`~curteach_teaching.datasets.influence.projected_gradients`);
   ``psi_t = phi_t^T (Phi^T Phi + lambda I)^{-1} g`` for each demonstrated step with ``Phi`` the demonstrated
   steps' projected gradients and ``g`` the outcome-weighted sum of the rollouts' projected gradients over the
   rollouts' count, ``lambda = cupid_damping * trace(Phi^T Phi) / k`` (``k`` the features' count).
4. **Per demonstration**: the mean of ``psi`` over its steps (CUPID's trajectory loss is the mean over its steps);
   the registered score is **minus** that mean, as curteach's scores drop the larger first and a larger influence
   is a better demonstration.

Cached in the caller's folder as ``cupid-<key>.npz`` (keyed by the options, the policy's steps, batch size and
learning rate, the seed, the data's digest and the caller's label). Deterministic for a seed on the CPU: the policy,
the rollouts' streams (from ``SeedSequence([seed, ROLLOUT_TAG])``, one per group) and the projection
(``SeedSequence([seed, PROJECTION_TAG])``) are seeded.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from curteach_envs._util import check_int
from curteach_teaching.datasets.scores.fitted_policy import POLICY_STEPS, PolicyScore, per_demonstration_mean
from curteach_teaching.datasets.scores.npz_cache import cached_difficulty, write_arrays
from curteach_teaching.datasets.scores.trained import ScoreOption

__all__ = ["CupidScore", "demonstration_influence"]

#: what seeds the rollouts' action streams and the projection, apart from the policy's weights and batches
ROLLOUT_TAG = 0x637570
PROJECTION_TAG = 0x70726A
#: bytes of per-sample gradients held at once on the dense path (chunks of steps are sized to it)
GRADIENT_BYTES = 64 * 2**20
#: how the gradients are projected, as describe() records it: Kronecker-factored where the learner's network is linear
#: layers (and passes the check of datasets.layer_gradients), densely otherwise; which one a fit took, it says
PROJECTION = "kronecker where linear layers, else dense"

ROLLOUTS = ScoreOption("cupid_rollouts", int, 20, "score cupid: rollouts of the policy trained on all, per dataset, "
                       "whose outcomes weight the influence (default 20)")
PROJECTION_DIM = ScoreOption("cupid_projection_dim", int, 512, "score cupid: the random projection's size k of the "
                             "per-step gradients (default 512; CUPID uses 2048 for its larger networks)")
DAMPING = ScoreOption("cupid_damping", float, 0.01, "score cupid: the Gram matrix's regularisation, relative to its "
                      "mean eigenvalue (default 0.01)")
#: how the rollouts' outcomes weight the target gradient (``cupid_weights``)
WEIGHTS = ("success", "centred")
WEIGHTING = ScoreOption("cupid_weights", str, "success", "score cupid: how the rollouts' outcomes weight the target "
                        "gradient: success (+1 a success, -1 a failure, as the paper) or centred (the success minus "
                        "the rollouts' success rate, REINFORCE's baseline; default success)", unkeyed="success")


def _concatenated(parts: list) -> Any:
    """The steps of several episodes one after another (arrays, or dicts of arrays)."""
    if parts and isinstance(parts[0], dict):
        return {key: np.concatenate([np.asarray(p[key]) for p in parts]) for key in parts[0]}
    return np.concatenate([np.asarray(p) for p in parts])


def demonstration_influence(policy: Any, demonstrations: list, episodes: list, *, projection_dim: int,
                            damping: float, seed: int, centred: bool = False) -> tuple[np.ndarray, dict]:
    """``((N,) psi per demonstration, facts)``: the mean performance influence of each demonstration's steps.

    Args:
        policy: the trained dataset learner; demonstrations: ``N`` imitation trajectories (its observations).
        episodes: the rollouts, each with ``observations`` ``(T_e, ...)``, ``actions`` ``(T_e, ...)``, ``success``,
            ``episode_return`` and ``reported`` (whether its environment reports success).
        projection_dim: ``k``; damping: the relative regularisation; seed: the projection's seed; centred: centre
            the successes' weights (:func:`~curteach_teaching.datasets.influence.rollout_weights`).

    Returns:
        the influences and ``facts`` (``weights``: what weighted the rollouts; ``gradients``: ``hooks`` (the
        factored path), ``vmap`` or ``loop``; ``parameters``: ``P``; ``projection``: which, and why).
    """
    from imitation.data import rollout

    from curteach_teaching.datasets.influence import (
        performance_influence,
        projected_gradients,
        rollout_weights,
        target_gradient,
        trak_inverse,
    )
    from curteach_teaching.datasets.layer_gradients import kronecker_gradients
    from curteach_teaching.datasets.projection import RandomProjection
    from curteach_teaching.learners.step_loss import step_loss

    step = step_loss(policy)
    p = sum(int(w.numel()) for w in step.module.parameters() if w.requires_grad)
    transitions = rollout.flatten_trajectories(demonstrations)
    rollout_obs = _concatenated([e.observations for e in episodes])
    rollout_acts = _concatenated([e.actions for e in episodes])
    factored, why = kronecker_gradients(step, transitions.obs, transitions.acts, projection_dim, seed=seed)
    if factored is not None:
        train, test = factored(transitions.obs, transitions.acts), factored(rollout_obs, rollout_acts)
        method, projected = "hooks", f"kronecker ({why}, k {factored.projection.dim})"
    else:
        chunk = max(1, min(256, GRADIENT_BYTES // (8 * p)))
        projection = RandomProjection(p, projection_dim, seed=seed)
        train, method = projected_gradients(step, transitions.obs, transitions.acts, projection, chunk=chunk)
        test, _ = projected_gradients(step, rollout_obs, rollout_acts, projection, chunk=chunk, method=method)
        projected = f"dense ({why}, k {projection_dim})"
    lengths = np.asarray([len(e.actions) for e in episodes], dtype=np.int64)
    reported = all(bool(e.reported) for e in episodes)
    weights, which = rollout_weights([e.success for e in episodes] if reported else None,
                                     [e.episode_return for e in episodes], centred=centred)
    target = target_gradient(test, np.repeat(np.arange(len(episodes)), lengths), weights)
    per_step = performance_influence(train, target, trak_inverse(train, damping))
    demo_lengths = np.asarray([len(t.acts) for t in demonstrations], dtype=np.int64)
    return per_demonstration_mean(per_step, demo_lengths), {"weights": which, "gradients": method, "parameters": p,
                                                            "projection": projected}


def _rollouts(data: Any, policy: Any, n: int, seed: int) -> list:
    """``n`` recorded rollouts of ``policy`` per group of ``data``
    (:class:`~curteach_teaching.datasets.scores.env_rollouts.RecordedEpisode` s), actions sampled from the streams
    of ``SeedSequence([seed, ROLLOUT_TAG])``'s first number (:func:`~curteach_teaching.datasets.scores.env_rollouts.
    roll_out` derives one per group from it), from the reset seeds of
    :func:`~curteach_teaching.datasets.scores.env_rollouts.fresh_seeds`: from 10**9 upward, none a demonstration's,
    so that they replay neither a demonstration nor ``dataset-bc``'s evaluation, which counts up from 0.

    Raises:
        ValueError: data without an environment for every group, or without a codec (one line).
    """
    from curteach_teaching.datasets.scores.env_rollouts import fresh_seeds, roll_out

    stream = int(np.random.SeedSequence([int(seed), ROLLOUT_TAG]).generate_state(1)[0])
    return roll_out(data, policy, fresh_seeds(data, n), greedy=False, generator=stream)


class CupidScore(PolicyScore):
    """``cupid``: minus a demonstration's mean performance influence on the policy's rollouts (see the module
    docstring)."""

    summary = ("fitted, needs an environment: CUPID's performance influence, minus a demonstration's estimated effect "
               "on the success of a policy trained on all (per-step gradients, TRAK projection; Agia et al. 2025)")
    options = (POLICY_STEPS, ROLLOUTS, PROJECTION_DIM, DAMPING, WEIGHTING)
    needs_env = True

    def __init__(self, **values: Any):
        super().__init__(**values)
        check_int("cupid_rollouts", self.values["cupid_rollouts"], 1)
        check_int("cupid_projection_dim", self.values["cupid_projection_dim"], 1)
        damping = self.values["cupid_damping"]
        if isinstance(damping, bool) or not isinstance(damping, (int, float)) or not (np.isfinite(damping)
                                                                                       and damping >= 0):
            raise ValueError(f"cupid_damping must be a finite number >= 0; got {damping!r}")
        if self.values["cupid_weights"] not in WEIGHTS:
            raise ValueError(f"cupid_weights must be one of {', '.join(WEIGHTS)}; got {self.values['cupid_weights']!r}")

    def describe(self) -> dict:
        """The policy's settings and options (:meth:`PolicyScore.describe`) and the projection's rule
        (:data:`PROJECTION`), which also keys the cache: scores of the dense-only projection are not read back."""
        return {**super().describe(), "projection": PROJECTION}

    def fit(self, data, learner, *, device="cpu", seed=0, cache=None, label="", progress=False, say=None):
        """``(N,)`` minus each demonstration's mean performance influence (read from ``cache`` where fitted before
        with these settings, ``seed``, data and ``label``; else fitted and written there)."""
        from curteach_teaching.digests import trajectories_digest

        trajectories = list(data.trajectories)
        n = len(trajectories)
        path, found = cached_difficulty(cache, "cupid", lambda: {
            **self.describe(), "seed": int(seed), "data": trajectories_digest(trajectories), "label": label}, n, say)
        if found is not None:
            return found
        started = time.perf_counter()
        v = self.values
        if say is not None:
            say(f"cupid: one {getattr(learner, 'policy', 'learner')} policy x {self.policy.steps} steps on every "
                f"demonstration, {v['cupid_rollouts']} rollouts per dataset, projection k {v['cupid_projection_dim']}")
        policy = self.policy.train(trajectories, learner, int(seed))
        episodes = _rollouts(data, policy, v["cupid_rollouts"], int(seed))
        projection_seed = int(np.random.SeedSequence([int(seed), PROJECTION_TAG]).generate_state(1)[0])
        influence, facts = demonstration_influence(policy, trajectories, episodes,
                                                   projection_dim=v["cupid_projection_dim"],
                                                   damping=float(v["cupid_damping"]), seed=projection_seed,
                                                   centred=v["cupid_weights"] == "centred")
        difficulty = -influence
        if not np.isfinite(difficulty).all():
            raise ValueError("cupid's influences are not finite (did the policy diverge? try a smaller learning "
                             "rate)")
        if path is not None:
            write_arrays(path, difficulty=difficulty)
        if say is not None:
            say(f"cupid ready (rollouts weighted by {facts['weights']}, {facts['parameters']} parameters, gradients by "
                f"{facts['gradients']}, projection {facts['projection']}; fitted in "
                f"{time.perf_counter() - started:.0f} s)")
        return difficulty
