"""Which settings of an experiment enter its runs' fingerprint: declared once per setting, read here.

A run file is keyed by the hash of its experiment's settings (:func:`~curteach_teaching.sweeps.results.fingerprint`),
and a folder resumes only the runs of the same fingerprint. So the fingerprint must hold exactly what changes numbers:
a setting left out would reuse runs of other numbers, a setting put in would make every folder saved before it
existed another sweep's. Each field of an experiment's dataclass declares its rule with :func:`setting`:

* :data:`ALWAYS` (a field without a declaration, too): every value enters.
* :data:`WHEN_NOT_DEFAULT`: a setting added after runs were saved, whose default reproduces those runs: left out at
  its default, so the folders saved before it keep their fingerprint and resume; any other value is another sweep.
  Adding a setting so needs no migration of the folders.
* :data:`NEVER`: not a setting; nothing of it changes a number (where a run shows its progress, the prepared data,
  a file or folder name, a report option, the runner's device where runs are the same on every device).

``cell=True`` marks a setting that only some cells read, in an experiment whose cells have settings of their own
(``cell_settings``, :mod:`~curteach_teaching.sweeps.sweep`): it is left out of the settings every cell shares
(:func:`shared_settings`), and a cell's settings take it, by the same rule, when the cell reads it
(:func:`cell_fields`). A flag no cell reads then changes no fingerprint.

The experiment still builds its ``settings()`` dict (adding its name, turning tuples into lists), from these
functions; this module is the one place that reads the declarations.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

__all__ = ["ALWAYS", "NEVER", "RULES", "WHEN_NOT_DEFAULT", "cell_fields", "fingerprint_rule", "setting",
           "setting_names", "shared_settings"]

ALWAYS = "always"
WHEN_NOT_DEFAULT = "when not default"
NEVER = "never"
#: the rules a setting may declare
RULES = (ALWAYS, WHEN_NOT_DEFAULT, NEVER)
_KEY = "fingerprint"
_CELL = "cell"


def setting(default: Any = dataclasses.MISSING, *, fingerprint: str = ALWAYS, cell: bool = False,
            **options: Any) -> Any:
    """A dataclass field whose fingerprint rule is declared: ``name: int = setting(5, fingerprint=WHEN_NOT_DEFAULT)``.

    Args:
        default: the field's default (required for :data:`WHEN_NOT_DEFAULT`: the value that reproduces the runs saved
            before the setting existed).
        fingerprint: one of :data:`RULES`.
        cell: only some cells read it (see the module docstring).
        options: the other arguments of :func:`dataclasses.field` (``compare``, ``repr``, ...).

    Raises:
        ValueError: an unknown rule, or :data:`WHEN_NOT_DEFAULT` without a default.
    """
    if fingerprint not in RULES:
        raise ValueError(f"fingerprint must be one of {RULES}; got {fingerprint!r}")
    if fingerprint == WHEN_NOT_DEFAULT and default is dataclasses.MISSING:
        raise ValueError("a setting left out of the fingerprint at its default needs a default")
    metadata = {**options.pop("metadata", {}), _KEY: fingerprint, _CELL: bool(cell)}
    return dataclasses.field(default=default, metadata=metadata, **options)


def fingerprint_rule(field: dataclasses.Field) -> str:
    """The rule ``field`` declares (:data:`ALWAYS` where it declares none)."""
    return field.metadata.get(_KEY, ALWAYS)


def _enters(experiment: Any, field: dataclasses.Field) -> bool:
    """Whether ``field``'s value on ``experiment`` enters the fingerprint by its rule."""
    rule = fingerprint_rule(field)
    if rule == WHEN_NOT_DEFAULT:
        return getattr(experiment, field.name) != field.default
    return rule == ALWAYS


def setting_names(experiment: Any) -> tuple[str, ...]:
    """The fields of ``experiment`` (a dataclass or its class) that are settings (every rule but :data:`NEVER`), in
    declaration order: what a recorded ``settings`` dict may name."""
    return tuple(f.name for f in dataclasses.fields(experiment) if fingerprint_rule(f) != NEVER)


def shared_settings(experiment: Any, read_by_every_cell: Iterable[str] = ()) -> dict:
    """``{name: value}`` of the settings of ``experiment`` (a dataclass instance) that enter the fingerprint of every
    run: each field by its rule, those that only some cells read (``cell=True``) left out but for
    ``read_by_every_cell`` (what these settings make every cell read), in declaration order (the order ``sweep.json``
    records them in)."""
    every = set(read_by_every_cell)
    return {f.name: getattr(experiment, f.name) for f in dataclasses.fields(experiment)
            if (f.name in every or not f.metadata.get(_CELL, False)) and _enters(experiment, f)}


def cell_fields(experiment: Any, names: Iterable[str]) -> dict:
    """``{name: value}`` of the settings ``names`` (those a cell reads, in that order) that enter the fingerprint by
    their rule; ``ValueError`` for a name that is no setting of ``experiment``."""
    declared = {f.name: f for f in dataclasses.fields(experiment) if fingerprint_rule(f) != NEVER}
    unknown = [name for name in names if name not in declared]
    if unknown:
        raise ValueError(f"not settings of {type(experiment).__name__}: {unknown}")
    return {name: getattr(experiment, name) for name in names if _enters(experiment, declared[name])}
