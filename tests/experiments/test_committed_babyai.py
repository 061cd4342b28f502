"""The committed BabyAI ladder results agree with their page: the table of docs/experiments/babyai.md holds the
summary's success rates and report.json's paired statistics, 5 paired runs per curriculum."""

import csv
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "docs" / "results" / "babyai-ladder"
PAGE = ROOT / "docs" / "experiments" / "babyai.md"


def test_the_ladder_table_is_the_committed_numbers():
    with open(FOLDER / "summary.csv", newline="") as stream:
        rows = {(row["curriculum"], int(row["batches"])): row for row in csv.DictReader(stream)}
    report = json.loads((FOLDER / "report.json").read_text())
    assert report["runs"] == 5 and all(len(list((FOLDER / "runs" / c).glob("run_*.json"))) == 5
                                       for c in ("Agn", "Cur", "Cur-L", "Cur-T"))
    section = PAGE.read_text(encoding="utf-8").split("**Results: 4 curricula × 5 paired runs**", 1)[1]
    lines = [line for line in section.split("**Reading.**", 1)[0].splitlines()
             if line.startswith("| ") and not line.startswith("| curriculum")]
    assert [line.split("|")[1].strip() for line in lines] == ["Agn", "Cur", "Cur-L", "Cur-T"]
    for line in lines:
        cells = [c.strip() for c in line.split("|")[1:-1]]
        name = cells[0]
        for column, batches, key in ((1, 500, "success"), (3, 1000, "success"), (5, 3000, "success"),
                                     (7, 3000, "sampled_success")):
            row = rows[(name, batches)]
            assert cells[column] == f"{float(row[f'{key}_mean']):.3f} ± {float(row[f'{key}_sem']):.3f}"
        if name == "Agn":
            continue
        for column, scalar in ((2, "success@500"), (4, "success@1000"), (6, "success")):
            stats = report["paired"]["statistics"][name]["scalars"][scalar]
            match = re.match(r"([+−-][\d.]+) \[([+−-][\d.]+), ([+−-][\d.]+)\], p ([\d.]+), (\d)/5", cells[column])
            # three decimals on the page, a half rounded either way: within 6e-4
            difference, low, high, p, better = (text.replace("−", "-") for text in match.groups())
            assert float(difference) == pytest.approx(stats["mean_difference"], abs=6e-4)
            assert float(low) == pytest.approx(stats["ci_low"], abs=6e-4)
            assert float(high) == pytest.approx(stats["ci_high"], abs=6e-4)
            assert float(p) == pytest.approx(stats["wilcoxon_p"], abs=6e-4) and int(better) == stats["better"]
