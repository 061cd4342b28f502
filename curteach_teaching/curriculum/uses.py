"""Three uses of one curriculum's preference: order, select or weight the demonstrations.

A curriculum scores every demonstration each epoch (its preference, larger = better to train on now;
:func:`~curteach_teaching.curriculum.selection.preference`). What the epoch then trains on is a small transform of
that one score, so that ordering, selecting and weighting can be compared on the same data with the same score:

* :class:`Order` (the paper's Algorithm 2, the default): the ``X_e`` most preferred, ``X_e`` growing with the pacing
  schedule until every demonstration is in;
* :class:`Select` ``(keep=F)``: the ``round(F N)`` most preferred (at least 1), in every epoch; the rest are never
  trained on (curation by a quality score);
* :class:`Weight` ``(temperature=T)``: every demonstration in every epoch, each transition's loss weighted by its
  demonstration's normalised preference::

      w_i = c exp(p_i / T),   c such that  sum_i L_i w_i = sum_i L_i

  (``L_i`` the demonstration's number of transitions), so the mean weight over the pool's transitions is 1 and the
  loss keeps the scale of unweighted training; computed in log space (no overflow for any preference).

A curriculum without a preference (Agn) trains on every demonstration unweighted under every use.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["USES", "Order", "Select", "Use", "Weight", "check_use", "preference_weights"]

#: The names of the uses, in this order.
USES = ("order", "select", "weight")


def _ranking(prefer: np.ndarray) -> np.ndarray:
    # most preferred first, ties to the lower index (the same stable sort as selection.ranking)
    return np.argsort(-prefer, kind="stable")


@dataclass(frozen=True)
class Order:
    """Algorithm 2: the pacing schedule's ``X_e`` most preferred demonstrations of epoch ``e``."""

    name = "order"

    def choose(self, prefer: np.ndarray, keep: int, sizes: np.ndarray) -> tuple[np.ndarray, None]:
        """``((X_e,) indices most preferred first, None)`` for the pacing's ``keep = X_e``."""
        return _ranking(prefer)[:keep], None

    def config(self) -> dict:
        """What a saved run must share (nothing beyond the default)."""
        return {}


@dataclass(frozen=True)
class Select:
    """The ``round(keep N)`` most preferred demonstrations (at least one), every epoch; the pacing is not used.

    Args:
        keep: the fraction kept, in ``(0, 1]``.
        groups: ``None``: one cut over the pool; else ``(N,)`` labels, one per demonstration (a task each), and the
            cut is made within each group: group ``g`` of ``n_g`` keeps its ``max(1, round(keep n_g))`` most
            preferred, so that no task is dropped whole because its demonstrations score harder than another's.

    Raises:
        ValueError: ``keep`` outside ``(0, 1]``.
    """

    keep: float = 0.6
    groups: tuple | None = None
    name = "select"

    def __post_init__(self) -> None:
        k = self.keep
        if isinstance(k, bool) or not isinstance(k, (int, float)) or not (0.0 < k <= 1.0):
            raise ValueError(f"keep must be a fraction in (0, 1]; got {self.keep!r}")
        if self.groups is not None:
            object.__setattr__(self, "groups", tuple(self.groups))

    def kept(self, n_items: int) -> int:
        """``max(1, round(keep N))`` (halves round up)."""
        return max(1, min(n_items, math.floor(self.keep * n_items + 0.5)))

    def choose(self, prefer: np.ndarray, keep: int, sizes: np.ndarray) -> tuple[np.ndarray, None]:
        """``((round(F N),) indices most preferred first, None)`` (within groups: each group's share, in the pool's
        order of preference); the pacing's ``keep`` is ignored."""
        ranking = _ranking(prefer)
        if self.groups is None:
            return ranking[: self.kept(prefer.size)], None
        labels = np.asarray(self.groups, dtype=object)
        if labels.size != prefer.size:
            raise ValueError(f"select has {labels.size} group labels for {prefer.size} demonstrations")
        chosen = np.zeros(prefer.size, dtype=bool)
        for group in dict.fromkeys(labels.tolist()):  # a loop over the few groups, not over demonstrations
            members = np.flatnonzero(labels == group)
            chosen[members[_ranking(prefer[members])[: self.kept(members.size)]]] = True
        return ranking[chosen[ranking]], None

    def config(self) -> dict:
        """``{"use": "select", "keep": F}``, and ``"within": "group"`` for a cut within groups."""
        return {"use": self.name, "keep": float(self.keep), **({} if self.groups is None else {"within": "group"})}


@dataclass(frozen=True)
class Weight:
    """Every demonstration, its loss weighted by :func:`preference_weights` (``temperature`` > 0).

    Raises:
        ValueError: a temperature that is not a finite number > 0.
    """

    temperature: float = 1.0
    name = "weight"

    def __post_init__(self) -> None:
        t = self.temperature
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not (np.isfinite(t) and t > 0):
            raise ValueError(f"temperature must be a finite number > 0; got {self.temperature!r}")

    def choose(self, prefer: np.ndarray, keep: int, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``((N,) every index most preferred first, (N,) weights)``; the pacing's ``keep`` is ignored."""
        return _ranking(prefer), preference_weights(prefer, sizes, self.temperature)

    def config(self) -> dict:
        """``{"use": "weight", "temperature": T}``."""
        return {"use": self.name, "temperature": float(self.temperature)}


#: Any of the uses (each has ``name``, ``choose(prefer, keep, sizes)`` and ``config()``).
Use = Order | Select | Weight


def preference_weights(prefer: np.ndarray, sizes: np.ndarray, temperature: float = 1.0) -> np.ndarray:
    """``(N,)`` the loss weight of each demonstration: ``c exp(p_i / T)`` with ``sum_i L_i w_i = sum_i L_i``.

    Args:
        prefer: ``(N,)`` preferences (finite, or ``-inf`` for a demonstration never to train on).
        sizes: ``(N,)`` transitions per demonstration (> 0).
        temperature: ``T`` > 0; a larger one flattens the weights.

    Raises:
        ValueError: shapes that differ, NaN or ``+inf`` preferences, sizes that are not positive.
    """
    prefer = np.asarray(prefer, dtype=np.float64)
    sizes = np.asarray(sizes, dtype=np.float64)
    if prefer.ndim != 1 or prefer.shape != sizes.shape:
        raise ValueError(f"prefer and sizes must be (N,) arrays of one length; got {prefer.shape} and {sizes.shape}")
    if np.isnan(prefer).any() or np.isposinf(prefer).any():
        raise ValueError("preferences must be finite or -inf to weight by them")
    if not (sizes > 0).all():
        raise ValueError("every demonstration needs at least one transition to be weighted")
    logits = prefer / float(temperature)
    top = logits.max()
    if not np.isfinite(top):
        raise ValueError("at least one preference must be finite to weight by them")
    log_total = np.log(sizes.sum())
    # log w_i = log_total + logits_i - logsumexp_j(logits_j + log L_j): stable for any range of preferences
    shifted = logits - top
    log_norm = np.log(np.sum(sizes * np.exp(shifted)))
    return np.exp(log_total + shifted - log_norm)


def check_use(use: object) -> Use:
    """``use`` as a use object: one already, or a name of :data:`USES` (with its default settings).

    Raises:
        ValueError: an unknown name or another object.
    """
    if isinstance(use, (Order, Select, Weight)):
        return use
    if use == "order":
        return Order()
    if use == "select":
        return Select()
    if use == "weight":
        return Weight()
    raise ValueError(f"use must be one of {USES} or Order(), Select(keep), Weight(temperature); got {use!r}")
