"""docs/experiments/dataset-bc.md: the commands of "A complete example" run as the page gives them.

The commands are read from the page (the ``bash`` block under that heading), so the page cannot drift from what runs,
and so is its table of the files the command writes. Only sizes and places differ from the page:

* the scripted controller writes 8 episodes instead of the page's 30;
* ``dataset-bc`` trains 60 optimizer steps instead of 1500 (``--max-batches``), and the test adds
  ``--eval-every 30 --eval-episodes 3`` (the page leaves them at 250 and 20), ``--no-progress``, and ``--workers 1``
  (the runs in this process: the results do not depend on the workers, and the suite's own workers hold the cores);
* the relative paths (``data/minari``, ``results/cartpole``) land in the test's temporary working folder.

The script runs as a user runs it (``python`` in a subprocess); ``curteach`` through
:func:`curteach_teaching.cli.main`, the function its entry point calls.
"""

from __future__ import annotations

import csv
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("minari")
pytest.importorskip("imitation")

from curteach_teaching.cli import main  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "experiments" / "dataset-bc.md"
#: the sizes the test runs at, by flag (the page's values are larger)
SMALLER = {"--episodes": "8", "--max-batches": "60"}
ADDED = ["--eval-every", "30", "--eval-episodes", "3", "--no-progress", "--workers", "1"]
#: files a sweep writes that the sweeps page describes, not this one
SWEEP_FILES = {"sweep.json", ".curteach.lock"}


def _section() -> str:
    text = PAGE.read_text(encoding="utf-8")
    assert "\n## A complete example\n" in text
    return text.split("\n## A complete example\n", 1)[1].split("\n## ", 1)[0]


def example_commands() -> list[list[str]]:
    """The example's command lines, continuation lines joined, each split as a shell would."""
    blocks = re.findall(r"```bash\n(.*?)```", _section(), flags=re.S)
    assert len(blocks) == 1
    return [shlex.split(line) for line in blocks[0].replace("\\\n", " ").splitlines() if line.strip()]


def table_files() -> list[str]:
    """The file names in the first column of the example's table of outputs."""
    rows = re.findall(r"^\| (`.*?) \|", _section(), flags=re.M)
    return [name for row in rows for name in re.findall(r"`([^`]+)`", row)]


def smaller(argv: list[str]) -> list[str]:
    """``argv`` with the value of each of :data:`SMALLER`'s flags that it holds replaced."""
    argv = list(argv)
    for flag, value in SMALLER.items():
        if flag in argv:
            argv[argv.index(flag) + 1] = value
    return argv


def test_the_page_example_runs_and_writes_what_its_table_lists(tmp_path, monkeypatch, capsys):
    script, export, command = example_commands()
    assert script[:2] == ["python", "examples/datasets/scripted_cartpole.py"] and "--episodes" in script
    assert export[0] == "export" and export[1].startswith("MINARI_DATASETS_PATH=")
    assert command[:2] == ["curteach", "dataset-bc"] and "--max-batches" in command
    monkeypatch.chdir(tmp_path)

    made = subprocess.run([sys.executable, str(ROOT / script[1]), *smaller(script[2:])], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr[-3000:]
    root = script[script.index("--root") + 1]
    assert made.stdout.strip() == f"wrote cartpole/scripted-v0 under {root}"

    name, _, value = export[1].partition("=")
    monkeypatch.setenv(name, value)
    args = smaller(command[1:]) + ADDED
    assert main(args) == 0
    printed = capsys.readouterr().out

    # "It prints the final return of every curriculum and the paired statistics against Agn."
    curricula = args[args.index("--curricula") + 1].split(",")
    runs = int(args[args.index("--runs") + 1])
    for curriculum in curricula:
        assert f"{curriculum} after 60 batches (n={runs}): return" in printed
    assert "paired against Agn" in printed
    for curriculum in curricula[1:]:
        assert f"{curriculum} - Agn: final" in printed

    out = tmp_path / args[args.index("--out") + 1]
    report = json.loads((out / "report.json").read_text())
    assert set(report["paired"]["statistics"]) == set(curricula) - {"Agn"}
    assert {s["final"]["pairs"] for s in report["paired"]["statistics"].values()} == {runs}
    for curriculum in curricula:  # BC learns: over twice a random policy's return (it lasts about 22 steps)
        assert report["final"][curriculum]["mean"] > 45, report["final"]
    with open(out / "summary.csv", newline="") as stream:
        summary = list(csv.DictReader(stream))
    assert list(summary[0]) == ["curriculum", "batches", "mean", "sem", "n"]  # no success: CartPole has none
    assert [int(row["batches"]) for row in summary if row["curriculum"] == "Agn"] == [0, 30, 60]
    with open(out / "selection.csv", newline="") as stream:
        assert list(csv.DictReader(stream).fieldnames) == ["curriculum", "run", "epoch", "dataset", "episode_id",
                                                           "weight"]

    # the table of outputs: what applies to this run is written, and everything written is in the table
    listed = table_files()
    assert "runs/<curriculum>/run_XXXXX.json" in listed
    conditional = {"teachers/ensemble-*.npz",  # --task-difficulty ensemble only
                   "success.png", "sampled_success.png"}  # where success is defined: not for CartPole
    assert conditional <= set(listed)
    expected = set(listed) - conditional - {"runs/<curriculum>/run_XXXXX.json"} | {"runs"}
    written = {path.name for path in out.iterdir()} - SWEEP_FILES
    assert written == expected
    assert {p.name for p in (out / "runs").iterdir()} == set(curricula)
    for curriculum in curricula:
        assert sorted(p.name for p in (out / "runs" / curriculum).glob("run_*.json")) == [
            f"run_{i:05d}.json" for i in range(runs)]
