"""Dead workers and dead drivers (real processes, real kill -9), and --overwrite beside the user's own files."""

import os
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from curteach_teaching.cli import main
from curteach_teaching.experiments.car.irl import CarIRLExperiment
from curteach_teaching.sweeps.backends import LostRun, ProcessBackend, worker_context
from curteach_teaching.sweeps.folders import library_files
from curteach_teaching.sweeps.sweep import run_sweep

SMALL = dict(steps=4, target_steps=10, pretrain_steps=10, teachers=("Agn", "Cur", "Scot"))
needs_proc = pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc to find processes")


@dataclass(frozen=True)
class KilledOnce:
    """The car experiment, except that run ``victim``'s worker is killed with SIGKILL (as the out-of-memory killer
    does) the first ``deaths`` times it starts that run; the marker file counts the attempts across processes."""

    marker: str
    deaths: int = 1
    victim: int = 1

    @property
    def cells(self):
        return ("main",)

    def settings(self):
        return CarIRLExperiment(**SMALL).settings()

    def run_cell(self, cell, index, seed_sequence):
        path = Path(self.marker)
        if index == self.victim and (len(path.read_text()) if path.exists() else 0) < self.deaths:
            with open(path, "a") as stream:
                stream.write("x")
            assert worker_context().in_worker  # never kill the test process itself
            os.kill(os.getpid(), signal.SIGKILL)
        return CarIRLExperiment(**SMALL).run_cell(cell, index, seed_sequence)


def _same_runs(a, b) -> None:
    for x, y in zip(a.all_results, b.all_results, strict=True):
        assert x.curves.keys() == y.curves.keys()
        for name in x.curves:
            np.testing.assert_array_equal(x.curves[name], y.curves[name])
        assert x.extras == y.extras


def test_a_killed_pool_worker_is_replaced_and_its_run_gives_the_clean_result(tmp_path, capsys):
    marker = tmp_path / "attempts"
    killed = run_sweep(KilledOnce(str(marker)), tmp_path / "killed", 3, seed=4, backend=ProcessBackend(2),
                       progress=False)
    assert marker.read_text() == "x"  # the worker really died once
    assert "run 1 of cell 'main': its worker process was killed by SIGKILL; starting it again (attempt 2 of 4)" \
        in capsys.readouterr().err
    clean = run_sweep(CarIRLExperiment(**SMALL), tmp_path / "clean", 3, seed=4, backend=ProcessBackend(2),
                      progress=False)
    _same_runs(killed, clean)


def test_a_run_whose_worker_keeps_dying_stops_the_sweep_with_one_line(tmp_path):
    experiment = KilledOnce(str(tmp_path / "attempts"), deaths=99)
    with pytest.raises(LostRun) as caught:
        run_sweep(experiment, tmp_path / "out", 3, seed=0, backend=ProcessBackend(2, max_retries=1), progress=False)
    message = str(caught.value)
    assert "\n" not in message and message.startswith("run 1 of cell 'main' was lost after 2 attempts: its worker")
    assert message.endswith(f"2 of 3 runs saved in {tmp_path / 'out'}; run the same command again to resume")
    assert len((tmp_path / "attempts").read_text()) == 2
    assert sorted(p.name for p in (tmp_path / "out" / "runs" / "main").iterdir()) == ["run_00000.json",
                                                                                      "run_00002.json"]


def _processes_with(token: str) -> list[int]:
    """Live processes whose environment holds ``token`` (the driver and every process below it)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            alive = "\nState:\tZ" not in (entry / "status").read_text()
            if alive and token.encode() in (entry / "environ").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


_SLOW_SWEEP = """
import os, sys, time
from dataclasses import dataclass
from pathlib import Path
from curteach_teaching.sweeps.backends import ProcessBackend
from curteach_teaching.sweeps.sweep import run_sweep

@dataclass(frozen=True)
class Slow:
    cells = ("main",)
    def settings(self):
        return {"experiment": "slow"}
    def run_cell(self, cell, index, seed_sequence):
        (Path(sys.argv[1]).parent / f"running_{os.getpid()}").touch()
        time.sleep(600)

if __name__ == "__main__":
    run_sweep(Slow(), sys.argv[1], 4, backend=ProcessBackend(2), progress=False)
