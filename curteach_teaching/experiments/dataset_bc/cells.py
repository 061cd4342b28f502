"""The cells of a ``dataset-bc`` sweep: a curriculum, how it uses its preference, and the task score it reads.

A cell is written ``CURRICULUM[@USE][/TASK]``: ``Cur-T@select/return`` is Cur-T selecting by the episode's return;
``Cur@order`` Algorithm 2 with the sweep's task score. A part left out takes the sweep's ``--use`` and
``--task-difficulty``, so plain ``Agn,Cur`` cells are the paper's. Agn has no preference: it trains on every
demonstration unweighted, so it takes neither part. The cell is named by its curriculum (a plug-in by its ``name``
attribute) and the parts written, joined by ``+`` (a cell's name is a folder's): ``Cur-T+select+return``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from curteach_teaching.curriculum.selection import check_variant, variant_name
from curteach_teaching.curriculum.uses import USES
from curteach_teaching.names import AGN

__all__ = ["CellSpec", "parse_cell"]

_CELL = re.compile(r"^(?P<curriculum>[^@/]+?)(?:@(?P<use>[^@/]*))?(?:/(?P<task>.*))?$")


@dataclass(frozen=True)
class CellSpec:
    """One cell as written: the curriculum spec, and the use and task score it names (``None``: the sweep's)."""

    curriculum: str
    use: str | None = None
    task: str | None = None

    @property
    def name(self) -> str:
        """The cell's name: the curriculum's name with the parts written."""
        name = variant_name(check_variant(self.curriculum))
        task = re.sub(r"[^A-Za-z0-9._=+-]", ".", self.task) if self.task else None  # module:attr -> module.attr
        return name + (f"+{self.use}" if self.use else "") + (f"+{task}" if task else "")


def parse_cell(spec: str) -> CellSpec:
    """``CURRICULUM[@USE][/TASK]`` as a :class:`CellSpec` (the curriculum loaded once to check it).

    Raises:
        ValueError: an empty part, an unknown use, a use or task given to Agn, or a curriculum that does not load.
    """
    match = _CELL.match(spec.strip()) if isinstance(spec, str) else None
    if match is None:
        raise ValueError(f"a curriculum is written CURRICULUM[@USE][/TASK] (e.g. Cur-T@select/return); got {spec!r}")
    curriculum, use, task = match.group("curriculum").strip(), match.group("use"), match.group("task")
    if use is not None and use not in USES:
        raise ValueError(f"the use in {spec!r} must be one of {USES}; got {use!r}")
    if task is not None and not task.strip():
        raise ValueError(f"the task score in {spec!r} is empty (write CURRICULUM/TASK, e.g. Cur-T/return)")
    if check_variant(curriculum) == AGN and (use or task):
        raise ValueError(f"{AGN} has no preference to order, select or weight by; write it without @ or / "
                         f"(got {spec!r})")
    return CellSpec(curriculum, use, task.strip() if task else None)
