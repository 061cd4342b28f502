"""The ensemble teacher's fit, three ways, in one run (issue 52, deliverable 3): its members trained one after another
in a bare PyTorch loop, today's sequential ``EnsembleTeacher.scores``, and the members trained as one batched model
(:mod:`curteach_teaching.learners.batched_members`).

Two pools:

* ``small``: the Pendulum example (``examples/datasets/scripted_pendulum.py``'s controller, reset seeds and noise,
  every third episode noisy), 40 episodes of 200 steps (8,000 transitions), rolled out here (no Minari), with
  ``rank``'s default ensemble (5 members x 500 steps of 64);
* ``large``: shaped like the Meta-World mixed pool (300 episodes, about 56,000 transitions, 39-dimensional
  observations, 4-dimensional actions in ``[-1, 1]``, 40 % of the episodes noisy), synthesised by a seeded generator
  (a random linear controller plus noise; the timing depends on the shapes, not on the values), with the committed
  sweep's ensemble (5 x 3,000 steps of 256).

Every fit uses the default policy (``make_policy("auto", ...)``: SB3's MLP of 2 x 64 ``tanh`` units, the bounded
Gaussian head) and Adam at 1e-3. It times:

* ``bare``: the five members one after another, each the same network, BC's loss (the Gaussian negative
  log-likelihood, the entropy at weight 1e-3) and Adam (fused, as the batched fit's), on uniform batches drawn by
  ``torch.randint`` from a seeded ``torch.Generator`` over its half's transitions, written out with nothing else per
  step; training only;
* ``sequential``: ``EnsembleTeacher.scores`` (``CurriculumBC`` per member, then the scoring passes);
* ``batched``: ``fit_members`` (training) and ``member_log_likelihoods`` (scoring), timed apart and together,

and prints the wall times and the ratios ``bare / batched fit`` (issue 52's goal: at least 2.5; of wall and of CPU
seconds, the steadier figure on a shared machine) and ``sequential / batched``. One torch thread unless
``--threads``; ``--device cuda`` times all three on a GPU. Asserts nothing.

It also times, on the CPU, ``curteach rank`` itself with the committed sweep's ensemble on the Meta-World mixed pool
(the page's ``make-dataset`` command, run here in a temporary folder unless ``--metaworld DIR`` names it; skipped
without Meta-World): its wall time in all, reading and writing included (issue 52's goal: within 60 s).

    python benchmarks/rank.py [--pools small,large] [--threads 1] [--device cpu] [--metaworld DIR|none] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

#: issue 52's goal for bare sequential / batched fit time
GOAL = 2.5
#: issue 52's goal for `rank` on the Meta-World mixed pool, wall seconds in all
RANK_GOAL_S = 60.0
#: pool -> (batches, batch_size) of the ensemble
SETTINGS = {"small": (500, 64), "large": (3000, 256)}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pools", default="small,large", help="comma-separated: small, large (default both)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--device", default="cpu", help="where the members train (default cpu)")
    parser.add_argument("--json", action="store_true", help="print one JSON object (and nothing else)")
    parser.add_argument("--metaworld", default=None, metavar="DIR",
                        help="time `curteach rank` itself on the Meta-World mixed pool in DIR (the page's three "
                             "datasets; default: made here in a temporary folder where Meta-World is installed, "
                             "skipped elsewhere); `--metaworld none` skips it")
    args = parser.parse_args()
    pools = args.pools.split(",")
    if args.threads < 1 or not pools or any(p not in SETTINGS for p in pools):
        parser.error(f"--threads must be >= 1 and --pools a comma-separated list of {tuple(SETTINGS)}")
    args.pools = pools
    return args


def pendulum_pool(episodes: int = 40, horizon: int = 200, seed: int = 1000, noise: float = 1.5):
    import gymnasium as gym
    import numpy as np
    from imitation.data import types

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples" / "datasets"))
    from scripted_pendulum import controller

    env = gym.make("Pendulum-v1", max_episode_steps=horizon)
    demos = []
    for i in range(episodes):
        rng = np.random.default_rng(seed + i)
        obs, _ = env.reset(seed=seed + i)
        observations, actions = [obs], []
        for _ in range(horizon):
            action = controller(obs)
            if i % 3 == 0:
                action = np.clip(action + rng.normal(0.0, noise, 1).astype(np.float32), -2.0, 2.0)
            obs, *_ = env.step(action)
            observations.append(obs)
            actions.append(action)
        demos.append(types.Trajectory(obs=np.array(observations), acts=np.array(actions), infos=None, terminal=False))
    return demos, env.observation_space, env.action_space


def metaworld_shaped_pool(episodes: int = 300, seed: int = 1, noisy_share: float = 0.4):
    import gymnasium as gym
    import numpy as np
    from imitation.data import types

    rng = np.random.default_rng(seed)
    gain = rng.normal(scale=0.3, size=(39, 4))
    demos = []
    for i in range(episodes):
        steps = int(rng.integers(150, 224))  # about 187 on average: 300 episodes, about 56,000 transitions
        obs = rng.normal(size=(steps + 1, 39))
        acts = np.tanh(obs[:-1] @ gain)
        if i < noisy_share * episodes:
            acts = acts + rng.normal(scale=1.0, size=acts.shape)
        demos.append(types.Trajectory(obs=obs, acts=np.clip(acts, -1, 1).astype(np.float32), infos=None,
                                      terminal=True))
    order = rng.permutation(episodes)
    return ([demos[i] for i in order], gym.spaces.Box(-np.inf, np.inf, (39,), np.float64),
            gym.spaces.Box(-1.0, 1.0, (4,), np.float32))


def bare_sequential(demos, in_bag, obs_space, act_space, batches: int, batch_size: int,
                    device: str) -> tuple[float, float]:
    """Wall and CPU seconds of the five members trained one after another in a bare loop (see the module
    docstring)."""
    import math

    import numpy as np
    import torch as th
    from imitation.data import rollout

    from curteach_teaching.learners.batched_members import member_seeds
    from curteach_teaching.learners.factory import make_policy
    from curteach_teaching.learners.gaussian import LOG_STD_MAX, LOG_STD_MIN

    flat = rollout.flatten_trajectories(demos)
    obs_all = th.tensor(np.asarray(flat.obs), dtype=th.float32, device=device)
    acts_all = th.tensor(np.asarray(flat.acts), dtype=th.float32, device=device)
    lengths = np.array([len(d.acts) for d in demos])
    halves = [th.as_tensor(np.flatnonzero(np.repeat(row, lengths)), device=device) for row in in_bag]
    policies = [make_policy("auto", obs_space, act_space, member_seeds(0, k)[0], device=device)
                for k in range(len(in_bag))]
    log_root = math.log(math.sqrt(2 * math.pi))
    _sync(device)
    started, cpu = time.perf_counter(), time.process_time()
    for k, policy in enumerate(policies):
        generator = th.Generator(device=device).manual_seed(k)
        adam = th.optim.Adam(policy.parameters(), lr=1e-3, fused=True)  # the batched fit's Adam
        half = halves[k]
        for _ in range(batches):
            rows = half[th.randint(0, len(half), (batch_size,), generator=generator, device=device)]
            obs, acts = obs_all[rows], acts_all[rows]
            mean = policy.action_net(policy.mlp_extractor.forward_actor(obs))
            log_std = policy.log_std.clamp(LOG_STD_MIN, LOG_STD_MAX)
            log_prob = (-((acts - mean) ** 2) / (2 * th.exp(2 * log_std)) - log_std - log_root).sum(1)
            entropy = (0.5 + log_root + log_std).sum()
            loss = -log_prob.mean() - 1e-3 * entropy
            loss.backward()
            adam.step()
            adam.zero_grad()
    _sync(device)
    return time.perf_counter() - started, time.process_time() - cpu


def _sync(device: str) -> None:
    import torch as th

    if th.device(device).type == "cuda":
        th.cuda.synchronize(device)


def measure(pool: str, device: str) -> dict:
    from curteach_teaching.datasets.scores.ensemble import EnsembleTeacher
    from curteach_teaching.learners import batched_members as bm
    from curteach_teaching.learners.factory import make_policy

    demos, obs_space, act_space = pendulum_pool() if pool == "small" else metaworld_shaped_pool()
    batches, batch_size = SETTINGS[pool]
    teacher = EnsembleTeacher(batches=batches, batch_size=batch_size)
    in_bag = teacher.halves(len(demos))

    def make(seed):
        return make_policy("auto", obs_space, act_space, seed)

    bm.fit_members(demos, in_bag, make, seed=0, batches=3, batch_size=batch_size, device=device,
                   learning_rate=1e-3)  # warm-up: imports, first kernels
    bare, bare_cpu = bare_sequential(demos, in_bag, obs_space, act_space, batches, batch_size, device)
    _sync(device)
    started, cpu = time.perf_counter(), time.process_time()
    members, _ = bm.fit_members(demos, in_bag, make, seed=teacher.seed, batches=batches, batch_size=batch_size,
                                learning_rate=teacher.learning_rate, device=device)
    _sync(device)
    fitted, fitted_cpu = time.perf_counter(), time.process_time() - cpu
    bm.member_log_likelihoods(members, demos)
    scored = time.perf_counter()
    from curteach_teaching.learners.dataset_learner import LearnerFactory

    teacher.scores(demos, LearnerFactory("auto", obs_space, act_space, batch_size=batch_size, device=device))
    sequential = time.perf_counter() - scored
    batched_fit, batched = fitted - started, scored - started
    return {"pool": pool, "episodes": len(demos), "transitions": int(sum(len(d.acts) for d in demos)),
            "members": teacher.size, "batches": batches, "batch_size": batch_size, "bare_s": bare,
            "sequential_s": sequential, "batched_fit_s": batched_fit, "batched_s": batched,
            "bare_cpu_s": bare_cpu, "batched_fit_cpu_s": fitted_cpu, "bare_over_batched_fit": bare / batched_fit,
            "bare_over_batched_fit_cpu": bare_cpu / fitted_cpu, "sequential_over_batched": sequential / batched}


#: the Meta-World page's mixed pool (docs/experiments/metaworld.md)
MIXED = ["--tasks", "push,pick-place,peg-insert-side", "--episodes", "100", "--seed", "1", "--noise", "1.0",
         "--noise-share", "0.4", "--workers", "1"]
#: the committed mixed sweep's ensemble, as `rank` is asked for it
SWEEP_ENSEMBLE = ["--score", "ensemble", "--policy", "mlp-256", "--batch-size", "256", "--ensemble-batches", "3000",
                  "--keep", "0.6"]


def rank_command(folder: str | None, threads: int) -> dict | None:
    """The wall time of ``curteach rank`` with the sweep's ensemble on the Meta-World mixed pool (reading the three
    datasets, the batched fit, writing the curated datasets, scores and figure), in a subprocess with ``threads``
    math threads; ``None`` where the pool cannot be had (``folder`` ``"none"``, or no Meta-World to make it)."""
    import importlib.util
    import subprocess
    import tempfile

    if folder == "none" or (folder is None and importlib.util.find_spec("metaworld") is None):
        return None
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads),
           "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    cli = [sys.executable, "-m", "curteach_teaching.cli"]
    with tempfile.TemporaryDirectory(prefix="curteach-bench-rank-") as tmp:
        data = Path(folder) if folder else Path(tmp) / "mixed"
        if folder is None:
            made = subprocess.run([*cli, "make-dataset", "metaworld", *MIXED, "--out", str(data)], env=env, cwd=root,
                                  capture_output=True, text=True)
            if made.returncode:
                raise SystemExit(f"make-dataset failed: {made.stderr.strip().splitlines()[-1:]}")
        paths = ",".join(str(data / f"metaworld-{task}-v0") for task in ("push", "pick-place", "peg-insert-side"))
        started = time.perf_counter()
        done = subprocess.run([*cli, "rank", "--dataset", paths, *SWEEP_ENSEMBLE, "--no-progress",
                               "--out", str(Path(tmp) / "rank")], env=env, cwd=root, capture_output=True, text=True)
        wall = time.perf_counter() - started
    if done.returncode:
        raise SystemExit(f"rank failed ({done.returncode}): {done.stderr.strip()[-1000:]}")
    return {"command": "curteach rank " + " ".join(SWEEP_ENSEMBLE), "wall_s": wall, "goal_s": RANK_GOAL_S}


def main() -> None:
    args = parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    import torch as th

    th.set_num_threads(args.threads)
    results = [measure(pool, args.device) for pool in args.pools]
    command = rank_command(args.metaworld, args.threads) if args.device == "cpu" else None
    if args.json:
        print(json.dumps({"device": args.device, "threads": args.threads, "goal": GOAL, "pools": results,
                          "rank_metaworld_mixed": command}))
        return
    print(f"the ensemble teacher's fit on {args.device}, {args.threads} torch thread(s); goal: bare / batched fit "
          f">= {GOAL}")
    for r in results:
        print(f"{r['pool']}: {r['episodes']} episodes, {r['transitions']} transitions, {r['members']} members x "
              f"{r['batches']} steps of {r['batch_size']}")
        print(f"  bare, one member after another (training):  {r['bare_s']:7.2f} s ({r['bare_cpu_s']:.2f} s of CPU)")
        print(f"  EnsembleTeacher.scores (sequential, all):   {r['sequential_s']:7.2f} s")
        print(f"  batched fit (training):                     {r['batched_fit_s']:7.2f} s "
              f"({r['batched_fit_cpu_s']:.2f} s of CPU)")
        print(f"  batched fit and scores (all):               {r['batched_s']:7.2f} s")
        print(f"  bare / batched fit: {r['bare_over_batched_fit']:.2f}x of wall time, "
              f"{r['bare_over_batched_fit_cpu']:.2f}x of CPU time; sequential / batched: "
              f"{r['sequential_over_batched']:.2f}x")
    if command is not None:
        print(f"{command['command']} on the Meta-World mixed pool (300 episodes): {command['wall_s']:.1f} s of wall "
              f"time in all (goal: within {command['goal_s']:.0f} s)")


if __name__ == "__main__":
    main()
