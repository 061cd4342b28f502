"""The Ray backend on a real local Ray instance: same numbers as the process pool, resume, retries, errors."""

import os
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

ray = pytest.importorskip("ray")

from curteach_teaching.cli import main  # noqa: E402
from curteach_teaching.experiments import ray_backend as ray_backend_module  # noqa: E402
from curteach_teaching.experiments.backends import ProcessBackend  # noqa: E402
from curteach_teaching.experiments.car_bc import CarBCExperiment  # noqa: E402
from curteach_teaching.experiments.car_irl import CarIRLExperiment  # noqa: E402
from curteach_teaching.experiments.ray_backend import RayBackend  # noqa: E402
from curteach_teaching.experiments.results import RunResult, run_path  # noqa: E402
from curteach_teaching.experiments.sweep import make_backend, run_sweep  # noqa: E402

# The experiments below live in this test module, which Ray's workers cannot import: ship them by value.
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])

SMALL_IRL = dict(steps=4, target_steps=10, pretrain_steps=10, teachers=("Agn", "Cur", "Scot"))
SMALL_BC = dict(steps=5, pretrain_sweeps=3)


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


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


def test_a_python_error_fails_the_sweep_with_its_run(local_ray, tmp_path, capsys):
    with pytest.raises(ValueError, match="run two is broken"):
        run_sweep(Raising(str(tmp_path)), tmp_path / "out", 4, seed=0, backend=RayBackend(), progress=False)
    assert "run 2 of cell 'main' failed" in capsys.readouterr().err
    saved = {p.name for p in (tmp_path / "out" / "runs" / "main").iterdir()}
    assert "run_00002.json" not in saved and not any(name.endswith(".tmp") for name in saved)
    assert all(run_path(tmp_path / "out", i).exists() for i in range(4) if f"run_{i:05d}.json" in saved)


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



def test_nav_runs_on_ray_without_the_driver_disk(local_ray, tmp_path):
    """The dataset travels with the experiment: the workers never see the driver's file."""
    from curteach_envs.navigation.dataset import save_dataset
    from curteach_envs.navigation.generate import generate_dataset
    from curteach_teaching.experiments.backends import SerialBackend
    from curteach_teaching.experiments.nav import NavExperiment
    from curteach_teaching.experiments.nav_data import file_digest

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
