"""Fast batched evaluation on the navigation tasks: greedy rollouts of a whole split at once.

The original (docs/experiments/nav.md, "Fast evaluation") rolls out each datapoint of a split alone: the network's
argmax action, in eval mode, from the task's start pose, until the episode ends or 30 actions have been taken; the
metric is the mean undiscounted return per datapoint. Here every task of the split is stepped together, in one loop
over time: one forward pass per step for all episodes still running, with the environment's rules applied with
NumPy over the batch (no Python loop over tasks). Finished episodes leave the batch.

The rules are those of ``ShortestPathTeach-v0`` and ``TSPTeach-v0`` (docs/environments/navigation.md), and the
observations are built exactly as the environments build them:

* shortest path: -1 per action, -2 for an action that ends on mud (turns on mud too); a bomb or leaving the grid
  gives -6 and ends the episode; any goal gives +9 and ends it. Observation planes: 0-3 agent (channel =
  direction), 4 mud, 5 bomb, 6 goal.
* TSP: -1 per action (-2 on mud); entering a goal not yet visited visits it (its bit in channel 5 is cleared);
  entering home with every goal visited gives +9 and ends the episode; leaving the grid gives -11 and ends it.
  Planes: 0-3 agent, 4 home, 5 unvisited goals, 6 mud.
* After the last action the agent stays drawn where it ended (goal, bomb, home) and is not drawn off the grid.

The datapoints of a task share its start and map, so a greedy policy gives them the same return:
:func:`evaluate_split` rolls out each task once and gives every datapoint its task's return, which is the
original's per-datapoint mean (tasks with several stored paths count several times).

Cycles: a greedy policy that is a deterministic function of the observation repeats itself forever once an episode
returns to a state (pose and visited goals) it has been in. Such an episode is finished at once with the return it
would collect up to the horizon (``skip_cycles=True``, the default for networks and callables; never for action
tables). This gives the same returns, with far fewer forward passes for policies that turn in place.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from curteach_envs._util import CPU_PIECE_ROWS, row_pieces
from curteach_envs.navigation.grid import HORIZON, N_CELLS, N_POSES, NEXT_POSE, SIZE

__all__ = [
    "KINDS",
    "TaskBatch",
    "RolloutResult",
    "SplitEvaluation",
    "rollout",
    "evaluate_split",
    "batch_observations",
    "NonFiniteLogits",
]

KINDS = ("shortest_path", "tsp")
#: Per-step rewards of the two environments (docs/environments/navigation.md, "The two tasks").
_STEP, _MUD = -1, -2
_SP_EXIT, _SP_GOAL = -6, 9
_TSP_EXIT, _TSP_TOUR = -11, 9
# Shortest-path cell kinds.
_EMPTY, _MUD_CELL, _BOMB, _GOAL = 0, 1, 2, 3
_DEFAULT_CHUNK = 4096


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


@dataclass(frozen=True)
class TaskBatch:
    """Navigation tasks as arrays, one row per episode (validated on construction).

    Attributes:
        kind: ``"shortest_path"`` or ``"tsp"``.
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
        if np.any((start < 0) | (start >= N_CELLS)) or np.any((direction < 0) | (direction > 3)):
            raise ValueError(f"start must be in [0, {N_CELLS - 1}] and direction in [0, 3]")
        goals = _int_matrix("goals", self.goals, B)
        muds = _int_matrix("muds", self.muds, B)
        bombs = _int_matrix("bombs", self.bombs, B)
        if self.kind == "tsp" and bombs.shape[1] and np.any(bombs >= 0):
            raise ValueError("TSP tasks have no bombs")
        if goals.shape[1] == 0 or np.any(goals[:, 0] < 0):
            raise ValueError("every task needs at least one goal (in the first goal column)")
        if self.kind == "tsp" and goals.shape[1] > 8:
            raise ValueError(f"TSP tasks may have at most 8 goals here; got {goals.shape[1]} goal columns")
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

    @classmethod
    def from_tasks(cls, tasks: Sequence[Any]) -> TaskBatch:
        """A batch from ``ShortestPathTask`` or ``TSPTask`` objects (all of one kind), one row each."""
        from curteach_envs.navigation.shortest_path import ShortestPathTask
        from curteach_envs.navigation.tsp import TSPTask

        tasks = list(tasks)
        if not tasks:
            raise ValueError("tasks must hold at least one task")
        if all(isinstance(t, ShortestPathTask) for t in tasks):
            kind = "shortest_path"
        elif all(isinstance(t, TSPTask) for t in tasks):
            kind = "tsp"
        else:
            raise ValueError("tasks must be all ShortestPathTask or all TSPTask; got "
                             f"{sorted({type(t).__name__ for t in tasks})}")

        def padded(lists: list) -> np.ndarray:
            width = max((len(x) for x in lists), default=0)
            out = np.full((len(lists), width), -1, dtype=np.int64)
            for i, cells in enumerate(lists):
                out[i, : len(cells)] = cells
            return out

        return cls(
            kind=kind,
            start=np.array([t.start for t in tasks], dtype=np.int64),
            direction=np.array([t.direction for t in tasks], dtype=np.int64),
            goals=padded([t.goals for t in tasks]),
            muds=padded([t.muds for t in tasks]),
            bombs=padded([getattr(t, "bombs", ()) for t in tasks]),
        )

    @classmethod
    def from_split(cls, split: Any, per: str = "task") -> TaskBatch:
        """A batch from a ``NavigationSplit`` (vectorised over its stored columns).

        Args:
            split: the split (``curteach_envs.navigation.dataset.NavigationSplit``).
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
        bombs = columns["bombs"][rows] if kind == "shortest_path" else np.full((rows.size, 0), -1, dtype=np.int64)
        return cls(kind, columns["start"][rows], columns["direction"][rows], columns["goals"][rows],
                   columns["muds"][rows], bombs)

    def take(self, index: np.ndarray) -> TaskBatch:
        """The rows ``index`` as a new batch."""
        index = np.asarray(index, dtype=np.int64)
        return TaskBatch(self.kind, self.start[index], self.direction[index], self.goals[index], self.muds[index],
                         self.bombs[index])

    @property
    def start_pose(self) -> np.ndarray:
        """``(B,)`` start poses ``4 * start + direction``."""
        return 4 * self.start + self.direction

    @property
    def full_mask(self) -> np.ndarray:
        """``(B,)`` TSP visited mask with every goal visited (``2**G - 1``)."""
        return (1 << np.count_nonzero(self.goals >= 0, axis=1)) - 1


class _Grid:
    """Per-episode lookup tables of a :class:`TaskBatch` for stepping and observing (all ``(B, 36)``)."""

    def __init__(self, batch: TaskBatch):
        B = len(batch)
        rows = np.arange(B)
        self.kind = batch.kind
        self.start = batch.start
        self.full_mask = batch.full_mask

        def plane(cells: np.ndarray) -> np.ndarray:
            out = np.zeros((B, N_CELLS + 1), dtype=np.float32)  # column 36 swallows the -1 padding
            out[np.repeat(rows, cells.shape[1]), np.where(cells >= 0, cells, N_CELLS).ravel()] = 1.0
            return out[:, :N_CELLS]

        mud = plane(batch.muds)
        self.mud = mud > 0
        if batch.kind == "shortest_path":
            bomb, goal = plane(batch.bombs), plane(batch.goals)
            kind = np.zeros((B, N_CELLS), dtype=np.int8)
            kind[mud > 0] = _MUD_CELL
            kind[bomb > 0] = _BOMB
            kind[goal > 0] = _GOAL
            self.cell_kind = kind
            self.static = np.stack([mud, bomb, goal], axis=1)  # (B, 3, 36): channels 4, 5, 6
        else:
            home = np.zeros((B, N_CELLS), dtype=np.float32)
            home[rows, batch.start] = 1.0
            goal_of_cell = np.full((B, N_CELLS + 1), -1, dtype=np.int64)
            G = batch.goals.shape[1]
            goal_of_cell[np.repeat(rows, G), np.where(batch.goals >= 0, batch.goals, N_CELLS).ravel()] = np.tile(
                np.arange(G), B)
            self.goal_of_cell = goal_of_cell[:, :N_CELLS]
            self.goals = batch.goals
            self.static = np.stack([home, np.zeros_like(home), mud], axis=1)  # channel 5 is drawn per step

    def observe(self, rows: np.ndarray, pose: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """``(A, 7, 6, 6)`` float32 observations of episodes ``rows`` at ``pose`` (``-1``: not drawn), ``mask``."""
        A = rows.size
        obs = np.zeros((A, 7, N_CELLS), dtype=np.float32)
        obs[:, 4:] = self.static[rows]
        drawn = np.flatnonzero(pose >= 0)
        obs[drawn, pose[drawn] & 3, pose[drawn] >> 2] = 1.0
        if self.kind == "tsp":
            goals = self.goals[rows]  # (A, G)
            bits = (mask[:, None] >> np.arange(goals.shape[1])) & 1
            show = (goals >= 0) & (bits == 0)
            which, column = np.nonzero(show)
            obs[which, 5, goals[which, column]] = 1.0
        return obs.reshape(A, 7, SIZE, SIZE)

    def step(self, rows: np.ndarray, pose: np.ndarray, mask: np.ndarray, action: np.ndarray):
        """One action per episode; returns ``(new_pose, new_mask, reward, terminated)`` (``new_pose = -1`` off grid)."""
        nxt = NEXT_POSE[pose, action]
        inside = nxt >= 0
        cell = np.where(inside, nxt >> 2, 0)
        reward = np.where(inside & self.mud[rows, cell], _MUD, _STEP).astype(np.int64)
        if self.kind == "shortest_path":
            kind = np.where(inside, self.cell_kind[rows, cell], -1)
            goal = kind == _GOAL
            exit_ = (kind == _BOMB) | ~inside
            reward[exit_] = _SP_EXIT
            reward[goal] = _SP_GOAL
            return nxt, mask, reward, exit_ | goal
        goal = np.where(inside, self.goal_of_cell[rows, cell], -1)
        new_mask = np.where(goal >= 0, mask | (1 << np.maximum(goal, 0)), mask)
        complete = inside & (cell == self.start[rows]) & (mask == self.full_mask[rows])
        reward[complete] = _TSP_TOUR
        reward[~inside] = _TSP_EXIT
        return nxt, new_mask, reward, complete | ~inside


def batch_observations(batch: TaskBatch, pose: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """``(B, 7, 6, 6)`` float32 observations of every task of ``batch`` at ``pose`` (``(B,)``; -1: agent not drawn)
    with visited-goal masks ``mask`` (``(B,)``, TSP; default none visited), as the environments build them."""
    pose = np.asarray(pose, dtype=np.int64)
    if pose.shape != (len(batch),) or np.any((pose < -1) | (pose >= N_POSES)):
        raise ValueError(f"pose must have shape ({len(batch)},) with values in [-1, {N_POSES - 1}]")
    mask = np.zeros(len(batch), dtype=np.int64) if mask is None else np.asarray(mask, dtype=np.int64)
    if mask.shape != pose.shape:
        raise ValueError(f"mask must have shape ({len(batch)},); got {mask.shape}")
    return _Grid(batch).observe(np.arange(len(batch)), pose, mask)


# ------------------------------------------------------------------------------------------------------------------
# Policies.


class NonFiniteLogits(ValueError):
    """The policy returned NaN or infinite logits (a diverged network): it chooses no action."""


def _actions_from_output(output: Any, n: int) -> np.ndarray:
    """``(n,)`` int64 actions from a policy's output: ``(n, 3)`` logits (argmax, first on ties) or ``(n,)`` actions."""
    try:
        import torch as th
    except ImportError:  # pragma: no cover - torch is a dependency
        th = None
    if th is not None and isinstance(output, th.Tensor):
        if output.ndim == 2 and output.shape == (n, 3):
            if not bool(th.isfinite(output).all()):
                raise NonFiniteLogits("the policy returned non-finite logits (NaN or inf)")
            output = output.argmax(dim=1)
        output = output.detach().cpu().numpy()
    output = np.asarray(output)
    if output.shape == (n, 3):
        if not np.all(np.isfinite(output)):
            raise NonFiniteLogits("the policy returned non-finite logits (NaN or inf)")
        output = np.argmax(output, axis=1)
    if output.shape != (n,):
        raise ValueError(f"the policy must return (n, 3) logits or (n,) actions for n = {n} observations; "
                         f"got shape {output.shape}")
    if output.dtype.kind == "f":
        if not np.all(output == np.round(output)):
            raise ValueError("the policy returned non-integer actions")
    elif output.dtype.kind not in "iu":
        raise ValueError(f"the policy returned actions of dtype {output.dtype}; expected integers")
    actions = output.astype(np.int64)
    if actions.size and (actions.min() < 0 or actions.max() > 2):
        raise ValueError("the policy returned actions outside {0, 1, 2}")
    return actions


