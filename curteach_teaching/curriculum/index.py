"""Which transitions belong to which demonstration: the index every part of the curriculum shares.

N demonstrations ``xi_0 .. xi_{N-1}`` of ``L_i >= 1`` actions each are flattened demonstration after demonstration
(as imitation's ``rollout.flatten_trajectories`` does) into ``T = sum_i L_i`` transitions. Selections speak of
demonstrations, batches of transitions; :class:`DemonstrationIndex` converts between the two and knows the time
step (the position in its demonstration) of every transition. Plain NumPy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["DemonstrationIndex"]


@dataclass(frozen=True, eq=False)
class DemonstrationIndex:
    """The flat layout of N demonstrations' transitions.

    Args:
        lengths: ``(N,)`` integers >= 1, the actions of each demonstration (N >= 1).

    Attributes:
        lengths: ``(N,)`` int64.
        starts: ``(N,)`` int64, the flat index of each demonstration's first transition.
        demo_of_transition: ``(T,)`` int64, the demonstration of each transition.
        time_step: ``(T,)`` int64, each transition's position in its demonstration (0 for its first action).

    Raises:
        ValueError: no demonstrations, a length below 1, or lengths that are not integers.
    """

    lengths: np.ndarray
    starts: np.ndarray = field(init=False, repr=False)
    demo_of_transition: np.ndarray = field(init=False, repr=False)
    time_step: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        lengths = np.asarray(self.lengths)
        if lengths.ndim != 1 or lengths.size == 0 or not np.issubdtype(lengths.dtype, np.integer):
            raise ValueError(f"lengths must be a non-empty 1-D array of integers; got {self.lengths!r}")
        if lengths.min() < 1:
            first = int(np.flatnonzero(lengths < 1)[0])
            raise ValueError(f"demonstration {first} has no actions; every demonstration needs at least one")
        lengths = lengths.astype(np.int64)
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        object.__setattr__(self, "lengths", lengths)
        object.__setattr__(self, "starts", starts)
        object.__setattr__(self, "demo_of_transition", np.repeat(np.arange(lengths.size), lengths))
        object.__setattr__(self, "time_step", np.arange(lengths.sum()) - np.repeat(starts, lengths))

    @classmethod
    def from_trajectories(cls, demonstrations: Sequence[Any]) -> DemonstrationIndex:
        """The index of demonstrations with an ``acts`` array each (e.g. imitation ``Trajectory`` objects)."""
        return cls(np.array([len(demo.acts) for demo in demonstrations]))

    @property
    def n_demonstrations(self) -> int:
        """N."""
        return int(self.lengths.size)

    @property
    def n_transitions(self) -> int:
        """T, the transitions of all demonstrations."""
        return int(self.demo_of_transition.size)

    def transitions(self, demonstrations: np.ndarray) -> np.ndarray:
        """``(sum of their lengths,)`` the flat transitions of ``demonstrations`` (``(k,)`` indices), demonstration
        after demonstration in the given order, each in time order."""
        demonstrations = np.asarray(demonstrations, dtype=np.int64)
        lengths = self.lengths[demonstrations]
        offsets = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        return np.repeat(self.starts[demonstrations], lengths) + offsets

    def demonstrations_in(self, transitions: np.ndarray) -> np.ndarray:
        """The demonstrations with at least one of ``transitions`` (``(b,)`` flat indices), in order of first
        appearance (``(k,)`` int64)."""
        demos = self.demo_of_transition[np.asarray(transitions, dtype=np.int64)]
        _, first = np.unique(demos, return_index=True)
        return demos[np.sort(first)]
