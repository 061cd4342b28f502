"""Wall time of one small sweep on each backend, and the per-run overhead of Ray against the process pool.

Usage: ``python benchmarks/backends.py [--runs 8] [--workers 2] [--steps 50] [--empty-runs 200] [--json]``.

1. A small ``car-irl`` sweep (``--runs`` runs of all seven teachers, ``--steps`` teaching steps) on the serial,
   process-pool and Ray backends, each from a cold start (the pool spawns its workers, Ray starts a local instance
   of ``--workers`` CPUs and shuts it down), writing its run files to a temporary folder. The numbers of the three
   sweeps are compared: they must be identical.
2. The per-run overhead: ``--empty-runs`` runs that compute nothing, on a new process pool (its spawn included, as
   in every sweep) and on a Ray instance that is already up (as on a cluster), so only the cost of shipping a unit
   to a worker and its result back to the driver (which writes the run file) is left.
   ``overhead per run = wall time x workers / runs``: the time a worker slot spends per run on other things.

Nothing is asserted; docs/experiments/cluster.md quotes the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from curteach_teaching.experiments.car.irl import CarIRLExperiment
from curteach_teaching.sweeps.backends import ProcessBackend, SerialBackend
from curteach_teaching.sweeps.ray_backend import RayBackend
from curteach_teaching.sweeps.results import RunResult
from curteach_teaching.sweeps.sweep import SingleCellExperiment, run_sweep


@dataclass(frozen=True)
class EmptyRuns(SingleCellExperiment):
    """Runs that compute nothing but a three-number curve: what is left of a sweep is its overhead."""

    def settings(self) -> dict:
        return {"experiment": "benchmark-empty-runs"}

    def run(self, index: int, seed_sequence) -> RunResult:
        return RunResult(index=index, seed=0, curves={"x": np.random.default_rng(seed_sequence).normal(size=3)})


def _timed_sweep(experiment, runs: int, backend) -> tuple[float, list]:
    with tempfile.TemporaryDirectory() as folder:
        begin = time.perf_counter()
        sweep = run_sweep(experiment, Path(folder), runs, seed=0, backend=backend, progress=False)
        return time.perf_counter() - begin, sweep.all_results


def _same_numbers(a: list, b: list) -> bool:
    return all(
        x.curves.keys() == y.curves.keys() and all(np.array_equal(x.curves[k], y.curves[k]) for k in x.curves)
        for x, y in zip(a, b, strict=True)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=8, help="runs of the car-irl sweep (default 8)")
    parser.add_argument("--workers", type=int, default=2, help="pool workers and local Ray CPUs (default 2)")
    parser.add_argument("--steps", type=int, default=50, help="teaching steps per run (default 50)")
    parser.add_argument("--empty-runs", type=int, default=200, help="runs of the overhead sweep (default 200)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    args = parser.parse_args()
    try:
        import ray
    except ImportError:
        sys.exit('this benchmark needs the ray extra: pip install "curteach[ray]"')

    figures: dict = {"runs": args.runs, "workers": args.workers, "steps": args.steps, "cpus": os.cpu_count(),
                     "load_average_before": os.getloadavg()[0]}
    experiment = CarIRLExperiment(steps=args.steps)
    results = {}
    for name, backend in (
        ("serial", SerialBackend()),
        ("processes", ProcessBackend(args.workers)),
        ("ray", RayBackend(workers=args.workers)),
    ):
        seconds, results[name] = _timed_sweep(experiment, args.runs, backend)
        figures[f"car_irl_{name}_s"] = round(seconds, 2)
    figures["identical_numbers"] = _same_numbers(results["serial"], results["processes"]) and _same_numbers(
        results["serial"], results["ray"]
    )

    empty = EmptyRuns()
    pool_s, _ = _timed_sweep(empty, args.empty_runs, ProcessBackend(args.workers))
    ray.init(num_cpus=args.workers, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        _timed_sweep(empty, args.workers, RayBackend())  # Ray starts its worker processes on first use
        ray_s, _ = _timed_sweep(empty, args.empty_runs, RayBackend())
    finally:
        ray.shutdown()
    figures["empty_runs"] = args.empty_runs
    figures["overhead_processes_ms_per_run"] = round(1000 * pool_s * args.workers / args.empty_runs, 1)
    figures["overhead_ray_ms_per_run"] = round(1000 * ray_s * args.workers / args.empty_runs, 1)
    figures["load_average_after"] = os.getloadavg()[0]

    if args.json:
        print(json.dumps(figures))
        return
    print(f"car-irl, {args.runs} runs x 7 teachers x {args.steps} steps, {args.workers} workers "
          f"(load average before: {figures['load_average_before']:.2f}, after: {figures['load_average_after']:.2f})")
    for name in ("serial", "processes", "ray"):
        print(f"  {name:<10} {figures[f'car_irl_{name}_s']:7.2f} s   (cold start, files written)")
    print(f"  identical numbers on all three: {figures['identical_numbers']}")
    print(f"overhead per run, {args.empty_runs} empty runs on a started pool / Ray instance:")
    print(f"  processes  {figures['overhead_processes_ms_per_run']:7.1f} ms of a worker slot per run "
          "(includes spawning the pool)")
    print(f"  ray        {figures['overhead_ray_ms_per_run']:7.1f} ms of a worker slot per run")


if __name__ == "__main__":
    main()
