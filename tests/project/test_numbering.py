"""The paper's own figure and algorithm numbers in the docs, the README, mkdocs' nav and the CLI help.

In the paper (its LaTeX source) the car picture and the table of features and weights are two captions of one
``figure*``, so they are Figures 1 and 2; the experiments follow: Fig. 3 MaxEnt-IRL (reward and curriculum, T0 and
T0-T3), Fig. 4 CrossEnt-BC, Fig. 5 limited observability, Fig. 6 shortest path, Fig. 7 TSP. The appendix's curriculum
visualisations are named by caption (our copy of the appendix is incomplete, so their numbers are unknown). The
algorithms are Algorithm 1 (the interaction) and Algorithm 2 (the scheduling mechanism).

The sections: 4 the theory, 5 the car (teacher-centric) experiments, 6 the navigation (learner-centric) ones.

The library once counted one lower (Fig. 2 for MaxEnt-IRL, ..., Fig. 5 for navigation, Figs. 6-7 for the appendix;
Section 4 for the car, Section 5 for navigation, "Appendix F") and cited "Algorithm 3"; these patterns catch that
numbering without flagging the right one.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from curteach_teaching.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]

# "Fig. 2", "Figs. 2", "Figure 2", "fig 2" ...
_FIG = r"\bfig(?:ure)?s?\.?\s*"
# Words that put a figure reference in the context of one experiment.
_CAR_TEACHING = r"(?:maxent|irl\b|car-irl|teachers?\b|learning curves?)"
_BC = r"(?:crossent|\bbc\b|car-bc)"
_NAVIGATION = r"(?:navigation|\bnav\b|shortest[- ]path|\btsp\b|learner-centric)"

#: (name, pattern): a pattern matches text that uses the old numbering.
OLD_NUMBERING = [
    ("Algorithm 3 (the paper has Algorithms 1 and 2)", r"\balgorithms?\s*3\b"),
    # Runs of the old car numbers: "Figs. 2, 3 and 4", "Figs. 2-4", "Figs. 2 and 4", "Fig. 2/3".
    ("the old car figures as a group", _FIG + r"2\s*(?:,|and|&|/|-|–|—)\s*[34]\b"),
    # Fig. 2 is the table of features and weights; a teaching or MaxEnt-IRL context means the old numbering.
    ("Fig. 2 for the car experiment (now Fig. 3)",
     rf"{_CAR_TEACHING}[^\n]{{0,60}}?{_FIG}2\b(?![^\n]{{0,60}}(?:feature|weight|table))"
     rf"|{_FIG}2\b[^\n]{{0,40}}?{_CAR_TEACHING}"),
    ("Fig. 3 for CrossEnt-BC (now Fig. 4)", rf"{_BC}[^\n.]{{0,45}}?{_FIG}3\b|{_FIG}3\b[^\n.]{{0,12}}?{_BC}"),
    ("Fig. 4 for limited observability (now Fig. 5)",
     rf"observability[^\n.]{{0,25}}?{_FIG}4\b|{_FIG}4\b[^\n.]{{0,25}}?observability"),
    ("Fig. 5 for navigation (now Figs. 6 and 7)",
     rf"{_NAVIGATION}[^\n]{{0,60}}?{_FIG}5\b|{_FIG}5\b[^\n]{{0,60}}?{_NAVIGATION}"),
    ("the appendix's figures numbered 6-7 (name them by caption)", rf"appendix(?:'s)?[^\n.]{{0,20}}?{_FIG}[67]\b"),
    # Sections: 4 is the theory, 5 the car (teacher-centric) experiments, 6 the navigation (learner-centric) ones.
    ("Section 4 for the car experiments (now Section 5)",
     r"(?:teacher-centric experiments?|\bcar\b)[^\n.]{0,30}?sections?\s*4\b"
     r"|\bsections?\s*4\b[^\n]{0,4}\(?\"?additional results"),
    ("Section 5 for the navigation experiments (now Section 6)",
     rf"{_NAVIGATION}[^\n.;]{{0,40}}?\bsections?\s*5\b|\bsections?\s*5\b[\s,(]{{0,3}}(?:{_NAVIGATION}|no teacher)"),
    ("Appendix F (our copy of the appendix is incomplete: name it by title)", r"\bappendix\s+F\b"),
    # A link whose text carries the old number of the page it points to.
    ("a link with the old number of its page", rf"\[[^\]]*{_FIG}2\b[^\]]*\]\([^)]*car-irl\.md"
     rf"|\[[^\]]*{_FIG}3\b[^\]]*\]\([^)]*car-bc"
     rf"|\[[^\]]*{_FIG}4\b[^\]]*\]\([^)]*observability"
     rf"|\[[^\]]*{_FIG}5\b[^\]]*\]\([^)]*nav"),
]
_COMPILED = [(name, re.compile(pattern, re.IGNORECASE)) for name, pattern in OLD_NUMBERING]


def old_numbering(text: str) -> list[str]:
    """Every match of an old-numbering pattern in ``text``, as ``'name: matched text'``."""
    found = []
    for name, pattern in _COMPILED:
        found += [f"{name}: {match.group(0)!r}" for match in pattern.finditer(text)]
    return found


def _doc_files() -> list[Path]:
    files = [ROOT / "README.md", ROOT / "mkdocs.yml", *sorted((ROOT / "docs").rglob("*.md"))]
    return [path for path in files if "runs" not in path.relative_to(ROOT).parts]


def _cli_help_texts() -> dict[str, str]:
    """The top-level help (with each sub-command's one-line help) and every sub-command's full help."""
    parser = build_parser()
    texts = {"curteach": parser.format_help()}
    subparsers = next(action for action in parser._actions if isinstance(action, argparse._SubParsersAction))
    for choice in subparsers._choices_actions:  # the one-line helps, unwrapped
        texts[f"curteach (help of {choice.dest})"] = choice.help or ""
    for name, sub in subparsers.choices.items():
        texts[f"curteach {name}"] = sub.format_help()
        # Argument helps unwrapped, so a phrase split across argparse's line breaks is still one string.
        texts[f"curteach {name} (arguments)"] = "\n".join(
            " ".join(str(part) for part in (action.help, sub.description) if part) for action in sub._actions)
    return texts


@pytest.mark.parametrize("old", [
    "the paper's car-driving figures (Figs. 2, 3 and 4)",
    "the paper's car experiments (Figs. 2–4)",
    "# Car: teaching a MaxEnt-IRL learner (Fig. 2)",
    "curteach car-irl --init T0-T3 --runs 10      # Fig. 2 (right panels)",
    "teach the MaxEnt-IRL learner on the car with seven teachers (paper Fig. 2)",
    "### MaxEnt-IRL teaching (Figs. 2 and 4)",
    "the long checks, e.g. the Fig. 2/3 orderings over several runs",
    "* **CrossEnt-BC (Fig. 3)**: the paper's ordering",
    "curteach car-bc --init T0 --runs 10   # Fig. 3, left",
    "Cur under limited observability (B, k) (paper Fig. 4)",
    "# Car: teaching under limited observability (Fig. 4)",
    "learner-centric curricula for a CNN BC learner on shortest path / TSP (paper Fig. 5)",
    "* **Navigation learner (Fig. 5)**, shortest path",
    "the 20 navigation runs per task of Fig. 5",
    "What Cur trained on (the appendix's Fig. 6):",
    "the appendix's Figs. 6–7",
    "the paper's learner-centric curriculum (its Algorithm 3)",
    "[Fig. 3](experiments/car-bc.md) (`curteach car-bc`)",
    "[Fig. 5](experiments/nav.md)",
    "The task of the paper's teacher-centric experiments (Section 4), built exactly as",
    "In the paper's Section 4 (\"Additional results\") the teacher does not see the learner's policy",
    "The two task families of the paper's learner-centric experiments (Section 5, Appendix F)",
    "In the paper's Section 5 no teacher is present: a neural behaviour-cloning learner",
])
def test_patterns_catch_the_old_numbering(old):
    assert old_numbering(old), old


@pytest.mark.parametrize("new", [
    "the paper's car-driving figures (Figs. 3, 4 and 5) and its navigation experiment (Figs. 6 and 7)",
    "# Car: teaching a MaxEnt-IRL learner (Fig. 3)",
    "curteach car-irl --init T0-T3 --runs 10      # Fig. 3c, 3d",
    "* **CrossEnt-BC (Fig. 4)**: the paper's ordering; MaxEnt-IRL (Fig. 3)",
    "Cur under limited observability (B, k) (paper Fig. 5)",
    "learner-centric curricula for a CNN BC learner on shortest path / TSP (paper Figs. 6, 7)",
    "the car's eight task types with the expert's paths (the paper's Fig. 1)",
    "the features and reward weights of the paper's Fig. 2",
    "the appendix's curriculum visualisations",
    "Algorithm 1 (the interaction) and Algorithm 2 (the scheduling mechanism)",
    "Theorems 1 and 3 and Theorem 2",
    "The paper's Section 4 analyses the curriculum for two learners; Section 4.1 takes a deterministic MDP",
    "the teacher-centric car experiments of Section 5; the learner-centric navigation experiment of Section 6",
    "* **The analysis is teacher-centric** (Section 4): \"For our analysis, we consider the teacher-centric setting\"",
    "[Fig. 3](experiments/car-irl.md), [Fig. 4](experiments/car-bc.md), [Fig. 5](experiments/car-irl-observability.md)",
])
def test_patterns_leave_the_paper_numbering_alone(new):
    assert not old_numbering(new), old_numbering(new)


@pytest.mark.parametrize("path", _doc_files(), ids=lambda path: str(path.relative_to(ROOT)))
def test_docs_use_the_papers_numbering(path):
    found = old_numbering(path.read_text(encoding="utf-8"))
    assert not found, f"{path.relative_to(ROOT)}: " + "; ".join(found)


def test_cli_help_uses_the_papers_numbering():
    texts = _cli_help_texts()
    assert len(texts) > 20  # the top level, and the help of every sub-command
    found = [f"{where}: {hit}" for where, text in texts.items() for hit in old_numbering(text)]
    assert not found, "\n".join(found)