class _TorchPolicy:
    """A torch module (a network giving logits, or an SB3 policy) run greedily in eval mode, without gradients."""

    def __init__(self, module: Any, device: Any, chunk_size: int):
        import torch as th

        self.th = th
        self.module = module
        if device is None:
            parameter = next(iter(module.parameters()), None)
            device = parameter.device if parameter is not None else th.device("cpu")
        self.device = th.device(device)
        self.chunk_size = chunk_size
        try:
            from stable_baselines3.common.policies import BasePolicy
        except ImportError:  # pragma: no cover
            BasePolicy = ()  # noqa: N806
        if hasattr(module, "action_logits"):
            self.forward = module.action_logits
        elif isinstance(module, BasePolicy):
            self.forward = lambda x: module._predict(x, deterministic=True)
        else:
            self.forward = module

    def __enter__(self) -> _TorchPolicy:
        self.was_training = self.module.training
        self.module.train(False)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.module.train(self.was_training)

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        th = self.th
        out = np.empty(obs.shape[0], dtype=np.int64)
        # on the CPU, a chunk in cache-sized pieces of 1024-2047 rows: 20% less time, the same actions (row_pieces)
        rows = CPU_PIECE_ROWS if self.device.type == "cpu" else None
        with th.inference_mode():
            for begin in range(0, obs.shape[0], self.chunk_size):
                for start, stop in row_pieces(begin, min(obs.shape[0], begin + self.chunk_size), rows):
                    chunk = th.from_numpy(obs[start:stop]).to(self.device)
                    out[start:stop] = _actions_from_output(self.forward(chunk), stop - start)
        return out


