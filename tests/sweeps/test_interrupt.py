"""Ctrl-C (and a scheduler's SIGTERM) on a parallel sweep (real subprocesses): prompt exit 130 (143), one line,
finished runs kept, no process left."""

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import numpy as np
import pytest

from curteach_teaching.sweeps.reports import read_summary


def _processes_with(token: str) -> list[int]:
    """PIDs of live processes whose environment holds ``token`` (the command and its workers)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if token.encode() in (entry / "environ").read_bytes():
                status = (entry / "status").read_text()
                if "\nState:\tZ" not in status:
                    found.append(int(entry.name))
        except OSError:
            continue
    return found


def _start(args: list[str], token: str, *, sigterm_ignored: bool = False) -> subprocess.Popen:
    env = {**os.environ, "CURTEACH_TEST_TOKEN": token}
    return subprocess.Popen(
        [sys.executable, "-m", "curteach_teaching.cli", *args],
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=(lambda: signal.signal(signal.SIGTERM, signal.SIG_IGN)) if sigterm_ignored else None,
    )


def _communicate(proc: subprocess.Popen, timeout: float = 120) -> tuple[str, str]:
    """``proc.communicate`` within ``timeout`` seconds; a hang kills its process group (workers included) before the
    test fails, so that no hung command outlives the test."""
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise


def _wait_for_runs(out: Path, n: int, proc: subprocess.Popen, limit: float = 240.0) -> None:
    deadline = time.monotonic() + limit
    while len(list((out / "runs" / "main").glob("run_*.json"))) < n:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the sweep made no progress"
        time.sleep(0.2)


def _ray_installed() -> bool:
    try:
        import ray  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc to find the workers")
@pytest.mark.parametrize(
    "backend",
    ["processes", pytest.param("ray", marks=pytest.mark.skipif(not _ray_installed(), reason="needs the ray extra"))],
)
@pytest.mark.parametrize("presses", [1, 2])
def test_ctrl_c_stops_a_parallel_sweep_and_keeps_finished_runs(tmp_path, presses, backend):
    out = tmp_path / "sweep"
    args = [
        "car-bc",
        "--runs",
        "8",
        "--steps",
        "300",
        "--workers",
        "2",
        "--no-progress",
        "--no-figures",
        "--backend",
        backend,
        "--out",
        str(out),
    ]
    token = uuid.uuid4().hex
    proc = _start(args, token)
    _wait_for_runs(out, 2, proc)
    for _ in range(presses):  # the terminal's Ctrl-C reaches the whole process group
        os.killpg(proc.pid, signal.SIGINT)
        time.sleep(0.05)
    _, err = _communicate(proc)  # a hang fails here; how fast it stops is not asserted
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("interrupted:")]
    assert len(lines) == 1 and "runs saved in" in lines[0] and "run the same command again" in lines[0]
    saved = len(list((out / "runs" / "main").glob("run_*.json")))
    assert 2 <= saved < 8 and not list((out / "runs" / "main").glob(".*.tmp"))
    time.sleep(0.5)
    assert _processes_with(token) == []
    if presses == 1:  # the rerun finishes the sweep with the numbers of an uninterrupted one
        rerun = _start(args, uuid.uuid4().hex)
        assert rerun.wait(timeout=300) == 0
        whole = _start([*args[:-1], str(tmp_path / "whole")], uuid.uuid4().hex)
        assert whole.wait(timeout=300) == 0
        assert read_summary(out / "summary.csv") == read_summary(tmp_path / "whole" / "summary.csv")


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc to find the workers")
def test_sigterm_to_the_job_stops_the_sweep_cleanly_with_exit_143(tmp_path):
    # Slurm's scancel (and its time limit) sends SIGTERM to every process of the job step, workers included
    out = tmp_path / "sweep"
    args = ["car-bc", "--runs", "8", "--steps", "300", "--workers", "2", "--no-progress", "--no-figures",
            "--out", str(out)]
    token = uuid.uuid4().hex
    proc = _start(args, token)
    _wait_for_runs(out, 2, proc)
    os.killpg(proc.pid, signal.SIGTERM)
    _, err = _communicate(proc)
    assert proc.returncode == 143, err
    assert "Traceback" not in err and "starting it again" not in err  # a worker's SIGTERM is no lost run
    lines = [line for line in err.splitlines() if line.startswith("interrupted:")]
    assert len(lines) == 1 and "run the same command again" in lines[0]
    assert lines[0].endswith("(stopped by SIGTERM)")
    saved = len(list((out / "runs" / "main").glob("run_*.json")))
    assert 2 <= saved < 8 and not list((out / "runs" / "main").glob(".*.tmp"))
    time.sleep(0.5)
    assert _processes_with(token) == []


def test_sigterm_raises_terminated_and_both_signals_stay_ignored_after_it():
    from curteach_teaching.sweeps import interrupts

    before = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        with pytest.raises(interrupts.Terminated) as caught, interrupts.handle_interrupts():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1)
        assert isinstance(caught.value, KeyboardInterrupt) and caught.value.exit_code == 143
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
    finally:
        for number, handler in before.items():
            signal.signal(number, handler)
    with interrupts.handle_interrupts():  # no signal: the previous handlers come back
        assert signal.getsignal(signal.SIGTERM) is not before[signal.SIGTERM]
    assert signal.getsignal(signal.SIGTERM) is before[signal.SIGTERM]


_SECOND_SIGTERM = """
import os, signal, sys, time
from curteach_teaching.sweeps import interrupts
with interrupts.handle_interrupts(), interrupts.interruption_message(lambda: "interrupted: 3 of 5 runs saved"):
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)
    except KeyboardInterrupt:
        os.kill(os.getpid(), signal.SIGTERM)  # the scheduler's second notice, in the middle of the clean-up
        time.sleep(5)
        print("clean-up went on after the second signal", flush=True)
