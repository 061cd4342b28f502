"""Speed of Meta-World dataset generation (``curteach make-dataset metaworld``).

Usage: ``python benchmarks/metaworld_generation.py [--tasks reach,push,pick-place] [--episodes 40] [--noise 0]``.

Prints, per task: scripted-expert episodes per second and env steps per second with 1 and with 2 worker processes
(``generate_expert_episodes``; the 2-worker figure includes starting the processes and importing MuJoCo in them),
whether the two runs gave the same episodes, and Minari writing (HDF5, with ``write_pool``'s check that the
environment can be made: about 0.4 s of MuJoCo loading its model) per second. Nothing is asserted. On a machine
with other work running, the figures fall with the load: compare runs made side by side.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", default="reach,push,pick-place", help="Meta-World tasks (default reach,push,"
                        "pick-place)")
    parser.add_argument("--episodes", type=int, default=40, help="episodes per task (default 40)")
    parser.add_argument("--noise", type=float, default=0.0, help="action noise std of every episode (default 0)")
    args = parser.parse_args()
    try:
        import metaworld  # noqa: F401
    except ImportError:
        print("metaworld is not installed (the metaworld extra, today's stack only): nothing to measure")
        return

    from curteach_teaching.datasets.sources.metaworld import dataset_id, expert_pool
    from curteach_teaching.datasets.sources.metaworld_episodes import (
        generate_expert_episodes,
        plan_episodes,
        resolve_tasks,
    )
    from curteach_teaching.datasets.writing import write_pool

    root = Path(tempfile.mkdtemp(prefix="metaworld-generation-"))
    try:
        for task in resolve_tasks(args.tasks):
            plans = plan_episodes([task], args.episodes, seed=0, noise=args.noise, noise_share=1.0)
            rates, runs = {}, {}
            for workers in (1, 2):
                start = time.perf_counter()
                runs[workers] = generate_expert_episodes(plans, workers=workers)
                rates[workers] = time.perf_counter() - start
            episodes = runs[1]
            same = all(np.array_equal(a.observations, b.observations) and np.array_equal(a.actions, b.actions)
                       for a, b in zip(runs[1], runs[2], strict=True))
            steps = sum(e.length for e in episodes)
            pool = expert_pool(task, episodes, 500)  # outside the timing: its first call imports imitation (torch)
            start = time.perf_counter()
            write_pool(pool, dataset_id(task), root=root, author="curteach")
            write = len(episodes) / (time.perf_counter() - start)
            print(f"{task:22s} {len(episodes)} episodes, {steps} steps, success "
                  f"{np.mean([e.success for e in episodes]):.0%}: "
                  f"{len(episodes) / rates[1]:6.1f} episodes/s ({steps / rates[1]:6.0f} steps/s) on 1 worker, "
                  f"{len(episodes) / rates[2]:6.1f} episodes/s ({steps / rates[2]:6.0f} steps/s) on 2 workers "
                  f"(ratio {rates[1] / rates[2]:.2f}; same episodes: {same}); Minari HDF5 write {write:5.0f}/s",
                  flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
