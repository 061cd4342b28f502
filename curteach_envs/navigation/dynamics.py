"""The rules of both navigation tasks as batched array functions: the one source of their dynamics and observations.

A :class:`TaskBatch` holds ``B`` tasks of one kind as arrays; :meth:`TaskBatch.step` and :meth:`TaskBatch.observe`
act on many states at once, each state ``(row, pose, mask)`` naming its task's row. Everything else uses them: a
task's table ``dynamics()`` is :meth:`TaskBatch.transition_table` of its one-row batch (``step`` on every state and
action), its observations are ``observe``, the environments step a batch of one, and the teaching layer's evaluator
steps a whole split.

The rules (docs/environments/navigation.md, "The two tasks"):

* both: -1 per action, -2 for an action that ends on mud (a turn on mud too);
* shortest path: entering any goal gives ``GOAL_REWARD - 1`` (+9) and ends the episode; entering a bomb or leaving
  the grid gives ``EXIT_REWARD`` (-6) and ends it. Planes: 4 mud, 5 bomb, 6 goal;
* TSP: entering a goal visits it (bit ``j`` of the visited ``mask`` for goal ``j``; it leaves plane 5); entering
  home with every goal visited gives ``TOUR_REWARD - 1`` (+9) and ends the episode; leaving the grid gives
  ``LEAVE_GRID_REWARD`` (-11) and ends it. Planes: 4 home, 5 goals not yet visited, 6 mud;
* planes 0-3 draw the agent in the channel of its direction; after the last action it stays drawn where it ended
  (goal, bomb, home) and is not drawn off the grid (pose -1).

States of the tables are ``mask * 144 + pose`` (``mask = 0`` for shortest path, whose states are its poses).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

import numpy as np

from curteach_envs._util import check_int
from curteach_envs.navigation.grid import (
    N_ACTIONS,
    N_CELLS,
    N_CHANNELS,
    N_DIRECTIONS,
    N_POSES,
    NEXT_POSE,
    OBSERVATION_SHAPE,
    draw_agent,
)

__all__ = ["SHORTEST_PATH", "TSP", "KINDS", "STEP_REWARD", "MUD_REWARD", "GOAL_REWARD", "EXIT_REWARD", "TOUR_REWARD",
           "LEAVE_GRID_REWARD", "TaskBatch", "BatchedTask"]

#: The two navigation tasks, as datasets, task classes and batches name them.
SHORTEST_PATH, TSP = KINDS = ("shortest_path", "tsp")
#: Reward of an action that does not end on mud, and of one that does (both tasks).
STEP_REWARD, MUD_REWARD = -1, -2
#: Shortest path: a goal's value (entering it pays this less the step); entering a bomb or leaving the grid.
GOAL_REWARD, EXIT_REWARD = 10, -6
#: TSP: a completed tour's value (entering home with every goal visited pays this less the step); leaving the grid.
TOUR_REWARD, LEAVE_GRID_REWARD = 10, -11


def _int_matrix(name: str, value: Any, rows: int) -> np.ndarray:
    """``(rows, K)`` int64 cell lists padded with -1 (``K`` may be 0)."""
    array = np.asarray(value)
    if array.size == 0:
        return np.full((rows, 0), -1, dtype=np.int64)
    if array.ndim != 2 or array.shape[0] != rows or not np.issubdtype(array.dtype, np.integer):
        raise ValueError(f"{name} must be an integer array of shape ({rows}, K) padded with -1; got "
                         f"shape {array.shape} and dtype {array.dtype}")
    array = array.astype(np.int64)
    if np.any((array < -1) | (array >= N_CELLS)):
        raise ValueError(f"{name} must hold cells in [0, {N_CELLS - 1}] or -1 (padding)")
    return array


def _int_vector(name: str, value: Any, n: int | None, low: int, high: Any) -> np.ndarray:
    """``(n,)`` int64 with ``low <= value <= high`` (``high`` an int or ``(n,)``); ``n = None`` takes any length."""
    array = np.asarray(value)
    if array.ndim != 1 or (n is not None and array.size != n) or (array.size and array.dtype.kind not in "iu"):
        raise ValueError(f"{name} must be a 1-d integer array{'' if n is None else f' of shape ({n},)'}; got shape "
                         f"{array.shape} and dtype {array.dtype}")
    if array.dtype != np.int64:
        array = array.astype(np.int64)
    # min/max rather than elementwise comparisons: these checks run at every step of a batched rollout
    per_row = isinstance(high, np.ndarray)
    if array.size and (array.min() < low or (np.any(array > high) if per_row else array.max() > high)):
        bad = (array < low) | (array > high)
        bound = "its task's range" if per_row else f"[{low}, {high}]"
        raise ValueError(f"{name} must hold values in {bound}; got {array[bad][:5]}")
    return array


@dataclass(frozen=True)
class TaskBatch:
    """Navigation tasks of one kind as arrays, one row per task (validated on construction; read-only).

    Attributes:
        kind: ``"shortest_path"`` or ``"tsp"`` (:data:`KINDS`).
        start: ``(B,)`` start (home) cells in ``[0, 35]``.
        direction: ``(B,)`` start directions (0 E, 1 S, 2 W, 3 N).
        goals: ``(B, G)`` goal cells, padded with -1 (goal ``j`` of TSP is bit ``j`` of the visited mask).
        muds: ``(B, M)`` mud cells, padded with -1 (``M`` may be 0).
        bombs: ``(B, K)`` bomb cells, padded with -1 (shortest path only; ``K = 0`` for TSP).

    Raises:
        ValueError: an unknown kind, an empty batch, mismatched shapes, a cell outside the grid, a task without a
            goal, or two objects on one cell.
    """

    kind: str
    start: np.ndarray
    direction: np.ndarray
    goals: np.ndarray
    muds: np.ndarray
    bombs: np.ndarray

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}; got {self.kind!r}")
        start = np.asarray(self.start)
        if start.ndim != 1 or start.size == 0 or not np.issubdtype(start.dtype, np.integer):
            raise ValueError(f"start must be a non-empty 1-d integer array (a cell per task); got shape {start.shape}")
        B = start.size
        direction = np.asarray(self.direction)
        if direction.shape != (B,) or not np.issubdtype(direction.dtype, np.integer):
            raise ValueError(f"direction must be an integer array of shape ({B},); got {direction.shape}")
        if np.any((start < 0) | (start >= N_CELLS)) or np.any((direction < 0) | (direction >= N_DIRECTIONS)):
            raise ValueError(f"start must be in [0, {N_CELLS - 1}] and direction in [0, {N_DIRECTIONS - 1}]")
        goals, muds, bombs = (_int_matrix(name, getattr(self, name), B) for name in ("goals", "muds", "bombs"))
        if self.kind == TSP and bombs.shape[1] and np.any(bombs >= 0):
            raise ValueError("TSP tasks have no bombs")
        if goals.shape[1] == 0 or np.any(goals[:, 0] < 0):
            raise ValueError("every task needs at least one goal (in the first goal column)")
        cells = np.concatenate([start.astype(np.int64)[:, None], goals, muds, bombs], axis=1)
        occupied = np.zeros((B, N_CELLS + 1), dtype=np.int64)
        np.add.at(occupied, (np.repeat(np.arange(B), cells.shape[1]), np.where(cells >= 0, cells, N_CELLS).ravel()), 1)
        if np.any(occupied[:, :N_CELLS] > 1):
            row = int(np.flatnonzero(np.any(occupied[:, :N_CELLS] > 1, axis=1))[0])
            raise ValueError(f"task {row}: start, goals, muds and bombs must be on distinct cells")
        for name, value in (("start", start.astype(np.int64)), ("direction", direction.astype(np.int64)),
                            ("goals", goals), ("muds", muds), ("bombs", bombs)):
            value.setflags(write=False)
            object.__setattr__(self, name, value)

    def __len__(self) -> int:
        return int(self.start.size)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_tasks(cls, tasks: Sequence[Any]) -> TaskBatch:
        """A batch from ``ShortestPathTask`` or ``TSPTask`` objects (all of one kind), one row each."""
        tasks = list(tasks)
        if not tasks:
            raise ValueError("tasks must hold at least one task")
        kinds = {getattr(type(task), "KIND", None) for task in tasks}
        if len(kinds) != 1 or not kinds <= set(KINDS):
            raise ValueError("tasks must be all ShortestPathTask or all TSPTask; got "
                             f"{sorted({type(t).__name__ for t in tasks})}")

        def padded(lists: list) -> np.ndarray:
            out = np.full((len(lists), max(len(cells) for cells in lists)), -1, dtype=np.int64)
            for i, cells in enumerate(lists):
                out[i, : len(cells)] = cells
            return out

        return cls(kinds.pop(), np.array([t.start for t in tasks], dtype=np.int64),
                   np.array([t.direction for t in tasks], dtype=np.int64), padded([t.goals for t in tasks]),
                   padded([t.muds for t in tasks]), padded([getattr(t, "bombs", ()) for t in tasks]))

    @classmethod
    def from_split(cls, split: Any, per: str = "task") -> TaskBatch:
        """A batch from a ``NavigationSplit`` (vectorised over its stored columns).

        Args:
            split: the split (:class:`~curteach_envs.navigation.dataset.NavigationSplit`).
            per: ``"task"`` (one row per task, ``T`` rows) or ``"demonstration"`` (one row per datapoint, ``N``
                rows: row ``i`` is the task of demonstration ``i``).
        """
        if per not in ("task", "demonstration"):
            raise ValueError(f"per must be 'task' or 'demonstration'; got {per!r}")
        kind = getattr(split, "kind", None)
        columns = getattr(split, "columns", None)
        if kind not in KINDS or not isinstance(columns, dict):
            raise ValueError(f"split must be a NavigationSplit of kind {KINDS}; got {type(split).__name__}")
        if split.n_tasks == 0 or split.n_demos == 0:
            raise ValueError(f"split {getattr(split, 'name', '?')!r} is empty (no tasks or no demonstrations)")
        rows = np.arange(split.n_tasks) if per == "task" else np.asarray(columns["task_index"], dtype=np.int64)
        bombs = columns["bombs"][rows] if kind == SHORTEST_PATH else np.full((rows.size, 0), -1, dtype=np.int64)
        return cls(kind, columns["start"][rows], columns["direction"][rows], columns["goals"][rows],
                   columns["muds"][rows], bombs)

    def take(self, index: np.ndarray) -> TaskBatch:
        """The rows ``index`` as a new batch."""
        index = np.asarray(index, dtype=np.int64)
        return TaskBatch(self.kind, self.start[index], self.direction[index], self.goals[index], self.muds[index],
                         self.bombs[index])

    # ------------------------------------------------------------------ per-task arrays
    @property
    def start_pose(self) -> np.ndarray:
        """``(B,)`` start poses ``4 * start + direction``."""
        return N_DIRECTIONS * self.start + self.direction

    @cached_property
    def full_mask(self) -> np.ndarray:
        """``(B,)`` visited mask with every goal visited (TSP: ``2**G - 1``; shortest path: 0, it has no mask)."""
        if self.kind == SHORTEST_PATH:
            return np.zeros(len(self), dtype=np.int64)
        return (1 << np.count_nonzero(self.goals >= 0, axis=1)) - 1

    def _plane(self, cells: np.ndarray) -> np.ndarray:
        """``(B, 36)`` float32 one-hot of padded cell lists."""
        out = np.zeros((len(self), N_CELLS + 1), dtype=np.float32)  # column 36 swallows the -1 padding
        out[np.repeat(np.arange(len(self)), cells.shape[1]), np.where(cells >= 0, cells, N_CELLS).ravel()] = 1.0
        return out[:, :N_CELLS]

    @cached_property
    def _task_planes(self) -> np.ndarray:
        """``(B, 3, 36)`` float32 planes of channels 4-6 (TSP: plane 5 empty, drawn per mask by ``observe``)."""
        if self.kind == SHORTEST_PATH:
            return np.stack([self._mud, self._plane(self.bombs), self._plane(self.goals)], axis=1)
        home = self._plane(self.start[:, None])
        return np.stack([home, np.zeros_like(home), self._mud], axis=1)

    @cached_property
    def _mud(self) -> np.ndarray:
        return self._plane(self.muds)

    @cached_property
    def _bomb(self) -> np.ndarray:
        return self._plane(self.bombs) > 0

    @cached_property
    def _goal_of_cell(self) -> np.ndarray:
        """``(B, 36)`` int64 index of the goal on each cell, -1 where none."""
        G = self.goals.shape[1]
        out = np.full((len(self), N_CELLS + 1), -1, dtype=np.int64)
        out[np.repeat(np.arange(len(self)), G), np.where(self.goals >= 0, self.goals, N_CELLS).ravel()] = np.tile(
            np.arange(G), len(self))
        return out[:, :N_CELLS]

    # ------------------------------------------------------------------ the rules
    def _states(self, pose: Any, mask: Any, rows: Any, lowest_pose: int) -> tuple[np.ndarray, ...]:
        """Validated ``(pose, mask, rows)``, each ``(n,)`` int64."""
        pose = _int_vector("pose", pose, None, lowest_pose, N_POSES - 1)
        if rows is None:
            if pose.size != len(self):
                raise ValueError(f"without rows, give one state per task ({len(self)}); got {pose.size}")
            rows = np.arange(pose.size)
        else:
            rows = _int_vector("rows", rows, pose.size, 0, len(self) - 1)
        if mask is None:
            return pose, np.zeros(pose.size, dtype=np.int64), rows
        highest = 0 if self.kind == SHORTEST_PATH else self.full_mask[rows]  # shortest path has no visited goals
        return pose, _int_vector("mask", mask, pose.size, 0, highest), rows

    def observe(self, pose: Any, mask: Any = None, *, rows: Any = None, check: bool = True) -> np.ndarray:
        """Observations of many states, as the environments return them.

        Args:
            pose: ``(n,)`` poses in ``[-1, 143]`` (-1: the agent left the grid and is not drawn).
            mask: ``(n,)`` visited-goal masks (TSP; default: none visited; shortest path: 0).
            rows: ``(n,)`` the task row of each state (default: state ``i`` is in task ``i``, ``n = B``).
            check: validate the states (``False``: they are int64 arrays of valid states, e.g. made by
                :meth:`step` in a rollout loop, where the checks would cost as much as the step).

        Returns:
            ``(n, 7, 6, 6)`` float32.
        """
        if not check:
            return self._observe(pose, mask, np.arange(len(self)) if rows is None else rows)
        return self._observe(*self._states(pose, mask, rows, -1))

    def _observe(self, pose: np.ndarray, mask: np.ndarray, rows: np.ndarray) -> np.ndarray:
        obs = np.zeros((pose.size, N_CHANNELS, N_CELLS), dtype=np.float32)
        draw_agent(obs, pose)
        obs[:, N_DIRECTIONS:] = self._task_planes[rows]
        if self.kind == TSP:
            goals = self.goals[rows]  # (n, G)
            unvisited = (goals >= 0) & (((mask[:, None] >> np.arange(goals.shape[1])) & 1) == 0)
            which, column = np.nonzero(unvisited)
            obs[which, N_DIRECTIONS + 1, goals[which, column]] = 1.0
        return obs.reshape((pose.size,) + OBSERVATION_SHAPE)

    def step(self, pose: Any, mask: Any, action: Any, *, rows: Any = None, check: bool = True) -> tuple:
        """One action from each of many states.

        Args:
            pose: ``(n,)`` poses on the grid, in ``[0, 143]``.
            mask: ``(n,)`` visited-goal masks (TSP), or ``None`` (none visited; shortest path: 0).
            action: ``(n,)`` actions in ``{0 move, 1 turn_left, 2 turn_right}``.
            rows: ``(n,)`` the task row of each state (default: state ``i`` is in task ``i``, ``n = B``).
            check: validate the states and actions (``False``: as for :meth:`observe`; ``mask`` must be given).

        Returns:
            ``(next_pose, next_mask, reward, terminated)``, each ``(n,)``: int64 poses (-1 off the grid), int64
            masks, int64 rewards and bool, as the module docstring's rules say.
        """
        if not check:
            return self._step(pose, mask, action, np.arange(len(self)) if rows is None else rows)
        pose, mask, rows = self._states(pose, mask, rows, 0)
        return self._step(pose, mask, _int_vector("action", action, pose.size, 0, N_ACTIONS - 1), rows)

    def _step(self, pose: np.ndarray, mask: np.ndarray, action: np.ndarray, rows: np.ndarray) -> tuple:
        next_pose = NEXT_POSE[pose, action]
        inside = next_pose >= 0
        cell = np.where(inside, next_pose // N_DIRECTIONS, 0)  # cell 0 stands in off the grid; `inside` masks it
        reward = np.where(inside & (self._mud[rows, cell] > 0), MUD_REWARD, STEP_REWARD).astype(np.int64)
        goal = np.where(inside, self._goal_of_cell[rows, cell], -1)
        if self.kind == SHORTEST_PATH:
            exit_ = ~inside | self._bomb[rows, cell]
            reached = goal >= 0
            reward[exit_] = EXIT_REWARD
            reward[reached] = GOAL_REWARD + STEP_REWARD
            return next_pose, mask, reward, exit_ | reached
        next_mask = np.where(goal >= 0, mask | (1 << np.maximum(goal, 0)), mask)
        complete = inside & (cell == self.start[rows]) & (mask == self.full_mask[rows])
        reward[complete] = TOUR_REWARD + STEP_REWARD
        reward[~inside] = LEAVE_GRID_REWARD
        return next_pose, next_mask, reward, complete | ~inside

    def transition_table(self, row: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """Task ``row`` as a deterministic table: :meth:`step` from every state ``mask * 144 + pose``, every action.

        Returns:
            ``next_state (S, 3)`` int64 (``-1``: the episode ends) and ``reward (S, 3)`` int64, read-only, with
            ``S = 144`` (shortest path) or ``144 * 2**G`` (TSP, ``G`` goals).
        """
        if not 0 <= row < len(self):
            raise ValueError(f"row must be in [0, {len(self) - 1}]; got {row}")
        n_states = N_POSES * (int(self.full_mask[row]) + 1)
        state = np.repeat(np.arange(n_states), N_ACTIONS)
        action = np.tile(np.arange(N_ACTIONS), n_states)
        next_pose, next_mask, reward, done = self.step(state % N_POSES, state // N_POSES, action,
                                                       rows=np.full(state.size, row))
        next_state = np.where(done, -1, next_mask * N_POSES + next_pose).reshape(n_states, N_ACTIONS)
        reward = reward.reshape(n_states, N_ACTIONS)
        next_state.setflags(write=False)
        reward.setflags(write=False)
        return next_state, reward


class BatchedTask:
    """What a navigation task class gets from its one-row :class:`TaskBatch`: its steps, table and observations.

    Mixed into ``ShortestPathTask`` and ``TSPTask`` (which set ``KIND``); the batch and the table are cached in
    the task's ``_cache``.
    """

    KIND: ClassVar[str]
    _ONE_STATE = np.zeros(1, dtype=np.int64)  # row 0 of the one-row batch, for one state

    @property
    def batch(self) -> TaskBatch:
        """The task as a one-row :class:`TaskBatch` (cached)."""
        if "batch" not in self._cache:
            self._cache["batch"] = TaskBatch.from_tasks([self])
        return self._cache["batch"]

    def dynamics(self) -> tuple[np.ndarray, np.ndarray]:
        """The environment as a deterministic table over states ``mask * 144 + pose`` (cached, read-only).

        Returns:
            ``next_state (S, 3)`` int64 (``-1``: the episode ends) and ``reward (S, 3)`` int64
            (:meth:`TaskBatch.transition_table`).
        """
        if "dynamics" not in self._cache:
            self._cache["dynamics"] = self.batch.transition_table(0)
        return self._cache["dynamics"]

    def _one_state(self, pose: int, mask: int, lowest_pose: int) -> tuple[np.ndarray, np.ndarray]:
        # checked here in Python: the batch's array checks cost more than a one-state step itself
        pose, mask = check_int("pose", pose, lowest_pose, N_POSES - 1), check_int("mask", mask, 0)
        if mask & ~int(self.batch.full_mask[0]):
            raise ValueError(f"mask must be a subset of {int(self.batch.full_mask[0])} (the task's goals); got {mask}")
        return np.array([pose]), np.array([mask])

    def step(self, pose: int, mask: int, action: int) -> tuple[int, int, int, bool]:
        """One action from one state (:meth:`TaskBatch.step` on a batch of one).

        Returns:
            ``(next_pose, next_mask, reward, terminated)`` (``next_pose = -1`` off the grid).
        """
        pose_, mask_ = self._one_state(pose, mask, 0)
        action_ = np.array([check_int("action", action, 0, N_ACTIONS - 1)])
        next_pose, next_mask, reward, terminated = self.batch._step(pose_, mask_, action_, self._ONE_STATE)
        return int(next_pose[0]), int(next_mask[0]), int(reward[0]), bool(terminated[0])

    def observation(self, pose: int, mask: int = 0) -> np.ndarray:
        """``(7, 6, 6)`` float32 observation with the agent at ``pose`` (``-1``: not drawn) and visited ``mask``."""
        return self.batch._observe(*self._one_state(pose, mask, -1), self._ONE_STATE)[0]

    def observations(self, poses: np.ndarray, masks: np.ndarray | None = None) -> np.ndarray:
        """``(N, 7, 6, 6)`` float32 observations for ``(N,)`` poses (``-1``: agent not drawn) and visited masks
        (default: none visited)."""
        poses = np.asarray(poses, dtype=np.int64).ravel()
        masks = None if masks is None else np.broadcast_to(np.asarray(masks, dtype=np.int64), poses.shape)
        return self.batch.observe(poses, masks, rows=np.zeros(poses.size, dtype=np.int64))
