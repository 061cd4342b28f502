"""The learners' speed on a CPU: each dataset learner's training step against a bare PyTorch loop of the same network
and loss, and the evaluator's environment steps per second with each learner on Meta-World (issue 54, item 5).

The learners are those of ``--policy`` (the learner registry, ``LearnerFactory``): ``mlp`` is the Meta-World ladder's
Gaussian MLP (``mlp-256``: two layers of 256 units, trained by imitation's ``BC``), ``diffusion`` and ``bc-rnn`` are
built with their defaults (the denoiser's three layers of 256 units, ``T = 100`` noise levels, 10 DDIM steps to act;
an LSTM of two layers of 400 units over windows of 10 steps, a mixture of 5 Gaussians), all at Meta-World's shape:
49 inputs (the 39-d state and a one-hot over MT10's tasks, float64 as the task-one-hot codec gives them) and 4 actions
in ``[-1, 1]``. On one torch thread:

1. **Training steps per second**, batches of 256 from a synthetic seeded pool of that shape:

   * ``library``: the registry's learner driven by the curricula's adapter (``learner_curriculum``, Agn, an equal
     budget of ``ceil(T / 256)`` steps per epoch, ``log=False``), the path ``dataset-bc`` trains on, whole epochs
     timed (with their selection, shuffles, batching and, for ``bc-rnn``, the windows gathered from the flat pool);
   * ``bare``: the same network and the same loss written out plainly, Adam at the learner's rate, batches drawn by
     ``torch.randint`` from a seeded generator out of tensors made once: for ``mlp`` the SB3 policy's own layers and
     BC's loss (the diagonal Gaussian's negative log-likelihood with the log deviation clamped to ``[-5, 2]``, minus
     1e-3 times its entropy); for ``diffusion`` the learner's ``Denoiser``, ``diffusers``' ``DDPMScheduler.add_noise``
     of ``torch.randn`` noise at ``torch.randint`` timesteps, the epsilon MSE; for ``bc-rnn`` an LSTM and three
     linear heads of the same sizes, the mixture's negative log-likelihood of each window's last action by a
     log-sum-exp, the windows gathered from the flat observations by a ``(T, W)`` index made once.

   One comparison times each once, alternating which goes first; ``--runs`` comparisons give the median and the
   spread (range, quartiles) of the ratio library / bare per CPU second of this process (the steadier figure on a
   shared machine) and per wall second. Issue 54's goal: at least 0.9.
2. **Evaluation env steps per second** on ``MetaWorldTask-v0`` (``--task``, observed with the one-hot over MT10,
   capped at ``--max-steps`` steps): :func:`curteach_teaching.rollouts.evaluate_policy` of ``--episodes`` seeded
   episodes with each learner, greedy, against the Gaussian MLP's. The learners are untrained (the cost measured is
   MuJoCo's and the forward pass's, not a success rate), so their episodes run to the cap; the share that does is
   printed. ``diffusion`` acts by ``ddim_steps`` denoiser passes per environment step, ``bc-rnn`` runs its LSTM over
   the episode's last 10 observations at every step (its default ``acting``). Skipped, with a line, where
   ``metaworld`` is not importable.

Prints the figures (and, with ``--json``, one JSON object); asserts nothing.

    python benchmarks/learners.py [--runs 5] [--seconds 2] [--episodes 20] [--max-steps 150] [--quick] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

#: issue 54's goal for library / bare training steps per second
GOAL = 0.9
BATCH = 256
STATE, ACTIONS = 39, 4
#: MT10's tasks, the one-hot's order (sorted, as the task-one-hot codec sorts them)
MT10 = tuple(sorted(f"{t}-v3" for t in ("reach", "push", "pick-place", "door-open", "drawer-open", "drawer-close",
                                         "button-press-topdown", "peg-insert-side", "window-open", "window-close")))
#: the learners timed: ``--policy`` name -> the name printed
LEARNERS = {"mlp-256": "mlp", "diffusion": "diffusion", "bc-rnn": "bc-rnn"}
#: BC's entropy weight (make_bc_trainer's default, which dataset-bc trains with) and the Gaussian's log-std bounds
ENT_WEIGHT, LOG_STD_MIN, LOG_STD_MAX = 1e-3, -5.0, 2.0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="alternating comparisons per learner (default 5)")
    parser.add_argument("--seconds", type=float, default=2.0,
                        help="timed seconds per figure, whole epochs for the library (default 2)")
    parser.add_argument("--demos", type=int, default=40, help="demonstrations of the synthetic pool (default 40)")
    parser.add_argument("--steps", type=int, default=100, help="steps per demonstration (default 100)")
    parser.add_argument("--task", default="push", help="the Meta-World task evaluated (default push)")
    parser.add_argument("--episodes", type=int, default=20, help="evaluation episodes per learner (default 20)")
    parser.add_argument("--max-steps", type=int, default=150, help="the episodes' step cap (default 150)")
    parser.add_argument("--quick", action="store_true",
                        help="a try-out in seconds: 1 run of 0.3 s, 4 episodes of 10 steps, a pool of 12 x 50")
    parser.add_argument("--json", action="store_true", help="also print one JSON object")
    args = parser.parse_args(argv)
    if args.quick:
        args.runs, args.seconds, args.demos, args.steps, args.episodes, args.max_steps = 1, 0.3, 12, 50, 4, 10
    if args.runs < 1 or not args.seconds > 0 or args.demos < 1 or args.steps < 1 or args.episodes < 1 \
            or args.max_steps < 1:
        parser.error("--runs, --demos, --steps, --episodes, --max-steps must be >= 1 and --seconds > 0")
    args.task = args.task if args.task.endswith("-v3") else f"{args.task}-v3"
    if args.task not in MT10:
        parser.error(f"--task must be one of MT10's: {', '.join(t.removesuffix('-v3') for t in MT10)}")
    if args.demos * args.steps < BATCH:
        parser.error(f"the pool (--demos x --steps) needs at least one batch of {BATCH} steps")
    return args


def spaces():
    """``(observation_space, action_space)`` at Meta-World's shape: 39 unbounded float64 entries and a one-hot of
    ``len(MT10)`` in ``[0, 1]``; ``Box(-1, 1, (4,), float32)``."""
    import gymnasium as gym
    import numpy as np

    low = np.concatenate([np.full(STATE, -np.inf), np.zeros(len(MT10))])
    high = np.concatenate([np.full(STATE, np.inf), np.ones(len(MT10))])
    return gym.spaces.Box(low, high, dtype=np.float64), gym.spaces.Box(-1.0, 1.0, (ACTIONS,), np.float32)


def make_pool(demos: int, steps: int, seed: int = 0) -> list:
    """``demos`` imitation ``Trajectory`` of ``steps`` steps: standard-normal float64 states with one task's one-hot
    each, actions normal (deviation 0.5) clipped to ``[-1, 1]``, float32."""
    import numpy as np
    from imitation.data import types

    rng = np.random.default_rng(seed)
    pool = []
    for task in rng.integers(0, len(MT10), demos):
        obs = np.zeros((steps + 1, STATE + len(MT10)))
        obs[:, :STATE] = rng.normal(size=(steps + 1, STATE))
        obs[:, STATE + task] = 1.0
        acts = np.clip(rng.normal(scale=0.5, size=(steps, ACTIONS)), -1, 1).astype(np.float32)
        pool.append(types.Trajectory(obs=obs, acts=acts, infos=None, terminal=True))
    return pool


def learning_rate(policy: str) -> float:
    """The rate ``dataset-bc`` trains ``policy`` at without ``--learning-rate`` (a kind's own, else 1e-3)."""
    from curteach_teaching.learners.dataset_learner import learner_kind

    return float(getattr(learner_kind(policy)[1], "default_learning_rate", 1e-3))


def build_learner(policy: str, seed: int = 0):
    import numpy as np

    from curteach_teaching.learners.dataset_learner import LearnerFactory

    observation_space, action_space = spaces()
    return LearnerFactory(policy, observation_space, action_space, batch_size=BATCH,
                          learning_rate=learning_rate(policy))(seed, rng=np.random.default_rng(seed))


def library(policy: str, pool: list, seconds: float) -> tuple[float, float]:
    """Steps per wall second and per CPU second of the registry's learner under ``learner_curriculum`` (Agn), whole
    epochs of ``ceil(T / 256)`` steps (at least one, whatever ``seconds``), after 3 steps of warm-up."""
    import numpy as np

    from curteach_teaching.curriculum.adapters.learner import learner_curriculum

    steps_per_epoch = math.ceil(sum(len(d.acts) for d in pool) / BATCH)
    curriculum = learner_curriculum(build_learner(policy), pool, batch_size=BATCH, variant="Agn",
                                    rng=np.random.default_rng(1), log=False, steps_per_epoch=steps_per_epoch)
    curriculum.train_epoch(1, 1, max_steps=3)  # warm-up (the optimizer's state, the allocator), as the bare loop's
    steps, began, cpu = 0, time.perf_counter(), time.process_time()
    while time.perf_counter() - began < seconds:
        steps += curriculum.train_epoch(1, 1).n_batches
    return steps / (time.perf_counter() - began), steps / (time.process_time() - cpu)


def pool_tensors(pool: list):
    """``(obs (T, 49), acts (T, 4), windows (T, 10))``: float32 tensors of the flat pool and each step's window of
    flat indices within its demonstration (the first step repeated before the start), made once."""
    import numpy as np
    import torch as th

    obs = th.as_tensor(np.concatenate([d.obs[:-1] for d in pool]), dtype=th.float32)
    acts = th.as_tensor(np.concatenate([d.acts for d in pool]), dtype=th.float32)
    starts = th.as_tensor(np.repeat(np.cumsum([0] + [len(d.acts) for d in pool[:-1]]), [len(d.acts) for d in pool]))
    flat = th.arange(len(acts))
    windows = th.maximum(flat[:, None] + th.arange(-9, 1)[None, :], starts[:, None])
    return obs, acts, windows


def gaussian_bc_loss(policy, obs, acts):
    """BC's loss of an SB3 Gaussian policy written out: the mean over the batch of the diagonal Gaussian's negative
    log-likelihood of ``acts`` ``(B, 4)`` given ``obs`` ``(B, 49)``, its log deviation clamped to ``[-5, 2]``, minus
    1e-3 times its entropy (state-independent, so one number for the batch)."""
    half_log_2pi = 0.5 * math.log(2 * math.pi)
    mean = policy.action_net(policy.mlp_extractor.forward_actor(policy.extract_features(obs)))
    log_std = policy.log_std.clamp(LOG_STD_MIN, LOG_STD_MAX)
    z = (acts - mean) * (-log_std).exp()
    nll = (0.5 * z.square() + log_std + half_log_2pi).sum(dim=1).mean()
    return nll - ENT_WEIGHT * (0.5 + half_log_2pi + log_std).sum()


def bare_mlp(obs, acts, windows, generator):
    """One step of the bare loop of ``mlp-256``: its layers, BC's Gaussian loss written out."""
    import torch as th

    from curteach_teaching.learners.factory import make_policy

    policy = make_policy("mlp-256", *spaces(), 0)
    optimizer = th.optim.Adam(policy.parameters(), lr=learning_rate("mlp-256"))

    def step() -> None:
        index = th.randint(len(acts), (BATCH,), generator=generator)
        loss = gaussian_bc_loss(policy, obs[index], acts[index])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    return step


def epsilon_loss(denoiser, scheduler, obs, acts, timesteps, noise):
    """The DDPM loss written out: the MSE between ``noise`` ``(B, 4)`` and the denoiser's prediction of it from
    ``acts`` noised by ``scheduler.add_noise`` at ``timesteps`` ``(B,)``, given ``obs`` ``(B, 49)``."""
    import torch.nn.functional as F

    return F.mse_loss(denoiser(scheduler.add_noise(acts, noise, timesteps), timesteps, obs), noise)


def bare_diffusion(obs, acts, windows, generator):
    """One step of the bare loop of ``diffusion``: the learner's denoiser, ``add_noise``, the epsilon MSE."""
    import torch as th
    from diffusers import DDPMScheduler

    from curteach_teaching.learners.diffusion_denoiser import Denoiser

    learner = build_learner("diffusion")  # only read for its sizes
    timesteps = learner.train_timesteps
    sizes = [m.out_features for m in learner.denoiser.mlp if isinstance(m, th.nn.Linear)][:-1]
    denoiser = Denoiser(ACTIONS, obs.shape[1], sizes, learner.denoiser.embedding_dim, th.Generator().manual_seed(0))
    scheduler = DDPMScheduler(num_train_timesteps=timesteps, beta_schedule="squaredcos_cap_v2", clip_sample=True,
                              prediction_type="epsilon")
    optimizer = th.optim.Adam(denoiser.parameters(), lr=learning_rate("diffusion"))

    def step() -> None:
        index = th.randint(len(acts), (BATCH,), generator=generator)
        t = th.randint(timesteps, (BATCH,), generator=generator)
        noise = th.randn((BATCH, ACTIONS), generator=generator)
        loss = epsilon_loss(denoiser, scheduler, obs[index], acts[index], t, noise)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    return step


def mixture_nll(lstm, heads, windows, acts, min_std: float):
    """The mixture's negative log-likelihood written out: the LSTM's last output over ``windows`` ``(B, W, 49)``, the
    heads' ``K`` log-weights (log-softmax), means (``tanh``) and deviations (``softplus + min_std``), each
    component's diagonal Gaussian log-density of ``acts`` ``(B, 4)``, their log-sum-exp, minus its batch mean."""
    import torch as th
    import torch.nn.functional as F

    rows, modes = len(acts), heads[0].out_features
    last = lstm(windows)[0][:, -1]
    log_weights = F.log_softmax(heads[0](last), dim=1)
    means = th.tanh(heads[1](last)).view(rows, modes, ACTIONS)
    stds = F.softplus(heads[2](last)).view(rows, modes, ACTIONS) + min_std
    z = (acts[:, None] - means) / stds
    component = (-0.5 * z.square() - stds.log() - 0.5 * math.log(2 * math.pi)).sum(dim=2)
    return -th.logsumexp(log_weights + component, dim=1).mean()


def bare_bc_rnn(obs, acts, windows, generator):
    """One step of the bare loop of ``bc-rnn``: an LSTM and the mixture's heads of the learner's sizes, the
    mixture's negative log-likelihood written out, the windows gathered by a ``(T, W)`` index."""
    import torch as th

    learner = build_learner("bc-rnn")  # only read for its sizes
    hidden, modes = learner.hidden_size, learner.modes
    with th.random.fork_rng(devices=[]):  # torch's global generator is left as found
        th.manual_seed(0)
        lstm = th.nn.LSTM(obs.shape[1], hidden, num_layers=learner.layers, batch_first=True)
        heads = (th.nn.Linear(hidden, modes), th.nn.Linear(hidden, modes * ACTIONS),
                 th.nn.Linear(hidden, modes * ACTIONS))
    parameters = [*lstm.parameters(), *(p for head in heads for p in head.parameters())]
    optimizer = th.optim.Adam(parameters, lr=learning_rate("bc-rnn"))

    def step() -> None:
        index = th.randint(len(acts), (BATCH,), generator=generator)
        loss = mixture_nll(lstm, heads, obs[windows[index]], acts[index], learner.min_std)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    return step


BARE = {"mlp-256": bare_mlp, "diffusion": bare_diffusion, "bc-rnn": bare_bc_rnn}


def bare(policy: str, tensors: tuple, seconds: float) -> tuple[float, float]:
    """Steps per wall second and per CPU second of the bare loop of ``policy``, after 3 steps of warm-up."""
    import torch as th

    step = BARE[policy](*tensors, th.Generator().manual_seed(0))
    for _ in range(3):
        step()
    steps, began, cpu = 0, time.perf_counter(), time.process_time()
    while time.perf_counter() - began < seconds:
        step()
        steps += 1
    return steps / (time.perf_counter() - began), steps / (time.process_time() - cpu)


def spread(values: list) -> dict:
    """The median, the quartiles and the range of ``values`` (numpy's linear quantiles)."""
    import numpy as np

    low, q1, median, q3, high = np.quantile(np.asarray(values, dtype=float), [0, 0.25, 0.5, 0.75, 1])
    return {"median": float(median), "q1": float(q1), "q3": float(q3), "min": float(low), "max": float(high),
            "runs": len(values)}


def training(args, pool: list) -> dict:
    """Every learner's ``--runs`` alternating comparisons, printed as they come, and their ratios' spreads."""
    tensors = pool_tensors(pool)
    out: dict = {}
    for policy, name in LEARNERS.items():
        runs = []
        for run in range(args.runs):
            timings = {}
            for which in (("library", "bare") if run % 2 == 0 else ("bare", "library")):
                timings[which] = (library(policy, pool, args.seconds) if which == "library"
                                  else bare(policy, tensors, args.seconds))
            (lib, lib_cpu), (raw, raw_cpu) = timings["library"], timings["bare"]
            runs.append({"library_steps_per_s": lib, "bare_steps_per_s": raw, "ratio": lib / raw,
                         "library_steps_per_cpu_s": lib_cpu, "bare_steps_per_cpu_s": raw_cpu,
                         "cpu_ratio": lib_cpu / raw_cpu})
            print(f"run {run + 1}/{args.runs} {name:9s} library {lib:7,.1f} steps/s, bare {raw:7,.1f}: ratio "
                  f"{lib / raw:.2f}; per CPU second {lib_cpu:,.1f} and {raw_cpu:,.1f}: ratio {lib_cpu / raw_cpu:.2f}",
                  flush=True)
        out[name] = {"runs": runs, "cpu_ratio": spread([r["cpu_ratio"] for r in runs]),
                     "ratio": spread([r["ratio"] for r in runs])}
        cpu, wall = out[name]["cpu_ratio"], out[name]["ratio"]
        print(f"training {name:9s} library / bare per CPU second over {args.runs} runs: median {cpu['median']:.3f} "
              f"(quartiles {cpu['q1']:.3f}-{cpu['q3']:.3f}, range {cpu['min']:.3f}-{cpu['max']:.3f}; goal >= "
              f"{GOAL}); per wall second median {wall['median']:.3f} (range {wall['min']:.3f}-{wall['max']:.3f}); "
              f"library {spread([r['library_steps_per_cpu_s'] for r in runs])['median']:,.1f} steps per CPU second",
              flush=True)
    return out


def evaluation(args) -> dict | None:
    """Each learner's env steps per wall and CPU second in ``evaluate_policy`` on the task, and its ratio to the
    Gaussian MLP's; ``None`` (with a line) where metaworld is missing."""
    try:
        import metaworld  # noqa: F401
    except ImportError as error:
        print(f"evaluation skipped: metaworld is not importable ({error})", flush=True)
        return None
    import gymnasium as gym
    import numpy as np

    from curteach_envs import register_envs
    from curteach_envs.metaworld import METAWORLD_ENV_ID
    from curteach_teaching.datasets.codecs.task_one_hot import TaskOneHot
    from curteach_teaching.rollouts import evaluate_policy

    register_envs()
    task = args.task

    def make_env():
        return TaskOneHot(gym.make(METAWORLD_ENV_ID, task=task, max_episode_steps=args.max_steps), MT10)

    began = time.perf_counter()
    probe = make_env()
    probe.reset(seed=0)
    out: dict = {"task": task, "episodes": args.episodes, "max_steps": args.max_steps,
                 "env_build_s": time.perf_counter() - began}
    probe.close()
    print(f"evaluation: building and resetting one environment takes {out['env_build_s'] * 1e3:.0f} ms (the figures "
          f"below include {args.episodes} of them)", flush=True)
    for policy, name in LEARNERS.items():
        learner = build_learner(policy)
        began, cpu = time.perf_counter(), time.process_time()
        result = evaluate_policy(learner, make_env, np.arange(args.episodes))
        wall, cpu = time.perf_counter() - began, time.process_time() - cpu
        steps = int(result.lengths.sum())
        out[name] = {"steps": steps, "steps_per_s": steps / wall, "steps_per_cpu_s": steps / cpu,
                     "at_cap": float(np.mean(result.lengths == args.max_steps))}
        if policy == "diffusion":
            out[name]["ddim_steps"] = learner.ddim_steps
        if policy == "bc-rnn":
            out[name]["acting"], out[name]["window"] = learner.acting, learner.window
    reference = out["mlp"]
    for name in LEARNERS.values():
        figure = out[name]
        figure["cpu_ratio"] = figure["steps_per_cpu_s"] / reference["steps_per_cpu_s"]
        figure["ratio"] = figure["steps_per_s"] / reference["steps_per_s"]
        # what acting costs beyond the MLP's forward pass, per env step (the env's and the evaluator's work cancel)
        figure["extra_cpu_ms_per_step"] = 1e3 * (1 / figure["steps_per_cpu_s"] - 1 / reference["steps_per_cpu_s"])
        how = {"diffusion": f", {figure.get('ddim_steps')} DDIM steps per action",
               "bc-rnn": f", acting by {figure.get('acting')} (the LSTM over {figure.get('window')} observations)"
               }.get(name, "")
        print(f"evaluation {task} {name:9s} {figure['steps_per_s']:7,.0f} env steps/s "
              f"({figure['steps_per_cpu_s']:,.0f} per CPU s), {figure['ratio']:.2f} of the Gaussian MLP's "
              f"({figure['cpu_ratio']:.2f} per CPU s, {figure['extra_cpu_ms_per_step']:+.2f} ms of CPU per env step); "
              f"{figure['steps']:,} steps, {figure['at_cap']:.0%} of "
              f"{args.episodes} untrained episodes at the cap of {args.max_steps}{how}", flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import warnings

    import torch as th

    th.set_num_threads(1)
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    out: dict = {"torch": th.__version__, "threads": th.get_num_threads(), "batch": BATCH, "goal": GOAL,
                 "runs": args.runs, "seconds": args.seconds, "pool": [args.demos, args.steps],
                 "load_avg": [round(x, 2) for x in os.getloadavg()]}
    print(f"learners at Meta-World's shape ({STATE + len(MT10)} inputs, {ACTIONS} actions), batches of {BATCH}, "
          f"a pool of {args.demos} x {args.steps} steps, one torch thread; load average "
          f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    out["training"] = training(args, make_pool(args.demos, args.steps))
    out["evaluation"] = evaluation(args)
    out["load_avg_end"] = [round(x, 2) for x in os.getloadavg()]
    if args.json:
        print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
