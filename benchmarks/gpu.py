"""The learners on one GPU against bare PyTorch loops measured in the same run (issue 40, deliverable 4).

Prints a compact table and writes its figures as JSON (to ``$OUT/gpu.json`` when the environment variable ``OUT`` is
set, else to ``--json PATH`` if given). Finishes in under 5 minutes on one GPU. Everything trains on ``cuda`` (or on
the CPU with ``--allow-cpu``, to try the script: ``--allow-cpu --quick`` takes about a minute):

1. **Training pairs/s** of three learners through imitation's ``BC`` and ``CurriculumBC``, Agn and Cur (Cur's
   figure includes its learner-difficulty pass at every epoch's start), against a bare loop of the same network
   (its own forward, the cross-entropy or Gaussian negative log-likelihood, ``backward``, the same optimizer, data
   already on the device, batches drawn by ``torch.randint`` on the device) at the library's mean batch size:

   * ``nav-cnn``: the navigation CNN (``learners/networks.py``) on the paper-size shortest-path dataset (seed 0,
     generated into ``results/nav-datasets/`` if missing; ``--quick``: the small one), as ``curteach nav`` builds
     it (SGD at 0.01, batches of 32 whole demonstrations, the original loss); also Agn with the nav run's own
     per-step watchers (divergence check, features, loss; ``nav run`` in the table);
   * ``babyai-film``: BabyAI's FiLM network (``learners/babyai.py``) on synthetic encoded observations (8,000
     demonstrations of 3-12 steps, 60k pairs, like the ladder's 58,857), Adam at 1e-3, batches of 256 transitions,
     230 steps per epoch;
   * ``metaworld-mlp``: a Gaussian MLP (SB3's ``ActorCriticPolicy``, ``net_arch=dict(pi=[256, 256], vf=[])``) on
     Meta-World-sized synthetic demonstrations (observations of 49 = 39 state + a one-hot of 10 tasks, actions in
     ``Box(-1, 1, (4,))``; 500 demonstrations of 100 steps), Adam at 1e-3, batches of 256.

2. **The learner-difficulty pass** over the navigation training set and **nav's test and validation
   evaluations** (best of 3).
3. **Concurrent runs**: N navigation Agn runs of the same length (on the first 2,000 training demonstrations),
   each in its own worker of the library's process pool (spawned, one math thread each, as ``--workers`` runs
   them), N = 1, 4, 8 at once on the one GPU: the wall time of the N against one, and the speed-up
   ``S_N = N * t_1 / t_N`` (N would be perfect); once with each count of torch threads per worker in
   ``--worker-threads`` (1 and 2: whether the library's one thread per worker is the faster).
4. **Extrapolations** to one GPU (``--max-concurrent`` runs at a time, 8 by default), from the figures above::

       one run  = B / steps_per_s(curriculum) + evaluations + per-epoch evaluations
       a sweep  = sum over its runs of one run / S_8

   with ``steps_per_s`` Agn's for Agn and Cur-T and Cur's (its difficulty passes included) for Cur and Cur-L (for
   navigation, as a nav run trains: with its per-step watchers, Cur's rate slowed by as much as Agn's).
   Figs. 6-7 whole: 4 curricula x 5 runs on shortest path (B = 11,000) and on TSP (B = 6,000; TSP's steps assumed
   to cost what shortest path's do), evaluation (validation + test) every 100 batches and at every epoch's end
   (528 batches per epoch). The BabyAI ladder: 4 curricula x 5 runs x 3,000 steps of the FiLM network; the
   Meta-World ladder: 4 curricula x 10 runs x 3,000 steps of the MLP (``--metaworld-steps``); their evaluations
   step environments on the CPU (minigrid, MuJoCo) and are not in the figure.

Without a GPU (and without ``--allow-cpu``) it says so in one line and exits with status 2.

    python benchmarks/gpu.py [--allow-cpu] [--quick] [--seconds S] [--json PATH] [--concurrent 1,4,8]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NAV_DATASET = ROOT / "results" / "nav-datasets" / "shortest_path-paper-seed0.npz"
#: issue 40's goals: library / bare pairs/s, and minutes on one GPU
GOALS = {"agn_ratio": 0.75, "cur_ratio": 0.6, "figs67_min": 15.0, "babyai_min": 10.0, "metaworld_min": 15.0}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--allow-cpu", action="store_true", help="run on the CPU when torch sees no GPU (a try-out)")
    parser.add_argument("--quick", action="store_true",
                        help="small data, short timings, 1 and 2 concurrent runs (about a minute on a CPU)")
    parser.add_argument("--seconds", type=float, default=None, help="timed seconds per figure (default 6; quick 1)")
    parser.add_argument("--concurrent", default=None, help="concurrent runs to time (default 1,4,8; quick 1,2)")
    parser.add_argument("--max-concurrent", type=int, default=8, help="runs at a time in the extrapolations")
    parser.add_argument("--metaworld-steps", type=int, default=3000, help="steps per Meta-World run (default 3000)")
    parser.add_argument("--dataset", type=Path, default=None, help="the shortest-path dataset (.npz)")
    parser.add_argument("--json", type=Path, default=None, help="write the figures here (default $OUT/gpu.json)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads of this process (default 1)")
    parser.add_argument("--worker-threads", default="1,2",
                        help="torch threads per worker of the concurrent runs, each timed (default 1,2: the "
                        "library's workers take 1)")
    args = parser.parse_args(argv)
    args.seconds = args.seconds if args.seconds is not None else (1.0 if args.quick else 6.0)
    concurrent = args.concurrent or ("1,2" if args.quick else "1,4,8")
    try:
        args.concurrent = sorted({int(n) for n in concurrent.split(",")})
        args.worker_threads = sorted({int(n) for n in args.worker_threads.split(",")})
    except ValueError:
        parser.error(f"--concurrent and --worker-threads take comma-separated integers; got {concurrent!r} and "
                     f"{args.worker_threads!r}")
    if (args.seconds <= 0 or args.threads < 1 or args.max_concurrent < 1 or min(args.concurrent) < 1
            or min(args.worker_threads) < 1):
        parser.error("--seconds, --threads, --max-concurrent, --concurrent and --worker-threads must be positive")
    return args


class Clock:
    """Wall seconds of a block, waiting for the device before reading the clock."""

    def __init__(self, device: str):
        import torch

        self.sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)

    def __call__(self, fn):
        self.sync()
        start = time.perf_counter()
        out = fn()
        self.sync()
        return out, time.perf_counter() - start

    def best(self, fn, repeats: int = 3) -> float:
        return min(self(fn)[1] for _ in range(repeats))


# ------------------------------------------------------------------------------------------------ the learners
def nav_data(args: argparse.Namespace):
    """``(path, digest, PreparedDataset)`` of the shortest-path dataset (generated if missing)."""
    from curteach_envs.navigation.dataset import save_dataset
    from curteach_envs.navigation.generate import generate_dataset
    from curteach_teaching.experiments.nav.data import file_digest, prepare

    scale = "small" if args.quick else "paper"
    path = args.dataset or (NAV_DATASET if not args.quick else ROOT / "results" / "nav-datasets" /
                            "shortest_path-small-seed0.npz")
    if not path.is_file():
        print(f"generating the {scale} shortest-path dataset into {path} ...", flush=True)
        path.parent.mkdir(parents=True, exist_ok=True)
        save_dataset(generate_dataset("shortest_path", scale, seed=0, progress=False), path)
    digest = file_digest(path)
    return path, digest, prepare(path, digest)


def nav_learner(data, variant: str, device: str, seed: int = 0):
    """``(curriculum, policy, n_epochs)``: run ``seed`` of ``variant`` as ``curteach nav`` builds it, without the
    run's callbacks (the learning-rate schedule only)."""
    import numpy as np

    from curteach_teaching.experiments.nav.parts import nav_curriculum, nav_trainer
    from curteach_teaching.learners.networks import NavigationCNNPolicy

    policy = NavigationCNNPolicy.for_navigation(seed=seed, device=device)
    trainer = nav_trainer(policy, learning_rate=0.01, batch_size=32, rng=np.random.default_rng(seed), device=device)
    return nav_curriculum(trainer, data, variant=variant, rng=np.random.default_rng(seed + 1)), policy, 40