class _CallablePolicy:
    def __init__(self, function: Callable, chunk_size: int):
        self.function = function
        self.chunk_size = chunk_size

    def __enter__(self) -> _CallablePolicy:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        out = np.empty(obs.shape[0], dtype=np.int64)
        for begin in range(0, obs.shape[0], self.chunk_size):
            chunk = obs[begin : begin + self.chunk_size]
            out[begin : begin + chunk.shape[0]] = _actions_from_output(self.function(chunk), chunk.shape[0])
        return out


def _action_table(policy: Any, B: int) -> np.ndarray | None:
    """``(B, L)`` int64 table padded with -1 if ``policy`` is an action table, else ``None``."""
    if callable(policy):
        return None
    if isinstance(policy, np.ndarray) and policy.ndim == 2:
        table = policy
    elif isinstance(policy, (list, tuple)):
        sequences = [np.asarray(s) for s in policy]
        if any(s.ndim != 1 for s in sequences):
            raise ValueError("an action table given as a list must hold 1-d action sequences")
        table = np.full((len(sequences), max((s.size for s in sequences), default=0)), -1, dtype=np.int64)
        for i, s in enumerate(sequences):
            if s.size and not np.issubdtype(s.dtype, np.integer):
                raise ValueError(f"action sequence {i} must hold integers; got dtype {s.dtype}")
            table[i, : s.size] = s
    else:
        raise ValueError("policy must be a torch module, a callable on (n, 7, 6, 6) observations, or an action table "
                         f"((B, L) integer array or list of B sequences); got {type(policy).__name__}")
    if table.shape[0] != B or not np.issubdtype(table.dtype, np.integer):
        raise ValueError(f"an action table must be an integer array with one row per episode ({B}); got shape "
                         f"{table.shape} and dtype {table.dtype}")
    if table.size and (table.min() < -1 or table.max() > 2):
        raise ValueError("an action table must hold actions in {0, 1, 2} (or -1 after a sequence's end)")
    return table.astype(np.int64)


