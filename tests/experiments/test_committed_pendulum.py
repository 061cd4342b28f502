"""The committed Pendulum sweep (docs/results/dataset-bc-pendulum: continuous actions, 10 paired runs of Agn, Cur and
Cur-T@select with the ensemble teacher) agrees with itself and with its page: summary.csv is the mean and SEM of its
run files, and the table and the selection figures of docs/experiments/dataset-bc.md's "Continuous actions: Pendulum"
are those of summary.csv and report.json, as the page rounds them."""

import csv
import json
import re
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs" / "results" / "dataset-bc-pendulum"
PAGE = ROOT / "docs" / "experiments" / "dataset-bc.md"
HEADING = "\n## Continuous actions: Pendulum\n"
CELLS = ("Agn", "Cur", "Cur-T+select")
RUNS = 10
#: the evaluation points the page's table shows
SHOWN = (500, 1000, 3000)


def _summary():
    with open(RESULTS / "summary.csv", newline="") as stream:
        return {(row["curriculum"], int(row["batches"])): row for row in csv.DictReader(stream)}


def _report():
    return json.loads((RESULTS / "report.json").read_text())


def _section():
    text = PAGE.read_text(encoding="utf-8")
    assert HEADING in text
    return text.split(HEADING, 1)[1].split("\n## ", 1)[0]


def _page(text: str) -> str:
    """A number as the page writes it: a minus sign, not a hyphen."""
    return text.replace("-", "−")


def test_the_sweep_is_the_pages_settings_with_ten_paired_runs():
    report = _report()
    settings = report["settings"]
    assert report["runs"] == RUNS and report["cells"] == list(CELLS) and report["seed"] == 0
    assert settings["task_difficulty"] == "ensemble" and settings["batch_size"] == 256
    assert settings["max_batches"] == 3000 and settings["learning_rate"] == 1e-3 and settings["eval_every"] == 500
    assert "--batch-size 256" in " ".join(_section().split())
    assert not list(RESULTS.rglob("*.pt")) and not (RESULTS / "teachers").exists()  # no weights, no teacher cache


def test_the_summary_is_the_mean_and_sem_of_the_run_files():
    rows = _summary()
    for cell in CELLS:
        files = sorted((RESULTS / "runs" / cell).glob("run_*.json"))
        assert [f.name for f in files] == [f"run_{i:05d}.json" for i in range(RUNS)]
        data = [json.loads(f.read_text())["data"] for f in files]
        returns = np.array([d["curves"]["return"] for d in data])
        for k, batches in enumerate(data[0]["records"]["batches"]["return"]):
            row = rows[(cell, batches)]
            assert int(row["n"]) == RUNS
            assert float(row["mean"]) == pytest.approx(returns[:, k].mean(), abs=1e-9)
            assert float(row["sem"]) == pytest.approx(returns[:, k].std(ddof=1) / np.sqrt(RUNS), abs=1e-9)


def test_the_page_table_is_the_committed_numbers():
    rows, paired = _summary(), _report()["paired"]["statistics"]
    table = _section().split("\n| cell |", 1)[1].split("\n\n", 1)[0]  # the results table (the harness's follows)
    lines = [line for line in table.splitlines() if line.startswith("| ")]
    assert [line.split("|")[1].strip() for line in lines] == list(CELLS)
    for line in lines:
        cells = [c.strip() for c in line.split("|")[1:-1]]
        cell = cells[0]
        for column, batches in enumerate(SHOWN, start=1):
            row = rows[(cell, batches)]
            assert cells[column] == _page(f"{float(row['mean']):.0f} ± {float(row['sem']):.0f}"), (cell, batches)
        if cell == "Agn":
            assert cells[4:] == ["–"] * 4
            continue
        final, steps = paired[cell]["final"], paired[cell]["steps_to_target"]
        assert cells[4] == _page(f"{final['mean_difference']:+.1f} [{final['ci_low']:.1f}, {final['ci_high']:.1f}]")
        assert cells[5] == f"{final['wilcoxon_p']:.2g}"
        assert cells[6] == f"{final['better']} of {final['pairs']}"
        assert steps["baseline_reached"] == RUNS  # Agn reaches the target in every run (the page says so)
        assert cells[7] == _page(f"{steps['mean_difference']:+.0f} ({steps['reached']} of {RUNS} reach it)")


def test_the_selection_figures_are_the_reports():
    quality, section = _report()["selection_quality"], " ".join(_section().split())
    assert quality["field"] == "noisy" and quality["bad_share"] == pytest.approx(1 / 3)
    select = quality["cells"]["Cur-T+select"]
    found = re.search(r"Cur-T@select drops (\d+) episodes, (\d+) % of them noisy, and keeps (\d+) % noisy", section)
    assert found, "the selection sentence"
    assert [int(g) for g in found.groups()] == [round(select["dropped"]), round(100 * select["dropped_bad_share"]),
                                                round(100 * select["kept_bad_share"])]
