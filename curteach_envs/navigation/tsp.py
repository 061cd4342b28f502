"""The TSP-like navigation task (``TSPTeach-v0``), as the authors' code builds it.

A task is a 6 x 6 grid with the agent's start (home) pose, 2-4 goals and optional mud (the dataset uses none), on
distinct cells. The agent must visit every goal and come home. Rewards per step: -1 (-2 on mud); +9 and the end on
entering home with every goal visited; -11 and the end on leaving the grid. A visited goal disappears from the
observation.

The original's "optimal" tour is a brute force over goal orders with leg searches that treat home and every goal
as walls and break ties at random; the greedy tour visits the nearest goal first. The exact optimum over
``(cell, direction, visited set)`` is :func:`exact_tour`. See docs/environments/navigation.md.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from curteach_envs._util import check_int
from curteach_envs.navigation.dynamics import TOUR_REWARD, TSP, BatchedTask
from curteach_envs.navigation.env import NavigationEnv, table_to_tabular
from curteach_envs.navigation.grid import N_CELLS, N_POSES, SIZE, GridTask
from curteach_envs.navigation.search import SearchResult, dijkstra, optimal_action_mask, sequences_in_mask
from curteach_envs.navigation.search import forbid_exits as _forbid_exits
from curteach_envs.tabular import TabularMDP

__all__ = [
    "TSPTask",
    "TSPSolution",
    "TSPTeachEnv",
    "TSP_MIN_GOALS",
    "TSP_MAX_GOALS",
    "TSP_MAX_MUDS",
    "TSP_CHANNEL_NAMES",
    "solve_tsp",
    "greedy_tour",
    "exact_tour",
    "sample_tsp_task",
]

TSP_MIN_GOALS = 2
TSP_MAX_GOALS = 4
TSP_MAX_MUDS = 12
TSP_CHANNEL_NAMES = ("agent_east", "agent_south", "agent_west", "agent_north", "start", "goal", "mud")


@dataclass(frozen=True)
class TSPTask(BatchedTask, GridTask):
    """One TSP grid world (validated on construction).

    Attributes:
        start: the home cell in ``[0, 35]``; direction: the start direction (0 E, 1 S, 2 W, 3 N).
        goals: 2-4 goal cells; muds: 0-12 mud cells (the original's dataset has none).

    States are ``mask * 144 + pose``, where bit ``j`` of ``mask`` says goal ``j`` was visited. The table
    (``dynamics()``) and the observations come from :class:`~curteach_envs.navigation.dynamics.TaskBatch`.

    Raises:
        ValueError: a count is out of range, a cell index is outside ``[0, 35]``, or two objects share a cell.
    """

    KIND: ClassVar[str] = TSP
    GOAL_COUNTS: ClassVar[tuple] = (TSP_MIN_GOALS, TSP_MAX_GOALS)
    MAX_MUDS: ClassVar[int] = TSP_MAX_MUDS

    # ------------------------------------------------------------------ geometry
    @property
    def full_mask(self) -> int:
        """The visited mask with every goal visited, ``2**G - 1``."""
        return (1 << self.n_goals) - 1

    @property
    def start_state(self) -> int:
        """The start state: start pose, no goal visited."""
        return self.start_pose

    @property
    def n_states(self) -> int:
        """Live states ``144 * 2**G``."""
        return N_POSES << self.n_goals

    def grid_codes(self) -> np.ndarray:
        """``(36,)`` int8 grid of the original generator: 0 empty, 1 start, 2 goal, 3 mud."""
        codes = np.zeros(N_CELLS, dtype=np.int8)
        codes[self.start] = 1
        codes[list(self.goals)] = 2
        codes[list(self.muds)] = 3
        return codes

    def decode(self, state: int) -> tuple[int, int]:
        """``(pose, mask)`` of a live state."""
        return int(state) % N_POSES, int(state) // N_POSES

    def cell_kinds(self, mask: int = 0) -> np.ndarray:
        """``(36,)`` cell kinds for rendering: ``empty, mud, start, goal, visited``."""
        kinds = np.full(N_CELLS, "empty", dtype=object)
        kinds[list(self.muds)] = "mud"
        kinds[self.start] = "start"
        for j, goal in enumerate(self.goals):
            kinds[goal] = "visited" if (mask >> j) & 1 else "goal"
        return kinds

    # ------------------------------------------------------------------ export
    def tabular(self, forbid_exits: bool = False) -> TabularMDP:
        """``TabularMDP`` over ``(visited mask, pose)`` (``144 * 2**G`` states) plus one absorbing terminal state.

        Reward is state-action; features are the flattened observation (252 values); ``gamma = 1``,
        ``horizon = 30``.

        Args:
            forbid_exits: ``False`` (default): the environment's rewards, where leaving the grid ends the episode
                at -11 (better than a tour of more than 21 actions). ``True``: leaving the grid pays -1000, so the
                optimal value is the exact optimal tour's return.
        """
        nxt, reward = self.dynamics()
        if forbid_exits:
            nxt, reward = _forbid_exits(nxt, reward)
        states = np.arange(self.n_states)
        features = self.observations(states % N_POSES, states // N_POSES).reshape(self.n_states, -1)
        names = [f"{c}[{r},{k}]" for c in TSP_CHANNEL_NAMES for r in range(SIZE) for k in range(SIZE)]
        return table_to_tabular(nxt, reward, self.start_state, features, names, "TSPTeach")


@dataclass(frozen=True)
class TSPSolution:
    """The original's tours of a task.

    Attributes:
        reward: return of the kept "optimal" tour, ``10 - cost`` (the original stores ``-cost``).
        actions: ``int8`` actions of that tour.
        order: the goal order of that tour (indices into ``task.goals``).
        turns: turn actions of the tour.
        second_reward: return of the second-best goal order (the rejection rule compares the two).
        greedy_reward: return of the greedy tour; greedy_actions: its ``int8`` actions.
    """

    reward: float
    actions: np.ndarray
    order: tuple
    turns: int
    second_reward: float
    greedy_reward: float
    greedy_actions: np.ndarray

    @property
    def greedy_gap(self) -> float:
        """``reward - greedy_reward`` (negative when the greedy tour beats the original's tour)."""
        return self.reward - self.greedy_reward

    @property
    def rejected(self) -> bool:
        """The original's rule: the best and second-best goal orders tie (both ``-inf`` included)."""
        return self.reward == self.second_reward


def _leg_search(task: TSPTask, start_pose: int, target_cell: int) -> SearchResult:
    codes = task.grid_codes()
    passable = codes == 0
    passable[list(task.muds)] = True
    passable[start_pose >> 2] = True  # the leg may pass back over its own starting cell
    target = np.zeros(N_CELLS, dtype=bool)
    target[target_cell] = True
    extra = (codes == 3).astype(np.int64)
    return dijkstra(start_pose, extra, passable, target, keep_ties=True)


def solve_tsp(task: TSPTask, rng: np.random.Generator) -> TSPSolution:
    """The original's "optimal" tour (brute force over goal orders) and the greedy tour.

    For each goal order (``itertools.permutations`` order), legs are searched from the current pose to the next
    goal and finally home, with home and every other goal as walls; one of a leg's equally cheap paths is drawn
    uniformly (the original's ``randint``), and the tour continues from its arrival pose. Orders are stably sorted
    by return; the first is kept. Leg searches are cached per (pose, target); only the random draws repeat.

    Args:
        task: the task.
        rng: source of the leg tie-breaking draws.
    """
    if not isinstance(task, TSPTask):
        raise ValueError(f"task must be a TSPTask; got {type(task).__name__}")
    cache: dict[tuple[int, int], SearchResult] = {}

    def leg(pose: int, cell: int) -> SearchResult:
        key = (pose, cell)
        if key not in cache:
            cache[key] = _leg_search(task, pose, cell)
        return cache[key]

    tours = []
    for order in itertools.permutations(range(task.n_goals)):
        pose, cost, pieces = task.start_pose, 0, []
        for cell in [task.goals[j] for j in order] + [task.start]:
            result = leg(pose, cell)
            if not result.reachable:
                cost = None
                break
            pick = int(rng.integers(len(result.paths)))
            pieces.append(result.paths[pick])
            cost += result.cost
            pose = result.arrival_poses[pick]
        reward = -np.inf if cost is None else float(TOUR_REWARD - cost)
        tours.append((reward, order, pieces))
    ranked = sorted(tours, key=lambda t: -t[0])  # stable: the earlier order wins ties
    best_reward, best_order, pieces = ranked[0]
    actions = np.concatenate(pieces) if pieces and best_reward > -np.inf else np.zeros(0, dtype=np.int8)
    greedy_reward, greedy_actions = greedy_tour(task)
    return TSPSolution(
        reward=best_reward,
        actions=actions.astype(np.int8),
        order=tuple(best_order),
        turns=int(np.count_nonzero(actions != 0)),
        second_reward=ranked[1][0],
        greedy_reward=greedy_reward,
        greedy_actions=greedy_actions,
    )


def greedy_tour(task: TSPTask) -> tuple[float, np.ndarray]:
    """The greedy tour: repeatedly the nearest unvisited goal (first found on ties), then home.

    Only unvisited goals stop a search; visited goals and home are ordinary cells, mud costs 1 more.

    Returns:
        ``(return, int8 actions)``; the return is ``10 - cost``.
    """
    codes = task.grid_codes()
    extra = (codes == 3).astype(np.int64)
    passable = np.ones(N_CELLS, dtype=bool)
    remaining = set(task.goals)
    pose, cost, pieces = task.start_pose, 0, []
    for _ in range(task.n_goals + 1):
        target = np.zeros(N_CELLS, dtype=bool)
        target[list(remaining) if remaining else [task.start]] = True
        result = dijkstra(pose, extra, passable, target, keep_ties=False)
        if not result.reachable:  # pragma: no cover - every cell is passable, so this cannot happen
            return -np.inf, np.zeros(0, dtype=np.int8)
        pieces.append(result.paths[0])
        cost += result.cost
        pose = result.arrival_poses[0]
        remaining.discard(result.target_cells[0])
    return float(TOUR_REWARD - cost), np.concatenate(pieces).astype(np.int8)


def exact_tour(task: TSPTask) -> tuple[float, np.ndarray]:
    """The truly optimal tour: a search over ``(cell, direction, visited set)`` in the true dynamics.

    Leaving the grid is excluded, so this is the best *completed* tour (the environment's optimal return is the
    larger of this and the best way to leave the grid, see :func:`optimal_return`).

    Returns:
        ``(return, int8 actions)`` of the optimal tour that is first in lexicographic action order.
    """
    nxt, reward = _forbid_exits(*task.dynamics())
    values, optimal = optimal_action_mask(nxt, reward)
    actions = sequences_in_mask(nxt, optimal, task.start_state, limit=1)[0]
    return float(values[task.start_state]), actions


def sample_tsp_task(
    rng: np.random.Generator, n_goals: int, n_muds: int = 0, max_tries: int = 100_000
) -> tuple[TSPTask, TSPSolution, int]:
    """Sample a task with the original's procedure and rejection rule (ties between the two best goal orders).

    Draws ``1 + G + M`` distinct cells and pops them from the end: start, goals, muds; then the direction.

    Args:
        rng: the only source of randomness.
        n_goals: G in ``[2, 4]``; n_muds: in ``[0, 12]`` (the dataset uses 0).
        max_tries: give up (RuntimeError) after this many rejections.

    Returns:
        ``(task, solution, n_tries)``.
    """
    check_int("n_goals", n_goals, TSP_MIN_GOALS, TSP_MAX_GOALS)
    check_int("n_muds", n_muds, 0, TSP_MAX_MUDS)
    n = 1 + n_goals + n_muds
    for tries in range(1, max_tries + 1):
        cells = rng.choice(N_CELLS, n, replace=False)[::-1].tolist()
        direction = int(rng.integers(4))
        task = TSPTask(start=cells[0], direction=direction, goals=tuple(cells[1 : 1 + n_goals]),
                       muds=tuple(cells[1 + n_goals :]))
        solution = solve_tsp(task, rng)
        if not solution.rejected:
            return task, solution, tries
    raise RuntimeError(f"no acceptable TSP task in {max_tries} tries for G={n_goals}")  # pragma: no cover


class TSPTeachEnv(NavigationEnv):
    """``TSPTeach-v0``: visit every goal and return home.

    ## Description
    A task of the paper's learner-centric experiments (Section 6 and its appendix), built as the authors' code builds
    it: a 6 x 6 grid (row 0 is the top edge) with the agent's start (home) cell and direction (``0 east,
    1 south, 2 west, 3 north``), 2-4 goals and optional 0-12 muds (the dataset has none), all on distinct cells
    (:class:`TSPTask`). On ``reset(seed=...)`` a task is drawn from the dataset's distribution: the goal count G
    uniform in {2, 3, 4}, no mud, the original's rejection rule (the two best goal orders tie).
    ``reset(options={"task": task})`` uses a given :class:`TSPTask`. ``tabular()`` exports the current task over
    states ``mask * 144 + pose`` (``mask``: the visited goals), ``144 * 2**G`` live states and one absorbing
    terminal state, state-action reward, ``gamma = 1``. See docs/environments/navigation.md.

    ## Action Space
    ``Discrete(3)``: ``0 move`` (one cell in the facing direction), ``1 turn_left`` (direction - 1),
    ``2 turn_right`` (direction + 1).

    ## Observation Space
    ``Box(0, 1, (7, 6, 6), float32)``: channels 0-3 the agent as a one-hot in the channel of its direction
    (east, south, west, north), then channel 4 the start (home), 5 the goals not yet visited (a goal is cleared on
    its visit), 6 mud. After a move off the grid the agent is not drawn in the final observation.

    ## Rewards
    -1 per action; -2 if the action ends on mud (turning on mud too); +9 on entering home with every goal visited
    (the tour's 10 less the step); -11 on moving off the grid.

    ## Episode End
    Termination: the agent enters home with every goal visited (+9) or moves off the grid (-11); entering home
    earlier does not end the episode. Truncation: after ``horizon`` actions (30). A step after the end raises
    ``RuntimeError``.

    ## Arguments
    * ``render_mode``: ``None``, ``"ansi"`` (a text grid) or ``"rgb_array"`` (a picture).
    * ``horizon``: actions before truncation, an integer in ``[1, 10000]`` (default 30).

    ``reset`` takes the option ``"task"`` (a :class:`TSPTask`). ``info`` holds ``pose``, ``steps`` and
    ``goals_remaining`` (the goals not yet visited), and ``row``, ``col``, ``direction`` while the agent is on the
    grid. Bad tasks, actions and reset options raise ``ValueError`` naming the allowed range.

    ## Version History
    * v0: initial version.
    """

    task_class = TSPTask
    name = "TSPTeach-v0"

    def _sample_task(self, rng: np.random.Generator) -> TSPTask:
        n_goals = int(rng.integers(TSP_MIN_GOALS, TSP_MAX_GOALS + 1))
        return sample_tsp_task(rng, n_goals)[0]

    def _info(self) -> dict:
        info = super()._info()
        info["goals_remaining"] = self.task.n_goals - bin(self._mask).count("1")
        return info