def _wrap_policy(policy: Any, device: Any, chunk_size: int):
    try:
        import torch as th

        if isinstance(policy, th.nn.Module):
            return _TorchPolicy(policy, device, chunk_size)
    except ImportError:  # pragma: no cover
        pass
    return _CallablePolicy(policy, chunk_size)


# ------------------------------------------------------------------------------------------------------------------
# Rollouts.


@dataclass(frozen=True)
class RolloutResult:
    """Outcome of :func:`rollout`, one row per episode.

    Attributes:
        returns: ``(B,)`` int64 undiscounted returns.
        lengths: ``(B,)`` int64 actions taken (the horizon for an episode cut by it, also when a cycle was skipped).
        terminated: ``(B,)`` bool, the episode ended by the task's rules (goal, bomb, tour, leaving the grid).
        actions: ``(B, H)`` int8 actions, -1 after the end (``record=True`` only, else ``None``).
        rewards: ``(B, H)`` int64 per-step rewards, 0 after the end (``record=True``).
        observations: ``(B, H + 1, 7, 6, 6)`` float32, the observation before each action and the one after the
            last (as the environment returns them), zeros after the end (``record=True``).
    """

    returns: np.ndarray
    lengths: np.ndarray
    terminated: np.ndarray
    actions: np.ndarray | None = None
    rewards: np.ndarray | None = None
    observations: np.ndarray | None = None

    @property
    def mean_return(self) -> float:
        """Mean return over the episodes."""
        return float(self.returns.mean())


