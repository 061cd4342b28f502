"""The paper's teaching objective (Section 2): steps until |V^E - V^L_t| <= fraction x the initial gap."""

import csv
import json

import numpy as np

from curteach_teaching.cli import main
from curteach_teaching.experiments.car.report import gap_table, steps_to_gap
from curteach_teaching.sweeps.results import RunResult


def test_steps_to_gap_by_hand():
    curve = np.array([0.0, 5.0, 8.0, 9.5, 9.0, 9.95])  # gaps to 10: 10, 5, 2, 0.5, 1, 0.05
    assert steps_to_gap(curve, 10.0) == [1, 2, 3]
    assert steps_to_gap(curve, 10.0, fractions=(0.001,)) == [None]
    above = np.array([20.0, 14.0, 11.0])  # a learner above the expert: the gap is absolute, 10, 4, 1
    assert steps_to_gap(above, 10.0) == [1, 2, 2]


def test_gap_table_counts_runs_that_never_get_there():
    def run(values):
        return RunResult(index=0, seed=0, curves={"A": np.array(values)}, extras={"expert_reward": 10.0})

    results = [run([0, 5, 8, 9.5]), run([0, 1, 2, 3, 4, 5, 6, 7, 8, 9.2]), run([0, 0, 0])]
    rows = {row["fraction"]: row for row in gap_table(results, ["A"])}
    # steps to 50%: 1, 5, never -> median of (1, 5, inf) = 5; to 10%: 3, 9, never -> 9; 2 of 3 runs reached
    assert rows[0.5] == {"teacher": "A", "fraction": 0.5, "n": 3, "reached": 2, "median_steps": 5.0}
    assert rows[0.1]["median_steps"] == 9.0 and rows[0.1]["reached"] == 2
    rows = gap_table(results[1:], ["A"])  # one of two runs: the median is "never"
    assert rows[0]["median_steps"] is None and rows[0]["reached"] == 1


def test_car_commands_write_the_table_and_figure(tmp_path):
    out = tmp_path / "irl"
    assert main(["car-irl", "--runs", "2", "--steps", "30", "--workers", "1", "--no-progress", "--out", str(out)]) == 0
    with open(out / "steps_to_gap.csv", newline="") as stream:
        rows = list(csv.DictReader(stream))
    assert list(rows[0]) == ["teacher", "fraction", "n", "reached", "median_steps"]
    assert len(rows) == 7 * 3 and {r["fraction"] for r in rows} == {"0.5", "0.2", "0.1"}
    report = json.loads((out / "report.json").read_text())
    assert len(report["steps_to_gap"]) == 21 and "steps_to_gap.png" in report["files"]
    assert (out / "steps_to_gap.png").exists()