"""


def test_second_sigterm_prints_the_message_once_and_exits_143():
    proc = subprocess.run([sys.executable, "-c", _SECOND_SIGTERM], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 143 and "clean-up went on" not in proc.stdout
    assert proc.stderr.splitlines() == ["interrupted: 3 of 5 runs saved (stopped by SIGTERM)"]


def test_first_press_raises_and_sigint_stays_ignored_after_an_interruption():
    from curteach_teaching.sweeps import interrupts

    before = signal.getsignal(signal.SIGINT)
    before_term = signal.getsignal(signal.SIGTERM)
    try:
        with pytest.raises(KeyboardInterrupt), interrupts.handle_interrupts():
            with interrupts.interruption_message(lambda: "interrupted: test"):
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(1)  # the handler runs at the next bytecode; the sleep is cut short
        # a press while the interpreter shuts down must not kill the process by the signal
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        with interrupts.handle_interrupts():  # an ignored SIGINT is left alone (a background job)
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:  # both: an ignored signal would pass on to every process this one starts later
        signal.signal(signal.SIGINT, before)
        signal.signal(signal.SIGTERM, before_term)
    with interrupts.handle_interrupts():  # no press: the previous handler comes back
        assert signal.getsignal(signal.SIGINT) is not before
    assert signal.getsignal(signal.SIGINT) is before


_SECOND_PRESS = """
import os, signal, subprocess, sys, time
from curteach_teaching.sweeps import interrupts
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
print(child.pid, flush=True)
with interrupts.handle_interrupts(), interrupts.interruption_message(lambda: "interrupted: 3 of 5 runs saved"):
    try:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)
    except KeyboardInterrupt:
        os.kill(os.getpid(), signal.SIGINT)  # the second press, in the middle of the clean-up
        time.sleep(5)
        print("clean-up went on after the second press", flush=True)
"""


def test_second_press_prints_the_message_once_kills_children_and_exits_130():
    proc = subprocess.run([sys.executable, "-c", _SECOND_PRESS], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 130
    child = int(proc.stdout.split()[0])
    assert "clean-up went on" not in proc.stdout
    assert proc.stderr.splitlines() == ["interrupted: 3 of 5 runs saved"]
    time.sleep(0.2)
    assert not Path(f"/proc/{child}").exists() or "\nState:\tZ" in Path(f"/proc/{child}/status").read_text()


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc to find the workers")
def test_ctrl_c_keeps_the_finished_dataset_chunks_and_the_rerun_resumes(tmp_path):
    out = tmp_path / "tsp.npz"
    args = ["make-dataset", "tsp", "--split-sizes", "paper", "--workers", "2", "--no-progress", "--out", str(out)]
    token = uuid.uuid4().hex
    # started with SIGTERM ignored, which its spawned workers would inherit: the pool stops them by SIGTERM
    proc = _start(args, token, sigterm_ignored=True)
    chunks = tmp_path / "tsp.npz.chunks"
    deadline = time.monotonic() + 240
    while len(list(chunks.glob("chunk-*.npz"))) < 2:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no chunk was saved"
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = _communicate(proc)  # a hang fails here; how fast it stops is not asserted
    assert proc.returncode == 130
    assert "Traceback" not in err and not out.exists()
    lines = [line for line in err.splitlines() if line.startswith("interrupted:")]
    assert len(lines) == 1 and "chunks saved in" in lines[0]
    kept = len(list(chunks.glob("chunk-*.npz")))
    assert kept >= 2 and not list(chunks.glob(".*.tmp"))
    time.sleep(0.5)
    assert _processes_with(token) == []
    rerun = subprocess.run([sys.executable, "-m", "curteach_teaching.cli", *args], capture_output=True, text=True,
                           timeout=600)
    assert rerun.returncode == 0 and not chunks.exists()  # the chunk folder goes once the file is written
    whole = tmp_path / "whole.npz"
    assert subprocess.run([sys.executable, "-m", "curteach_teaching.cli", *args[:-1], str(whole)],
                          capture_output=True, timeout=600).returncode == 0
    from curteach_envs.navigation.dataset import load_dataset

    resumed, uninterrupted = load_dataset(out), load_dataset(whole)
    for name, split in uninterrupted.splits.items():
        for column, values in split.columns.items():
            np.testing.assert_array_equal(resumed[name].columns[column], values)