def film_pool(n_demos: int, seed: int = 0):
    """Synthetic BabyAI demonstrations in the FiLM policy's encoding: ``(trajectories, teacher (N,))``."""
    import numpy as np
    from imitation.data import types

    from curteach_teaching.learners.babyai import N_ACTIONS
    from curteach_teaching.learners.babyai_vocab import MAX_MISSION_TOKENS, VOCABULARY

    rng = np.random.default_rng(seed)
    trajectories, teacher = [], []
    for _ in range(n_demos):
        steps = int(rng.integers(3, 13))
        image = np.stack([rng.integers(0, 11, (steps + 1, 7, 7)), rng.integers(0, 6, (steps + 1, 7, 7)),
                          rng.integers(0, 3, (steps + 1, 7, 7))], axis=-1).astype(np.uint8)
        words = int(rng.integers(3, 11))
        mission = np.zeros((steps + 1, MAX_MISSION_TOKENS), dtype=np.int64)
        mission[:, :words] = rng.integers(2, len(VOCABULARY), words)
        obs = types.DictObs({"direction": rng.integers(0, 4, steps + 1).astype(np.int64), "image": image,
                             "mission": mission})
        trajectories.append(types.Trajectory(obs=obs, acts=rng.integers(0, N_ACTIONS, steps), infos=None,
                                             terminal=True))
        teacher.append(-float(steps))
    return trajectories, np.asarray(teacher)


