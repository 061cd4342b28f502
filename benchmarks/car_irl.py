"""CPU time of one full car MaxEnt-IRL run: theta* (500 updates) + pre-training (500) + 7 teachers x 200 steps.

The original code needs about 0.6-0.7 s per learner update, i.e. 25-45 CPU-minutes per run (docs/performance.md).
Prints figures only; nothing is asserted.
"""

from __future__ import annotations

import time

import numpy as np

from curteach_teaching.experiments.car.irl import CarIRLExperiment
from curteach_teaching.sweeps.sweep import run_seed_sequence


def main(repeats: int = 3) -> None:
    experiment = CarIRLExperiment()  # the original's settings: init T0-T3, 200 steps, 7 teachers
    CarIRLExperiment(steps=2, target_steps=2, pretrain_steps=2).run(0, run_seed_sequence(0, 0))  # warm caches
    times, setup_times = [], []
    for index in range(repeats):
        start = time.process_time()
        experiment.build_setup(run_seed_sequence(0, index))
        setup_times.append(time.process_time() - start)
        start = time.process_time()
        experiment.run(index, run_seed_sequence(0, index))
        times.append(time.process_time() - start)
    updates = experiment.target_steps + experiment.pretrain_steps + len(experiment.teachers) * experiment.steps
    best = min(times)
    print(f"car-irl: one full run ({updates} learner updates, 7 teachers x {experiment.steps} steps)")
    print(f"  CPU time per run: best {best:.2f} s, mean {np.mean(times):.2f} s over {repeats} runs (target < 3 s)")
    print(f"  of which setup (road, expert, theta* 500, pool, pre-training 500): {min(setup_times):.2f} s")
    print(f"  per learner update incl. teacher scoring: {1e3 * best / updates:.2f} ms")


if __name__ == "__main__":
    main()
