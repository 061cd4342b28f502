"""The recurrent state a learner carries through an episode while it acts: an optional part of the learner protocol.

A dataset learner that acts one step at a time from a state of its own (a recurrent policy acting as robomimic's
BC-RNN does) declares two methods beside ``act``:

* ``initial_state(n)``: the state of ``n`` episodes that have not acted yet, a tuple of arrays or tensors, each with
  one row per episode on axis 0;
* ``act_step(obs, state, streams) -> (actions, state)``: one action per row of ``obs`` ``(B, *obs_shape)`` (the
  current observation only) given the rows' states, and the rows' next states; greedy or sampled exactly as ``act``
  (row ``b`` draws from ``streams[b]`` only).

:func:`carries_state` says whether a learner does; :class:`StateRows` is what the evaluator keeps for it: one state
row per environment slot, reset when the slot's episode (re)starts, gathered for the live slots at each step and
written back after it. A learner without the two methods acts through ``act`` as before (on windows where it
declares a ``window``, :class:`~curteach_teaching.learners.windows.WindowRows`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["StateRows", "carries_state"]


def carries_state(learner: Any) -> bool:
    """Whether ``learner`` acts from a carried state (has callable ``initial_state`` and ``act_step``)."""
    return callable(getattr(learner, "initial_state", None)) and callable(getattr(learner, "act_step", None))


class StateRows:
    """The carried states of the evaluator's environment slots.

    Args:
        learner: a learner that :func:`carries_state`; slots: the number of environments.
    """

    def __init__(self, learner: Any, slots: int):
        self.learner = learner
        self._state = tuple(learner.initial_state(int(slots)))
        self._fresh = tuple(learner.initial_state(1))  # row 0 of it: a slot's state when its episode starts

    def start(self, slot: int) -> None:
        """Slot ``slot``'s episode (re)starts: its state is the initial one, whatever its last episode left."""
        for part, fresh in zip(self._state, self._fresh):
            part[slot] = fresh[0]

    def take(self, slots: Sequence[int]) -> tuple:
        """The states of ``slots``, in that order (copies: rows ``(B, ...)`` per part)."""
        index = np.asarray(slots, dtype=np.int64)
        return tuple(part[_index_for(part, index)] for part in self._state)

    def put(self, slots: Sequence[int], state: tuple) -> None:
        """Write ``state`` (rows in the order of ``slots``) back as those slots' states."""
        index = np.asarray(slots, dtype=np.int64)
        for part, rows in zip(self._state, state):
            part[_index_for(part, index)] = rows

    def act(self, observations: Any, slots: Sequence[int], streams: Sequence[Any] | None) -> Any:
        """The learner's actions for the live ``slots``' current ``observations`` ``(B, *obs_shape)``, each slot's
        state advanced by the step."""
        actions, state = self.learner.act_step(observations, self.take(slots), streams)
        self.put(slots, state)
        return actions


def _index_for(part: Any, index: np.ndarray) -> Any:
    """``index`` as ``part`` indexes: a torch tensor on the part's device for a tensor, the array for an array."""
    if isinstance(part, np.ndarray):
        return index
    import torch

    return torch.as_tensor(index, device=part.device)
