"""The ``M`` actions a trained policy samples at every demonstrated state, for ``action-variance`` and
``action-likelihood`` (:mod:`~curteach_teaching.datasets.scores.fitted_policy`).

Row ``t`` of the pool draws from the generator of ``SeedSequence([seed, SAMPLE_TAG, t])`` only, its ``M`` draws in
the samples' order, so a step's samples never depend on the other steps. What a sample is is the learner's
``act(obs, streams)``; :func:`sampled_actions` computes the same numbers two ways:

* any learner (:func:`sampled_by_acting`): ``M`` calls of ``act`` per chunk of rows, sample ``m`` of every row before
  sample ``m + 1`` (``M`` forward passes over the pool);
* a learner that acts through the action seam (a :class:`~curteach_teaching.learners.bc_learner.BCLearner` whose
  ``act`` is the seam's: :func:`~curteach_teaching.learners.actions.sampled_actions` of
  :func:`~curteach_teaching.learners.actions.action_distribution`): the distribution once per chunk and every
  sample drawn from it. The distribution of a chunk is the same numbers however often it is computed, and a
  generator's ``M`` calls of ``standard_normal(D)`` (``random()``, ``random(D)``) give the same numbers as one call of
  ``standard_normal((M, D))`` (``random(M)``, ``random((M, D))``): NumPy's ``Generator`` fills an array by
  consecutive draws and keeps no state besides its bit generator's. So the samples are bit for bit those of acting,
  for one forward pass instead of ``M`` and one Python call per row instead of ``M`` (a Gaussian's
  ``mean + std * z`` is the same floating-point operation on the same numbers). A Gaussian's normals come from
  :func:`~curteach_teaching.datasets.scores.row_normals.row_standard_normals`, the same generators' numbers without
  making a generator per row.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["CHUNK", "SAMPLE_TAG", "row_streams", "sampled_actions", "sampled_by_acting", "sampled_from_seam"]

#: what seeds the per-step sampling streams
SAMPLE_TAG = 0x736D70
#: rows per call of the learner (its forward passes see these batches, whichever way the samples are drawn)
CHUNK = 8192


def row_streams(seed: int, rows: int, start: int = 0) -> list[np.random.Generator]:
    """The generators of rows ``start`` to ``start + rows - 1``, row ``t``'s seeded by
    ``SeedSequence([seed, SAMPLE_TAG, t])``."""
    return [np.random.default_rng(np.random.SeedSequence([int(seed), SAMPLE_TAG, row]))
            for row in range(start, start + rows)]


def _obs_rows(obs: Any, rows: slice) -> Any:
    """Rows ``rows`` of the flattened observations (an array, or a ``DictObs`` as a dict of arrays)."""
    part = obs[rows]
    return {key: np.asarray(value) for key, value in part.items()} if hasattr(part, "items") else part


def sampled_by_acting(policy: Any, obs: Any, rows: int, samples: int, seed: int, chunk: int = CHUNK, *,
                      windows: Any = None) -> np.ndarray:
    """``(M, T, ...)`` ``samples`` actions of ``policy.act(obs_chunk, streams_chunk)`` at each of the ``rows`` states
    of ``obs`` (any learner); with ``windows`` (``(T, W)`` row indices,
    :func:`~curteach_teaching.learners.windows.episode_windows`) a windowed learner is handed each row's window."""
    from curteach_teaching.learners.windows import windowed

    def rows_of(part: slice) -> Any:
        return _obs_rows(obs, part) if windows is None else windowed(obs, windows[part])

    streams = row_streams(seed, rows)
    draws = []
    for _ in range(samples):
        parts = [np.asarray(policy.act(rows_of(slice(start, start + chunk)), streams[start:start + chunk]))
                 for start in range(0, rows, chunk)]
        draws.append(np.concatenate(parts))
    return np.stack(draws)


def _acts_through_seam(policy: Any) -> bool:
    """Whether ``policy``'s sampled actions are the seam's draws from its SB3 policy's distribution."""
    from curteach_teaching.learners.bc_learner import BCLearner

    return isinstance(policy, BCLearner) and type(policy).act is BCLearner.act


def _draw_many(distribution: Any, seed: int, start: int, samples: int) -> np.ndarray:
    """``(M, B, ...)``: ``samples`` draws of :func:`~curteach_teaching.learners.actions.sampled_actions` from one
    distribution of the ``B`` rows from ``start`` on, row ``t``'s from its stream (the module docstring says why
    they are equal)."""
    from curteach_teaching.datasets.scores.row_normals import row_standard_normals
    from curteach_teaching.learners import actions

    rows = len(distribution)
    if distribution.kind == "gaussian":
        width = distribution.mean.shape[1]
        # (M, B, D) in C order: the samples' layout decides the order of later sums over their axes, so it stays
        # the layout of the per-row draws stacked along axis 1 (a transposed view moves a log-density by an ulp)
        normals = np.ascontiguousarray(row_standard_normals((int(seed), SAMPLE_TAG), np.arange(start, start + rows),
                                                            (samples, width)).transpose(1, 0, 2))
        return distribution.mean[None] + distribution.std[None] * normals
    # the discrete kinds are rare on robot data: per sample through the seam itself, one forward pass all the same
    streams = row_streams(seed, rows, start)
    return np.stack([actions.sampled_actions(distribution, streams) for _ in range(samples)])


def sampled_from_seam(policy: Any, obs: Any, rows: int, samples: int, seed: int, chunk: int = CHUNK) -> np.ndarray:
    """``(M, T, ...)``: :func:`sampled_by_acting`'s numbers for a learner that acts through the seam, from one forward
    pass per chunk (``policy``: such a :class:`~curteach_teaching.learners.bc_learner.BCLearner`).

    Raises:
        LearnerDiverged: torch's distributions refuse the policy's outputs, as its ``act`` does.
    """
    from curteach_teaching.learners import actions
    from curteach_teaching.learners.divergence import LearnerDiverged

    parts = []
    for start in range(0, rows, chunk):
        try:
            distribution = actions.action_distribution(policy.policy, _obs_rows(obs, slice(start, start + chunk)))
        except ValueError as error:
            if "Expected parameter" not in str(error):
                raise
            raise LearnerDiverged(str(error).splitlines()[0]) from error
        parts.append(_draw_many(distribution, seed, start, samples))
    return np.concatenate(parts, axis=1)


def sampled_actions(policy: Any, obs: Any, rows: int, samples: int, seed: int, chunk: int = CHUNK, *,
                    windows: Any = None) -> np.ndarray:
    """``(M, T, ...)`` ``samples`` actions of ``policy`` at each of the ``rows`` states of ``obs`` (the flattened
    observations: an array or a ``DictObs``), row ``t`` drawing from its own stream: :func:`sampled_from_seam` where
    the learner acts through the seam, else :func:`sampled_by_acting` (the same numbers); a learner that reads
    windows (``windows``: ``(T, W)`` row indices) acts on them."""
    if windows is None and _acts_through_seam(policy):
        return sampled_from_seam(policy, obs, rows, samples, seed, chunk)
    return sampled_by_acting(policy, obs, rows, samples, seed, chunk, windows=windows)
