"""Text and picture rendering of the environments (NumPy only; no display needed)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["car_ansi", "car_rgb", "car_cell_centre", "CAR_COLORS", "CAR_LEGEND"]

# One character per cell content, strongest object first.
_ANSI_ORDER = ((3, "P"), (2, "C"), (0, "S"), (1, "g"), (4, "H"))
CAR_LEGEND = "P ped, C car, S stone, g grass, H HOV, * police, ^ car/ped ahead, . empty, [ ] the car"

#: RGB colour of each cell content in :func:`car_rgb` (``agent``: the car; ``gap``: the space between tasks).
CAR_COLORS = _COLORS = {
    "empty": (205, 205, 205),
    "stone": (120, 110, 100),
    "grass": (90, 170, 80),
    "car": (40, 90, 210),
    "ped": (225, 70, 40),
    "HOV": (245, 205, 60),
    "police": (20, 20, 120),
    "car-in-f": (120, 160, 240),
    "ped-in-f": (245, 150, 130),
    "agent": (0, 0, 0),
    "gap": (255, 255, 255),
}


def _cell_char(features: np.ndarray) -> str:
    for index, char in _ANSI_ORDER:
        if features[index]:
            return char
    return "."


def car_ansi(road: np.ndarray, block: int, agent_state: int | None, road_length: int) -> str:
    """Text picture of task ``block``: top row first, two cells per row, the car in brackets."""
    n_types = road.shape[1]
    instance, task_type = divmod(block, n_types)
    lane = road[instance, task_type]  # (L, 2, 8)
    lines = [f"task {block} (type T{task_type}, instance {instance})"]
    for row in range(road_length - 1, -1, -1):
        cells = []
        for column in range(2):
            f = lane[row, column]
            text = _cell_char(f) + ("*" if f[7] else " ") + ("^" if f[5] or f[6] else " ")
            state = 2 * road_length * block + 2 * row + column
            cells.append(f"[{text}]" if state == agent_state else f" {text} ")
        lines.append(f"{row:2d} |" + "|".join(cells) + "|")
    lines.append("legend: " + CAR_LEGEND)
    return "\n".join(lines) + "\n"


def _paint_cell(image: np.ndarray, y: int, x: int, cell: int, features: np.ndarray) -> None:
    base = "empty"
    for name, index in (("stone", 0), ("grass", 1), ("HOV", 4), ("car", 2), ("ped", 3)):
        if features[index]:
            base = name
    image[y : y + cell, x : x + cell] = _COLORS[base]
    stripe = max(1, cell // 6)
    if features[5]:
        image[y : y + stripe, x : x + cell] = _COLORS["car-in-f"]
    if features[6]:
        image[y : y + stripe, x : x + cell] = _COLORS["ped-in-f"]
    if features[7]:
        m = max(1, cell // 4)
        image[y + cell - m - 1 : y + cell - 1, x + 1 : x + 1 + m] = _COLORS["police"]
    image[y, x : x + cell] = (150, 150, 150)
    image[y : y + cell, x] = (150, 150, 150)


def car_cell_centre(state: int, n_types: int, road_length: int, cell: int = 16) -> tuple[float, float]:
    """``(x, y)`` pixel centre in the all-tasks picture of :func:`car_rgb` of the cell of road state ``state``
    (``2 * road_length * task + 2 * row + column``; task = instance * n_types + type)."""
    L, gap = road_length, max(2, cell // 2)
    block, rest = divmod(int(state), 2 * L)
    row, column = divmod(rest, 2)
    instance, task_type = divmod(block, n_types)
    y = gap + instance * (L * cell + gap) + (L - 1 - row) * cell + cell / 2
    x = gap + task_type * (2 * cell + gap) + column * cell + cell / 2
    return x, y


def car_rgb(
    road: np.ndarray,
    tasks: Sequence[int] | None = None,
    agent_state: int | None = None,
    cell: int = 16,
) -> np.ndarray:
    """``(H, W, 3)`` uint8 picture of some tasks of a road (default: all, types as columns, instances as rows).

    Row 0 (the start) is at the bottom. Colours: grey road, brown stone, green grass, blue car, red pedestrian,
    yellow HOV lane, a dark square for police, a light stripe on top of a cell whose next row holds a car or
    pedestrian, and a black square for the car.
    """
    N, K, L = road.shape[:3]
    gap = max(2, cell // 2)
    if tasks is None:
        grid = [[j * K + k for k in range(K)] for j in range(N)]
    else:
        grid = [list(tasks)]
    n_rows, n_cols = len(grid), len(grid[0])
    height = n_rows * (L * cell + gap) + gap
    width = n_cols * (2 * cell + gap) + gap
    image = np.full((height, width, 3), _COLORS["gap"], dtype=np.uint8)
    for gi, blocks in enumerate(grid):
        for gj, block in enumerate(blocks):
            instance, task_type = divmod(block, K)
            oy = gap + gi * (L * cell + gap)
            ox = gap + gj * (2 * cell + gap)
            for row in range(L):
                for column in range(2):
                    y, x = oy + (L - 1 - row) * cell, ox + column * cell
                    _paint_cell(image, y, x, cell, road[instance, task_type, row, column])
                    if agent_state == 2 * L * block + 2 * row + column:
                        q = cell // 4
                        image[y + q : y + cell - q, x + q : x + cell - q] = _COLORS["agent"]
    return image
