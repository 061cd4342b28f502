"""Where a sweep's runs train: the runner owns the device.

A command that trains a network takes ``--device {cpu,cuda,auto}`` (default ``cpu``) and ``--gpus-per-run`` with the
shared sweep flags (:mod:`~curteach_teaching.commands.sweep_options`). The driver resolves the flag once
(:func:`sweep_device`: ``auto`` becomes ``cuda`` or ``cpu``; ``cuda`` without a GPU is refused in one line); the
experiment's settings carry the result (``"cpu"`` or ``"cuda"``), and each run places itself from the backend's
worker context (:func:`run_device`):

* the process pool: worker ``k`` (1-based) of the pool trains on GPU ``(k - 1) mod n_gpus``, so N workers on G GPUs
  spread evenly; with ``--gpus-per-run F`` at most ``floor(G / F)`` runs go at once (:func:`gpu_workers`);
* Ray: a run declares ``num_gpus=F`` and Ray makes only its GPU visible, so ``cuda`` is that GPU;
* the driver and the serial backend: GPU 0.

Each worker has one CPU math thread (:func:`~curteach_teaching.sweeps.backends.enter_worker`): a run on a GPU spends
its CPU time in Python, not in math kernels, and more threads per worker only compete for the cores.
"""

from __future__ import annotations

import math

__all__ = ["DEVICES", "gpu_count", "gpu_workers", "resolve_device", "run_device", "sweep_device"]

#: what ``--device`` accepts
DEVICES = ("cpu", "cuda", "auto")


def gpu_count() -> int:
    """The GPUs torch sees in this process (0 without torch's CUDA)."""
    import torch as th

    return th.cuda.device_count() if th.cuda.is_available() else 0


def resolve_device(device: str) -> str:
    """``"auto"`` -> ``"cuda"`` if a GPU is visible, else ``"cpu"``; ``"cuda"`` without a GPU is a ``ValueError``."""
    if device not in DEVICES:
        raise ValueError(f"device must be one of {DEVICES}; got {device!r}")
    if device == "cpu":
        return device
    available = gpu_count() > 0
    if device == "auto":
        return "cuda" if available else "cpu"
    if not available:
        raise ValueError("device 'cuda' was asked for, but torch sees no GPU")
    return device


def sweep_device(device: str, *, on_ray: bool = False, gpus_per_run: float = 0.0) -> str:
    """Where a sweep's runs train: ``device`` resolved on this machine (:func:`resolve_device`), except on Ray,
    whose driver need not have a GPU: a run there gets one only when it declares a share (``gpus_per_run``), and
    ``"auto"`` cannot be resolved on the driver for the nodes.

    Raises:
        ValueError: an unknown device, ``"cuda"`` without a GPU here, or on Ray ``"auto"`` or ``"cuda"`` without
            ``gpus_per_run``.
    """
    if not on_ray or device == "cpu":
        return resolve_device(device)
    if device == "auto":
        raise ValueError("--device auto is resolved on the driver; with --backend ray say --device cuda or cpu")
    if device != "cuda":
        raise ValueError(f"device must be one of {DEVICES}; got {device!r}")
    if not gpus_per_run:
        raise ValueError("--device cuda with --backend ray needs --gpus-per-run (e.g. 0.25: four runs per GPU)")
    return device


def gpu_workers(workers: int, gpus_per_run: float, n_gpus: int) -> int:
    """The process pool's workers for runs that each take ``gpus_per_run`` of one of ``n_gpus`` GPUs: ``workers``,
    at most ``floor(n_gpus / gpus_per_run)`` (no cap for a share of 0).

    Raises:
        ValueError: a negative share, or one larger than the GPUs there are.
    """
    if not (isinstance(gpus_per_run, (int, float)) and math.isfinite(gpus_per_run) and gpus_per_run >= 0):
        raise ValueError(f"gpus_per_run must be a finite number >= 0; got {gpus_per_run!r}")
    if gpus_per_run == 0:
        return workers
    fit = math.floor(n_gpus / gpus_per_run + 1e-9)
    if fit < 1:
        raise ValueError(f"gpus_per_run must be at most the {n_gpus} GPU(s) here; got {gpus_per_run:g}")
    return max(1, min(workers, fit))


def run_device(device: str) -> str:
    """The device of a run computed here: ``"cpu"`` as it is; ``"cuda"`` becomes ``"cuda:k"`` with ``k = (index -
    1) mod n_gpus`` in worker ``index`` of a process pool (:func:`~curteach_teaching.sweeps.backends.
    worker_context`), and ``"cuda:0"`` elsewhere (the driver, the serial backend, a Ray task, which sees its own
    GPU only).

    Raises:
        ValueError: ``"cuda"`` in a process whose torch sees no GPU.
    """
    if device != "cuda":
        return device
    from curteach_teaching.sweeps.backends import worker_context

    n = gpu_count()
    if n == 0:
        import os

        raise ValueError(f"needs a GPU, but torch in pid {os.getpid()} sees none")
    context = worker_context()
    return f"cuda:{(context.index - 1) % n if context.in_worker and context.index >= 1 else 0}"