def rollout(
    policy: Any,
    batch: TaskBatch,
    *,
    horizon: int = HORIZON,
    device: Any = None,
    skip_cycles: bool = True,
    record: bool = False,
    chunk_size: int = _DEFAULT_CHUNK,
) -> RolloutResult:
    """Roll out every episode of ``batch`` together, in one loop over time.

    At each step the episodes still running are observed (``(A, 7, 6, 6)``), the policy gives one action each, and
    the environment's rules step them all (see the module docstring); an episode leaves the batch when it
    terminates or after ``horizon`` actions.

    Args:
        policy: one of
            * a torch ``nn.Module``: a network mapping ``(n, 7, 6, 6)`` float32 observations to ``(n, 3)`` logits,
              a module with ``action_logits(obs)`` (``NavigationCNNPolicy``), or any SB3 policy (its
              deterministic ``_predict``). It runs in eval mode (its mode is restored afterwards), without
              gradients, on ``device`` (default: the device of its parameters); the action is the argmax of the
              logits, the first on ties;
            * a callable taking ``(n, 7, 6, 6)`` float32 NumPy observations and returning ``(n, 3)`` logits or
              ``(n,)`` actions (NumPy arrays or torch tensors);
            * an action table: a ``(B, L)`` integer array or a list of ``B`` action sequences; episode ``b`` takes
              ``table[b, t]`` at step ``t`` and stops (truncated) where its sequence ends (-1 or column ``L``).
        batch: the tasks, one row per episode.
        horizon: the most actions per episode (30, the original's evaluation horizon).
        device: where the observations are sent for a torch policy, which must live there (default: the device of
            its parameters).
        skip_cycles: finish an episode as soon as it returns to a state it has visited (its return up to the horizon
            follows exactly from the cycle). Valid when the policy is a deterministic function of the observation,
            as a greedy network in eval mode is; pass ``False`` otherwise. Ignored for action tables and with
            ``record=True``.
        record: also return the actions, rewards and observations of every step.
        chunk_size: most observations per chunk, one forward pass each (a torch module on the CPU: in pieces of
            1024-2047 rows, with the same actions; ``curteach_envs._util.row_pieces``).

    Returns:
        :class:`RolloutResult`.

    Raises:
        ValueError: a bad batch, horizon, chunk size or policy, or a policy output that is not one valid action
            (or 3 finite logits) per observation.
    """
    if not isinstance(batch, TaskBatch):
        raise ValueError(f"batch must be a TaskBatch; got {type(batch).__name__}")
    if isinstance(horizon, bool) or not isinstance(horizon, (int, np.integer)) or horizon < 1:
        raise ValueError(f"horizon must be a positive integer; got {horizon!r}")
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, (int, np.integer)) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive integer; got {chunk_size!r}")
    horizon, B = int(horizon), len(batch)
    table = _action_table(policy, B)
    skip = bool(skip_cycles) and table is None and not record
    grid = _Grid(batch)
    pose = batch.start_pose.copy()
    mask = np.zeros(B, dtype=np.int64)
    returns = np.zeros(B, dtype=np.int64)
    lengths = np.zeros(B, dtype=np.int64)
    terminated = np.zeros(B, dtype=bool)
    if record:
        actions_log = np.full((B, horizon), -1, dtype=np.int8)
        rewards_log = np.zeros((B, horizon), dtype=np.int64)
        obs_log = np.zeros((B, horizon + 1, 7, SIZE, SIZE), dtype=np.float32)
    if skip:  # visited states and the return so far, per step
        history = np.full((B, horizon + 1), -1, dtype=np.int64)
        cumulative = np.zeros((B, horizon + 1), dtype=np.int64)
        history[:, 0] = pose
    active = np.arange(B)
    runner = None if table is not None else _wrap_policy(policy, device, int(chunk_size))
    with runner if runner is not None else _NullContext():
        for t in range(horizon):
            if active.size == 0:
                break
            if table is not None:
                if t >= table.shape[1]:
                    break
                action = table[active, t]
                going = action >= 0
                active, action = active[going], action[going]
                if active.size == 0:
                    break
                if record:
                    obs_log[active, t] = grid.observe(active, pose[active], mask[active])
            else:
                obs = grid.observe(active, pose[active], mask[active])
                if record:
                    obs_log[active, t] = obs
                action = runner(obs)
            new_pose, new_mask, reward, done = grid.step(active, pose[active], mask[active], action)
            pose[active], mask[active] = new_pose, new_mask
            returns[active] += reward
            lengths[active] += 1
            terminated[active] = done
            if record:
                actions_log[active, t] = action
                rewards_log[active, t] = reward
                obs_log[active, t + 1] = grid.observe(active, new_pose, new_mask)
            keep = ~done
            if skip and t + 1 < horizon:
                state = mask[active] * N_POSES + np.maximum(pose[active], 0)
                history[active, t + 1] = np.where(done, -1, state)
                cumulative[active, t + 1] = returns[active]
                seen = (history[active, : t + 1] == state[:, None]) & keep[:, None]
                cycled = np.flatnonzero(seen.any(axis=1))
                if cycled.size:
                    rows = active[cycled]
                    first = seen[cycled].argmax(axis=1)  # the earlier visit of this state
                    period = t + 1 - first
                    gain = cumulative[rows, t + 1] - cumulative[rows, first]
                    full, rest = np.divmod(horizon - (t + 1), period)
                    returns[rows] += full * gain + cumulative[rows, first + rest] - cumulative[rows, first]
                    lengths[rows] = horizon
                    keep[cycled] = False
            active = active[keep]
    return RolloutResult(
        returns=returns,
        lengths=lengths,
        terminated=terminated,
        actions=actions_log if record else None,
        rewards=rewards_log if record else None,
        observations=obs_log if record else None,
    )