"""


@needs_proc
def test_pool_workers_die_with_a_killed_driver(tmp_path):
    script = tmp_path / "slow_sweep.py"
    script.write_text(_SLOW_SWEEP)
    token = uuid.uuid4().hex
    driver = subprocess.Popen([sys.executable, str(script), str(tmp_path / "out")], stderr=subprocess.PIPE,
                              env={**os.environ, "CURTEACH_TEST_TOKEN": token}, start_new_session=True)
    deadline = time.monotonic() + 120
    while len(list(tmp_path.glob("running_*"))) < 2:  # both workers in a run
        assert driver.poll() is None and time.monotonic() < deadline, "the workers never started"
        time.sleep(0.2)
    assert len(_processes_with(token)) >= 3
    driver.kill()
    driver.wait()
    deadline = time.monotonic() + 5
    while _processes_with(token) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _processes_with(token) == []
    assert b"Traceback" not in driver.stderr.read()


def test_overwrite_removes_only_what_the_library_wrote(tmp_path, capsys):
    out = tmp_path / "out"
    args = ["car-irl", "--init", "T0", "--teachers", "Agn,Cur", "--steps", "3", "--runs", "2", "--workers", "1",
            "--no-progress", "--no-figures", "--out", str(out)]
    assert main(args) == 0
    mine = [out / "notes.txt", out / "runs" / "notes.txt", out / "runs" / "mine" / "data.csv",
            out / "runs" / "main" / "run_00000.json.bak", out / "checkpoints" / "my_model.pt", out / "summary.txt"]
    for path in mine:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("the user's own")
    written = library_files(out)
    assert {p.name for p in written} >= {"run_00000.json", "run_00001.json", "summary.csv", "report.json",
                                         "sweep.json"}
    assert not set(mine) & set(written)
    assert main([*args[:6], "4", *args[7:]]) == 2  # other settings: refused, nothing removed
    assert "--overwrite" in capsys.readouterr().err
    assert all(path.exists() for path in [*mine, *written])
    assert main([*args[:6], "4", *args[7:], "--overwrite"]) == 0
    assert all(path.read_text() == "the user's own" for path in mine)
    assert sorted(p.name for p in (out / "runs" / "main").glob("run_*.json")) == ["run_00000.json", "run_00001.json"]


def _snapshot(root: Path) -> dict:
    return {str(path.relative_to(root)): path.read_bytes() if path.is_file() else None for path in root.rglob("*")}


REFUSED = [
    ["car-irl", "--steps", "0"],
    ["car-irl", "--backend", "ray", "--ray-address", "127.0.0.1:1"],
    ["car-irl-observability", "--smoothing", "-1"],
    ["car-bc", "--learning-rate", "-1"],
    ["car-bc", "--workers", "0"],
    ["car-irl-sensitivity", "--teaching-rates", "-1"],
    ["car-bc-sensitivity", "--learning-rates", "0.1,x"],
    ["car-irl-theorem2", "--teaching-rate", "-1"],
    ["nav", "--scale", "small", "--max-batches", "-5"],
    ["nav", "--scale", "small", "--max-batches", "0"],
    ["nav", "--scale", "small", "--lr-period", "0"],
    ["nav", "--scale", "small", "--dataset", "no-such-file.npz"],
    ["nav", "--scale", "small", "--curricula", "Cur,Nope"],
]


@pytest.mark.parametrize("args", REFUSED, ids=[" ".join(a) for a in REFUSED])
@pytest.mark.parametrize("existing", [True, False], ids=["existing-folder", "new-folder"])
def test_a_refused_command_leaves_the_folder_as_it_was(tmp_path, capsys, args, existing):
    out = tmp_path / "out"
    if existing:
        out.mkdir()
        (out / "keep.txt").write_text("mine")
    before = _snapshot(tmp_path)
    assert main([*args, "--runs", "1", "--no-progress", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "error:" in err
    assert _snapshot(tmp_path) == before


def test_nav_show_refuses_a_missing_model_before_writing(tmp_path, capsys):
    before = _snapshot(tmp_path)
    args = ["nav-show", "--model", str(tmp_path / "none.model.pt"), "--task", "tsp", "--out",
            str(tmp_path / "sub" / "roll.png")]
    assert main(args) == 2
    assert "--model" in capsys.readouterr().err and _snapshot(tmp_path) == before


_REAPED = """
import os, subprocess, sys, time
from curteach_teaching.sweeps.orphans import Reaper

with Reaper(epitaph="curteach: error: the driver is gone") as reaper:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    print(child.pid, flush=True)
    if sys.argv[1] == "die":
        os._exit(1)  # as Ray's core ends a driver: no clean-up code runs
"""


@needs_proc
@pytest.mark.parametrize("end", ["die", "clean"])
def test_the_reaper_kills_what_was_started_and_speaks_only_for_a_driver_that_died(tmp_path, end):
    script = tmp_path / "reaped.py"
    script.write_text(_REAPED)
    with open(tmp_path / "stderr", "w") as stderr:
        driver = subprocess.run([sys.executable, str(script), end], stdout=subprocess.PIPE, stderr=stderr, text=True,
                                timeout=120)
    child = int(driver.stdout.split()[0])
    expected = "curteach: error: the driver is gone\n" if end == "die" else ""
    deadline = time.monotonic() + 10  # a clean exit waits for the watcher; a dead driver does not
    while (_alive(child) or (tmp_path / "stderr").read_text() != expected) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(child) and (tmp_path / "stderr").read_text() == expected


def _alive(pid: int) -> bool:
    try:
        return "\nState:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
