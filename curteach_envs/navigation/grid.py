"""Grid mechanics shared by the two navigation tasks (``ShortestPathTeach-v0`` and ``TSPTeach-v0``).

Conventions (``../shared/spec/navigation.md``, Section 0):

* The grid is 6 x 6; a flat cell ``k`` is ``(k // 6, k % 6)``; row 0 is the top (north) edge.
* Directions ``0 east, 1 south, 2 west, 3 north``; actions ``0 move, 1 turn_left (dir - 1), 2 turn_right (dir + 1)``.
* A *pose* is ``(cell, direction)`` with index ``pose = 4 * cell + direction`` (144 poses).
* Observation ``(7, 6, 6)``: channels 0-3 the agent's one-hot in the channel of its direction, 4-6 task planes.

This module holds what both tasks need: the pose successor table, the original's Dijkstra search (one stored path
per pose, FIFO ties, actions expanded in the order move, left, right), and an exact integer solver for deterministic
tables ``(next_state, reward)`` used for the environments' dynamics, their tabular exports and the exact optima.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Optional, Sequence

import gymnasium as gym
import numpy as np
import scipy.sparse as sp
from gymnasium import spaces

from curteach_envs.tabular import TabularMDP
from curteach_envs.validation import check_int

__all__ = [
    "SIZE",
    "N_CELLS",
    "N_DIRECTIONS",
    "N_POSES",
    "N_ACTIONS",
    "HORIZON",
    "MOVE",
    "TURN_LEFT",
    "TURN_RIGHT",
    "ACTION_NAMES",
    "DIRECTION_NAMES",
    "STEP",
    "NEXT_POSE",
    "ARRIVAL_TERMINAL",
    "SearchResult",
    "dijkstra",
    "solve_table",
    "optimal_action_mask",
    "count_optimal_sequences",
    "optimal_sequences",
    "sequences_in_mask",
    "optimal_return",
    "table_to_tabular",
    "forbid_exits",
    "FORBIDDEN_EXIT_REWARD",
    "agent_planes",
    "NavigationEnv",
    "GridTask",
]

SIZE = 6
N_CELLS = SIZE * SIZE
N_DIRECTIONS = 4
N_POSES = N_CELLS * N_DIRECTIONS
N_ACTIONS = 3
HORIZON = 30
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
# Plain Python tuples: the Dijkstra loop below indexes them far faster than a NumPy array.
_NEXT = tuple(tuple(int(x) for x in row) for row in NEXT_POSE)


@dataclass(frozen=True)
class SearchResult:
    """Result of :func:`dijkstra`.

    Attributes:
        cost: cost of the best arrival (``None`` if no target is reachable).
        paths: the equally cheapest arrivals in the order found, each an ``int8`` action array ending with the move
            into the target (at most 4, one per approach pose).
        arrival_poses: pose after each path (target cell, direction of the final move).
        target_cells: the target cell reached by each path.
        turns: number of turn actions of each path.
        mud_steps: number of actions of each path that end on a cell with extra cost (mud).
    """

    cost: Optional[int]
    paths: tuple
    arrival_poses: tuple
    target_cells: tuple
    turns: tuple
    mud_steps: tuple

    @property
    def reachable(self) -> bool:
        """Whether some target was reached."""
        return self.cost is not None


def dijkstra(
    start_pose: int,
    extra_cost: Sequence[int],
    passable: Sequence[bool],
    target: Sequence[bool],
    keep_ties: bool = True,
) -> SearchResult:
    """The original's Dijkstra over poses, with its tie rules (navigation.md Sections 1.3 and 2.3).

    Every action costs 1, plus ``extra_cost`` of the cell occupied after it (mud, also when turning on mud). A
    successor on a ``target`` cell is an arrival: recorded, never expanded. Other successors on a cell that is not
    ``passable``, or off the grid, are pruned. Relaxation is strict, so one path (the first found) is stored per
    pose; equal costs pop in insertion order (FIFO) and actions are expanded in the order move, left, right.

    Because the cost of entering a pose depends only on its cell, the first push of a pose is final; a bucket queue
    (one FIFO list per cost) therefore pops in exactly the order of the original's ``(cost, counter)`` heap. The
    search stops once no arrival can match the best one, which changes nothing in the result.

    Args:
        start_pose: pose index in ``[0, 143]``.
        extra_cost: ``(36,)`` non-negative extra cost per cell.
        passable: ``(36,)`` whether a (non-target) cell may be entered.
        target: ``(36,)`` whether a cell is a target.
        keep_ties: keep every equally cheap arrival (True) or only the first found (False, the greedy tour's rule).

    Returns:
        :class:`SearchResult`.
    """
    extra = [int(x) for x in extra_cost]
    open_cell = [bool(x) for x in passable]
    is_target = [bool(x) for x in target]
    dist = [1 << 30] * N_POSES
    parent = [-1] * N_POSES
    parent_action = [-1] * N_POSES
    dist[start_pose] = 0
    buckets: list[list[int]] = [[start_pose]]
    best = None
    arrivals: list[tuple[int, int, int]] = []
    cost = 0
    while cost < len(buckets):
        if best is not None and cost + 1 > best:
            break
        for pose in buckets[cost]:
            successors = _NEXT[pose]
            for action in (MOVE, TURN_LEFT, TURN_RIGHT):
                nxt = successors[action]
                if nxt < 0:
                    continue
                cell = nxt >> 2
                new_cost = cost + 1 + extra[cell]
                if is_target[cell]:
                    if best is None or new_cost < best:
                        best = new_cost
                        arrivals = [(pose, action, nxt)]
                    elif new_cost == best and keep_ties:
                        arrivals.append((pose, action, nxt))
                    continue
                if not open_cell[cell] or dist[nxt] <= new_cost:
                    continue
                dist[nxt] = new_cost
                parent[nxt] = pose
                parent_action[nxt] = action
                while len(buckets) <= new_cost:
                    buckets.append([])
                buckets[new_cost].append(nxt)
        cost += 1
    paths, poses, cells, turns, muds = [], [], [], [], []
    for pose, action, nxt in arrivals:
        actions = [action]
        visited = [nxt]
        while pose != start_pose:
            actions.append(parent_action[pose])
            visited.append(pose)
            pose = parent[pose]
        actions.reverse()
        visited.reverse()
        path = np.array(actions, dtype=np.int8)
        paths.append(path)
        poses.append(nxt)
        cells.append(nxt >> 2)
        turns.append(int(np.count_nonzero(path != MOVE)))
        muds.append(sum(1 for p in visited if extra[p >> 2] > 0))
    return SearchResult(best, tuple(paths), tuple(poses), tuple(cells), tuple(turns), tuple(muds))


# --------------------------------------------------------------------------------------------------------------
# Deterministic dynamics tables: next_state (S, A) with ARRIVAL_TERMINAL for "episode ends", reward (S, A).


def solve_table(next_state: np.ndarray, reward: np.ndarray, max_sweeps: int = 10_000) -> tuple[np.ndarray, np.ndarray]:
    """Exact optimal undiscounted values of a deterministic episodic table.

    ``V(s) = max_a reward[s, a] + V(next_state[s, a])`` with ``V(terminal) = 0``. Every non-terminal action must
    have reward <= -1 (true for both navigation tasks), so every cycle loses reward, the Bellman operator has a unique
    fixed point, and iterating it from zero reaches that point exactly in integer arithmetic.

    Args:
        next_state: ``(S, A)`` int successor, ``-1`` for a terminal transition.
        reward: ``(S, A)`` int rewards.

    Returns:
        ``values (S,)`` and ``q_values (S, A)``, both int64.
    """
    next_state = np.asarray(next_state)
    reward = np.asarray(reward, dtype=np.int64)
    live = next_state >= 0
    if np.any(reward[live] > -1):
        raise ValueError("solve_table needs reward <= -1 on every non-terminal action")
    safe_next = np.where(live, next_state, 0)
    values = np.zeros(next_state.shape[0], dtype=np.int64)
    for _ in range(max_sweeps):
        q_values = reward + np.where(live, values[safe_next], 0)
        new_values = q_values.max(axis=1)
        if np.array_equal(new_values, values):
            return values, q_values
        values = new_values
    raise RuntimeError(f"solve_table did not converge in {max_sweeps} sweeps")  # pragma: no cover


def optimal_action_mask(next_state: np.ndarray, reward: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(values (S,), optimal (S, A) bool)``: the actions achieving the optimal value of :func:`solve_table`."""
    values, q_values = solve_table(next_state, reward)
    return values, q_values == values[:, None]


def count_optimal_sequences(next_state: np.ndarray, reward: np.ndarray, start: int) -> int:
    """Number of distinct optimal action sequences from ``start`` (to termination) in a deterministic table.

    Optimal actions strictly increase the value (each live step has reward <= -1), so the optimal-action graph is
    acyclic and the count is a sum over it, evaluated in decreasing order of value.
    """
    values, optimal = optimal_action_mask(next_state, reward)
    next_state = np.asarray(next_state)
    order = np.argsort(-values, kind="stable")  # successors (higher value) first
    counts = np.zeros(values.size, dtype=object)
    for s in order:
        total = 0
        for a in np.flatnonzero(optimal[s]):
            nxt = next_state[s, a]
            total += 1 if nxt < 0 else counts[nxt]
        counts[s] = total
    return int(counts[start])


def optimal_sequences(
    next_state: np.ndarray, reward: np.ndarray, start: int, limit: int = 1000
) -> list[np.ndarray]:
    """Every optimal action sequence from ``start``, in lexicographic action order (at most ``limit`` of them).

    Returns:
        list of ``int8`` action arrays.
    """
    if int(limit) < 1:
        raise ValueError(f"limit must be an integer >= 1; got {limit!r}")
    _, optimal = optimal_action_mask(next_state, reward)
    return sequences_in_mask(next_state, optimal, start, limit)


def sequences_in_mask(next_state: np.ndarray, optimal: np.ndarray, start: int, limit: int) -> list[np.ndarray]:
    """The action sequences from ``start`` to termination that take only actions marked in ``optimal (S, A)``, in
    lexicographic action order (at most ``limit``).

    With the mask of :func:`optimal_action_mask` these are the optimal sequences (:func:`optimal_sequences`), for a
    caller that also needs the values; the mask must be acyclic, as an optimal-action mask is.
    """
    next_state = np.asarray(next_state)
    found: list[np.ndarray] = []

    def walk(state: int, prefix: list[int]) -> None:
        for a in np.flatnonzero(optimal[state]):
            if len(found) >= limit:
                return
            nxt = int(next_state[state, a])
            if nxt < 0:
                found.append(np.array(prefix + [int(a)], dtype=np.int8))
            else:
                walk(nxt, prefix + [int(a)])

    walk(int(start), [])
    return found


def optimal_return(task) -> int:
    """Exact optimal return from a navigation task's start in its true environment (integer Bellman solve over
    ``task.dynamics()``; ending on a bomb or leaving the grid allowed)."""
    nxt, reward = task.dynamics()
    return int(solve_table(nxt, reward)[0][task.start_state])


#: Reward of a losing exit in exports with ``forbid_exits=True``: worse than any path in a 6 x 6 grid.
FORBIDDEN_EXIT_REWARD = -1000


def forbid_exits(next_state: np.ndarray, reward: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The table with every losing exit (a terminal transition with negative reward: a bomb, leaving the grid)
    given reward :data:`FORBIDDEN_EXIT_REWARD`.

    Where a goal (or the tour) can be reached, it is then always better than an exit, so the optimal value is that
    of the best goal (tour), which is what the original's searches compute. Exits stay terminal, so every state
    keeps a finite value (a pocket enclosed by bombs would otherwise loop forever).
    """
    reward = np.array(reward)
    reward[(np.asarray(next_state) < 0) & (reward < 0)] = FORBIDDEN_EXIT_REWARD
    return np.asarray(next_state), reward


def table_to_tabular(
    next_state: np.ndarray,
    reward: np.ndarray,
    start: int,
    features: np.ndarray,
    feature_names: Sequence[str],
    name: str,
) -> TabularMDP:
    """A :class:`TabularMDP` from a deterministic table, with one absorbing terminal state appended (index ``S``).

    Args:
        next_state: ``(S, A)`` successors (``-1`` terminal).
        reward: ``(S, A)`` rewards (state-action reward, since navigation rewards depend on the move).
        start: the start state.
        features: ``(S, d)`` features of the live states (the terminal state gets zeros).
        feature_names: ``d`` names.
        name: label of the MDP.

    Returns:
        ``TabularMDP`` with ``S + 1`` states, ``gamma = 1`` and ``horizon = 30``.
    """
    next_state = np.asarray(next_state)
    n_live, n_actions = next_state.shape
    terminal = n_live
    target = np.where(next_state >= 0, next_state, terminal).ravel()
    target = np.concatenate([target, np.full(n_actions, terminal)])
    n_states = n_live + 1
    transitions = sp.csr_matrix(
        (np.ones(target.size), target, np.arange(target.size + 1)), shape=(n_states * n_actions, n_states)
    )
    full_reward = np.zeros((n_states, n_actions))
    full_reward[:n_live] = reward
    full_features = np.zeros((n_states, features.shape[1]))
    full_features[:n_live] = features
    initial = np.zeros(n_states)
    initial[start] = 1.0
    task_of_state = np.zeros(n_states, dtype=np.int64)
    task_of_state[terminal] = -1
    return TabularMDP(
        transitions=transitions,
        reward=full_reward,
        features=full_features,
        initial_state_dist=initial,
        gamma=1.0,
        horizon=HORIZON,
        feature_names=tuple(feature_names),
        task_of_state=task_of_state,
        action_names=ACTION_NAMES,
        name=name,
    )


def agent_planes(poses: np.ndarray) -> np.ndarray:
    """``(..., 4, 6, 6)`` float32 one-hot agent planes for an array of poses (channel = direction).

    A pose of ``-1`` (the agent off the grid) gives all-zero planes.
    """
    poses = np.asarray(poses, dtype=np.int64)
    out = np.zeros(poses.shape + (N_DIRECTIONS, N_CELLS), dtype=np.float32)
    flat = out.reshape(-1, N_DIRECTIONS, N_CELLS)
    p = poses.reshape(-1)
    index = np.flatnonzero(p >= 0)
    flat[index, p[index] % 4, p[index] // 4] = 1.0
    return out.reshape(poses.shape + (N_DIRECTIONS, SIZE, SIZE))


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


# --------------------------------------------------------------------------------------------------------------
# The Gymnasium environment shared by both tasks.


class NavigationEnv(gym.Env):
    """Base of ``ShortestPathTeachEnv`` and ``TSPTeachEnv``: a task's deterministic table, stepped one action at a time.

    Subclasses set ``task_class`` and implement ``_sample_task(rng)``. A task object provides ``start_state``,
    ``dynamics() -> (next_state (S, 3), reward (S, 3))``, ``decode(state) -> (pose, mask)``,
    ``observation(pose, mask) -> (7, 6, 6)``, ``cell_kinds(mask) -> (36,)`` and ``tabular(forbid_exits)``.

    Observation: ``Box(0, 1, (7, 6, 6), float32)``. Actions: ``Discrete(3)`` (0 move, 1 turn_left, 2 turn_right).
    An episode terminates as the task's rules say, and is truncated after ``horizon`` (30) actions.
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}
    task_class: type = object
    name = "Navigation"

    def __init__(self, render_mode: Optional[str] = None, horizon: int = HORIZON):
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or one of {self.metadata['render_modes']}; got {render_mode!r}")
        self.render_mode = render_mode
        self.horizon = check_int("horizon", horizon, 1, 10_000)
        self.observation_space = spaces.Box(0.0, 1.0, shape=(7, SIZE, SIZE), dtype=np.float32)
        self.action_space = spaces.Discrete(N_ACTIONS)
        self.task = None
        self._next: Optional[np.ndarray] = None
        self._reward: Optional[np.ndarray] = None
        self._state: Optional[int] = None
        self._pose = -1
        self._mask = 0
        self._steps = 0
        self._done = False

    def _sample_task(self, rng: np.random.Generator):  # pragma: no cover - abstract
        raise NotImplementedError

    # ---------------------------------------------------------------- gym API
    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None):
        """Start an episode on a task drawn from the task distribution, or on ``options["task"]``."""
        super().reset(seed=seed)
        options = dict(options or {})
        unknown = set(options) - {"task"}
        if unknown:
            raise ValueError(f"unknown reset options {sorted(unknown)}; allowed: 'task'")
        if "task" in options:
            task = options["task"]
            if not isinstance(task, self.task_class):
                raise ValueError(f"options['task'] must be a {self.task_class.__name__}; got {type(task).__name__}")
        else:
            task = self._sample_task(self.np_random)
        self.task = task
        self._next, self._reward = task.dynamics()
        self._state = int(task.start_state)
        self._pose, self._mask = task.decode(self._state)
        self._steps = 0
        self._done = False
        return self._observe(), self._info()

    def step(self, action):
        if self._state is None:
            raise RuntimeError("call reset() before step()")
        if isinstance(action, (bool, np.bool_)) or not self.action_space.contains(action):
            raise ValueError(f"action must be 0 (move), 1 (turn_left) or 2 (turn_right); got {action!r}")
        if self._done:
            raise RuntimeError("the episode has ended; call reset()")
        action = int(action)
        nxt = int(self._next[self._state, action])
        reward = float(self._reward[self._state, action])
        terminated = nxt < 0
        if terminated:
            # Keep the agent drawn where it ended (goal, bomb, home); off the grid it is not drawn (as the original).
            self._pose = int(NEXT_POSE[self._pose, action])
        else:
            self._state = nxt
            self._pose, self._mask = self.task.decode(nxt)
        self._steps += 1
        truncated = (not terminated) and self._steps >= self.horizon
        self._done = terminated or truncated
        return self._observe(), reward, terminated, truncated, self._info()

    def _observe(self) -> np.ndarray:
        return self.task.observation(self._pose, self._mask)

    def _info(self) -> dict:
        info = {"pose": self._pose, "steps": self._steps}
        if self._pose >= 0:
            info.update(row=(self._pose >> 2) // SIZE, col=(self._pose >> 2) % SIZE, direction=self._pose & 3)
        return info

    def render(self):
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode; pass render_mode='ansi' or 'rgb_array'")
            return None
        from curteach_envs import nav_render

        if self.task is None:
            kinds, pose, title = np.full(N_CELLS, "empty"), -1, f"{self.name} (call reset())"
        else:
            kinds, pose, title = self.task.cell_kinds(self._mask), self._pose, f"{self.name}, step {self._steps}"
        if self.render_mode == "ansi":
            return nav_render.nav_ansi(kinds, pose, title)
        return nav_render.nav_rgb(kinds, pose)

    # ---------------------------------------------------------------- export
    def tabular(self, forbid_exits: bool = False) -> TabularMDP:
        """The current task's :class:`TabularMDP` (call ``reset`` first); see ``task.tabular``."""
        if self.task is None:
            raise RuntimeError("call reset() before tabular()")
        return self.task.tabular(forbid_exits=forbid_exits)


@dataclass(frozen=True)
class GridTask:
    """What the navigation tasks share: a start pose, goals and muds on the 6 x 6 grid, validated on construction.

    Subclasses set the allowed goal and mud counts and may add object fields (listed in ``OBJECT_FIELDS``, all
    tuples of cells); every object must sit on its own cell, apart from the start. ``_cache`` holds derived arrays,
    is excluded from comparison and is not pickled.

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
