"""dataset-bc's training throughput against a bare PyTorch loop of the same network, in the same run.

The pool is the scripted CartPole dataset of ``examples/datasets/scripted_cartpole.py`` (written to a temporary
folder), or BabyAI bot data with ``--babyai DIR`` (a folder of ``make-dataset babyai``). Both sides train the same
policy (:func:`~curteach_teaching.learners.factory.make_policy`, seed 0) with Adam on batches of
``--batch-size`` state-action pairs for ``--steps`` steps:

* curteach, Agn: imitation's ``BC`` through ``CurriculumBC`` with no curriculum (the adapter's own cost);
* curteach, Cur: the same with Cur and an equal budget of steps per epoch: the learner's difficulty of every
  demonstration is scored at each epoch's start, as in ``dataset-bc`` (the curriculum's cost on top);
* bare: uniform minibatches from the flattened pairs, ``-log pi(a|s)`` from ``policy.evaluate_actions``, one Adam
  step each.

Prints pairs per second of each and their ratios to the bare loop (goal: at least 0.9). Nothing is asserted.

    .venv/bin/python benchmarks/dataset_bc_throughput.py [--steps 300] [--batch-size 256] [--babyai DIR]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

# benchmarks/datasets.py would shadow Hugging Face's `datasets`, which imitation imports
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]


def _pool(args):
    from curteach_teaching.datasets import read_pool

    if args.babyai:
        return read_pool(args.babyai)
    root = tempfile.mkdtemp()
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples" / "datasets"))
    from scripted_cartpole import make_dataset

    make_dataset(root, episodes=30)
    os.environ["MINARI_DATASETS_PATH"] = root
    return read_pool("cartpole/scripted-v0")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--babyai", default=None, help="a folder of BabyAI bot datasets (default: scripted CartPole)")
    args = parser.parse_args()

    import torch as th
    from imitation.algorithms.bc import BC
    from imitation.data import rollout

    from curteach_teaching.curriculum.adapters.bc import CurriculumBC
    from curteach_teaching.curriculum.scaled import ScaledPreference
    from curteach_teaching.datasets.codecs import codec_for
    from curteach_teaching.learners.factory import make_policy
    from curteach_teaching.learners.quiet_logger import silent_logger

    th.set_num_threads(1)
    pool = _pool(args)
    codec = codec_for(pool.observation_space)
    trajectories = codec.trajectories(pool.trajectories)
    lengths = np.array([len(t.acts) for t in trajectories], dtype=np.float64)
    pairs = int(lengths.sum())
    steps_per_epoch = -(-pairs // args.batch_size)
    epochs = -(-args.steps // steps_per_epoch)

    def through_curriculum_bc(variant, teacher) -> float:
        policy = make_policy("auto", codec.observation_space, pool.action_space, 0)
        trainer = BC(observation_space=codec.observation_space, action_space=pool.action_space, policy=policy,
                     rng=np.random.default_rng(0), batch_size=args.batch_size, optimizer_cls=th.optim.Adam,
                     optimizer_kwargs={"lr": 1e-3}, custom_logger=silent_logger())
        curriculum = CurriculumBC(trainer, trajectories, variant=variant, teacher=teacher,
                                  steps_per_epoch=steps_per_epoch, rng=np.random.default_rng(1), log=False)
        start = time.perf_counter()
        curriculum.train(epochs, max_steps=args.steps)
        return time.perf_counter() - start

    agn = through_curriculum_bc("Agn", None)
    ours = through_curriculum_bc(ScaledPreference("Cur", lengths), -lengths)

    bare_policy = make_policy("auto", codec.observation_space, pool.action_space, 0)
    optimizer = th.optim.Adam(bare_policy.parameters(), lr=1e-3)
    transitions = rollout.flatten_trajectories(trajectories)
    rng = np.random.default_rng(2)
    start = time.perf_counter()
    for _ in range(args.steps):
        index = rng.integers(0, pairs, size=args.batch_size)
        obs = transitions.obs[index]
        obs = {key: obs.get(key) for key in obs.keys()} if hasattr(obs, "keys") else obs
        obs_tensor, _ = bare_policy.obs_to_tensor(obs)
        acts = th.as_tensor(transitions.acts[index])
        _, log_prob, _ = bare_policy.evaluate_actions(obs_tensor, acts)
        loss = -log_prob.mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    bare = time.perf_counter() - start

    done = args.steps * args.batch_size
    print(f"pool: {len(trajectories)} demonstrations, {pairs} pairs, {steps_per_epoch} steps per epoch; "
          f"{args.steps} steps of {args.batch_size}")
    print(f"curteach (CurriculumBC, Agn, BC): {done / agn:,.0f} pairs/s ({agn:.1f} s)")
    print(f"curteach (CurriculumBC, Cur, BC): {done / ours:,.0f} pairs/s ({ours:.1f} s, learner scored each epoch)")
    print(f"bare PyTorch loop:                {done / bare:,.0f} pairs/s ({bare:.1f} s)")
    print(f"ratio curteach / bare: Agn {bare / agn:.2f}, Cur {bare / ours:.2f} (goal >= 0.9)")


if __name__ == "__main__":
    main()
