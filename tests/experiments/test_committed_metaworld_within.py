"""The committed per-task cut on Meta-World's mixed-quality data (docs/results/metaworld-mixed-within:
``--keep-within group``) agrees with its page: the success rates are the summary's, the difference with Agn is
report.json's, and the difference with the pool-wide length selection of docs/results/metaworld-mixed is the paired
comparison of the two folders' run files, run ``i`` with run ``i`` (the same seeds, data and initialisation)."""

import json
import re
from pathlib import Path

import numpy as np
import pytest

from curteach_teaching.sweeps.paired import paired_difference

ROOT = Path(__file__).resolve().parents[2]
WITHIN = ROOT / "docs" / "results" / "metaworld-mixed-within"
POOL = ROOT / "docs" / "results" / "metaworld-mixed"
PAGE = ROOT / "docs" / "experiments" / "metaworld.md"
LENGTH = "Cur-T+select+length"
KEYS = ["success"] + [f"success:metaworld-{task}-v0" for task in ("push", "pick-place", "peg-insert-side")]
DIFFERENCE = re.compile(r"([+−-][\d.]+) \[([+−-][\d.]+), ([+−-][\d.]+)\], p (n/a|[\d.]+), (\d+)/(\d+)")


def _finals(folder: Path, cell: str) -> dict:
    """``{key: (runs,) final success}`` of the cell's run files, by run index."""
    documents = sorted((json.loads(p.read_text())["data"] for p in (folder / "runs" / cell).glob("run_*.json")),
                       key=lambda d: d["index"])
    assert [d["index"] for d in documents] == list(range(len(documents)))
    return {key: np.array([d["curves"][key][-1] for d in documents]) for key in KEYS}


def _check(text: str, mean: float, low: float, high: float, p: float | None, better: int, runs: int) -> None:
    match = DIFFERENCE.fullmatch(text)
    assert match, text
    values = [float(v.replace("−", "-")) for v in match.groups()[:3]]
    assert values == pytest.approx([mean, low, high], abs=6e-4)
    assert (match.group(4) == "n/a") == (p is None)
    if p is not None:
        assert float(match.group(4)) == pytest.approx(p, abs=6e-4)
    assert int(match.group(5)) == better and int(match.group(6)) == runs


def test_the_per_task_cut_tables_are_the_committed_numbers():
    text = PAGE.read_text(encoding="utf-8")
    match = re.search(r"\*\*Results: the length selection within each task, (\d+) paired runs\*\*", text)
    assert match
    runs = int(match.group(1))
    section = text[match.end():].split("**Reading (within each task).**", 1)[0]
    rows = [[c.strip() for c in line.split("|")[1:-1]] for line in section.splitlines()
            if line.startswith("| ") and not line.startswith("|---")]
    within, pool, agn = _finals(WITHIN, LENGTH), _finals(POOL, LENGTH), _finals(WITHIN, "Agn")
    assert all(len(values) == runs for values in within.values())
    np.testing.assert_array_equal(agn["success"], _finals(POOL, "Agn")["success"][:runs])  # the same Agn runs
    rates = {row[0]: row[1:] for row in rows if row[0] in ("length within each task", "length over the pool")}
    for name, finals in (("length within each task", within), ("length over the pool", pool)):
        assert rates[name] == [f"{finals[key][:runs].mean():.3f}" for key in KEYS]
    differences = {row[0]: row[1:] for row in rows if row[0].startswith("within − ")}
    report = json.loads((WITHIN / "report.json").read_text())
    for key, text_cell in zip(KEYS, differences["within − over the pool"], strict=True):
        d = paired_difference(within[key], pool[key][:runs], rng=0)
        _check(text_cell, d.mean, d.low, d.high, d.p_value, d.better, runs)
        if key in ("success", "success:metaworld-push-v0"):  # the reading's detectable differences
            assert f"±{d.detectable:.3f}" in text[match.end():]
    scalars = report["paired"]["statistics"][LENGTH]["scalars"]
    for key, text_cell in zip(KEYS, differences["within − Agn"], strict=True):
        s = scalars[key]
        _check(text_cell, s["mean_difference"], s["ci_low"], s["ci_high"], s["wilcoxon_p"], s["better"], runs)