def mlp_pool(n_demos: int, steps: int, seed: int = 0):
    """Synthetic Meta-World-sized demonstrations: 39 state dimensions and a one-hot of 10 tasks, 4-D actions in
    [-1, 1]: ``(trajectories, teacher (N,))``."""
    import numpy as np
    from imitation.data import types

    rng = np.random.default_rng(seed)
    trajectories, teacher = [], []
    for j in range(n_demos):
        state = rng.normal(size=(steps + 1, 39)).astype(np.float32)
        task = np.zeros((steps + 1, 10), dtype=np.float32)
        task[:, j % 10] = 1.0
        acts = np.clip(rng.normal(scale=0.5, size=(steps, 4)), -1, 1).astype(np.float32)
        trajectories.append(types.Trajectory(obs=np.concatenate([state, task], axis=1), acts=acts, infos=None,
                                             terminal=True))
        teacher.append(-float(j % 10))  # the task's rank on a ladder
    return trajectories, np.asarray(teacher)


def film_policy(device: str, seed: int):
    from curteach_teaching.learners.babyai import BabyAIFiLMPolicy

    return BabyAIFiLMPolicy.for_babyai(seed=seed, device=device)


def mlp_policy(device: str, seed: int):
    import gymnasium as gym
    import numpy as np
    import torch as th
    from stable_baselines3.common.policies import ActorCriticPolicy

    with th.random.fork_rng(devices=[]):
        th.manual_seed(seed)
        policy = ActorCriticPolicy(gym.spaces.Box(-np.inf, np.inf, (49,), np.float32),
                                   gym.spaces.Box(-1.0, 1.0, (4,), np.float32), lambda _: 0.0,
                                   net_arch=dict(pi=[256, 256], vf=[]))
    return policy.to(device)


