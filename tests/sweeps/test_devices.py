"""The runner's devices (curteach_teaching.sweeps.devices): resolution on the driver, a GPU per pool worker, the pool
capped by --gpus-per-run, and --device cuda refused in one line where torch sees no GPU."""

import pytest
import torch as th

from curteach_teaching.cli import main
from curteach_teaching.sweeps import backends, devices
from curteach_teaching.sweeps.devices import gpu_workers, resolve_device, run_device, sweep_device


def test_the_sweep_device_on_ray_is_declared_not_resolved_on_the_driver():
    assert sweep_device("cpu", on_ray=True) == "cpu" and sweep_device("cuda", on_ray=True, gpus_per_run=0.5) == "cuda"
    with pytest.raises(ValueError, match="--device auto"):
        sweep_device("auto", on_ray=True, gpus_per_run=0.5)
    with pytest.raises(ValueError, match="needs --gpus-per-run"):
        sweep_device("cuda", on_ray=True)
    with pytest.raises(ValueError, match="device must be one of"):
        sweep_device("tpu", on_ray=True)
    assert sweep_device("auto") == ("cuda" if th.cuda.is_available() else "cpu")


def test_resolution_with_and_without_gpus(monkeypatch):
    monkeypatch.setattr(devices, "gpu_count", lambda: 0)
    assert resolve_device("auto") == "cpu" and resolve_device("cpu") == "cpu"
    with pytest.raises(ValueError, match="torch sees no GPU"):
        resolve_device("cuda")
    with pytest.raises(ValueError, match="sees none"):
        run_device("cuda")
    monkeypatch.setattr(devices, "gpu_count", lambda: 2)
    assert resolve_device("auto") == "cuda" and resolve_device("cuda") == "cuda"


def test_pool_worker_k_takes_gpu_k_minus_1_modulo_the_gpus(monkeypatch):
    monkeypatch.setattr(devices, "gpu_count", lambda: 2)
    assert run_device("cpu") == "cpu"
    assert run_device("cuda") == "cuda:0"  # the driver
    placed = []
    for index in (1, 2, 3, 4, 5):
        monkeypatch.setattr(backends, "_context", backends.WorkerContext(index=index, in_worker=True))
        placed.append(run_device("cuda"))
    assert placed == ["cuda:0", "cuda:1", "cuda:0", "cuda:1", "cuda:0"]
    monkeypatch.setattr(backends, "_context", backends.WorkerContext(index=0, in_worker=True))  # a Ray task
    assert run_device("cuda") == "cuda:0"


def test_gpus_per_run_caps_the_pool():
    assert gpu_workers(8, 0.0, 1) == 8  # no share: one run per worker
    assert gpu_workers(8, 0.25, 1) == 4 and gpu_workers(8, 0.25, 2) == 8 and gpu_workers(3, 0.25, 1) == 3
    assert gpu_workers(8, 1 / 3, 1) == 3  # 1 / (1/3) is 3, whatever the rounding
    for share in (-0.5, float("nan"), 1.5):
        with pytest.raises(ValueError, match="gpus_per_run"):
            gpu_workers(8, share, 1)


def test_gpus_per_run_needs_ray_or_a_gpu_device(tmp_path, capsys):
    assert main(["nav", "--scale", "small", "--out", str(tmp_path), "--gpus-per-run", "0.5"]) == 2
    assert "--gpus-per-run" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


@pytest.mark.skipif(th.cuda.is_available(), reason="checks the refusal of a machine without a GPU")
@pytest.mark.parametrize("command", [["nav", "--scale", "small"], ["dataset-bc", "--dataset", "cartpole/none-v0"],
                                     ["car-bc"], ["car-bc-sensitivity"], ["car-trainers", "--scale", "small"]])
def test_device_cuda_without_a_gpu_is_one_line_and_exit_2(tmp_path, capsys, command):
    out = tmp_path / "out"
    assert main([*command, "--device", "cuda", "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "torch sees no GPU" in err
    assert not out.exists()
