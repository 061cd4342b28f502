"""The shortest-path navigation task (``ShortestPathTeach-v0``), as the authors' code builds it.

A task is a 6 x 6 grid with the agent's start pose, 1-2 goals, 0-12 muds and 0-12 bombs on distinct cells.
Rewards per step: -1; -2 for an action that ends on mud (turns on mud included); -6 and the end on a bomb or when
leaving the grid; +9 and the end on any goal.

Optimal demonstrations follow the original's Dijkstra: the other goal and the bombs are walls, one path is stored
per pose, so the "optimal paths" of a task are those that differ in the approach pose (at most 4), of which the
first 3 are kept. :func:`shortest_path_optimal_sequences` gives every optimal action sequence instead. See
docs/environments/navigation.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from curteach_envs._util import check_int
from curteach_envs.navigation.dynamics import GOAL_REWARD, SHORTEST_PATH, BatchedTask
from curteach_envs.navigation.env import NavigationEnv, table_to_tabular
from curteach_envs.navigation.grid import N_CELLS, N_POSES, SIZE, GridTask
from curteach_envs.navigation.search import (
    SearchResult,
    count_optimal_sequences,
    dijkstra,
    optimal_sequences,
)
from curteach_envs.navigation.search import forbid_exits as _forbid_exits
from curteach_envs.tabular import TabularMDP

__all__ = [
    "ShortestPathTask",
    "ShortestPathSolution",
    "ShortestPathTeachEnv",
    "SP_MAX_GOALS",
    "SP_MAX_MUDS",
    "SP_MAX_BOMBS",
    "SP_MAX_DEMOS_PER_TASK",
    "SP_CHANNEL_NAMES",
    "solve_shortest_path",
    "shortest_path_rejection",
    "sample_shortest_path_task",
    "shortest_path_optimal_sequences",
    "count_shortest_path_sequences",
]

SP_MAX_GOALS = 2
SP_MAX_MUDS = 12
SP_MAX_BOMBS = 12
SP_MAX_DEMOS_PER_TASK = 3
SP_CHANNEL_NAMES = ("agent_east", "agent_south", "agent_west", "agent_north", "mud", "bomb", "goal")
# Rejection rules: best reward >= 7 is too easy; two goals within 2 of each other are ambiguous.
TOO_EASY_REWARD = 7
MIN_GOAL_GAP = 3


@dataclass(frozen=True)
class ShortestPathTask(BatchedTask, GridTask):
    """One shortest-path grid world (validated on construction).

    Its table (``dynamics()``) and observations come from :class:`~curteach_envs.navigation.dynamics.TaskBatch`.

    Attributes:
        start: the agent's start cell in ``[0, 35]`` (always empty).
        direction: start direction, ``0 east, 1 south, 2 west, 3 north``.
        goals: 1-2 goal cells (goal #1 first).
        muds: 0-12 mud cells.
        bombs: 0-12 bomb cells.

    Raises:
        ValueError: a count is out of range, a cell index is outside ``[0, 35]``, or two objects share a cell.
    """

    bombs: tuple = ()

    KIND: ClassVar[str] = SHORTEST_PATH
    GOAL_COUNTS: ClassVar[tuple] = (1, SP_MAX_GOALS)
    MAX_MUDS: ClassVar[int] = SP_MAX_MUDS
    OBJECT_FIELDS: ClassVar[tuple] = ("goals", "muds", "bombs")

    def _object_limits(self) -> dict:
        return {**super()._object_limits(), "bombs": (0, SP_MAX_BOMBS)}

    # ------------------------------------------------------------------ geometry
    @property
    def start_state(self) -> int:
        """State index of the start (= the start pose; states are poses)."""
        return self.start_pose

    def grid_codes(self) -> np.ndarray:
        """``(36,)`` int8 grid of the original generator: 0 empty, 1 mud, 2 bomb, 3 goal #1, 4 goal #2."""
        codes = np.zeros(N_CELLS, dtype=np.int8)
        codes[list(self.muds)] = 1
        codes[list(self.bombs)] = 2
        for j, goal in enumerate(self.goals):
            codes[goal] = 3 + j
        return codes

    def decode(self, state: int) -> tuple[int, int]:
        """``(pose, mask)`` of a live state (the mask is always 0 here)."""
        return int(state), 0

    def cell_kinds(self, mask: int = 0) -> np.ndarray:
        """``(36,)`` cell kinds for rendering: ``empty, mud, bomb, goal, start``."""
        kinds = np.full(N_CELLS, "empty", dtype=object)
        kinds[self.start] = "start"
        kinds[list(self.muds)] = "mud"
        kinds[list(self.bombs)] = "bomb"
        kinds[list(self.goals)] = "goal"
        return kinds

    # ------------------------------------------------------------------ export
    def tabular(self, forbid_exits: bool = False) -> TabularMDP:
        """``TabularMDP`` of this task: the 144 poses and one absorbing terminal state (145 states).

        Reward is state-action ``(145, 3)``; features are the flattened ``(7, 6, 6)`` observation (252 values);
        ``gamma = 1``, ``horizon = 30``. The MDP is cyclic (turning in place), so planners iterate to a
        tolerance; the infinite-horizon optimum equals the 30-step one (see docs/environments/navigation.md).

        Args:
            forbid_exits: ``False`` (default): the environment's rewards. ``True``: stepping on a bomb or off the
                grid pays -1000 instead of -6, so the optimal value is the best goal's reward, the reward of the
                original's demonstrations, also where ending on a bomb would score more (rewards below -6).
        """
        nxt, reward = self.dynamics()
        if forbid_exits:
            nxt, reward = _forbid_exits(nxt, reward)
        features = self.observations(np.arange(N_POSES)).reshape(N_POSES, -1)
        names = [f"{c}[{r},{k}]" for c in SP_CHANNEL_NAMES for r in range(SIZE) for k in range(SIZE)]
        return table_to_tabular(nxt, reward, self.start_state, features, names, "ShortestPathTeach")


@dataclass(frozen=True)
class ShortestPathSolution:
    """The original's optimal demonstrations of a task.

    Attributes:
        goal_rewards: ``(G,)`` float, ``10 - optimal cost`` per goal (``-inf`` if unreachable).
        best_goal: index of the goal with the strictly larger reward (the first on ties), ``-1`` if none reachable.
        reward: the best reward (= the return of each demonstration), ``-inf`` if no goal is reachable.
        paths: the optimal paths to the best goal (one per approach pose, at most 4), ``int8`` action arrays.
        turns: turn actions per path.
        mud_steps: actions per path that end on mud.
        reachable: number of reachable goals.
    """

    goal_rewards: tuple
    best_goal: int
    reward: float
    paths: tuple
    turns: tuple
    mud_steps: tuple
    reachable: int

    @property
    def num_optimal_paths(self) -> int:
        """Number of optimal paths found (untruncated, 0-4)."""
        return len(self.paths)

    @property
    def demonstrations(self) -> tuple:
        """The paths that become datapoints: the first 3."""
        return self.paths[:SP_MAX_DEMOS_PER_TASK]


def _goal_search(task: ShortestPathTask, goal_index: int) -> SearchResult:
    codes = task.grid_codes()
    target = np.zeros(N_CELLS, dtype=bool)
    target[task.goals[goal_index]] = True
    passable = codes < 2  # bombs and the other goal are walls
    extra = (codes == 1).astype(np.int64)
    return dijkstra(task.start_pose, extra, passable, target, keep_ties=True)


def solve_shortest_path(task: ShortestPathTask) -> ShortestPathSolution:
    """Optimal paths with the original's semantics: a Dijkstra per goal, the better goal's paths kept."""
    if not isinstance(task, ShortestPathTask):
        raise ValueError(f"task must be a ShortestPathTask; got {type(task).__name__}")
    results = [_goal_search(task, j) for j in range(task.n_goals)]
    rewards = tuple(float(GOAL_REWARD - r.cost) if r.reachable else -np.inf for r in results)
    reachable = sum(r.reachable for r in results)
    if reachable == 0:
        return ShortestPathSolution(rewards, -1, -np.inf, (), (), (), 0)
    best = int(np.argmax(rewards))  # first goal on ties
    r = results[best]
    return ShortestPathSolution(rewards, best, rewards[best], r.paths, r.turns, r.mud_steps, reachable)


def shortest_path_rejection(task: ShortestPathTask, solution: ShortestPathSolution) -> str | None:
    """The original's rejection rules: the reason a task is discarded, or ``None``.

    * no goal is reachable;
    * the best reward is ``>= 7`` (too easy);
    * two goals whose rewards differ by at most 2 (an unreachable goal, reward ``-inf``, passes).
    """
    if solution.reachable == 0:
        return "no goal is reachable"
    if solution.reward >= TOO_EASY_REWARD:
        return f"best reward {solution.reward:g} >= {TOO_EASY_REWARD} (too easy)"
    if task.n_goals == 2:
        gap = abs(solution.goal_rewards[0] - solution.goal_rewards[1])
        if gap < MIN_GOAL_GAP:
            return f"the two goals' rewards differ by {gap:g} <= {MIN_GOAL_GAP - 1}"
    return None


def sample_shortest_path_task(
    rng: np.random.Generator, n_goals: int, n_muds: int, n_bombs: int, max_tries: int = 100_000
) -> tuple[ShortestPathTask, ShortestPathSolution, int]:
    """Sample a task of a configuration with the original's procedure and rejection rules.

    Draws ``1 + G + M + B`` distinct cells and pops them from the end: start, goals, muds, bombs; then the start
    direction. Rejected tasks are redrawn.

    Args:
        rng: the only source of randomness.
        n_goals: G in ``[1, 2]``; n_muds: M in ``[0, 12]``; n_bombs: B in ``[0, 12]``.
        max_tries: give up (RuntimeError) after this many rejections.

    Returns:
        ``(task, solution, n_tries)``.
    """
    check_int("n_goals", n_goals, 1, SP_MAX_GOALS)
    check_int("n_muds", n_muds, 0, SP_MAX_MUDS)
    check_int("n_bombs", n_bombs, 0, SP_MAX_BOMBS)
    n = 1 + n_goals + n_muds + n_bombs
    for tries in range(1, max_tries + 1):
        cells = rng.choice(N_CELLS, n, replace=False)[::-1].tolist()  # popping from the end = reading reversed
        direction = int(rng.integers(4))
        task = ShortestPathTask(
            start=cells[0],
            direction=direction,
            goals=tuple(cells[1 : 1 + n_goals]),
            muds=tuple(cells[1 + n_goals : 1 + n_goals + n_muds]),
            bombs=tuple(cells[1 + n_goals + n_muds :]),
        )
        solution = solve_shortest_path(task)
        if shortest_path_rejection(task, solution) is None:
            return task, solution, tries
    raise RuntimeError(f"no acceptable task in {max_tries} tries for G={n_goals}, M={n_muds}, B={n_bombs}")


def shortest_path_optimal_sequences(task: ShortestPathTask, limit: int = 1000) -> list[np.ndarray]:
    """Every optimal action sequence in the true environment (exact alternative to the original's paths).

    Optimal for the undiscounted return of the environment, where reaching either goal ends the episode. On the
    dataset's tasks this is the return of the original's paths whenever that is at least -6 (see
    docs/environments/navigation.md).

    Returns:
        up to ``limit`` ``int8`` action arrays, in lexicographic action order.
    """
    nxt, reward = task.dynamics()
    return optimal_sequences(nxt, reward, task.start_state, limit)


def count_shortest_path_sequences(task: ShortestPathTask) -> int:
    """Number of optimal action sequences in the true environment (see :func:`shortest_path_optimal_sequences`)."""
    nxt, reward = task.dynamics()
    return count_optimal_sequences(nxt, reward, task.start_state)


class ShortestPathTeachEnv(NavigationEnv):
    """``ShortestPathTeach-v0``: reach the cheaper goal, avoid bombs, mud costs extra.

    ## Description
    A task of the paper's learner-centric experiments (Section 6 and its appendix), built as the authors' code builds
    it: a 6 x 6 grid (row 0 is the top edge) with the agent's start cell and direction (``0 east, 1 south,
    2 west, 3 north``), 1-2 goals, 0-12 muds and 0-12 bombs, all on distinct cells (:class:`ShortestPathTask`).
    On ``reset(seed=...)`` a task is drawn from the dataset's distribution: the goal count G uniform in {1, 2}, the
    mud and bomb counts M and B uniform in 0..12, then the original's sampling with its rejection rules (no
    reachable goal, best reward >= 7, or two goals' rewards within 2 of each other).
    ``reset(options={"task": task})`` uses a given :class:`ShortestPathTask`. ``tabular()`` exports the current
    task: 144 poses ``4 * cell + direction`` and one absorbing terminal state, state-action reward ``(145, 3)``,
    ``gamma = 1``. See docs/environments/navigation.md.

    ## Action Space
    ``Discrete(3)``: ``0 move`` (one cell in the facing direction), ``1 turn_left`` (direction - 1),
    ``2 turn_right`` (direction + 1).

    ## Observation Space
    ``Box(0, 1, (7, 6, 6), float32)``: channels 0-3 the agent as a one-hot in the channel of its direction
    (east, south, west, north), then channel 4 mud, 5 bomb, 6 goal (both goals share it). After a move off the
    grid the agent is not drawn in the final observation.

    ## Rewards
    -1 per action; -2 if the action ends on mud (turning on mud too); +9 on entering a goal (the goal's 10 less
    the step); -6 on entering a bomb or moving off the grid.

    ## Episode End
    Termination: the agent enters a goal (+9), enters a bomb (-6) or moves off the grid (-6). Truncation: after
    ``horizon`` actions (30). A step after the end raises ``RuntimeError``.

    ## Arguments
    * ``render_mode``: ``None``, ``"ansi"`` (a text grid) or ``"rgb_array"`` (a picture).
    * ``horizon``: actions before truncation, an integer in ``[1, 10000]`` (default 30, the original's evaluation
      horizon).

    ``reset`` takes the option ``"task"`` (a :class:`ShortestPathTask`). ``info`` holds ``pose`` and ``steps``,
    and ``row``, ``col``, ``direction`` while the agent is on the grid. Bad tasks, actions and reset options raise
    ``ValueError`` naming the allowed range.

    ## Version History
    * v0: initial version.
    """

    task_class = ShortestPathTask
    name = "ShortestPathTeach-v0"

    def _sample_task(self, rng: np.random.Generator) -> ShortestPathTask:
        n_goals = int(rng.integers(1, SP_MAX_GOALS + 1))
        n_muds = int(rng.integers(0, SP_MAX_MUDS + 1))
        n_bombs = int(rng.integers(0, SP_MAX_BOMBS + 1))
        return sample_shortest_path_task(rng, n_goals, n_muds, n_bombs)[0]
