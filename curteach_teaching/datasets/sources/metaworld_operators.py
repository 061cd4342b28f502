"""Operator styles for ``make-dataset metaworld --operators``: seeded transformations of Meta-World's scripted expert,
chosen so that an episode's quality and its length come apart.

With Gaussian action noise alone (``--noise``) the noisy episodes are also the long ones (they fail, or succeed late),
so sorting by length finds them. The styles here separate the two, as robomimic's multi-human operators do not
(there the worse operators are also the slowest):

* ``careful``: the expert slowed down: its hand displacement (the first three action components) times
  ``CAREFUL_FACTOR`` < 1, the gripper command unchanged. Clean and successful, and long. Tier ``better``.
* ``hesitant``: the expert with one pause: from a seeded step for a seeded number of steps the hand displacement is
  zero (the gripper command stays the expert's, so a held object stays held). Successful, long. Tier ``okay``.
* ``hasty``: a rushed expert: hand displacement times ``HASTY_GAIN`` > 1 plus a constant bias of norm
  ``HASTY_BIAS`` in a seeded direction, and the operator stops after a seeded budget of steps
  (``HASTY_BUDGET``). Short, and often failing (stopped before the task is solved, or imprecise). Tier ``worse``.
* ``noisy``: the existing style, the expert plus Gaussian noise of standard deviation ``--noise`` on every
  component, drawn exactly as without ``--operators``. Tier ``worse``.

Every action is then clipped to ``[-1, 1]`` and cast to ``float32`` by the episode loop, as without operators. The
parameters and tiers were chosen by a pilot (docs/experiments/metaworld.md, "Operators: data where length is not the
answer"). Each episode's draws (the bias direction and budget, the pause, the noise) come from the episode's own
generator, seeded by its plan, in a fixed order, so an episode is a pure function of its plan.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "CAREFUL_FACTOR",
    "HASTY_BIAS",
    "HASTY_BUDGET",
    "HASTY_GAIN",
    "PAUSE_LENGTH",
    "PAUSE_START",
    "STYLES",
    "TIERS",
    "OperatorController",
    "assign_operators",
    "careful_action",
    "hasty_action",
    "parse_operators",
    "pause_window",
]

#: the hand-displacement scale of the careful operator
CAREFUL_FACTOR = 0.7
#: the hand-displacement gain of the hasty operator
HASTY_GAIN = 3.0
#: the norm of the hasty operator's constant hand-displacement bias
HASTY_BIAS = 0.3
#: the hasty operator's budget of steps: an integer uniform in ``[low, high]`` (both included)
HASTY_BUDGET = (30, 70)
#: the hesitant operator's pause: its first step and its length, integers uniform in ``[low, high]``
PAUSE_START = (10, 40)
PAUSE_LENGTH = (60, 120)

#: style -> its quality tier (robomimic's multi-human names)
STYLES: dict[str, str] = {"careful": "better", "hesitant": "okay", "hasty": "worse", "noisy": "worse"}
#: robomimic's tiers, best first
TIERS = ("better", "okay", "worse")


def parse_operators(spec: str) -> tuple[tuple[str, float], ...]:
    """``"careful:0.3,hasty:0.4,hesitant:0.3"`` -> ``(("careful", 0.3), ("hasty", 0.4), ("hesitant", 0.3))``.

    Raises:
        ValueError (one line): an unknown or repeated style, a share that is not a number in ``(0, 1]``, or shares
        that do not sum to 1.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"operators must be STYLE:SHARE,... with styles from {', '.join(STYLES)}; got {spec!r}")
    parsed: list[tuple[str, float]] = []
    for item in spec.split(","):
        name, colon, text = item.strip().partition(":")
        if not colon:
            raise ValueError(f"operators: {item.strip()!r} is not STYLE:SHARE (e.g. careful:0.3)")
        if name not in STYLES:
            raise ValueError(f"operators: unknown style {name!r}; styles: {', '.join(STYLES)}")
        if name in (n for n, _ in parsed):
            raise ValueError(f"operators: style {name!r} is given twice")
        try:
            share = float(text)
        except ValueError:
            share = math.nan
        if not (0.0 < share <= 1.0):
            raise ValueError(f"operators: the share of {name!r} must be a number in (0, 1]; got {text!r}")
        parsed.append((name, share))
    total = math.fsum(share for _, share in parsed)
    if abs(total - 1.0) > 1e-6:
        raise ValueError(f"operators: the shares must sum to 1; they sum to {total:g}")
    return tuple(parsed)


