"""Time one full CrossEnt-BC run on the car (4 teachers x 400 steps) with each update.

Usage: ``python benchmarks/car_bc.py [--init T0|T0-T3] [--repeats N]``. Prints seconds per run (best of N) and the
final expected rewards, so the figures can be compared with the original's (the authors' code: about 8.5 minutes per
run; docs/performance.md). Nothing is asserted.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from curteach_teaching.experiments.car.bc import CarBCExperiment
from curteach_teaching.experiments.car.irl import parse_init
from curteach_teaching.sweeps.sweep import run_seed_sequence


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--init", default="T0", help="T0 (default) or T0-T3 (adds 1000 pre-training sweeps)")
    parser.add_argument("--repeats", type=int, default=3, help="runs timed per update (best is printed)")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads (default 1, as one run per worker process should use; 0: torch's default)")
    args = parser.parse_args()
    if args.threads > 0:
        import torch

        torch.set_num_threads(args.threads)  # tiny tensors: more threads only add synchronisation
    for update in ("batch", "sequential"):
        experiment = CarBCExperiment(init_types=parse_init(args.init), update=update)
        times = []
        for repeat in range(args.repeats):
            begin = time.perf_counter()
            result = experiment.run(repeat, run_seed_sequence(0, repeat))
            times.append(time.perf_counter() - begin)
        final = ", ".join(f"{name} {curve[-1]:.3f}" for name, curve in result.curves.items())
        print(f"car-bc --init {args.init} --update {update:<10}: {min(times):6.2f} s per run "
              f"(best of {args.repeats}; median {np.median(times):.2f} s)   last run: {final}")


if __name__ == "__main__":
    main()
