"""The curriculum's overhead per imitation trainer: the share of a run's training time spent scoring and selecting.

For each trainer of ``curteach car-trainers`` one run of the Cur curriculum (the variant that scores both the
teacher and, every epoch, the learner) is profiled with ``cProfile``; the curriculum's part is the time inside
``Curriculum.plan_epoch`` (learner difficulty passes, preference, ranking, pacing, batching) and
``scores.teacher_difficulty`` (the teacher's scores, once per curriculum; per round for DAgger), the whole is the
recipe's time (building the trainer, training, evaluating). Nothing is asserted; the goal is at most 10%.

    .venv/bin/python benchmarks/trainers.py [--steps 10] [--trainers bc,dagger,gail,airl,mce-irl]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
from pathlib import Path

import numpy as np

# benchmarks/datasets.py would shadow Hugging Face's `datasets`, which imitation's DAgger imports
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]


def _cumulative(stats: pstats.Stats, module_suffix: str, function: str) -> float:
    return sum(entry[3] for (path, _, name), entry in stats.stats.items()
               if path.endswith(module_suffix) and name == function)


def main() -> None:
    """Print the overhead per trainer."""
    import torch
    from threadpoolctl import threadpool_limits

    from curteach_teaching.experiments.car.recipes import RECIPES
    from curteach_teaching.experiments.car.trainers import CarTrainersExperiment

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--trainers", default="bc,dagger,gail,airl,mce-irl")
    args = parser.parse_args()
    torch.set_num_threads(1)
    experiment = CarTrainersExperiment(trainers=args.trainers, curricula=("Cur",), steps=args.steps)
    setup = experiment.setup(np.random.SeedSequence([0, 0]))
    print(f"curriculum overhead per trainer (Cur, {args.steps} curriculum epochs, one run, one thread)")
    for trainer in experiment.trainers:
        profile = cProfile.Profile()
        with threadpool_limits(limits=1, user_api="blas"):
            profile.runcall(RECIPES[trainer], setup, "Cur", np.random.SeedSequence([0, 0, 1]))
        stats = pstats.Stats(profile)
        total = _cumulative(stats, "car_trainer_recipes.py", f"run_{trainer.replace('-', '_')}")
        if trainer in ("gail", "airl"):
            total = _cumulative(stats, "car_trainer_recipes.py", "_adversarial")
        curriculum = (_cumulative(stats, "curriculum/core.py", "plan_epoch")
                      + _cumulative(stats, "curriculum/scores.py", "teacher_difficulty"))
        print(f"{trainer:8s} total {total:7.2f} s  curriculum {curriculum:6.3f} s  share {curriculum / total:6.1%}")


if __name__ == "__main__":
    main()
