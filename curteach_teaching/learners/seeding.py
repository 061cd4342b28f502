"""Seeding the global generators that SB3 and torch draw from, for one block, and giving them back as they were.

SB3 policies initialise their weights from torch's global generator and imitation's trainers shuffle from NumPy's;
the library seeds them from a run's own seed inside :func:`seeded_globals` only, so a run's draws depend on its seed
alone and nothing outside the block sees a changed global state.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterator

import numpy as np

__all__ = ["seeded_globals"]


@contextlib.contextmanager
def seeded_globals(seed: int) -> Iterator[None]:
    """Seed torch's, NumPy's legacy and Python's global generators with ``seed`` (SB3 samples actions and shuffles
    minibatches from them, torch initialises networks from them) and restore their states on exit."""
    import torch as th

    numpy_state, python_state = np.random.get_state(), random.getstate()
    with th.random.fork_rng(devices=[]):
        th.manual_seed(seed)
        np.random.seed(seed % 2**32)
        random.seed(seed)
        try:
            yield
        finally:
            np.random.set_state(numpy_state)
            random.setstate(python_state)
