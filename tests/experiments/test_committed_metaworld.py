"""The committed Meta-World results agree with their page: the tables of docs/experiments/metaworld.md hold the
summary's success rates and report.json's paired statistics, overall and per task, for the paired runs the page's
headings name: the ladder's, and the mixed-quality variant's (against Agn and against the length-only control, and
what each cell kept of the noisy and of the failed episodes)."""

import csv
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "docs" / "results" / "metaworld-ladder"
MIXED = ROOT / "docs" / "results" / "metaworld-mixed"
TWENTY = ROOT / "docs" / "results" / "metaworld-mixed-20"
PAGE = ROOT / "docs" / "experiments" / "metaworld.md"
CELLS = ["Agn", "Cur", "Cur-L", "Cur-T"]
ABLATION = "Cur-T+select+ensemble+100.not.success"  # the ensemble's selection, failed episodes last
MIXED_CELLS = ["Agn", "Cur", "Cur-T+select", "Cur-T+weight", "Cur-T+select+length", ABLATION]
CONTROL = "Cur-T+select+length"
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
            if cells[0] in ("curriculum", "task", "cell", "dataset", "ablation against", "difference"):
                break
            rows.append(cells)
    return rows


def _rate(row: dict, key: str = "") -> str:
    return f"{float(row['success_mean' + key]):.2f} ± {float(row['success_sem' + key]):.2f}"


def _committed(folder: Path, heading: str, reading: str, cells: list[str]) -> tuple[int, str, dict, dict]:
    """``(runs, the page's section, summary rows by (curriculum, batches), report.json)`` of the results whose
    heading matches ``heading`` (its paired runs the group) and whose section ends at ``reading``; the report and
    every cell's run files hold that many runs."""
    text = PAGE.read_text(encoding="utf-8")
    match = re.search(heading, text)
    assert match, f"the page's heading {heading!r}"
    runs = int(match.group(1))
    section = text[match.end():].split(reading, 1)[0]
    with open(folder / "summary.csv", newline="") as stream:
        rows = {(row["curriculum"], int(row["batches"])): row for row in csv.DictReader(stream)}
    report = json.loads((folder / "report.json").read_text())
    assert report["runs"] == runs and all(len(list((folder / "runs" / c).glob("run_*.json"))) == runs for c in cells)
    return runs, section, rows, report


def test_the_ladder_tables_are_the_committed_numbers():
    runs, section, rows, report = _committed(FOLDER, r"\*\*Results: 4 curricula × (\d+) paired runs\*\*",
                                             "**Reading.**", CELLS)
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
            assert cells[k] == _rate(row, f":{group}")
        for k, name in enumerate(CELLS[1:], start=1 + len(CELLS)):
            _check_difference(cells[k], statistics[name]["scalars"][f"success:{group}"], runs)


