"""Meta-World's evaluation and training speed: the library's evaluator against Gymnasium's ``SyncVectorEnv``, and BC
through ``CurriculumBC`` against a bare loop of the same network, in the same run (issue 41, deliverable 6).

On ``MetaWorldTask-v0`` with the learner's observation (the 39-d state and a one-hot over the tasks, as
``dataset-bc``'s ``task-one-hot`` codec gives it) and the ladder's policy (``--policy mlp-256``: a Gaussian MLP of
two layers of 256 units, ``curteach_teaching.learners.factory``), on one torch thread:

1. **Evaluation env steps/s**: :func:`curteach_teaching.rollouts.evaluate_policy` (one env per episode, one batched
   forward pass per step, the greedy action clipped to the bounds) on ``--episodes`` held-out seeds per task, against
   a loop over ``gymnasium.vector.SyncVectorEnv`` of as many envs with the same policy (SB3's ``predict``,
   deterministic, clipped), stepped until each env has finished one episode. The policy is untrained, so most
   episodes run to the 500-step limit: the figure is MuJoCo's and the policy's per-step cost, not a success rate.
2. **BC throughput**: Meta-World expert demonstrations of the same tasks (``--demos`` per task, seed 1), the ladder's
   network trained by imitation's ``BC`` (Adam at 1e-3, batches of 256) through ``CurriculumBC`` with an equal budget
   of steps per epoch, Agn and Cur (the teacher: the ladder's rank), against a bare loop of the same network (its own
   forward, the Gaussian negative log-likelihood, Adam, batches drawn by ``torch.randint`` from tensors made once).
   The timing helpers are ``benchmarks/gpu.py``'s (run here on the CPU), per wall second and per CPU second of this
   process (the steadier figure on a shared machine). Issue 41's goal: Agn at least 0.9 of the bare loop, Cur at
   least 0.8. Cur's figure includes its learner-difficulty pass at every epoch's start: one no-grad forward pass over
   the pool, timed alone and printed with the bound it sets on Cur/Agn (the pass and an epoch's steps both grow with
   the pool, so the bound is the same at any ``--demos``).

Prints the figures (and, with ``--json``, one JSON object); asserts nothing.

    python benchmarks/metaworld_eval.py [--tasks reach,push] [--episodes 10] [--demos 20] [--seconds 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

GOALS = {"agn_ratio": 0.9, "cur_ratio": 0.8}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default="reach,push", help="Meta-World tasks (default reach,push)")
    parser.add_argument("--episodes", type=int, default=10, help="evaluation episodes per task (default 10)")
    parser.add_argument("--demos", type=int, default=20, help="expert demonstrations per task for BC (default 20)")
    parser.add_argument("--seconds", type=float, default=3.0, help="timed seconds per BC figure (default 3)")
    parser.add_argument("--repeats", type=int, default=2, help="BC timings per figure, the best kept (default 2)")
    parser.add_argument("--json", action="store_true", help="also print one JSON object")
    args = parser.parse_args(argv)
    if args.episodes < 1 or args.demos < 2 or args.seconds <= 0 or args.repeats < 1:
        parser.error("--episodes >= 1, --demos >= 2, --seconds > 0 and --repeats >= 1")
    return args


def full_name(task: str) -> str:
    return task if task.endswith("-v3") else f"{task}-v3"


def task_envs(tasks: list[str]):
    """``task -> make_env`` of ``MetaWorldTask-v0`` observed with the one-hot over ``tasks`` (sorted, as the codec)."""
    import gymnasium as gym

    from curteach_envs.metaworld import METAWORLD_ENV_ID
    from curteach_teaching.datasets.codecs.task_one_hot import TaskOneHot

    ordered = sorted(full_name(t) for t in tasks)
    return {task: (lambda t=task: TaskOneHot(gym.make(METAWORLD_ENV_ID, task=t), ordered)) for task in tasks}


def library_eval(policy, make_env, seeds) -> dict:
    from curteach_teaching.rollouts import evaluate_policy

    began, cpu = time.perf_counter(), time.process_time()
    result = evaluate_policy(policy, make_env, seeds)
    wall, cpu = time.perf_counter() - began, time.process_time() - cpu
    steps = int(result.lengths.sum())
    return {"steps": steps, "steps_per_s": steps / wall, "steps_per_cpu_s": steps / cpu}


def sync_vector_eval(policy, make_env, seeds) -> dict:
    """``SyncVectorEnv`` of ``len(seeds)`` envs, reset with the seeds, stepped with ``policy.predict`` until every env
    has ended one episode; only the steps of unfinished episodes count."""
    import gymnasium as gym
    import numpy as np

    began, cpu = time.perf_counter(), time.process_time()
    envs = gym.vector.SyncVectorEnv([make_env for _ in seeds])
    observations, _ = envs.reset(seed=[int(s) for s in seeds])
    live = np.ones(len(seeds), dtype=bool)
    steps = 0
    while live.any():
        actions, _ = policy.predict(observations, deterministic=True)
        observations, _, terminated, truncated, _ = envs.step(actions)
        steps += int(live.sum())
        live &= ~(terminated | truncated)
    envs.close()
    wall, cpu = time.perf_counter() - began, time.process_time() - cpu
    return {"steps": steps, "steps_per_s": steps / wall, "steps_per_cpu_s": steps / cpu}


def expert_trajectories(tasks: list[str], demos: int):
    """``(trajectories with the one-hot, ladder ranks (N,))`` of ``demos`` clean expert episodes per task (seed 1)."""
    import numpy as np
    from imitation.data.types import Trajectory

    from curteach_teaching.datasets.codecs.task_one_hot import append_one_hot
    from curteach_teaching.datasets.sources.metaworld_episodes import generate_expert_episodes, plan_episodes

    ordered = sorted(full_name(t) for t in tasks)
    trajectories, ranks = [], []
    for rank, task in enumerate(tasks):
        for episode in generate_expert_episodes(plan_episodes([task], demos, seed=1)):
            index = ordered.index(episode.plan.task)
            trajectories.append(Trajectory(obs=append_one_hot(episode.observations, index, len(ordered)),
                                           acts=episode.actions, infos=None, terminal=True))
            ranks.append(rank)
    return trajectories, np.asarray(ranks, dtype=np.float64)


def wide_policy(observation_space, action_space):
    from curteach_teaching.learners.factory import make_policy

    return lambda device, seed: make_policy("mlp-256", observation_space, action_space, seed, device=device)


def bc_figures(args, trajectories, ranks, observation_space, action_space) -> dict:
    import math

    import torch as th
    from gpu import Clock, bare_rate, bc_learner, gaussian_loss, library_rate, pool_tensors

    class CPUClock(Clock):
        """gpu.py's clock reading this process's CPU seconds instead of wall seconds (the steadier figure on a
        shared machine); the timed loops still stop after ``seconds`` of wall time."""

        def __call__(self, fn):
            start = time.process_time()
            out = fn()
            return out, time.process_time() - start

    build = wide_policy(observation_space, action_space)
    steps_per_epoch = math.ceil(sum(len(t.acts) for t in trajectories) / 256)
    obs, acts = pool_tensors(trajectories, "cpu")
    obs, acts = obs.float(), acts.float()
    rates: dict[str, dict[str, list[float]]] = {"wall": {}, "cpu": {}}
    for _ in range(args.repeats):  # interleaved, so that a change in the machine's load touches all alike
        for kind, clock in (("wall", Clock("cpu")), ("cpu", CPUClock("cpu"))):
            for variant in ("Agn", "Cur"):
                figure = library_rate(clock, lambda v=variant: bc_learner(trajectories, ranks, build, v, "cpu",
                                                                          steps_per_epoch),
                                      args.seconds, None, 5)
                rates[kind].setdefault(variant, []).append(figure["steps_per_s"])
            policy = build("cpu", 0)
            bare = bare_rate(clock, policy, obs, acts, 256, th.optim.Adam(policy.parameters(), lr=1e-3),
                             gaussian_loss, args.seconds)
            rates[kind].setdefault("bare", []).append(bare["steps_per_s"])
    out = {"transitions": int(acts.shape[0]), "steps_per_epoch": steps_per_epoch}
    for kind, figures in rates.items():
        best = {name: max(values) for name, values in figures.items()}
        suffix = "" if kind == "wall" else "_cpu"
        out[f"steps_per{suffix}_s"] = best
        out[f"agn_ratio{suffix}"] = best["Agn"] / best["bare"]
        out[f"cur_ratio{suffix}"] = best["Cur"] / best["bare"]
    out.update(difficulty_pass_bound(build("cpu", 0), obs.numpy(), acts.numpy(), steps_per_epoch,
                                     out["steps_per_cpu_s"]["Agn"], args.repeats))
    return out


def difficulty_pass_bound(policy, obs, acts, steps_per_epoch: int, agn_steps_per_cpu_s: float, repeats: int) -> dict:
    """Cur's learner-difficulty pass (one no-grad forward over the whole pool, at every epoch's start) in CPU seconds
    (the fastest of ``repeats`` + 1), in Agn's steps, and the ratio Cur/Agn that it leaves when all else is equal:
    ``steps_per_epoch / (steps_per_epoch + pass steps)``. Both the pass and an epoch's steps grow with the pool, so
    the bound does not depend on the pool's size, only on a forward row's cost against a training row's."""
    from curteach_teaching.learners.actions import step_log_probs

    times = []
    for _ in range(repeats + 1):
        start = time.process_time()
        step_log_probs(policy, obs, acts)
        times.append(time.process_time() - start)
    pass_steps = min(times) * agn_steps_per_cpu_s
    return {"pass_cpu_s": min(times), "pass_in_agn_steps": pass_steps,
            "cur_over_agn_bound": steps_per_epoch / (steps_per_epoch + pass_steps)}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import warnings

    import numpy as np
    import torch as th

    th.set_num_threads(1)
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    from curteach_envs import register_envs

    register_envs()
    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    makers = task_envs(tasks)
    probe = makers[tasks[0]]()
    observation_space, action_space = probe.observation_space, probe.action_space
    probe.close()
    policy = wide_policy(observation_space, action_space)("cpu", 0)
    seeds = np.arange(args.episodes)
    out: dict = {"tasks": tasks, "episodes_per_task": args.episodes, "torch_threads": th.get_num_threads(),
                 "load_avg": [round(x, 2) for x in os.getloadavg()], "evaluation": {}}
    for task in tasks:
        library = library_eval(policy, makers[task], seeds)
        vector = sync_vector_eval(policy, makers[task], seeds)
        out["evaluation"][task] = {"library": library, "sync_vector_env": vector,
                                   "ratio": library["steps_per_s"] / vector["steps_per_s"]}
        print(f"evaluation {task:12s} library {library['steps_per_s']:7,.0f} env steps/s "
              f"({library['steps_per_cpu_s']:,.0f} per CPU s), SyncVectorEnv {vector['steps_per_s']:7,.0f} "
              f"({vector['steps_per_cpu_s']:,.0f} per CPU s): ratio "
              f"{library['steps_per_s'] / vector['steps_per_s']:.2f}"
              f" ({library['steps']:,} and {vector['steps']:,} steps)", flush=True)
    trajectories, ranks = expert_trajectories(tasks, args.demos)
    bc = bc_figures(args, trajectories, ranks, observation_space, action_space)
    out["bc"] = bc
    for suffix, unit in (("", "s"), ("_cpu", "CPU s")):
        rate = bc[f"steps_per{suffix}_s"]
        print(f"BC (mlp-256, batches of 256, {bc['transitions']:,} transitions, {bc['steps_per_epoch']} steps per "
              f"epoch) per {unit}: Agn {rate['Agn']:,.0f} steps, Cur {rate['Cur']:,.0f}, bare loop "
              f"{rate['bare']:,.0f}: Agn/bare {bc[f'agn_ratio{suffix}']:.2f} (goal >= {GOALS['agn_ratio']}), "
              f"Cur/bare {bc[f'cur_ratio{suffix}']:.2f} (goal >= {GOALS['cur_ratio']})", flush=True)
    print(f"Cur's learner-difficulty pass over the pool: {bc['pass_cpu_s'] * 1e3:.0f} ms of CPU = "
          f"{bc['pass_in_agn_steps']:.1f} of Agn's steps per epoch of {bc['steps_per_epoch']}, so Cur/Agn <= "
          f"{bc['cur_over_agn_bound']:.2f} (measured Cur/Agn per CPU s: "
          f"{bc['steps_per_cpu_s']['Cur'] / bc['steps_per_cpu_s']['Agn']:.2f})", flush=True)
    out["load_avg_end"] = [round(x, 2) for x in os.getloadavg()]
    if args.json:
        print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
