"""Text and picture rendering of the navigation grids (NumPy only; no display needed).

Both functions take the ``(36,)`` cell kinds of a task (``task.cell_kinds(mask)``) and the agent's pose
(``4 * cell + direction``, ``-1`` when it is not on the grid).
"""

from __future__ import annotations

import numpy as np

__all__ = ["nav_ansi", "nav_rgb", "NAV_COLOR_LEGEND", "NAV_LEGEND"]

_SYMBOLS = {"empty": ".", "mud": "#", "bomb": "+", "goal": "G", "start": "S", "visited": "g"}
_ARROWS = ">v<^"  # east, south, west, north
NAV_LEGEND = ". empty, # mud, + bomb, G goal, g visited goal, S start/home, >v<^ the agent and its direction"

_COLORS = {
    "empty": (235, 235, 235),
    "mud": (150, 105, 60),
    "bomb": (215, 40, 40),
    "goal": (245, 195, 30),
    "visited": (250, 235, 170),
    "start": (120, 180, 240),
    "agent": (20, 20, 20),
    "line": (170, 170, 170),
}
#: What each colour of :func:`nav_rgb` means, in legend order: ``(label, (r, g, b))``.
NAV_COLOR_LEGEND = (
    ("empty", _COLORS["empty"]),
    ("mud", _COLORS["mud"]),
    ("bomb", _COLORS["bomb"]),
    ("goal", _COLORS["goal"]),
    ("visited goal", _COLORS["visited"]),
    ("start / home", _COLORS["start"]),
    ("agent (points where it faces)", _COLORS["agent"]),
)


def nav_ansi(kinds: np.ndarray, pose: int, title: str = "") -> str:
    """Text grid, row 0 on top; the agent is an arrow in brackets.

    Args:
        kinds: ``(36,)`` cell kinds; pose: agent pose or ``-1``; title: first line.
    """
    agent_cell = pose >> 2 if pose >= 0 else -1
    lines = [title] if title else []
    lines.append("    " + " ".join(f" {c} " for c in range(6)))
    for row in range(6):
        cells = []
        for col in range(6):
            k = row * 6 + col
            symbol = _SYMBOLS[str(kinds[k])]
            cells.append(f"[{_ARROWS[pose & 3]}]" if k == agent_cell else f" {symbol} ")
        lines.append(f"{row:2d} |" + "|".join(cells) + "|")
    lines.append("legend: " + NAV_LEGEND)
    return "\n".join(lines) + "\n"


def _triangle(cell: int, direction: int) -> np.ndarray:
    """``(cell, cell)`` bool mask of a triangle pointing in ``direction``."""
    y, x = np.mgrid[0:cell, 0:cell]
    m = cell / 2
    # Triangle pointing east, then rotated: tip at the right middle, base on the left third.
    u = (x - cell * 0.2) / (cell * 0.6)  # 0 at the base, 1 at the tip
    east = (u >= 0) & (u <= 1) & (np.abs(y - m + 0.5) <= (1 - u) * cell * 0.3)
    return np.rot90(east, k=-direction)


def nav_rgb(kinds: np.ndarray, pose: int, cell: int = 24) -> np.ndarray:
    """``(6 * cell + 1, 6 * cell + 1, 3)`` uint8 picture: coloured cells and a dark triangle for the agent.

    Colours: light grey empty, brown mud, red bomb, yellow goal, pale yellow visited goal, blue start/home.
    """
    if int(cell) < 4:
        raise ValueError(f"cell must be an integer >= 4 pixels; got {cell!r}")
    size = 6 * cell + 1
    image = np.full((size, size, 3), _COLORS["line"], dtype=np.uint8)
    for k in range(36):
        y, x = (k // 6) * cell + 1, (k % 6) * cell + 1
        image[y : y + cell - 1, x : x + cell - 1] = _COLORS[str(kinds[k])]
    if pose >= 0:
        k = pose >> 2
        y, x = (k // 6) * cell, (k % 6) * cell
        patch = image[y : y + cell, x : x + cell]
        patch[_triangle(cell, pose & 3)] = _COLORS["agent"]
    return image