def test_the_mixed_quality_tables_are_the_committed_numbers():
    runs, section, rows, report = _committed(
        MIXED, r"\*\*Results: the mixed-quality variant, 6 curricula × (\d+) paired runs\*\*",
        "**Reading (mixed quality).**", MIXED_CELLS)
    against_agn = report["paired"]["statistics"]
    against_control = report["paired_against"][CONTROL]["statistics"]
    overall = _table(section, "curriculum")
    assert [row[0] for row in overall] == MIXED_CELLS
    for cells in overall:
        name = cells[0]
        for column, batches in ((1, 500), (2, 1000), (3, 3000)):
            row = rows[(name, batches)]
            assert cells[column] == f"{float(row['success_mean']):.3f} ± {float(row['success_sem']):.3f}"
        for column, statistics, baseline in ((4, against_agn, "Agn"), (5, against_control, CONTROL)):
            if name == baseline:
                assert cells[column] == ""
            else:
                _check_difference(cells[column], statistics[name]["scalars"]["success"], runs)
    tasks = _table(section, "task")
    assert len(tasks) == 3
    for cells in tasks:
        group = f"metaworld-{cells[0]}-v0"
        assert cells[1:7] == [_rate(rows[(name, 3000)], f":{group}") for name in MIXED_CELLS]
        for column, name in ((7, "Cur-T+select"), (8, "Cur-T+weight")):
            _check_difference(cells[column], against_control[name]["scalars"][f"success:{group}"], runs)
    # the ablation against the ensemble's selection and against the control, overall and per task
    ablation = _table(section, "ablation against")
    assert [row[0] for row in ablation] == ["Cur-T+select", CONTROL]
    for baseline, *columns in ablation:
        scalars = report["paired_against"][baseline]["statistics"][ABLATION]["scalars"]
        keys = ["success"] + [f"success:metaworld-{task}-v0" for task in ("push", "pick-place", "peg-insert-side")]
        for text, key in zip(columns, keys, strict=True):
            _check_difference(text, scalars[key], runs)
    kept = _table(section, "cell")
    tables = [report["selection_quality"], *report["further_selection_quality"]]
    assert [t["field"] for t in tables] == ["noisy", "not:success"]
    assert [row[0] for row in kept] == MIXED_CELLS[1:]
    for cells in kept:
        for k, table in enumerate(tables):
            figures = table["cells"][cells[0]]
            if "bad_weight_share" in figures:
                assert cells[1 + 2 * k] == "(all kept)"
                assert cells[2 + 2 * k] == (f"{figures['bad_weight_share']:.0%} of the loss weight "
                                            f"({figures['bad_transition_share']:.0%} of the transitions)")
            else:
                assert cells[1 + 2 * k: 3 + 2 * k] == [f"{figures['kept_bad_share']:.0%}",
                                                       f"{figures['kept_bad_transition_share']:.0%}"]
    # within each task, the two selections: episodes dropped, and the noisy and the failed among those kept
    per_dataset = _table(section, "dataset")
    assert [row[:2] for row in per_dataset] == [[task, cell] for task in ("push", "pick-place", "peg-insert-side")
                                                for cell in ("Cur-T+select", CONTROL, ABLATION)]
    for task, cell, dropped, *shares in per_dataset:
        tables_here = [t["cells"][cell]["by_dataset"][f"metaworld-{task}-v0"] for t in tables]
        assert dropped == f"{tables_here[0]['dropped']:.0f}" == f"{tables_here[1]['dropped']:.0f}"
        assert shares == [f"{f['kept_bad_share']:.0%} ({f['kept_bad_transition_share']:.0%})" for f in tables_here]


def test_the_twenty_pairs_of_the_three_selections_are_the_committed_numbers():
    selections = ["Cur-T+select", CONTROL, ABLATION]
    runs, section, rows, report = _committed(TWENTY, r"\*\*Results: the three selections, (\d+) paired runs\*\*",
                                             "**Reading (20 pairs).**", selections)
    assert runs == 20
    groups = [f"metaworld-{task}-v0" for task in ("push", "pick-place", "peg-insert-side")]
    rates = _table(section, "cell")
    assert [row[0] for row in rates] == selections
    for name, overall, *tasks in rates:
        row = rows[(name, 3000)]
        assert overall == f"{float(row['success_mean']):.3f} ± {float(row['success_sem']):.3f}"
        assert tasks == [_rate(row, f":{group}") for group in groups]
    differences = _table(section, "difference")
    pairs = [(ABLATION, "Cur-T+select"), (ABLATION, CONTROL), ("Cur-T+select", CONTROL)]
    assert [row[0] for row in differences] == [f"{a} − {b}" for a, b in pairs]
    for (cell, baseline), (_, *columns) in zip(pairs, differences, strict=True):
        scalars = report["paired_against"][baseline]["statistics"][cell]["scalars"]
        for text, key in zip(columns, ["success"] + [f"success:{group}" for group in groups], strict=True):
            _check_difference(text, scalars[key], runs)
    # runs 0 to 9 are the ten-pair sweep's, byte for byte
    for cell in selections:
        for index in range(10):
            name = f"run_{index:05d}.json"
            assert (TWENTY / "runs" / cell / name).read_bytes() == (MIXED / "runs" / cell / name).read_bytes()
