"""Search and exact solving on the navigation grid.

* :func:`dijkstra`: the original's Dijkstra over poses, with its tie rules (one stored path per pose, FIFO ties,
  actions expanded in the order move, left, right); the demonstrations of both tasks come from it.
* Exact integer solvers for deterministic tables ``(next_state (S, A), reward (S, A))``, where ``next_state`` is
  ``-1`` for "the episode ends": optimal values (:func:`solve_table`), the optimal actions, counting and listing the
  optimal action sequences, the optimal return of a task, and the table with losing exits forbidden.

See docs/environments/navigation.md for the original's search rules and how the exact optima relate to them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from curteach_envs.navigation.grid import MOVE, N_POSES, NEXT_POSE, TURN_LEFT, TURN_RIGHT

__all__ = [
    "SearchResult",
    "dijkstra",
    "solve_table",
    "optimal_action_mask",
    "count_optimal_sequences",
    "optimal_sequences",
    "sequences_in_mask",
    "optimal_return",
    "forbid_exits",
    "FORBIDDEN_EXIT_REWARD",
]

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

    cost: int | None
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
    """The original's Dijkstra over poses, with its tie rules (see docs/environments/navigation.md).

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