def bc_learner(trajectories, teacher, make_policy, variant: str, device: str, steps_per_epoch: int, seed: int = 0):
    """``(curriculum, policy, n_epochs)``: imitation's BC (Adam at 1e-3, batches of 256) through ``CurriculumBC``
    with an equal budget of ``steps_per_epoch`` per epoch, as ``dataset-bc`` trains."""
    import numpy as np
    import torch as th
    from imitation.algorithms.bc import BC

    from curteach_teaching.curriculum.adapters.bc import CurriculumBC
    from curteach_teaching.learners.quiet_logger import silent_logger

    policy = make_policy(device, seed)
    trainer = BC(observation_space=policy.observation_space, action_space=policy.action_space, policy=policy,
                 rng=np.random.default_rng(seed), batch_size=256, optimizer_cls=th.optim.Adam,
                 optimizer_kwargs={"lr": 1e-3}, device=device, custom_logger=silent_logger())
    curriculum = CurriculumBC(trainer, trajectories, variant=variant, teacher=teacher if variant != "Agn" else None,
                              rng=np.random.default_rng(seed + 1), log=False, steps_per_epoch=steps_per_epoch)
    return curriculum, policy, 20


def train_epochs(clock: Clock, curriculum, n_epochs: int, seconds: float, cap: int | None, start: int = 1):
    """Whole epochs (each cut at ``cap`` steps) until ``seconds`` have passed: ``(pairs, steps, wall, epochs)``."""
    pairs = steps = epochs = 0

    def run():
        nonlocal pairs, steps, epochs
        began = time.perf_counter()
        while True:
            position = min(start + epochs, n_epochs)
            record = curriculum.train_epoch(position, n_epochs,
                                            max_steps=None if cap is None else curriculum.step + cap)
            pairs, steps, epochs = pairs + record.n_transitions, steps + record.n_batches, epochs + 1
            if time.perf_counter() - began >= seconds:
                return

    _, wall = clock(run)
    return pairs, steps, wall, epochs


def library_rate(clock: Clock, build, seconds: float, cap: int | None, warm: int) -> dict:
    """pairs/s and steps/s of a fresh learner, after one warm-up epoch of at most ``warm`` steps."""
    curriculum, policy, n_epochs = build()
    policy.set_training_mode(True)
    train_epochs(clock, curriculum, n_epochs, 0.0, warm)
    pairs, steps, wall, epochs = train_epochs(clock, curriculum, n_epochs, seconds, cap, start=2)
    return {"pairs_per_s": pairs / wall, "steps_per_s": steps / wall, "pairs_per_step": pairs / steps,
            "steps": steps, "epochs": epochs, "seconds": wall, "curriculum": curriculum}


def bare_rate(clock: Clock, policy, obs, acts, batch: int, optimizer, loss_of, seconds: float) -> dict:
    """A bare loop over tensors on the device: pairs/s at batch ``batch``."""
    import torch as th

    device = acts.device
    generator = th.Generator(device=device)
    generator.manual_seed(0)
    n = acts.shape[0]
    policy.set_training_mode(True)

    def steps(k: int) -> None:
        for _ in range(k):
            index = th.randint(n, (batch,), device=device, generator=generator)
            o = {key: value[index] for key, value in obs.items()} if isinstance(obs, dict) else obs[index]
            loss = loss_of(policy, o, acts[index])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()

    clock(lambda: steps(5))
    done = 0

    def run():
        nonlocal done
        began = time.perf_counter()
        while time.perf_counter() - began < seconds:
            steps(10)
            done += 10

    _, wall = clock(run)
    return {"pairs_per_s": done * batch / wall, "steps_per_s": done / wall, "batch": batch, "steps": done,
            "seconds": wall}


def logits_loss(policy, obs, acts):
    import torch.nn.functional as F

    return F.cross_entropy(policy.action_logits(obs), acts.long())


def gaussian_loss(policy, obs, acts):
    import math

    latent = policy.mlp_extractor.forward_actor(policy.extract_features(obs))
    mean, log_std = policy.action_net(latent), policy.log_std
    z = (acts - mean) * (-log_std).exp()
    return (0.5 * z.square() + log_std + 0.5 * math.log(2 * math.pi)).sum(dim=1).mean()


