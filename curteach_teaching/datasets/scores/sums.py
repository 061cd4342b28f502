"""Task scores written as weighted sums, ``ensemble+100*not:success``: several scores at once, each standardised.

A researcher's question is often "the ensemble's ranking, but never a failed demonstration before a successful one":
two scores in fixed proportion. A sum is written ``[W*]NAME+[W*]NAME...``; every ``NAME`` is a score as
:func:`~curteach_teaching.datasets.scores.registry.task_difficulty` reads it (a built-in, a field, ``not:FIELD``,
``module:attr``). Its value for episode ``i`` is

    ``sum_k W_k * (s_k[i] - mean(s_k)) / std(s_k)``

over the pool (the population standard deviation; a score equal for every episode adds 0), so that scores in other
units (steps, log-likelihoods, 0/1 flags) weigh as their weights say. A large weight on a 0/1 flag puts every flagged
episode after every other one: with ``p`` of the pool flagged, the flag moves an episode by ``W / sqrt(p (1 - p))``
standard deviations (at least ``2 W``), more than the other scores span when ``W`` is large (``100`` against an
ensemble's few standard deviations). A single name without a weight is not a sum: its values are the score's own.

This module only parses and combines; which values the names have is
:mod:`~curteach_teaching.datasets.scores.registry`'s to decide.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from curteach_teaching.standardise import standardise

__all__ = ["Term", "combine", "parse_sum"]

#: ``W*NAME``: a decimal weight (optionally negative, with an exponent) and the score's name
_TERM = re.compile(r"^\s*(?:(?P<weight>-?(?:\d+\.?\d*|\.\d+)(?:[eE]-?\d+)?)\s*\*)?\s*(?P<name>[^*]+?)\s*$")


@dataclass(frozen=True)
class Term:
    """One score of a sum: its weight and its name."""

    weight: float
    name: str


def parse_sum(spec: str) -> tuple[Term, ...] | None:
    """The terms of ``spec`` (``ensemble+100*not:success`` -> ``(Term(1, "ensemble"), Term(100, "not:success"))``),
    or ``None`` when it is one name with no weight (not a sum: the score's own values).

    Raises:
        ValueError (one line): an empty term, a weight that is not a finite non-zero number, or a name given twice.
    """
    if "+" not in spec and "*" not in spec:
        return None
    terms = []
    for part in spec.split("+"):
        match = _TERM.match(part)
        if match is None or not match.group("name").strip():
            raise ValueError(f"task score {spec!r}: each term of a sum is NAME or W*NAME (e.g. "
                             f"ensemble+100*not:success); got {part.strip()!r}")
        weight = float(match.group("weight")) if match.group("weight") is not None else 1.0
        if not math.isfinite(weight) or weight == 0.0:
            raise ValueError(f"task score {spec!r}: a weight must be a finite non-zero number; got {weight!r}")
        terms.append(Term(weight, match.group("name")))
    names = [term.name for term in terms]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(f"task score {spec!r} names {', '.join(repeated)} twice; give each score once, weighted")
    return tuple(terms)


def combine(terms: tuple[Term, ...], values: Mapping[str, np.ndarray]) -> np.ndarray:
    """``(N,)`` float64 ``sum_k W_k * standardise(values[name_k], zero="relative")`` (see the module docstring).

    Args:
        terms: :func:`parse_sum`'s terms; values: ``name -> (N,)`` every term's values, all of one length.
    """
    total = np.zeros(len(np.asarray(values[terms[0].name])), dtype=np.float64)
    for term in terms:
        total += term.weight * standardise(values[term.name], zero="relative")
    return total
