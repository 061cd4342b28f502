"""Start matching for the adapters of trainers that roll out a generator on tabular environments (GAIL/AIRL opt-in,
MCE-IRL by default): while an epoch trains, episodes start where its demonstrations start."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

__all__ = ["starts_matched", "tabular_envs"]


def tabular_envs(venv: Any) -> list:
    """The base environments of ``venv`` whose episodes start from a settable ``initial_state_dist`` (seals'
    tabular models in a ``DummyVecEnv``), or ``ValueError`` saying what start matching needs."""
    envs = getattr(venv, "envs", None)
    bases = [env.unwrapped for env in envs] if envs else []
    if not bases or not all(hasattr(b, "initial_state_dist") and hasattr(b, "state_dim") for b in bases):
        raise ValueError("match_starts needs a DummyVecEnv of tabular environments with an initial_state_dist and "
                         f"state_dim (seals' tabular models, observed as state indices); got {type(venv).__name__}")
    return bases


@contextmanager
def starts_matched(envs: Sequence[Any], chosen: Sequence[Any]) -> Iterator[None]:
    """A context in which every env of ``envs`` starts its episodes where the ``chosen`` demonstrations start (the
    empirical distribution of their first observations, state indices); their own distributions are put back after.

    Raises:
        ValueError: a first observation that is not a state index of the environments.
    """
    n_states = envs[0].state_dim
    firsts = [np.asarray(demo.obs[0]) for demo in chosen]
    if not all(f.size == 1 and np.issubdtype(f.dtype, np.integer) and 0 <= f.item() < n_states for f in firsts):
        raise ValueError(f"match_starts needs demonstrations whose observations are state indices in [0, {n_states})")
    starts = np.bincount([f.item() for f in firsts], minlength=n_states).astype(np.float64)
    distribution = starts / starts.sum()
    saved = [env.initial_state_dist for env in envs]
    for env in envs:
        env.initial_state_dist = distribution
    try:
        yield
    finally:
        for env, dist in zip(envs, saved, strict=True):
            env.initial_state_dist = dist