def pool_tensors(trajectories, device: str):
    """The flattened pool as tensors on ``device``: ``(obs or {key: obs}, acts)``."""
    from imitation.data import rollout

    from curteach_teaching.curriculum.resident import ResidentPool

    flat = rollout.flatten_trajectories(trajectories)
    pool = ResidentPool(flat.obs, flat.acts, [0] * len(flat.acts), device)
    return (dict(pool.obs) if isinstance(pool.obs, dict) else pool.obs), pool.acts


# ------------------------------------------------------------------------------------- concurrent runs (workers)
_WORKER: dict = {}


def concurrent_task(task: tuple) -> dict:
    """In a pool worker: ``("prepare", trajectories, device)`` builds an Agn navigation learner on them once (as
    ``curteach nav`` does); ``("train", steps, threads)`` trains that many steps of it on that many torch threads
    and says how long they took."""
    if task[0] == "prepare":
        import numpy as np
        import torch

        from curteach_teaching.curriculum.adapters.bc import CurriculumBC
        from curteach_teaching.experiments.nav.parts import nav_trainer
        from curteach_teaching.learners.networks import NavigationCNNPolicy

        _, trajectories, device = task
        began = time.perf_counter()
        policy = NavigationCNNPolicy.for_navigation(seed=0, device=device)
        trainer = nav_trainer(policy, learning_rate=0.01, batch_size=32, rng=np.random.default_rng(0), device=device)
        curriculum = CurriculumBC(trainer, trajectories, variant="Agn", rng=np.random.default_rng(1),
                                  batch_unit="demonstrations", demos_per_batch=32, loss="original")
        policy.set_training_mode(True)
        _WORKER.update(curriculum=curriculum, clock=Clock(device), pending=[])
        return {"prepare_s": time.perf_counter() - began, "threads": torch.get_num_threads(),
                "device": str(policy.device)}
    import torch

    torch.set_num_threads(task[2])
    curriculum, clock, pending = _WORKER["curriculum"], _WORKER["clock"], _WORKER["pending"]

    def run():
        done = 0
        while done < task[1]:
            if not pending:
                pending.extend(curriculum.epoch_batches(curriculum.select(1, 40)[0]))
            take = pending[: task[1] - done]
            del pending[: len(take)]
            done += curriculum.train_batches(take)[1]

    _, wall = clock(run)
    return {"train_s": wall, "threads": torch.get_num_threads()}


