"""The Ray backend on a real local Ray instance: same numbers as the process pool, resume, retries, errors.

Starting Ray takes seconds to minutes: only one test here starts it in the default suite (a dead worker's run is
retried); the others are ``slow`` (``make test-slow``)."""

import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

ray = pytest.importorskip("ray")

from curteach_teaching.cli import main  # noqa: E402
from curteach_teaching.experiments.car.bc import CarBCExperiment  # noqa: E402
from curteach_teaching.experiments.car.irl import CarIRLExperiment  # noqa: E402
from curteach_teaching.experiments.car.report import CarReport  # noqa: E402
from curteach_teaching.sweeps import ray_backend as ray_backend_module  # noqa: E402
from curteach_teaching.sweeps.backends import ProcessBackend, SerialBackend  # noqa: E402
from curteach_teaching.sweeps.orphans import processes_with_token  # noqa: E402
from curteach_teaching.sweeps.ray_backend import RayBackend  # noqa: E402
from curteach_teaching.sweeps.results import RunResult, run_path  # noqa: E402
from curteach_teaching.sweeps.sweep import make_backend, run_sweep  # noqa: E402

# The experiments below live in this test module, which Ray's workers cannot import: ship them by value.
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])

SMALL_IRL = dict(steps=4, target_steps=10, pretrain_steps=10, teachers=("Agn", "Cur", "Scot"))
SMALL_BC = dict(steps=5, pretrain_sweeps=3)


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


@pytest.mark.slow
def test_car_irl_command_on_a_local_ray_instance(tmp_path, capsys):
    """The command starts its own local instance (sized by --workers) and shuts it down (first in this module,
    before the shared instance starts)."""
    assert not ray.is_initialized()
    args = ["car-irl", "--runs", "2", "--steps", "3", "--workers", "2", "--backend", "ray", "--no-progress",
            "--no-figures", "--out", str(tmp_path)]
    assert main(args) == 0
    assert "2 runs (2 computed, 0 reused)" in capsys.readouterr().out
    assert not ray.is_initialized()


def test_an_unreachable_address_is_a_clear_error(tmp_path, capsys, monkeypatch):
    """Before the shared instance starts: with Ray initialised, the backend uses that instance instead."""
    args = ["car-irl", "--runs", "1", "--steps", "3", "--no-progress", "--no-figures", "--out", str(tmp_path),
            "--backend", "ray"]
    assert main([*args, "--ray-address", "127.0.0.1:1"]) == 2
    assert "no Ray cluster answers at '127.0.0.1:1'" in capsys.readouterr().err
    monkeypatch.setenv("RAY_ADDRESS", "ray://127.0.0.1:1")
    assert main(args) == 2
    assert "no Ray cluster answers at 'ray://127.0.0.1:1'" in capsys.readouterr().err
    assert not list(tmp_path.rglob("run_*.json")) and not ray.is_initialized()


@dataclass(frozen=True)
class DyingOnce:
    """Run 1's worker process dies the first time (a killed worker); every run then finishes."""

    marker_dir: str
    cells = ("main",)

    def settings(self):
        return {"experiment": "dying-once"}

    def run_cell(self, cell, index, seed_sequence):
        marker = Path(self.marker_dir) / f"attempt_{index}"
        if index == 1 and not marker.exists():
            marker.write_text("died")
            os._exit(1)
        return RunResult(index=index, seed=0, curves={"x": np.random.default_rng(seed_sequence).normal(size=3)})


@dataclass(frozen=True)
class KilledFromOutside:
    """The small car experiment, except that the first time run 1 starts, its Ray worker writes its pid into
    ``marker_dir/pid`` and waits to be killed (``kill -9`` from the test, as the out-of-memory killer would)."""

    marker_dir: str
    cells = ("main",)

    def settings(self):
        return CarIRLExperiment(**SMALL_IRL).settings()

    def run_cell(self, cell, index, seed_sequence):
        pid_file = Path(self.marker_dir) / "pid"
        if index == 1 and not pid_file.exists():
            (Path(self.marker_dir) / "pid.tmp").write_text(str(os.getpid()))
            os.replace(Path(self.marker_dir) / "pid.tmp", pid_file)
            time.sleep(600)  # killed here; a test that never kills it fails on its timeout instead of passing
        return CarIRLExperiment(**SMALL_IRL).run_cell(cell, index, seed_sequence)


