"""The committed navigation results agree with themselves: each summary.csv is the mean and SEM of its run files,
with the paper's five runs per curriculum, and the tables of docs/experiments/nav.md are those summaries."""

import csv
import json
import re
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs" / "results"
PAGE = ROOT / "docs" / "experiments" / "nav.md"
FOLDERS = {"Shortest path": "nav-shortest-path-paper", "TSP": "nav-tsp-paper"}
RUNS = 5  # the paper's protocol


def summary(folder: str) -> dict:
    """``{(curriculum, batches): row}`` of a committed summary.csv."""
    with open(RESULTS / folder / "summary.csv", newline="") as stream:
        return {(row["curriculum"], int(row["batches"])): row for row in csv.DictReader(stream)}


@pytest.mark.parametrize("folder", FOLDERS.values())
def test_each_summary_is_the_mean_and_sem_of_its_run_files(folder):
    rows = summary(folder)
    curricula = sorted({c for c, _ in rows})
    assert curricula == ["Agn", "Cur", "Cur-L", "Cur-T"]
    for curriculum in curricula:
        files = sorted((RESULTS / folder / "runs" / curriculum).glob("run_*.json"))
        assert [f.name for f in files] == [f"run_{i:05d}.json" for i in range(RUNS)]
        assert all(f.with_suffix("").with_suffix(".model.pt").is_file() for f in files)  # each run's best model
        data = [json.loads(f.read_text())["data"] for f in files]
        batches = data[0]["records"]["batches"]["test"]
        assert all(d["records"]["batches"]["test"] == batches for d in data)
        curves = np.array([d["curves"]["test"] for d in data])  # (runs, points)
        for k, b in enumerate(batches):
            row = rows[(curriculum, b)]
            assert int(row["n"]) == RUNS
            assert float(row["mean"]) == pytest.approx(curves[:, k].mean(), rel=1e-12, abs=1e-12)
            assert float(row["sem"]) == pytest.approx(curves[:, k].std(ddof=1) / np.sqrt(RUNS), rel=1e-9, abs=1e-12)
    report = json.loads((RESULTS / folder / "report.json").read_text())
    assert report["runs"] == RUNS


def page_table(heading: str) -> tuple[list, dict]:
    """The batch columns and ``{curriculum: [(mean, sem) text]}`` of the first table under ``### heading``."""
    section = PAGE.read_text(encoding="utf-8").split(f"### {heading}\n", 1)[1]
    lines = [line for line in section.splitlines() if line.startswith("|")]
    header = next(i for i, line in enumerate(lines) if line.startswith("| curriculum (runs) |"))
    columns = [int(cell.strip().replace(",", "")) for cell in lines[header].split("|")[2:-1]]
    table = {}
    for line in lines[header + 2: header + 6]:
        cells = [cell.strip() for cell in line.split("|")[1:-1]]
        name, runs = re.fullmatch(r"(\S+) \((\d+)\)", cells[0]).groups()
        assert int(runs) == RUNS
        table[name] = [tuple(cell.split(" ± ")) for cell in cells[1:]]
    return columns, table


@pytest.mark.parametrize("heading, folder", FOLDERS.items())
def test_the_pages_table_is_the_summary(heading, folder):
    rows = summary(folder)
    columns, table = page_table(heading)
    assert sorted(table) == ["Agn", "Cur", "Cur-L", "Cur-T"]
    for curriculum, cells in table.items():
        for b, (mean, sem) in zip(columns, cells, strict=True):
            row = rows[(curriculum, b)]
            assert mean.replace("−", "-") == f"{float(row['mean']):.2f}", (curriculum, b)
            assert sem == f"{float(row['sem']):.2f}", (curriculum, b)