class _NullContext:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


# ------------------------------------------------------------------------------------------------------------------
# Split evaluation.


@dataclass(frozen=True)
class SplitEvaluation:
    """Outcome of :func:`evaluate_split`.

    Attributes:
        mean_return: the metric, the mean return per datapoint (the original's ``total_reward / len(dataset)``).
        returns: ``(N,)`` int64 return of each datapoint (its task's return).
        task_returns: ``(T,)`` int64 return of each task.
        task_lengths: ``(T,)`` actions per task's episode; task_terminated: ``(T,)`` bool.
    """

    mean_return: float
    returns: np.ndarray
    task_returns: np.ndarray
    task_lengths: np.ndarray
    task_terminated: np.ndarray


def evaluate_split(
    policy: Any,
    split: Any,
    *,
    horizon: int = HORIZON,
    device: Any = None,
    skip_cycles: bool = True,
    chunk_size: int = _DEFAULT_CHUNK,
    batch: TaskBatch | None = None,
) -> SplitEvaluation:
    """The original's metric on a split: greedy rollouts of every task, mean return per datapoint.

    Each task is rolled out once (its datapoints share the start and the map, so a greedy policy gives them the
    same return) and each datapoint gets its task's return.

    Args:
        policy: a torch module or a callable, as for :func:`rollout` (an action table is not accepted here: use
            :func:`rollout`).
        split: a ``NavigationSplit`` (``dataset["test"]``).
        horizon, device, skip_cycles, chunk_size: as for :func:`rollout`.
        batch: ``TaskBatch.from_split(split)``, when the caller keeps it to evaluate the split repeatedly.

    Returns:
        :class:`SplitEvaluation`.

    Raises:
        ValueError: an empty split, an action table, or a problem that :func:`rollout` reports.
    """
    if not callable(policy):
        raise ValueError("evaluate_split needs a policy that acts on observations (a torch module or a callable); "
                         f"got {type(policy).__name__}; roll out action tables with rollout()")
    if batch is None:
        batch = TaskBatch.from_split(split, per="task")
    elif not isinstance(batch, TaskBatch) or len(batch) != split.n_tasks or batch.kind != split.kind:
        raise ValueError(f"batch must be TaskBatch.from_split(split) ({split.n_tasks} {split.kind} tasks)")
    result = rollout(policy, batch, horizon=horizon, device=device, skip_cycles=skip_cycles, chunk_size=chunk_size)
    returns = result.returns[np.asarray(split.columns["task_index"], dtype=np.int64)]
    return SplitEvaluation(
        mean_return=float(returns.mean()),
        returns=returns,
        task_returns=result.returns,
        task_lengths=result.lengths,
        task_terminated=result.terminated,
    )