@dataclass(frozen=True)
class Raising(DyingOnce):
    def run_cell(self, cell, index, seed_sequence):
        if index == 2:
            raise ValueError("run two is broken")
        return RunResult(index=index, seed=0, curves={"x": np.random.default_rng(seed_sequence).normal(size=3)})


def _assert_same(a, b):
    for x, y in zip(a.all_results, b.all_results, strict=True):
        assert x.curves.keys() == y.curves.keys()
        for name in x.curves:
            np.testing.assert_array_equal(x.curves[name], y.curves[name])
        assert x.records.keys() == y.records.keys() and x.extras == y.extras


@pytest.mark.slow
@pytest.mark.parametrize("experiment", [CarIRLExperiment(**SMALL_IRL), CarBCExperiment(**SMALL_BC)],
                         ids=["car-irl", "car-bc"])
def test_ray_gives_the_process_backend_numbers(local_ray, tmp_path, experiment):
    on_ray = run_sweep(experiment, tmp_path / "ray", 3, seed=7, backend=RayBackend(), progress=False)
    in_pool = run_sweep(experiment, tmp_path / "pool", 3, seed=7, backend=ProcessBackend(2), progress=False)
    _assert_same(on_ray, in_pool)
    again = run_sweep(experiment, tmp_path / "ray", 3, seed=7, backend=RayBackend(), progress=False)
    assert again.computed == [] and len(again.reused) == 3  # resume skips valid files


def test_a_dead_worker_is_retried_and_nothing_is_lost(local_ray, tmp_path):
    sweep = run_sweep(DyingOnce(str(tmp_path)), tmp_path / "out", 3, seed=0, backend=RayBackend(), progress=False)
    assert (tmp_path / "attempt_1").read_text() == "died"
    assert sorted(sweep.computed) == [("main", 0), ("main", 1), ("main", 2)]
    files = sorted(p.name for p in (tmp_path / "out" / "runs" / "main").iterdir())
    assert files == ["run_00000.json", "run_00001.json", "run_00002.json"]  # no duplicate, no partial file


