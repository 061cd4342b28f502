"""The committed Meta-World ladder results agree with their page: the tables of docs/experiments/metaworld.md hold
the summary's success rates and report.json's paired statistics, overall and per task, for the paired runs the
page's heading names."""

import csv
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "docs" / "results" / "metaworld-ladder"
PAGE = ROOT / "docs" / "experiments" / "metaworld.md"
CELLS = ["Agn", "Cur", "Cur-L", "Cur-T"]
#: "+0.015 [−0.010, +0.040], p 0.500, 2/3": the mean paired difference, its interval, the signed-rank p (n/a when
#: every pair ties) and the pairs in which the curriculum is ahead
DIFFERENCE = re.compile(r"([+−-][\d.]+) \[([+−-][\d.]+), ([+−-][\d.]+)\], p (n/a|[\d.]+), (\d+)/(\d+)")


def _number(text: str) -> float:
    return float(text.replace("−", "-"))


def _check_difference(text: str, stats: dict, runs: int) -> None:
    match = DIFFERENCE.fullmatch(text)
    assert match, text
    difference, low, high, p, better, pairs = match.groups()
    # three decimals on the page, a half rounded either way: within 6e-4
    assert _number(difference) == pytest.approx(stats["mean_difference"], abs=6e-4)
    assert _number(low) == pytest.approx(stats["ci_low"], abs=6e-4)
    assert _number(high) == pytest.approx(stats["ci_high"], abs=6e-4)
    assert (p == "n/a") == (stats["wilcoxon_p"] is None)
    if p != "n/a":
        assert float(p) == pytest.approx(stats["wilcoxon_p"], abs=6e-4)
    assert int(better) == stats["better"] and int(pairs) == runs


def _table(section: str, first_column: str) -> list[list[str]]:
    lines = [line for line in section.splitlines() if line.startswith("| ")]
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {first_column} |"))
    rows = []
    for line in lines[start + 1:]:
        if line.startswith("| ") and not line.startswith("|---"):
            cells = [c.strip() for c in line.split("|")[1:-1]]
            if cells[0] in ("curriculum", "task"):
                break
            rows.append(cells)
    return rows


def test_the_ladder_tables_are_the_committed_numbers():
    text = PAGE.read_text(encoding="utf-8")
    heading = re.search(r"\*\*Results: 4 curricula × (\d+) paired runs\*\*", text)
    assert heading, "the page's results heading"
    runs = int(heading.group(1))
    section = text[heading.end():].split("**Reading.**", 1)[0]
    with open(FOLDER / "summary.csv", newline="") as stream:
        rows = {(row["curriculum"], int(row["batches"])): row for row in csv.DictReader(stream)}
    report = json.loads((FOLDER / "report.json").read_text())
    assert report["runs"] == runs and all(len(list((FOLDER / "runs" / c).glob("run_*.json"))) == runs for c in CELLS)
    statistics = report["paired"]["statistics"]
    overall = _table(section, "curriculum")
    assert [row[0] for row in overall] == CELLS
    for cells in overall:
        name = cells[0]
        for column, batches, scalar in ((1, 500, "success@500"), (3, 1000, "success@1000"), (5, 3000, "success")):
            row = rows[(name, batches)]
            assert cells[column] == f"{float(row['success_mean']):.3f} ± {float(row['success_sem']):.3f}"
            if name == "Agn":
                assert cells[column + 1] == ""
            else:
                _check_difference(cells[column + 1], statistics[name]["scalars"][scalar], runs)
    tasks = _table(section, "task")
    assert len(tasks) == 10
    for cells in tasks:
        group = f"metaworld-{cells[0]}-v0"
        for k, name in enumerate(CELLS, start=1):
            row = rows[(name, 3000)]
            assert cells[k] == f"{float(row[f'success_mean:{group}']):.2f} ± {float(row[f'success_sem:{group}']):.2f}"
        for k, name in enumerate(CELLS[1:], start=1 + len(CELLS)):
            _check_difference(cells[k], statistics[name]["scalars"][f"success:{group}"], runs)
