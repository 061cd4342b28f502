"""Draw the environment pictures of the docs with the library's own renderers.

* ``car-task-types.png``: the car's eight task types T0..T7 (a road of one instance each) and the expert's path from
  each start, as in the paper's Fig. 1 (``curteach_envs.render.car_rgb``);
* ``nav-tasks.png``: one shortest-path task and one TSP task with the optimal path of the dataset's demonstration,
  as in the left panels of the paper's Figs. 6 and 7 (``curteach_envs.navigation.render.nav_rgb``).

Every draw comes from a fixed seed, so the pictures are the same on every run (``tests/envs/test_env_figures.py`` runs
this script). From the repository root::

    python docs/figures/make_env_figures.py [--out docs/figures]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

#: The car road of the picture: one instance of each task type.
CAR_LAYOUT_SEED = 3
#: (seed, goals, muds, bombs) of the shortest-path task and (seed, goals) of the TSP task.
SHORTEST_PATH_TASK = (1, 2, 6, 5)
TSP_TASK = (2, 3)
CELL = 24  # pixels per cell in both pictures

__all__ = ["car_expert_paths", "draw_car_task_types", "draw_nav_tasks", "main", "nav_examples"]


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def car_expert_paths(env) -> list[list[int]]:
    """The expert's path from each start of ``env`` (a ``CarTeachEnv``): road states, start first.

    The expert is the tie-uniform optimal policy of hard value iteration; a path follows its first optimal action
    and that action's most likely successor (steering into the road's edge lands on either lane).
    """
    from curteach_teaching.planning import hard_value_iteration

    mdp = env.tabular()
    policy = hard_value_iteration(mdp).policy
    transitions = mdp.transitions.tocsr()
    n_road_states = mdp.n_states - 1  # the sink is the last state
    paths = []
    for start in mdp.start_states:
        states = [int(start)]
        while True:
            row = transitions[states[-1] * mdp.n_actions + int(np.argmax(policy[states[-1]]))]
            state = int(row.indices[np.argmax(row.data)])
            if state >= n_road_states:
                break
            states.append(state)
        paths.append(states)
    return paths


def draw_car_task_types(out: Path) -> Path:
    """``out/car-task-types.png``: the eight task types of one road and the expert's paths."""
    from matplotlib.patches import Patch

    from curteach_envs import CarTeachEnv
    from curteach_envs.render import CAR_COLORS, car_cell_centre, car_rgb

    plt = _pyplot()
    env = CarTeachEnv(layout_seed=CAR_LAYOUT_SEED, n_instances=1)
    n_types, road_length = env.road.shape[1:3]
    fig, ax = plt.subplots(figsize=(7.6, 3.9))
    ax.imshow(car_rgb(env.road, cell=CELL))
    for states in car_expert_paths(env):
        points = [car_cell_centre(s, n_types, road_length, CELL) for s in states]
        ax.plot(*points[0], marker="o", color="black", markersize=3.5)
        for (x0, y0), (x1, y1) in zip(points[:-1], points[1:], strict=True):
            ax.annotate("", xy=(x1, y1), xytext=(x0, y0),
                        arrowprops={"arrowstyle": "-|>", "color": "black", "lw": 1.1, "mutation_scale": 7,
                                    "shrinkA": 0, "shrinkB": 1})
    gap = max(2, CELL // 2)
    ax.set_xticks([gap + k * (2 * CELL + gap) + CELL for k in range(n_types)], [f"T{k}" for k in range(n_types)])
    ax.set_yticks([])
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    names = {"empty": "road", "stone": "stone", "grass": "grass", "car": "car", "ped": "pedestrian",
             "HOV": "HOV lane", "police": "police (corner squares)", "car-in-f": "car ahead (top stripe)",
             "ped-in-f": "pedestrian ahead (top stripe)"}
    handles = [Patch(facecolor=np.array(CAR_COLORS[key]) / 255, edgecolor="0.6", label=label)
               for key, label in names.items()]
    handles.append(plt.Line2D([], [], color="black", marker="o", markersize=3.5, label="expert's path from the start"))
    ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    ax.set_title(f"CarTeach-v0: the eight task types (layout_seed={CAR_LAYOUT_SEED}, n_instances=1); "
                 "each task starts at its bottom row", fontsize=8)
    return _save(plt, fig, out / "car-task-types.png")


def nav_examples() -> list[tuple[str, object, np.ndarray, float]]:
    """``(title, task, actions, reward)`` of the pictured shortest-path and TSP tasks: tasks sampled with the
    original's procedure and rejection rules, and the demonstration the dataset would store for each (the first
    optimal path; the original's tour)."""
    from curteach_envs.navigation import sample_shortest_path_task, sample_tsp_task

    seed, goals, muds, bombs = SHORTEST_PATH_TASK
    task, solution, _ = sample_shortest_path_task(np.random.default_rng(seed), goals, muds, bombs)
    examples = [(f"shortest path: {goals} goals, {muds} muds, {bombs} bombs", task, solution.paths[0],
                 solution.reward)]
    seed, goals = TSP_TASK
    task, solution, _ = sample_tsp_task(np.random.default_rng(seed), goals)
    examples.append((f"TSP: {goals} goals, the tour back home", task, solution.actions, solution.reward))
    return examples


def draw_nav_tasks(out: Path) -> Path:
    """``out/nav-tasks.png``: a shortest-path and a TSP task, each with its demonstration's path."""
    from matplotlib.patches import Patch

    from curteach_envs.navigation import replay
    from curteach_envs.navigation.render import _COLORS as NAV_COLORS
    from curteach_envs.navigation.render import nav_rgb

    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(7.6, 3.9))
    for ax, (title, task, actions, reward) in zip(axes, nav_examples(), strict=True):
        ax.imshow(nav_rgb(task.cell_kinds(0), int(task.start_pose), cell=CELL))
        poses = replay(task, np.asarray(actions))[0]
        cells = [int(p) >> 2 for p in poses if p >= 0]
        # The path through the centres of the cells it visits; turns in place add no segment.
        visited = [cells[0]] + [c for prev, c in zip(cells[:-1], cells[1:], strict=True) if c != prev]
        xs = [(c % 6) * CELL + CELL / 2 for c in visited]
        ys = [(c // 6) * CELL + CELL / 2 for c in visited]
        for x0, y0, x1, y1 in zip(xs[:-1], ys[:-1], xs[1:], ys[1:], strict=True):
            ax.annotate("", xy=(x1, y1), xytext=(x0, y0),
                        arrowprops={"arrowstyle": "-|>", "color": "darkorange", "lw": 1.8, "mutation_scale": 9,
                                    "shrinkA": 0, "shrinkB": 0})
        ax.set_title(f"{title}\n{len(actions)} actions, return {reward:g}", fontsize=8)
        ax.set_xticks([])
        ax.set_yticks([])
    names = {"empty": "empty", "mud": "mud", "bomb": "bomb", "goal": "goal", "start": "the start (TSP: home)",
             "agent": "the agent, facing its direction"}
    handles = [Patch(facecolor=np.array(NAV_COLORS[key]) / 255, edgecolor="0.6", label=label)
               for key, label in names.items()]
    handles.append(plt.Line2D([], [], color="darkorange", lw=1.8, label="the demonstration's path"))
    fig.legend(handles=handles, fontsize=7, loc="lower center", ncol=4, frameon=False)
    fig.subplots_adjust(bottom=0.2)
    return _save(plt, fig, out / "nav-tasks.png", tight=False)


def _save(plt, fig, path: Path, tight: bool = True) -> Path:
    if tight:
        fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    # No date or software version in the file: the same pixels give the same bytes.
    fig.savefig(path, dpi=130, metadata={"Software": None})
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> list[Path]:
    """Write both pictures into ``--out`` (default: this file's folder) and return their paths."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent, help="output folder")
    args = parser.parse_args(argv)
    paths = [draw_car_task_types(args.out), draw_nav_tasks(args.out)]
    for path in paths:
        print(f"wrote {path}")
    return paths


if __name__ == "__main__":
    main()