def _kill_when_written(pid_file: Path, killed: list, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not pid_file.exists():
        if time.monotonic() > deadline:
            return
        time.sleep(0.1)
    pid = int(pid_file.read_text())
    os.kill(pid, signal.SIGKILL)
    killed.append(pid)


@pytest.mark.slow
def test_a_ray_worker_killed_from_outside_is_retried_and_the_summary_equals_a_clean_run(local_ray, tmp_path, capsys):
    killed = []
    killer = threading.Thread(target=_kill_when_written, args=(tmp_path / "pid", killed), daemon=True)
    killer.start()
    experiment = KilledFromOutside(str(tmp_path))
    sweep = run_sweep(experiment, tmp_path / "killed", 3, seed=2, backend=RayBackend(), progress=False)
    killer.join()
    assert len(killed) == 1 and killed[0] != os.getpid()  # a real worker process really died
    clean = run_sweep(CarIRLExperiment(**SMALL_IRL), tmp_path / "clean", 3, seed=2, backend=SerialBackend(),
                      progress=False)
    _assert_same(sweep, clean)
    for out, result in (("killed", sweep), ("clean", clean)):
        CarReport(CarIRLExperiment(**SMALL_IRL)).write(result, tmp_path / out, figures=False)
    capsys.readouterr()
    assert (tmp_path / "killed" / "summary.csv").read_bytes() == (tmp_path / "clean" / "summary.csv").read_bytes()
    assert sorted(p.name for p in (tmp_path / "killed" / "runs" / "main").iterdir()) == [
        "run_00000.json", "run_00001.json", "run_00002.json"]


_SLOW_RAY_SWEEP = """
import os, sys, time
from dataclasses import dataclass
from pathlib import Path
import numpy as np
import ray
from curteach_teaching.sweeps.backends import LostRun
from curteach_teaching.sweeps.ray_backend import RayBackend
from curteach_teaching.sweeps.results import RunResult
from curteach_teaching.sweeps.sweep import run_sweep

ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])

@dataclass(frozen=True)
class Slow:
    folder: str
    cells = ("main",)
    def settings(self):
        return {"experiment": "slow"}
    def run_cell(self, cell, index, seed_sequence):
        if index == 0:  # one run is saved
            return RunResult(index=index, seed=0, curves={"x": np.zeros(2)})
        # the reaper's token, which every process of the local Ray instance inherits
        (Path(self.folder) / f"running_{os.getpid()}").write_text(os.environ["CURTEACH_REAPER_TOKEN"])
        time.sleep(600)

if __name__ == "__main__":
    try:
        run_sweep(Slow(sys.argv[1]), Path(sys.argv[1]) / "out", 4, backend=RayBackend(workers=2), progress=False)
    except LostRun as error:  # as the command line reports it
        sys.exit(f"curteach: error: {error}")
"""


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc to find processes")
def test_the_local_ray_instance_dies_with_a_killed_driver(tmp_path):
    """kill -9 of a driver on --backend ray: the GCS, raylet, agents and workers it started are gone within
    seconds (the reaper), not after Ray's own timeouts."""
    script = tmp_path / "slow_ray_sweep.py"
    script.write_text(_SLOW_RAY_SWEEP)
    driver = subprocess.Popen([sys.executable, str(script), str(tmp_path)], stderr=subprocess.PIPE,
                              start_new_session=True)
    deadline = time.monotonic() + 300
    while len(list(tmp_path.glob("running_*"))) < 2:  # both workers in a run
        assert driver.poll() is None and time.monotonic() < deadline, "the Ray workers never started"
        time.sleep(0.2)
    token = next(tmp_path.glob("running_*")).read_text()
    started = processes_with_token(token)
    assert len(started) >= 4  # at least the GCS, the raylet and the two workers
    driver.kill()
    driver.wait()
    deadline = time.monotonic() + 10
    while _alive(started) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _alive(started) == [] and processes_with_token(token) == []


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc to find processes")
def test_a_killed_ray_agent_ends_the_driver_with_one_line_and_nothing_left(tmp_path):
    """A dead agent takes the local raylet with it. Depending on timing, Ray reports that to Python (the sweep stops
    with the one LostRun line, "1 of 4 runs saved") or its C++ core ends the driver first (exit code 1, nothing for
    Python to catch), and the reaper's watcher prints its line instead. Either way: one line, nothing left running,
    the saved run kept."""
    script = tmp_path / "slow_ray_sweep.py"
    script.write_text(_SLOW_RAY_SWEEP)
    with open(tmp_path / "stderr", "wb") as stderr:
        driver = subprocess.Popen([sys.executable, str(script), str(tmp_path)], stderr=stderr, start_new_session=True)
    saved = tmp_path / "out" / "runs" / "main" / "run_00000.json"
    deadline = time.monotonic() + 300
    while len(list(tmp_path.glob("running_*"))) < 2 or not saved.exists():
        assert driver.poll() is None and time.monotonic() < deadline, "the Ray workers never started"
        time.sleep(0.2)
    token = next(tmp_path.glob("running_*")).read_text()
    deadline = time.monotonic() + 120
    while not (agents := _dashboard_agents(token)):  # the raylet may start its agent after the workers
        assert driver.poll() is None and time.monotonic() < deadline, "no dashboard agent started"
        time.sleep(0.2)
    started = processes_with_token(token)
    os.kill(agents[0], signal.SIGKILL)
    assert driver.wait(timeout=120) != 0
    deadline = time.monotonic() + 10
    while (_alive(started) or b"resume" not in (tmp_path / "stderr").read_bytes()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _alive(started) == [] and processes_with_token(token) == []
    err = (tmp_path / "stderr").read_text()
    ours = [line for line in err.splitlines() if line.startswith("curteach:")]
    from_python = re.fullmatch(r"curteach: error: run [123] of cell 'main' was lost: Ray: \w+Error: .*; 1 of 4 runs "
                               r"saved in \S+; run the same command again to resume", ours[0]) if ours else None
    from_watcher = [f"curteach: error: the sweep's driver (pid {driver.pid}) ended before the sweep did: it was "
                    "killed, or Ray ended it because a process of the local Ray instance (its raylet or an agent) "
                    "died; the local Ray instance is stopped and the runs saved so far stay: run the same command "
                    "again to resume"]
    assert len(ours) == 1 and (from_python or ours == from_watcher), err
    assert saved.exists() and "Traceback" not in err


def _dashboard_agents(token: str) -> list:
    """The local Ray instance's dashboard agent (named ``ray::DashboardAgent`` once it has started)."""
    found = []
    for pid in processes_with_token(token):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if command.startswith(b"ray::DashboardAgent") or b"dashboard/agent.py" in command:
            found.append(pid)
    return found


def _alive(pids: list) -> list:
    alive = []
    for pid in pids:
        try:
            if "\nState:\tZ" not in Path(f"/proc/{pid}/status").read_text():
                alive.append(pid)
        except OSError:
            continue
    return alive


@pytest.mark.slow
def test_a_python_error_fails_the_sweep_with_its_run(local_ray, tmp_path, capsys):
    with pytest.raises(ValueError, match="run two is broken"):
        run_sweep(Raising(str(tmp_path)), tmp_path / "out", 4, seed=0, backend=RayBackend(), progress=False)
    assert "run 2 of cell 'main' failed" in capsys.readouterr().err
    saved = {p.name for p in (tmp_path / "out" / "runs" / "main").iterdir()}
    assert "run_00002.json" not in saved and not any(name.endswith(".tmp") for name in saved)
    assert all(run_path(tmp_path / "out", i).exists() for i in range(4) if f"run_{i:05d}.json" in saved)


@pytest.mark.slow
def test_a_worker_with_other_code_is_refused(local_ray, tmp_path, monkeypatch):
    monkeypatch.setattr(ray_backend_module, "code_fingerprint", lambda: "0.0.0+other")
    with pytest.raises(RuntimeError, match="differs from the driver's"):
        run_sweep(CarIRLExperiment(**SMALL_IRL), tmp_path, 1, seed=0, backend=RayBackend(), progress=False)


def test_ray_flags(tmp_path, capsys):
    assert isinstance(make_backend("ray", 2), RayBackend)
    with pytest.raises(ValueError, match="gpus_per_run"):
        RayBackend(gpus_per_run=-1)
    with pytest.raises(ValueError, match="ray backend only"):
        make_backend("processes", ray_address="127.0.0.1:6379")
    assert main(["car-irl", "--runs", "1", "--out", str(tmp_path), "--ray-address", "127.0.0.1:1"]) == 2
    assert "need --backend ray" in capsys.readouterr().err



@pytest.mark.slow
def test_nav_runs_on_ray_without_the_driver_disk(local_ray, tmp_path):
    """The dataset travels with the experiment: the workers never see the driver's file."""
    from curteach_envs.navigation.dataset import save_dataset
    from curteach_envs.navigation.generate import generate_dataset
    from curteach_teaching.experiments.nav.data import file_digest
    from curteach_teaching.experiments.nav.experiment import NavExperiment
    from curteach_teaching.sweeps.backends import SerialBackend

    path = tmp_path / "sp.npz"
    save_dataset(generate_dataset("shortest_path", {"train": 1, "test": 1, "val": 1}, seed=3, workers=1,
                                  progress=False), path)
    options = dict(dataset_digest=file_digest(path), epochs=2, eval_every=4, curricula=("Agn", "Cur"))
    here = NavExperiment(dataset=str(path), **options)
    remote = NavExperiment(dataset=str(tmp_path / "only-on-the-driver.npz"), dataset_bytes=path.read_bytes(),
                           **options)
    on_ray = run_sweep(remote, tmp_path / "ray", 2, seed=5, backend=RayBackend(), progress=False)
    serial = run_sweep(here, tmp_path / "serial", 2, seed=5, backend=SerialBackend(), progress=False)
    _assert_same(on_ray, serial)
    assert [r.artifacts for r in on_ray.all_results] == [r.artifacts for r in serial.all_results]
