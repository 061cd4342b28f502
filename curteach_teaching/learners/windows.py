"""Windows of observations for a learner that reads the steps before each step (a recurrent policy).

A dataset learner may declare ``window: int`` (:func:`learner_window`; 1, the default, when it does not): then every
observation it is handed, in training, in scoring and when acting, is a *window* ``(W, *obs_shape)``: the
observations of the ``W`` steps ending at the step, oldest first, within the step's own episode. The steps before
the episode's start are padded by repeating the episode's first observation (no mask to carry: a window is a plain
array, and the learner sees at an episode's start what it sees in training).

* :func:`episode_windows`: ``(T, W)`` the flat step indices of every step's window, from the episodes' lengths (the
  curriculum adapter and the held-out scoring index the flat observations with it);
* :func:`windowed`: the windows of some steps, ``(B, W, *obs_shape)``;
* :class:`WindowRows`: the evaluator's windows, one row per live environment, restarted at each episode's start and
  shifted by one at each step: the recurrent state an episode carries.

A learner with ``window == 1`` is never handed a window: it gets ``(B, *obs_shape)`` as before.

A windowed learner may also declare ``sequence_targets = True`` (:func:`learner_sequences`): then it trains on the
action of every step of a window, not the last one only (robomimic's BC-RNN): the curriculum adapter hands it the
windows' actions ``(B, W, *act_shape)`` and per-step loss weights ``(B, W)`` (:func:`sequence_batch`). Its per-step
score stays ``log pi(a_t | window_t)`` of a step's own window, and acting is unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["WindowRows", "episode_windows", "learner_sequences", "learner_window", "sequence_batch",
           "step_log_likelihoods", "windowed"]


def learner_window(learner: Any) -> int:
    """The learner's ``window`` (1 when it declares none).

    Raises:
        ValueError: a window that is not an integer >= 1.
    """
    window = getattr(learner, "window", 1)
    if isinstance(window, bool) or not isinstance(window, (int, np.integer)) or window < 1:
        raise ValueError(f"a learner's window must be an integer >= 1; got {window!r}")
    return int(window)


def learner_sequences(learner: Any) -> bool:
    """Whether ``learner`` trains on every step's action of its windows (a ``window`` > 1 and
    ``sequence_targets`` true)."""
    return learner_window(learner) > 1 and bool(getattr(learner, "sequence_targets", False))


def sequence_batch(acts: Any, weights: np.ndarray | None, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """The actions ``(B, W, *act_shape)`` and loss weights ``(B, W)`` (``None`` when ``weights`` is) of the windows
    ``rows`` ``(B, W)`` (flat step indices, :func:`episode_windows`) for a learner trained on every step of a window.

    Step ``j`` of a window is labelled with flat step ``rows[b, j]``'s own action and carries that step's own weight
    ``weights[rows[b, j]]`` (``weights``: ``(T,)`` per flat step). A window never crosses its episode, so under
    per-demonstration weights every step of a window carries the weight of the step it ends at. The padding before an
    episode's start repeats the first step's observation, action and weight (counted, as robomimic's frame padding
    is).
    """
    return np.asarray(acts)[rows], (None if weights is None else np.asarray(weights)[rows])


def episode_windows(lengths: Sequence[int], window: int) -> np.ndarray:
    """``(T, W)`` int64: row ``t`` the flat indices of the ``W`` steps ending at flat step ``t``, oldest first, the
    indices before its episode's start replaced by the episode's first step.

    Args:
        lengths: ``(N,)`` the episodes' steps, laid out one after another (``T = sum(lengths)``).
        window: ``W`` >= 1.

    Example: lengths ``(2, 3)``, ``W = 3`` -> ``[[0,0,0], [0,0,1], [2,2,2], [2,2,3], [2,3,4]]``.
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    starts = np.repeat(np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths)
    steps = np.arange(int(lengths.sum()), dtype=np.int64)
    offsets = np.arange(-(window - 1), 1, dtype=np.int64)
    return np.maximum(steps[:, None] + offsets[None, :], starts[:, None])


def windowed(obs: Any, rows: np.ndarray) -> np.ndarray:
    """``(B, W, *obs_shape)`` the observations ``obs[rows]`` of ``rows`` ``(B, W)`` flat step indices (vector or
    image arrays only: a learner reading windows takes no ``Dict`` observations)."""
    if isinstance(obs, dict) or hasattr(obs, "items"):
        raise ValueError("windows of observations need an array of observations, not a dict of them")
    return np.asarray(obs)[rows]


class WindowRows:
    """The windows of the evaluator's live environments: ``W`` observations per environment slot.

    Args:
        slots: the number of environments; window: ``W``.
    """

    def __init__(self, slots: int, window: int):
        self.window = int(window)
        self._rows: list[np.ndarray | None] = [None] * int(slots)

    def start(self, slot: int, observation: Any) -> None:
        """Slot ``slot``'s episode (re)starts at ``observation``: its window is that observation ``W`` times."""
        first = np.asarray(observation)
        self._rows[slot] = np.repeat(first[None], self.window, axis=0)

    def push(self, slot: int, observation: Any) -> None:
        """Slot ``slot``'s episode goes on to ``observation``: the oldest step drops out of its window."""
        row = self._rows[slot]
        row[:-1] = row[1:]
        row[-1] = np.asarray(observation)

    def stack(self, slots: Sequence[int]) -> np.ndarray:
        """``(B, W, *obs_shape)`` the windows of ``slots``, in that order."""
        return np.stack([self._rows[slot] for slot in slots])


#: windows per call of a windowed learner's log_likelihood (memory only: a step's score does not depend on it)
WINDOW_CHUNK = 8192


def step_log_likelihoods(learner: Any, obs: Any, acts: Any, lengths: Sequence[int],
                         windows: np.ndarray | None = None) -> np.ndarray:
    """``(T,)`` float64 ``log pi(a_t | s_t)`` of every flat step under ``learner``: its ``log_likelihood`` of the
    steps' observations, or, for a learner that declares a ``window`` of ``W > 1``, of each step's window within its
    episode (:func:`episode_windows`), ``WINDOW_CHUNK`` windows a call.

    Args:
        learner: a dataset learner; obs: ``(T, ...)`` observations (a dict of arrays for a ``Dict`` space); acts:
            ``(T, ...)`` actions; lengths: ``(N,)`` the episodes' steps, laid out one after another.
        windows: ``(T, W)`` the windows when computed already (:func:`episode_windows`).
    """
    window = learner_window(learner)
    if window == 1:
        return np.asarray(learner.log_likelihood(obs, acts), dtype=np.float64)
    if windows is None:
        windows = episode_windows(lengths, window)
    return np.concatenate([
        np.asarray(learner.log_likelihood(windowed(obs, windows[begin:begin + WINDOW_CHUNK]),
                                          acts[begin:begin + WINDOW_CHUNK]), dtype=np.float64)
        for begin in range(0, len(windows), WINDOW_CHUNK)])
