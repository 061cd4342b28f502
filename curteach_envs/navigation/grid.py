"""Grid geometry shared by the two navigation tasks (``ShortestPathTeach-v0`` and ``TSPTeach-v0``).

Conventions (see docs/environments/navigation.md):

* The grid is 6 x 6; a flat cell ``k`` is ``(k // 6, k % 6)``; row 0 is the top (north) edge.
* Directions ``0 east, 1 south, 2 west, 3 north``; actions ``0 move, 1 turn_left (dir - 1), 2 turn_right (dir + 1)``.
* A *pose* is ``(cell, direction)`` with index ``pose = 4 * cell + direction`` (144 poses).
* Observation ``(7, 6, 6)``: channels 0-3 the agent's one-hot in the channel of its direction, 4-6 task planes.

This module holds the geometry (the pose successor table), the agent's observation planes, the check of a list of
cells and :class:`GridTask`, the validated base of both task classes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from curteach_envs._util import check_int

__all__ = [
    "SIZE",
    "N_CELLS",
    "N_DIRECTIONS",
    "N_POSES",
    "N_ACTIONS",
    "HORIZON",
    "N_CHANNELS",
    "OBSERVATION_SHAPE",
    "MOVE",
    "TURN_LEFT",
    "TURN_RIGHT",
    "ACTION_NAMES",
    "DIRECTION_NAMES",
    "STEP",
    "NEXT_POSE",
    "ARRIVAL_TERMINAL",
    "agent_planes",
    "draw_agent",
    "check_cell_list",
    "GridTask",
]

SIZE = 6
N_CELLS = SIZE * SIZE
N_DIRECTIONS = 4
N_POSES = N_CELLS * N_DIRECTIONS
N_ACTIONS = 3
HORIZON = 30
#: Observation channels: the agent's (one per direction), then three task planes.
N_CHANNELS = N_DIRECTIONS + 3
OBSERVATION_SHAPE = (N_CHANNELS, SIZE, SIZE)
MOVE, TURN_LEFT, TURN_RIGHT = 0, 1, 2
ACTION_NAMES = ("move", "turn_left", "turn_right")
DIRECTION_NAMES = ("east", "south", "west", "north")
# (d_row, d_col) of `move` per direction code.
STEP = np.array([[0, 1], [1, 0], [0, -1], [-1, 0]], dtype=np.int64)
# Marks a terminal transition in a dynamics table's next-state array.
ARRIVAL_TERMINAL = -1


def _next_pose_table() -> np.ndarray:
    poses = np.arange(N_POSES)
    cell, direction = poses // 4, poses % 4
    row, col = cell // SIZE, cell % SIZE
    new_row, new_col = row + STEP[direction, 0], col + STEP[direction, 1]
    inside = (new_row >= 0) & (new_row < SIZE) & (new_col >= 0) & (new_col < SIZE)
    table = np.empty((N_POSES, N_ACTIONS), dtype=np.int64)
    table[:, MOVE] = np.where(inside, 4 * (new_row * SIZE + new_col) + direction, -1)
    table[:, TURN_LEFT] = 4 * cell + (direction - 1) % 4
    table[:, TURN_RIGHT] = 4 * cell + (direction + 1) % 4
    table.setflags(write=False)
    return table


#: ``(144, 3)`` successor pose of every pose and action; ``-1`` where a move leaves the grid.
NEXT_POSE = _next_pose_table()


def agent_planes(poses: np.ndarray) -> np.ndarray:
    """``(..., 4, 6, 6)`` float32 one-hot agent planes for an array of poses (channel = direction).

    A pose of ``-1`` (the agent off the grid) gives all-zero planes.
    """
    poses = np.asarray(poses, dtype=np.int64)
    out = np.zeros(poses.shape + (N_DIRECTIONS, N_CELLS), dtype=np.float32)
    draw_agent(out.reshape(-1, N_DIRECTIONS, N_CELLS), poses.reshape(-1))
    return out.reshape(poses.shape + (N_DIRECTIONS, SIZE, SIZE))


def draw_agent(planes: np.ndarray, poses: np.ndarray) -> None:
    """Set the agent's one-hot in ``planes`` ``(n, >= 4, 36)`` (zeros there) for ``(n,)`` int64 poses: channel =
    direction; a pose of ``-1`` (off the grid) draws nothing."""
    index = np.flatnonzero(poses >= 0)
    planes[index, poses[index] % N_DIRECTIONS, poses[index] // N_DIRECTIONS] = 1.0


def check_cell_list(name: str, cells, low: int, high: int) -> tuple:
    """Validate a collection of cells: a tuple of distinct ints in ``[0, 35]``, with ``low <= len <= high``."""
    try:
        values = tuple(int(c) for c in cells)
    except TypeError as error:
        raise ValueError(f"{name} must be a sequence of cell indices in [0, {N_CELLS - 1}]; got {cells!r}") from error
    for raw in cells:
        if isinstance(raw, (bool, np.bool_)) or not isinstance(raw, (int, np.integer)):
            raise ValueError(f"{name} must hold integer cell indices; got {raw!r}")
    if not low <= len(values) <= high:
        raise ValueError(f"{name} must hold between {low} and {high} cells; got {len(values)}")
    if any(not 0 <= v < N_CELLS for v in values):
        raise ValueError(f"{name} must hold cell indices in [0, {N_CELLS - 1}]; got {values}")
    if len(set(values)) != len(values):
        raise ValueError(f"{name} must hold distinct cells; got {values}")
    return values


@dataclass(frozen=True)
class GridTask:
    """What the navigation tasks share: a start pose, goals and muds on the 6 x 6 grid, validated on construction.

    Subclasses set the allowed goal and mud counts and may add object fields (listed in ``OBJECT_FIELDS``, all
    tuples of cells); every object must sit on its own cell, apart from the start. ``_cache`` holds derived arrays,
    is excluded from comparison and is not pickled.

    The task classes add their rules through :class:`~curteach_envs.navigation.dynamics.BatchedTask` (``batch``,
    ``dynamics() -> (next_state (S, 3), reward (S, 3))``, ``observation(pose, mask) -> (7, 6, 6)``), and
    ``start_state``, ``decode(state) -> (pose, mask)``, ``cell_kinds(mask) -> (36,)`` and ``tabular(forbid_exits)``.

    Raises:
        ValueError: a count is out of range, a cell index is outside ``[0, 35]``, or two objects share a cell.
    """

    start: int
    direction: int
    goals: tuple
    muds: tuple = ()
    _cache: dict = field(default_factory=dict, init=False, repr=False, compare=False, hash=False)

    GOAL_COUNTS: ClassVar[tuple] = (1, N_CELLS - 1)
    MAX_MUDS: ClassVar[int] = N_CELLS - 1
    OBJECT_FIELDS: ClassVar[tuple] = ("goals", "muds")

    def _object_limits(self) -> dict:
        """Allowed ``(min, max)`` count of each object field; subclasses extend it."""
        return {"goals": self.GOAL_COUNTS, "muds": (0, self.MAX_MUDS)}

    def __post_init__(self) -> None:
        object.__setattr__(self, "start", check_int("start", self.start, 0, N_CELLS - 1))
        object.__setattr__(self, "direction", check_int("direction", self.direction, 0, 3))
        for name, (low, high) in self._object_limits().items():
            object.__setattr__(self, name, check_cell_list(name, getattr(self, name), low, high))
        objects = [getattr(self, name) for name in self.OBJECT_FIELDS]
        everything = (self.start,) + sum(objects, ())
        if len(set(everything)) != len(everything):
            names = ("start",) + self.OBJECT_FIELDS
            listed = ", ".join(names[:-1]) + " and " + names[-1]
            got = ", ".join(f"{name}={getattr(self, name)}" for name in names)
            raise ValueError(f"{listed} must be on distinct cells; got {got}")

    def __getstate__(self):
        return {k: getattr(self, k) for k in ("start", "direction") + self.OBJECT_FIELDS}

    def __setstate__(self, state):
        for key, value in state.items():
            object.__setattr__(self, key, value)
        object.__setattr__(self, "_cache", {})

    @property
    def n_goals(self) -> int:
        """Number of goals G."""
        return len(self.goals)

    @property
    def start_pose(self) -> int:
        """Pose index ``4 * start + direction``."""
        return 4 * self.start + self.direction
