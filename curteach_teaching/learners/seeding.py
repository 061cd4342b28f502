"""Seeds into generators: a run's own ``torch.Generator`` (:func:`make_generator`), one NumPy stream per episode
(:func:`episode_streams`), and the global generators that SB3 and torch draw from, seeded for one block and given
back as they were (:func:`seeded_globals`).

SB3 policies initialise their weights from torch's global generator and imitation's trainers shuffle from NumPy's;
the library seeds them from a run's own seed inside :func:`seeded_globals` only, so a run's draws depend on its seed
alone and nothing outside the block sees a changed global state.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # torch is imported inside the functions: importing this module costs NumPy only
    import torch as th

__all__ = ["episode_streams", "make_generator", "seeded_globals"]


@contextlib.contextmanager
def seeded_globals(seed: int, device: str | None = None) -> Iterator[None]:
    """Seed torch's, NumPy's legacy and Python's global generators with ``seed`` (SB3 samples actions and shuffles
    minibatches from them, torch initialises networks from them) and restore their states on exit.

    ``device``: the torch device the block trains on; for a GPU (``"cuda:k"``), whose generator ``manual_seed``
    seeds as well and a policy there samples from, that generator is restored on exit too."""
    import torch as th

    where = None if device is None else th.device(device)
    gpus = [where.index or 0] if where is not None and where.type == "cuda" else []
    numpy_state, python_state = np.random.get_state(), random.getstate()
    with th.random.fork_rng(devices=gpus):
        th.manual_seed(seed)
        np.random.seed(seed % 2**32)
        random.seed(seed)
        try:
            yield
        finally:
            np.random.set_state(numpy_state)
            random.setstate(python_state)


def make_generator(seed: int | np.integer | th.Generator | None = None) -> th.Generator:
    """A CPU ``torch.Generator`` from a seed.

    Args:
        seed: a non-negative integer (``manual_seed``), a CPU ``torch.Generator`` (returned as is), or ``None`` for
            fresh OS entropy (not reproducible; never reads or changes torch's global RNG).

    Raises:
        ValueError: a negative or non-integer seed, or a generator on another device.
    """
    import torch as th

    if isinstance(seed, th.Generator):
        if seed.device.type != "cpu":
            raise ValueError(f"the initialisation generator must be a CPU generator; got one on {seed.device}")
        return seed
    if seed is None:
        seed = int(np.random.SeedSequence().generate_state(2, dtype=np.uint32).view(np.uint64)[0] >> 1)
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, a torch.Generator or None; got {seed!r}")
    generator = th.Generator(device="cpu")
    generator.manual_seed(int(seed) % (1 << 64))
    return generator


def episode_streams(n: int, seed: int | np.integer | th.Generator | None) -> list[np.random.Generator]:
    """``n`` NumPy generators, one per episode: episode ``i`` gets the ``i``-th of ``n`` seeds drawn (``randint`` in
    ``[0, 2**62)``) from :func:`make_generator` of ``seed``, so its draws depend on ``seed`` and ``i`` alone.

    Args:
        n: episodes (>= 0).
        seed: as :func:`make_generator`.
    """
    import torch as th

    seeds = th.randint(0, 2**62, (int(n),), generator=make_generator(seed)).tolist()
    return [np.random.default_rng(s) for s in seeds]
