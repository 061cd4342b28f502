"""docs/experiments/metaworld.md: the commands of "How to reproduce / resume" parse as ``curteach`` parses them, name
the ladder's datasets in the ladder's order, and run the cells the page says they run (without running them: the
sweeps take hours)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

pytest.importorskip("minari")
pytest.importorskip("imitation")

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "experiments" / "metaworld.md"
LADDER = ["reach", "pick-place", "push", "button-press-topdown", "drawer-close", "window-close", "window-open",
          "door-open", "drawer-open", "peg-insert-side"]


def _commands() -> list[list[str]]:
    """The ``curteach`` commands of the section's ``bash`` block, its ``NAME=value`` variables substituted."""
    text = PAGE.read_text()
    section = text.split("## How to reproduce / resume", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    variables: dict[str, str] = {}
    commands = []
    for line in block.replace("\\\n", "").splitlines():  # bash drops a backslash-newline
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        assignment = re.fullmatch(r"([A-Z_]+)=(\S+)", line)
        if assignment:
            variables[assignment.group(1)] = re.sub(r"\$(\w+)", lambda m: variables[m.group(1)], assignment.group(2))
            continue
        words = shlex.split(re.sub(r"\$(\w+)", lambda m: variables[m.group(1)], line))
        if "curteach" in words:
            commands.append(words[words.index("curteach") + 1:])
    return commands


def _parse(words):
    from curteach_teaching.cli import build_parser

    return build_parser().parse_args(words)


def test_the_pages_commands_parse_and_run_what_the_page_says():
    commands = _commands()
    kinds = [(words[0], words[1] if words[0] == "make-dataset" else None) for words in commands]
    assert kinds == [("make-dataset", "metaworld"), ("make-dataset", "metaworld"), ("dataset-bc", None),
                     ("dataset-bc", None)]
    parsed = [_parse(words) for words in commands]
    ladder_data, mixed_data, ladder, mixed = parsed
    assert ladder_data.tasks.split(",") == LADDER and ladder_data.seed == 1
    assert mixed_data.tasks.split(",") == ["push", "pick-place", "peg-insert-side"]
    assert (mixed_data.noise, mixed_data.noise_share) == (1.0, 0.4)
    # the ladder's datasets in the ladder's order (the level task difficulty is that order)
    names = [Path(d).name for d in ladder.dataset.split(",")]
    assert names == [f"metaworld-{task}-v0" for task in LADDER]
    assert all(Path(d).parent == Path(ladder_data.out) for d in ladder.dataset.split(","))
    assert ladder.curricula.split(",") == ["Agn", "Cur", "Cur-L", "Cur-T"] and ladder.runs == 10
    assert [Path(d).parent == Path(mixed_data.out) for d in mixed.dataset.split(",")] == [True] * 3
    assert mixed.curricula.split(",") == ["Agn", "Cur", "Cur-T@select", "Cur-T@weight", "Cur-T@select/length",
                                          "Cur-T@select/ensemble+100*not:success"]
    assert mixed.paired_against.split(",") == ["Cur-T@select/length", "Cur-T@select"]
    assert mixed.task_difficulty == "ensemble" and mixed.runs == 10
    for run in (ladder, mixed):
        assert run.policy == "mlp-256" and run.workers == 1 and run.seed == 0
    from curteach_teaching.experiments.dataset_bc.cells import parse_cell

    for cell in mixed.curricula.split(","):
        parse_cell(cell)
