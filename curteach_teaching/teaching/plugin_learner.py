"""A plug-in learner as the library sees it: what it returns is checked where it enters, and its failures name it.

A user's learner (``--learner module:attr``, an entry point) is called by the teaching loop, the teachers and the
experiment's evaluation. Unchecked, a learner that returns NaN log-probabilities gives ``nan`` curves and NaN rows in
``summary.csv`` without a word, and one that returns the wrong shape gets NumPy's broadcasting message, naming
neither the learner nor what was expected. :class:`CheckedLearner` stands in for the learner: every
``action_log_probabilities()`` is checked (``(S, A)``, no NaN, no log-probability above 0, every row a
distribution) and any exception of the learner's own becomes a
:class:`~curteach_teaching.registry.PluginError` naming it, with its traceback kept for the sweep's ``errors.log``.
A :class:`~curteach_teaching.learners.divergence.LearnerDiverged` passes through: it is the protocol's way to stop a
lane, not a failure.
"""

from __future__ import annotations

import traceback
from typing import Any

import numpy as np

from curteach_teaching.learners.divergence import LearnerDiverged
from curteach_teaching.registry import PluginError

__all__ = ["CheckedLearner"]

#: how far a row of ``exp(log-probabilities)`` may sum from 1 (float32 learners round at about 1e-7 per entry)
ROW_SUM_TOLERANCE = 1e-5


class CheckedLearner:
    """``learner`` with its outputs checked and its errors named (module docstring).

    Any other attribute (``fit``, ``parameters``, ``gradients_per_start``, ...) is the learner's own; a method
    called through it that raises is named as well.

    Args:
        learner: the plug-in learner.
        name: the name it is shown under (``recency``).
        n_states, n_actions: the environment's ``S`` and ``A``.
    """

    def __init__(self, learner: Any, name: str, n_states: int, n_actions: int):
        self._learner, self._name = learner, name
        self._shape = (int(n_states), int(n_actions))
        self._lessons = 0

    @property
    def wrapped(self) -> Any:
        """The plug-in learner itself."""
        return self._learner

    def _when(self) -> str:
        return "before its first lesson" if self._lessons == 0 else f"after lesson {self._lessons}"

    def _call(self, method: str, *args: Any, _where: str | None = None, **kwargs: Any) -> Any:
        try:
            return getattr(self._learner, method)(*args, **kwargs)
        except (PluginError, LearnerDiverged):
            raise
        except Exception as error:
            raise PluginError(f"learner {self._name!r} raised {type(error).__name__} in {method} "
                              f"{_where or self._when()}: {error}", traceback.format_exc()) from error

    def action_log_probabilities(self) -> np.ndarray:
        """The learner's ``(S, A)`` log-probabilities, checked.

        Raises:
            PluginError: the learner raised, or returned something else than ``(S, A)`` log-probabilities of a
                policy (the message names the learner, what it returned and what was expected).
        """
        returned = self._call("action_log_probabilities")
        what = f"learner {self._name!r} returned"
        where = f"from action_log_probabilities {self._when()}"
        refuse = PluginError.here
        try:
            log_probabilities = np.asarray(returned, dtype=np.float64)
        except (TypeError, ValueError):
            raise refuse(f"{what} {type(returned).__name__} {where}; expected an (S, A) = {self._shape} array of "
                         "log-probabilities") from None
        if log_probabilities.shape != self._shape:
            raise refuse(f"{what} log-probabilities of shape {log_probabilities.shape} {where}; expected (S, A) = "
                         f"{self._shape}, the environment's states and actions")
        nan = np.isnan(log_probabilities)
        if nan.any():
            states = np.flatnonzero(nan.any(axis=1))
            raise refuse(f"{what} NaN log-probabilities {where} (in {states.size} of {self._shape[0]} states, the "
                         f"first {int(states[0])}); they must be finite or -inf (an update that would make the "
                         "learner non-finite should raise LearnerDiverged and leave it unchanged)")
        with np.errstate(over="ignore"):  # a log-probability above 0 is refused below, whatever its size
            sums = np.exp(log_probabilities).sum(axis=1)
        bad = np.flatnonzero(~(np.abs(sums - 1.0) <= ROW_SUM_TOLERANCE))
        if bad.size:
            state = int(bad[0])
            raise refuse(f"{what} log-probabilities that are not a policy {where}: in state {state} their "
                         f"exponentials sum to {sums[state]:.6g}, not 1 ({bad.size} of {self._shape[0]} states)")
        return log_probabilities

    def learn(self, lesson: Any) -> None:
        """The learner's update; its exceptions (other than ``LearnerDiverged``) name it."""
        start = getattr(lesson, "start_state", None)
        try:
            self._call("learn", lesson, _where=f"on lesson {self._lessons + 1} (start state {start})")
        finally:
            self._lessons += 1

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("_"):  # never forwarded (and no recursion before __init__ has run, e.g. in copies)
            raise AttributeError(attribute)
        value = getattr(self._learner, attribute)
        if not callable(value):
            return value
        return lambda *args, **kwargs: self._call(attribute, *args, **kwargs)
