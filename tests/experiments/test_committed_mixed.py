"""The committed mixed-quality results agree with themselves and with their page: each summary.csv is the mean and
SEM of its run files (5 paired runs per cell), and the tables of docs/experiments/order-or-select.md are those
summaries, the paired statistics and the selection quality of report.json."""

import csv
import json
import re
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs" / "results"
PAGE = ROOT / "docs" / "experiments" / "order-or-select.md"
SECTIONS = {"0.2": "### 20 % noisy episodes", "0.4": "### 40 % noisy episodes"}
ROWS = {"Agn": "Agn", "Cur (order)": "Cur", "Cur-T select": "Cur-T+select", "Cur-T weight": "Cur-T+weight",
        "Cur-T select by return": "Cur-T+select+return"}
RUNS = 5


def _summary(noise):
    with open(RESULTS / f"babyai-mixed-{noise}" / "summary.csv", newline="") as stream:
        return {(row["curriculum"], int(row["batches"])): row for row in csv.DictReader(stream)}


def _report(noise):
    return json.loads((RESULTS / f"babyai-mixed-{noise}" / "report.json").read_text())


def _number(text):
    return float(text.replace("−", "-"))


@pytest.mark.parametrize("noise", SECTIONS)
def test_each_summary_is_the_mean_and_sem_of_its_run_files(noise):
    rows = _summary(noise)
    for cell in ROWS.values():
        files = sorted((RESULTS / f"babyai-mixed-{noise}" / "runs" / cell).glob("run_*.json"))
        assert [f.name for f in files] == [f"run_{i:05d}.json" for i in range(RUNS)]
        data = [json.loads(f.read_text())["data"] for f in files]
        success = np.array([d["curves"]["success"] for d in data])
        for k, b in enumerate(data[0]["records"]["batches"]["return"]):
            assert float(rows[(cell, b)]["success_mean"]) == pytest.approx(success[:, k].mean(), abs=1e-12)
            assert float(rows[(cell, b)]["success_sem"]) == pytest.approx(success[:, k].std(ddof=1) / np.sqrt(RUNS),
                                                                          abs=1e-12)
            assert rows[(cell, b)]["use"] == ("all" if cell == "Agn" else cell.split("+")[1] if "+" in cell
                                              else "order")


@pytest.mark.parametrize("noise", SECTIONS)
def test_the_page_tables_are_the_committed_numbers(noise):
    rows, report = _summary(noise), _report(noise)
    section = PAGE.read_text(encoding="utf-8").split(SECTIONS[noise], 1)[1].split("###", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| cell")]
    assert len(lines) == len(ROWS)
    for line in lines:
        cells = [c.strip() for c in line.split("|")[1:-1]]
        cell = ROWS[cells[0]]
        for column, (batches, key) in ((1, (500, "success")), (3, (1000, "success")), (5, (1000, "sampled_success"))):
            mean, sem = cells[column].split(" ± ")
            assert f"{float(rows[(cell, batches)][f'{key}_mean']):.3f}" == mean
            assert f"{float(rows[(cell, batches)][f'{key}_sem']):.3f}" == sem
        if cell == "Agn":
            continue
        for column, name in ((2, "success@500"), (4, "success")):
            stats = report["paired"]["statistics"][cell]["scalars"][name]
            match = re.match(r"([+−-][\d.]+) \[([+−-][\d.]+), ([+−-][\d.]+)\], p ([\d.]+), (\d)/5", cells[column])
            difference, low, high, p, better = match.groups()
            assert _number(difference) == pytest.approx(stats["mean_difference"], abs=5e-4)
            assert _number(low) == pytest.approx(stats["ci_low"], abs=5e-4)
            assert _number(high) == pytest.approx(stats["ci_high"], abs=5e-4)
            assert p == f"{stats['wilcoxon_p']:.3g}" and int(better) == stats["better"]


def test_the_page_says_what_each_teacher_found():
    table = PAGE.read_text(encoding="utf-8").split("### Did the teacher find the noisy episodes?", 1)[1]
    found = {}
    for line in table.splitlines():
        if line.startswith("| ensemble") or line.startswith("| return"):
            cells = [c.strip() for c in line.split("|")[1:-1]]
            found[cells[0].split()[0]] = [int(re.match(r"(\d+) %", c).group(1)) for c in cells[1:]]
    for teacher, cell in (("ensemble", "Cur-T+select"), ("return", "Cur-T+select+return")):
        shares = []
        for noise in SECTIONS:
            quality = _report(noise)["selection_quality"]
            kept = quality["cells"][cell]
            n_bad = quality["bad_share"] * 2000
            dropped_bad = kept["dropped_bad_share"]  # halves round up, as the page writes them
            shares += [int(100 * dropped_bad + 0.5), int(100 * dropped_bad * kept["dropped"] / n_bad + 0.5)]
        assert found[teacher] == shares