def assign_operators(shares: Sequence[tuple[str, float]], episodes: int, rng: np.random.Generator) -> list[str]:
    """Each episode's style: ``round(episodes * cumulative share)`` marks each style's last episode (so the counts sum
    to ``episodes`` and each is within one of ``share * episodes``), then one permutation drawn from ``rng`` spreads
    them over the indices. Returns ``episodes`` style names, by episode index."""
    bounds = [0] + [math.floor(episodes * c + 0.5) for c in np.cumsum([s for _, s in shares]).tolist()]
    bounds[-1] = episodes  # the shares sum to 1 within 1e-6: the last bound is the episode count
    ordered = [name for (name, _), low, high in zip(shares, bounds[:-1], bounds[1:]) for _ in range(high - low)]
    return [ordered[i] for i in rng.permutation(episodes).tolist()]


def careful_action(action: np.ndarray, factor: float = CAREFUL_FACTOR) -> np.ndarray:
    """``(4,)`` -> ``(4,)``: the action clipped to ``[-1, 1]``, then its hand displacement (components 0-2) times
    ``factor``, the gripper (3) unchanged. Clipped first because the scripted policies' gains send actions far past
    the bounds, which the environment would clip anyway: scaling those alone would not slow the hand. Factors of 0.6
    and below failed in the pilot: the scripted policies close the gripper by the hand's distance to the object, and a
    hand that slow closes its fingers before it is low enough to grasp."""
    out = np.clip(np.asarray(action, dtype=np.float64), -1.0, 1.0)
    out[:3] *= factor
    return out


def hasty_action(action: np.ndarray, bias: np.ndarray, gain: float = HASTY_GAIN) -> np.ndarray:
    """``(4,)`` -> ``(4,)``: the hand displacement times ``gain`` plus ``bias`` ``(3,)``, the gripper unchanged (the
    episode loop clips to ``[-1, 1]`` afterwards)."""
    out = np.array(action, dtype=np.float64)
    out[:3] = gain * out[:3] + bias
    return out


def pause_window(rng: np.random.Generator) -> tuple[int, int]:
    """The hesitant operator's pause, ``(first step, length)``: two integers drawn from ``rng`` in that order,
    uniform over :data:`PAUSE_START` and :data:`PAUSE_LENGTH` (bounds included)."""
    start = int(rng.integers(PAUSE_START[0], PAUSE_START[1] + 1))
    length = int(rng.integers(PAUSE_LENGTH[0], PAUSE_LENGTH[1] + 1))
    return start, length


@dataclass
class OperatorController:
    """One episode's operator: built at the reset from the episode's generator, then called once per step.

    Draws at construction (in this order, from ``rng``): ``hasty``: three standard normals (the bias direction) and
    the budget; ``hesitant``: :func:`pause_window`. ``noisy`` draws four standard normals per step, as the episode
    loop without operators does; ``careful`` draws nothing.

    Attributes:
        style: one of :data:`STYLES`.
        rng: the episode's generator.
        noise: the Gaussian noise's standard deviation (``noisy`` only).
        bias: ``(3,)``, the hasty operator's bias (zeros otherwise).
        budget: the hasty operator's last step count (``None``: no budget).
        pause: the hesitant operator's ``(first step, length)`` (``None`` otherwise).
    """

    style: str
    rng: np.random.Generator
    noise: float = 0.0
    bias: np.ndarray | None = None
    budget: int | None = None
    pause: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        if self.style not in STYLES:
            raise ValueError(f"unknown operator style {self.style!r}; styles: {', '.join(STYLES)}")
        self.bias = np.zeros(3)
        if self.style == "hasty":
            direction = self.rng.standard_normal(3)
            self.bias = HASTY_BIAS * direction / np.linalg.norm(direction)
            self.budget = int(self.rng.integers(HASTY_BUDGET[0], HASTY_BUDGET[1] + 1))
        elif self.style == "hesitant":
            self.pause = pause_window(self.rng)

    def act(self, step: int, action: np.ndarray) -> np.ndarray:
        """The operator's action at ``step`` (0-based) given the expert's ``(4,)`` ``action``, before clipping."""
        if self.style == "careful":
            return careful_action(action)
        if self.style == "hasty":
            return hasty_action(action, self.bias)
        if self.style == "hesitant":
            start, length = self.pause
            if start <= step < start + length:
                return np.array([0.0, 0.0, 0.0, action[3]], dtype=np.float64)
            return np.asarray(action, dtype=np.float64)
        return action + self.noise * self.rng.standard_normal(action.shape)

    def stops_after(self, steps: int) -> bool:
        """Whether the operator ends the episode after ``steps`` actions (the hasty operator's budget)."""
        return self.budget is not None and steps >= self.budget
