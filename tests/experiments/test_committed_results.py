"""The committed navigation results agree with themselves: each summary.csv is the mean and SEM of its run files,
with the paper's five runs per curriculum, and the tables of docs/experiments/nav.md are those summaries. Their
model weights are not committed: docs/results/MANIFEST.weights.json records each one's SHA-256 (the one its run file
records) and the command that recreates it, and no weight file is in the repository."""

import csv
import json
import re
import shutil
import subprocess
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
        manifest = weights_manifest()["folders"][folder]["files"]
        for f in files:  # each run's best model: in the manifest, with the digest its run file records
            recorded = json.loads(f.read_text())["data"]["artifacts"]
            assert recorded == {"model.pt": manifest[f"runs/{curriculum}/{f.stem}.model.pt"]["sha256"]}
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


def weights_manifest() -> dict:
    return json.loads((RESULTS / "MANIFEST.weights.json").read_text())


def test_the_manifest_lists_every_artifact_of_the_committed_runs_and_how_to_recreate_it():
    manifest = weights_manifest()
    assert manifest["format"] == "curteach-weights-1"
    listed = {f"{folder}/{name}": entry for folder, item in manifest["folders"].items()
              for name, entry in item["files"].items()}
    recorded = {}
    for run_file in RESULTS.glob("*/runs/*/run_*.json"):
        for name, digest in json.loads(run_file.read_text())["data"].get("artifacts", {}).items():
            recorded[str(run_file.with_suffix("." + name).relative_to(RESULTS))] = digest
    assert len(recorded) == 40 and {name: entry["sha256"] for name, entry in listed.items()} == recorded
    assert all(entry["bytes"] > 0 and re.fullmatch(r"[0-9a-f]{64}", entry["sha256"]) for entry in listed.values())
    for folder, item in manifest["folders"].items():
        command = item["command"]
        report = json.loads((RESULTS / folder / "report.json").read_text())
        made = [arg for arg in report["command"] if arg not in ("--report-only", "--no-progress")]
        assert command[:2] == ["curteach", "nav"] and command[command.index("--out") + 1] == f"docs/results/{folder}"
        # the report's own command, with the seeds it used spelled out
        for flag in ("--task", "--runs", "--max-batches"):
            assert command[command.index(flag) + 1] == made[made.index(flag) + 1]
        assert command[command.index("--seed") + 1] == str(report["seed"]) == "0"
        assert command[command.index("--dataset-seed") + 1] == "0"


def _git(*args: str) -> subprocess.CompletedProcess | None:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        return None
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=60)


def test_no_weight_file_is_committed_and_a_new_one_would_be_ignored():
    listing = _git("ls-files", "docs/results")
    if listing is None or listing.returncode != 0:
        pytest.skip("not a git checkout")
    committed = listing.stdout.splitlines()
    assert committed and not [name for name in committed if re.search(r"\.(pt|pth|ckpt|safetensors)$", name)]
    new = "docs/results/nav-tsp-paper/runs/Cur/run_00005.model.pt"
    assert _git("check-ignore", "-q", new).returncode == 0  # a new sweep into docs/results commits no weights
    assert _git("check-ignore", "-q", "docs/results/nav-tsp-paper/runs/Cur/run_00005.json").returncode == 1
    assert _git("check-ignore", "-q", "docs/results/nav-tsp-paper/dataset-tsp-paper-seed0.npz").returncode == 0


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


@pytest.mark.parametrize("folder", FOLDERS.values())
def test_a_report_of_the_committed_runs_needs_no_weights(folder, tmp_path, capsys):
    # what `curteach nav ... --report-only` does after the dataset is read: the committed runs are all reused
    # without their model files, and summary.csv comes out byte for byte
    from curteach_teaching.experiments.nav.experiment import NavExperiment
    from curteach_teaching.experiments.nav.report import NavReport
    from curteach_teaching.sweeps.sweep import run_sweep

    copy = tmp_path / folder
    shutil.copytree(RESULTS / folder, copy)
    assert not list(copy.rglob("*.pt"))
    settings = json.loads((copy / "report.json").read_text())["settings"]
    experiment = NavExperiment(dataset="unused.npz", **{k: v for k, v in settings.items() if k != "experiment"})
    sweep = run_sweep(experiment, copy, RUNS, seed=0, progress=False, compute=False)
    assert len(sweep.reused) == 4 * RUNS and sweep.invalid == {}
    NavReport(experiment, window=experiment.window).write(sweep, copy, figures=False)
    assert (copy / "summary.csv").read_bytes() == (RESULTS / folder / "summary.csv").read_bytes()
    assert "20 runs (0 computed, 20 reused)" in capsys.readouterr().out