def concurrency(args, trajectories, device: str, steps: int) -> dict:
    """The wall time of N concurrent runs of ``steps`` steps each, N in ``args.concurrent``, on (a part of) the
    navigation demonstrations (the step's cost does not depend on the pool's size), with each count of torch threads
    per worker in ``args.worker_threads``: the top-level figures are those of the first count (the library's
    workers take one thread), ``by_threads`` holds every count's."""
    from curteach_teaching.sweeps.backends import enter_worker
    from curteach_teaching.sweeps.process_pool import WorkerPool

    most = max(args.concurrent)
    pool = WorkerPool(most, concurrent_task, initializer=enter_worker)
    try:
        def each(tasks: list) -> tuple[list, float]:
            began = time.perf_counter()
            for task in tasks:
                pool.submit(task)
            answers = []
            for event in pool.events(0.01):
                if event.died or event.error is not None:
                    raise RuntimeError(f"a concurrent run failed: {event.error or event.exit_code}")
                answers.append(event.result)
            return answers, time.perf_counter() - began

        prepared, prepare_wall = each([("prepare", trajectories, device)] * most)
        out = {"steps_per_run": steps, "prepare_wall_s": prepare_wall, "demonstrations": len(trajectories),
               "worker_threads": sorted({p["threads"] for p in prepared}),
               "worker_devices": sorted({p["device"] for p in prepared})}
        each([("train", max(1, steps // 10), args.worker_threads[0])] * most)  # first steps (kernels, caches)
        out["by_threads"] = {}
        for threads in args.worker_threads:
            walls, figures = {}, {}
            for n in args.concurrent:
                answers, wall = each([("train", steps, threads)] * n)
                if {a["threads"] for a in answers} != {threads}:
                    raise RuntimeError(f"a worker did not take {threads} threads: {answers}")
                walls[n] = wall
                figures[f"wall_{n}_s"] = wall
                figures[f"mean_run_train_{n}_s"] = sum(a["train_s"] for a in answers) / n
            for n in args.concurrent:
                figures[f"speedup_{n}"] = n * walls[min(args.concurrent)] / walls[n] / min(args.concurrent)
            out["by_threads"][threads] = figures
        out.update(out["by_threads"][args.worker_threads[0]])
        return out
    finally:
        pool.close()


# ---------------------------------------------------------------------------------------------- extrapolations
def extrapolate(figures: dict, args: argparse.Namespace) -> dict:
    """Minutes on one GPU (see the module docstring for the formula)."""
    conc = figures["concurrency"]
    n = max(k for k in args.concurrent if k <= args.max_concurrent)
    speedup = conc[f"speedup_{n}"]
    nav = figures["learners"]["nav-cnn"]
    # a nav run also watches every step (divergence, features, loss): its own Agn rate, and Cur's slowed alike
    watched = nav["agn_run"]["steps_per_s"] / nav["agn"]["steps_per_s"]
    agn, cur = nav["agn_run"]["steps_per_s"], nav["cur"]["steps_per_s"] * watched
    evaluation = figures["nav_eval"]["val_s"] + figures["nav_eval"]["test_s"]

    def nav_run(batches: int, rate: float) -> float:
        points = batches // 100 + 1 + -(-batches // 528)  # every 100 batches, before the first, every epoch's end
        return batches / rate + points * evaluation

    figs = sum(5 * (2 * nav_run(b, agn) + 2 * nav_run(b, cur)) for b in (11000, 6000))
    out = {"speedup_used": speedup, "concurrent_used": n,
           "figs67_min": figs / speedup / 60.0,
           "figs67_formula": "sum over SP (11,000) and TSP (6,000) of 5 x [2 x run(Agn rate) + 2 x run(Cur rate)] / "
                             "S_N; run = B / steps_per_s + (B/100 + 1 + ceil(B/528)) x (val + test evaluation); "
                             "Agn rate: the nav run's (its per-step watchers); Cur rate: Cur's x (nav run / Agn)"}
    for name, runs, steps in (("babyai", 5, 3000), ("metaworld", 10, args.metaworld_steps)):
        learner = figures["learners"]["babyai-film" if name == "babyai" else "metaworld-mlp"]
        total = runs * (2 * steps / learner["agn"]["steps_per_s"] + 2 * steps / learner["cur"]["steps_per_s"])
        out[f"{name}_min"] = total / speedup / 60.0
        out[f"{name}_formula"] = (f"{runs} runs x [2 x {steps} / Agn steps_per_s + 2 x {steps} / Cur steps_per_s] "
                                  "/ S_N; training and difficulty passes only (evaluation steps CPU environments)")
    return out


# ------------------------------------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    import torch

    if not torch.cuda.is_available() and not args.allow_cpu:
        print("benchmarks/gpu.py: torch sees no GPU (try it on the CPU with --allow-cpu --quick)", file=sys.stderr)
        return 2
    import warnings

    warnings.filterwarnings("ignore", category=DeprecationWarning)
    torch.set_num_threads(args.threads)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    clock = Clock(device)
    began = time.perf_counter()
    figures: dict = {
        "device": torch.cuda.get_device_name() if device == "cuda" else f"CPU ({platform.processor() or 'cpu'})",
        "torch": torch.__version__, "cuda": torch.version.cuda, "cpus": os.cpu_count(), "quick": args.quick,
        "seconds_per_figure": args.seconds, "threads": torch.get_num_threads(), "learners": {},
    }
    say = lambda text: print(text, flush=True)  # noqa: E731
    say(f"{figures['device']}, torch {figures['torch']} (CUDA {figures['cuda']}), {figures['cpus']} CPUs; "
        f"{args.seconds:g} s per figure")

    cap = 40 if args.quick else None
    warm = 5 if args.quick else 20
    path, digest, data = nav_data(args)
    say(f"nav: {len(data.trajectories):,} demonstrations, {sum(len(t.acts) for t in data.trajectories):,} pairs")
    n_film, n_mlp, mlp_steps = (400, 60, 50) if args.quick else (8000, 500, 100)
    film, film_teacher = film_pool(n_film)
    mlp, mlp_teacher = mlp_pool(n_mlp, mlp_steps)
    film_epoch = max(1, sum(len(t.acts) for t in film) // 256)
    mlp_epoch = max(1, n_mlp * mlp_steps // 256)
    specs = {
        "nav-cnn": (lambda v: nav_learner(data, v, device), data.trajectories, logits_loss,
                    lambda p: torch.optim.SGD(p.parameters(), lr=0.01)),
        "babyai-film": (lambda v: bc_learner(film, film_teacher, film_policy, v, device, film_epoch), film,
                        logits_loss, lambda p: torch.optim.Adam(p.parameters(), lr=1e-3)),
        "metaworld-mlp": (lambda v: bc_learner(mlp, mlp_teacher, mlp_policy, v, device, mlp_epoch), mlp,
                          gaussian_loss, lambda p: torch.optim.Adam(p.parameters(), lr=1e-3)),
    }
    rows = []
    for name, (build, trajectories, loss_of, optimizer_of) in specs.items():
        agn = library_rate(clock, lambda b=build: b("Agn"), args.seconds, cap, warm)
        cur = library_rate(clock, lambda b=build: b("Cur"), args.seconds, cap, warm)
        _, policy, _ = build("Agn")
        obs, acts = pool_tensors(trajectories, device)
        batch = int(round(agn["pairs_per_step"]))
        bare = bare_rate(clock, policy, obs, acts, batch, optimizer_of(policy), loss_of, args.seconds)
        entry = {"bare": bare}
        for key, rate in (("agn", agn), ("cur", cur)):
            rate.pop("curriculum")
            entry[key] = {**rate, "ratio": rate["pairs_per_s"] / bare["pairs_per_s"]}
        figures["learners"][name] = entry
        rows.append((name, bare["pairs_per_s"], agn["pairs_per_s"], entry["agn"]["ratio"], cur["pairs_per_s"],
                     entry["cur"]["ratio"], batch))
        say(f"  {name}: bare {bare['pairs_per_s']:,.0f}, Agn {agn['pairs_per_s']:,.0f} "
            f"({entry['agn']['ratio']:.2f}), Cur {cur['pairs_per_s']:,.0f} ({entry['cur']['ratio']:.2f}) pairs/s")

    # nav's run as `curteach nav` trains it (its per-step watchers), the difficulty pass and the evaluations
    from curteach_teaching.experiments.nav.evaluation import evaluate_split
    from curteach_teaching.experiments.nav.experiment import NavExperiment
    from curteach_teaching.experiments.nav.run import NavRun
    from curteach_teaching.sweeps.backends import run_seed_sequence

    experiment = NavExperiment(dataset=str(path), dataset_digest=digest, curricula=("Agn",), device=device)
    run = NavRun.build(experiment, "Agn", 0, run_seed_sequence(0, 0))
    # the run's per-step watchers (divergence check, features, loss), without its evaluations (timed below)
    watchers = type("Watchers", (), {"on_batch": staticmethod(run.on_batch)})()
    run.curriculum.callbacks = [c for c in run.curriculum.callbacks
                                if c is not run and getattr(c, "fn", None) != run.evaluate] + [watchers]
    run.policy.set_training_mode(True)
    train_epochs(clock, run.curriculum, 40, 0.0, warm)
    pairs, steps, wall, _ = train_epochs(clock, run.curriculum, 40, args.seconds, cap, start=2)
    nav = figures["learners"]["nav-cnn"]
    nav["agn_run"] = {"pairs_per_s": pairs / wall, "steps_per_s": steps / wall,
                      "ratio": pairs / wall / nav["bare"]["pairs_per_s"]}
    rows.append(("nav-cnn, nav run", nav["bare"]["pairs_per_s"], pairs / wall, nav["agn_run"]["ratio"], None, None,
                 int(round(pairs / steps))))
    difficulty = clock.best(run.curriculum.learner_difficulty)
    val = clock.best(lambda: evaluate_split(run.policy, data.val, device=device, batch=run.evaluator.val_batch))
    test = clock.best(lambda: evaluate_split(run.policy, data.test, device=device, batch=run.evaluator.test_batch))
    figures["nav_eval"] = {"difficulty_pass_s": difficulty, "val_s": val, "test_s": test,
                           "demonstrations": len(data.trajectories)}
    run.policy.set_training_mode(True)
    say(f"  nav difficulty pass {difficulty:.3f} s, validation {val:.3f} s, test {test:.3f} s")

    steps_per_run = 30 if args.quick else max(100, int(nav["agn"]["steps_per_s"] * 4))
    figures["concurrency"] = concurrency(args, data.trajectories[:2000], device, steps_per_run)
    figures["extrapolation"] = extrapolate(figures, args)
    figures["total_s"] = time.perf_counter() - began
    print_table(figures, rows, args)
    target = args.json or (Path(os.environ["OUT"]) / "gpu.json" if os.environ.get("OUT") else None)
    if target is not None:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(figures, indent=1, sort_keys=True) + "\n")
        say(f"figures written to {target}")
    return 0


def print_table(figures: dict, rows: list, args: argparse.Namespace) -> None:
    print(f"\n{figures['device']}: training pairs/s (ratio to the bare loop; goals Agn >= {GOALS['agn_ratio']}, "
          f"Cur >= {GOALS['cur_ratio']})")
    print(f"{'learner':18s} {'batch':>5s} {'bare':>10s} {'Agn':>10s} {'ratio':>6s} {'Cur':>10s} {'ratio':>6s}")
    for name, bare, agn, agn_ratio, cur, cur_ratio, batch in rows:
        cur_text = f"{cur:10,.0f} {cur_ratio:6.2f}" if cur is not None else f"{'-':>10s} {'-':>6s}"
        print(f"{name:18s} {batch:5d} {bare:10,.0f} {agn:10,.0f} {agn_ratio:6.2f} {cur_text}")
    ev = figures["nav_eval"]
    print(f"nav: difficulty pass over {ev['demonstrations']:,} demonstrations {ev['difficulty_pass_s']:.3f} s; "
          f"evaluation validation {ev['val_s']:.3f} s, test {ev['test_s']:.3f} s")
    conc = figures["concurrency"]
    for threads, figures_n in conc["by_threads"].items():
        walls = ", ".join(f"{n}: {figures_n[f'wall_{n}_s']:.1f} s (S={figures_n[f'speedup_{n}']:.2f})"
                          for n in args.concurrent)
        print(f"concurrent nav runs of {conc['steps_per_run']} steps, {threads} thread(s) per worker, wall: {walls}")
    ex = figures["extrapolation"]
    print(f"extrapolated on one such device, {ex['concurrent_used']} runs at a time (S={ex['speedup_used']:.2f}): "
          f"Figs. 6-7 {ex['figs67_min']:.1f} min (goal {GOALS['figs67_min']:g}), BabyAI ladder "
          f"{ex['babyai_min']:.1f} min (goal {GOALS['babyai_min']:g}; training only), Meta-World ladder "
          f"{ex['metaworld_min']:.1f} min (goal {GOALS['metaworld_min']:g}; training only)")
    print(f"total {figures['total_s']:.0f} s")


if __name__ == "__main__":
    sys.exit(main())
