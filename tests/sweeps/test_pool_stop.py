"""How a closing worker pool ends its workers (real processes): a busy worker unwinds its task, so an atomic write in
flight leaves no temporary file, and no worker leaves semaphores to the resource tracker's "leaked semaphore"
warning; a resumed sweep removes the temporary files of writers that could not clean up (kill -9)."""

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from curteach_teaching.sweeps.folders import remove_interrupted_writes
from curteach_teaching.sweeps.process_pool import WorkerPool
from curteach_teaching.sweeps.results import RunResult
from curteach_teaching.sweeps.sweep import run_sweep

ROOT = Path(__file__).resolve().parents[2]


def write_slowly(folder: str) -> str:
    """An atomic write that is still writing when the pool closes (as a navigation checkpoint can be)."""
    from curteach_envs._util import atomic_write

    def write(stream) -> None:
        stream.write("half a checkpoint")
        Path(folder, "started").touch()
        time.sleep(60)

    atomic_write(Path(folder) / "run.pt", write)
    return "done"


def test_a_busy_worker_unwinds_its_task_when_the_pool_closes(tmp_path):
    pool = WorkerPool(1, write_slowly)
    pool.submit(str(tmp_path))
    deadline = time.monotonic() + 120
    while not (tmp_path / "started").exists():
        assert time.monotonic() < deadline, "the worker never started the task"
        time.sleep(0.05)
    assert [p.name for p in tmp_path.glob(".run.pt.*.tmp")]  # the write is in flight
    process = pool._workers[0].process
    started = time.monotonic()
    pool.close()
    assert time.monotonic() - started < 5  # ended by its SIGTERM, not by the kill after the grace period
    assert process.exitcode == 128 + 15  # SystemExit from the handler: the task's clean-ups ran
    assert not list(tmp_path.glob(".run.pt.*.tmp")) and not (tmp_path / "run.pt").exists()


WORK = '''
import sys, time
from curteach_teaching.sweeps.process_pool import WorkerPool


def with_a_bar(seconds):
    from tqdm import tqdm  # tqdm makes a multiprocessing lock in the worker, registered with the resource tracker

    for _ in tqdm(range(2), disable=True):
        time.sleep(seconds)
    return seconds


def main(seconds):
    pool = WorkerPool(2, with_a_bar)
    for _ in range(2):
        pool.submit(seconds)
    if seconds == 0:  # every task answered, workers idle: the end of a finished sweep
        print(sorted(event.result for event in pool.events()))
    else:  # workers busy: the end of an interrupted one
        time.sleep(3)
    pool.close()
    print("closed")
'''


def test_no_leaked_semaphores_when_the_pool_closes(tmp_path):
    (tmp_path / "poolwork.py").write_text(WORK)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    for seconds in ("0", "30"):
        done = subprocess.run([sys.executable, "-c", f"import poolwork; poolwork.main({seconds})"], env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0 and "closed" in done.stdout, done.stderr
        assert "leaked" not in done.stderr, done.stderr


class Tiny:
    """A one-cell experiment of one number per run."""

    cells = ("main",)

    def settings(self):
        return {"experiment": "tiny"}

    def run_cell(self, cell, index, seed_sequence):
        return RunResult(index=index, seed=0, curves={"x": np.array([float(index)])}, cell=cell)


def test_a_resumed_sweep_removes_what_interrupted_writers_left(tmp_path):
    run_sweep(Tiny(), tmp_path, 1, workers=1, progress=False)
    left = [tmp_path / "checkpoints" / ".main_run_00001_0123456789abcdef.pt.k3j2.tmp",
            tmp_path / "runs" / "main" / ".run_00001.json.x8a1.tmp"]
    mine = [tmp_path / "checkpoints" / "notes.txt", tmp_path / "runs" / "main" / ".my.tmp"]
    for path in left + mine:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
    report_only = run_sweep(Tiny(), tmp_path, 1, compute=False)  # a report of the saved runs deletes nothing
    assert len(report_only.all_results) == 1 and all(path.exists() for path in left)
    run_sweep(Tiny(), tmp_path, 2, workers=1, progress=False)  # resumed: run 1 computed now
    assert not any(path.exists() for path in left) and all(path.exists() for path in mine)
    assert remove_interrupted_writes(tmp_path) == []
