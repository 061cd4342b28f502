"""Argument checks shared by the whole library (environments and teaching layer)."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

__all__ = ["check_int"]


def check_int(name: str, value: Any, low: int, high: Optional[int] = None) -> int:
    """``int(value)`` if it is an integer (not a bool) ``>= low`` and, when given, ``<= high``.

    Raises:
        ValueError: ``"{name} must be an integer >= {low}; got ..."`` or ``"... in [{low}, {high}]; got ..."``.
    """
    bad = isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < low
    if bad or (high is not None and value > high):
        allowed = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise ValueError(f"{name} must be an integer {allowed}; got {value!r}")
    return int(value)
