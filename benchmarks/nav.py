"""Speed of the navigation learner on the paper-size shortest-path dataset (issue 11, deliverable 6).

Everything goes through the code that ``curteach nav`` runs, on one torch thread by default:

1. one validation and one test evaluation (``evaluate_split``, greedy rollouts of every task, best of ``--repeats``)
   with the freshly initialised network of run 0;
2. training throughput in state-action pairs per second: ``--batches`` optimizer steps of Agn through the experiment's
   own ``CurriculumBC`` over imitation's ``BC`` (batches of 32 whole demonstrations, the original's loss, the LR
   schedule and the curriculum-feature hook), after ``--warmup`` untimed steps; evaluation and the difficulty pass
   are not part of it;
3. the learner-difficulty pass over the whole training set (``CurriculumBC.learner_difficulty()``: all 16.9k
   demonstrations, eval mode, no grad), with the fresh and with the partly trained network;
4. the evaluations again with the partly trained network (the evaluation as used in training); ``--model`` adds
   them for a saved ``state_dict`` too (e.g. a run's ``model.pt`` artifact);
5. with ``--full-run``: one whole run, ``NavExperiment(...).run_cell("Agn", 0, ...)`` (40 epochs, evaluation every
   100 batches), timed; ``--max-batches`` stops it early (to try the path).

Wall-clock seconds are reported, with the process's CPU seconds beside them and the load average before and after:
on a shared machine the wall clock includes time spent waiting for a core. The paper-size dataset (seed 0) is
generated into results/nav-datasets/ if missing (seconds). Targets and the authors' figures (one thread): see
docs/performance.md. Prints figures; asserts nothing.

    python benchmarks/nav.py [--json] [--device cpu|cuda] [--threads 1] [--batches 300] [--repeats 3]
                             [--full-run [--max-batches N]] [--model PATH] [--dataset PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import warnings
from pathlib import Path

DATASET = Path(__file__).resolve().parents[1] / "results" / "nav-datasets" / "shortest_path-paper-seed0.npz"
#: Issue 11's targets on one thread.
TARGETS = {"train_pairs_per_s": 3250, "difficulty_pass_s": 10.0, "test_eval_s": 3.0, "full_run_s": 30 * 60.0}
#: The authors' code, one thread, the same machine class (docs/performance.md).
AUTHORS = {"train_pairs_per_s": "1,300 pairs/s", "difficulty_pass_s": "56-70 s", "test_eval_s": "7-35 s",
           "full_run_s": "about 2.5 h"}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object (and nothing else) on stdout")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--batches", type=int, default=300, help="timed training batches (default 300)")
    parser.add_argument("--warmup", type=int, default=10, help="untimed training batches before them (default 10)")
    parser.add_argument("--repeats", type=int, default=3, help="timed evaluations per split (the best is reported)")
    parser.add_argument("--seed", type=int, default=0, help="sweep seed: run 0 draws from SeedSequence([seed, 0])")
    parser.add_argument("--full-run", action="store_true", help="also time one whole Agn run (about 20-60 minutes)")
    parser.add_argument("--max-batches", type=int, default=None, help="stop the full run after this many batches")
    parser.add_argument("--model", type=Path, default=None, help="also evaluate this state_dict (e.g. a model.pt)")
    parser.add_argument("--no-skip-cycles", action="store_true", help="evaluate looping episodes to the horizon")
    parser.add_argument("--dataset", type=Path, default=DATASET)
    args = parser.parse_args()
    for name in ("threads", "batches", "repeats"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1")
    if args.warmup < 0 or (args.max_batches is not None and args.max_batches < 1):
        parser.error("--warmup must be >= 0 and --max-batches >= 1")
    return args


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else []


class Clock:
    """Wall and CPU seconds of a block; waits for the GPU before reading the clocks."""

    def __init__(self, device: str):
        import torch

        self.sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    def __call__(self, fn):
        self.sync()
        wall, cpu = time.perf_counter(), time.process_time()
        out = fn()
        self.sync()
        return out, time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    args = parse_args()
    # one math thread before torch is imported (OpenMP reads these once)
    os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = str(args.threads)
    import torch

    from curteach_envs.navigation.dataset import save_dataset
    from curteach_envs.navigation.generate import generate_dataset
    from curteach_teaching.experiments.nav.data import file_digest, prepare
    from curteach_teaching.experiments.nav.evaluation import evaluate_split
    from curteach_teaching.experiments.nav.experiment import NavExperiment
    from curteach_teaching.experiments.nav.run import NavRun
    from curteach_teaching.names import AGN
    from curteach_teaching.sweeps.backends import run_seed_sequence

    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore", message="Converting a tensor with requires_grad=True to a scalar")
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("--device cuda: torch sees no GPU")
    say = (lambda *a, **k: None) if args.json else (lambda *a, **k: print(*a, **k, flush=True))
    clock = Clock(args.device)
    out: dict = {"train_pairs_per_s": None, "difficulty_pass_s": None, "val_eval_s": None, "test_eval_s": None,
                 "full_run_s": None}
    out.update(device=args.device, threads=torch.get_num_threads(), torch=torch.__version__, cpu=cpu_model(),
               n_cpus=os.cpu_count(), load_avg_start=load())
    if args.device == "cuda":
        out["gpu"] = torch.cuda.get_device_name()
    say(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), device {args.device}, {out['cpu']} "
        f"({out['n_cpus']} CPUs); load average {' / '.join(map(str, out['load_avg_start']))} (1 / 5 / 15 min)")

    if not args.dataset.is_file():
        say(f"generating the paper-size shortest-path dataset into {args.dataset} ...")
        dataset = generate_dataset("shortest_path", "paper", seed=0, progress=False)
        args.dataset.parent.mkdir(parents=True, exist_ok=True)
        save_dataset(dataset, args.dataset)
    digest = file_digest(args.dataset)
    data, prepare_s, _ = clock(lambda: prepare(args.dataset, digest))
    if data.kind != "shortest_path":
        sys.exit(f"{args.dataset} holds {data.kind} tasks; this benchmark is for shortest path")
    n_pairs = sum(len(t.acts) for t in data.trajectories)
    say(f"dataset {args.dataset.name}: {len(data.trajectories):,} training demonstrations ({n_pairs:,} state-action "
        f"pairs); val {data.val.n_tasks:,} tasks / {data.val.n_demos:,} datapoints, test {data.test.n_tasks:,} / "
        f"{data.test.n_demos:,}; loaded and prepared in {prepare_s:.1f} s")

    # run 0 of Agn exactly as `curteach nav` builds it, without the evaluation hook (timed separately here)
    experiment = NavExperiment(dataset=str(args.dataset), dataset_digest=digest, curricula=(AGN,),
                               device=args.device)
    run = NavRun.build(experiment, AGN, 0, run_seed_sequence(args.seed, 0))
    curriculum, policy = run.curriculum, run.policy
    curriculum.callbacks = [c for c in curriculum.callbacks if getattr(c, "fn", None) != run.evaluate]
    skip_cycles = not args.no_skip_cycles

    def evaluate(key: str) -> None:
        for name, split, batch in (("val", data.val, run.evaluator.val_batch),
                                   ("test", data.test, run.evaluator.test_batch)):
            times = [clock(lambda s=split, b=batch: evaluate_split(policy, s, batch=b, device=args.device,
                                                                    skip_cycles=skip_cycles))
                     for _ in range(args.repeats)]
            result, wall, cpu = min(times, key=lambda t: t[1])
            lengths = result.task_lengths
            out[f"{name}_eval{key}_s"] = round(wall, 3)
            out[f"{name}_eval{key}_cpu_s"] = round(cpu, 3)
            out[f"{name}_eval{key}_mean_length"] = round(float(lengths.mean()), 3)
            out[f"{name}_eval{key}_mean_return"] = round(result.mean_return, 4)
            target = ""
            if name == "test":
                target = f"   target <= {TARGETS['test_eval_s']:g} s; authors {AUTHORS['test_eval_s']}"
            say(f"  {name:4s} {wall:6.2f} s (cpu {cpu:.2f} s; best of {args.repeats}: "
                f"{', '.join(f'{t[1]:.2f}' for t in times)})  mean return {result.mean_return:7.3f}, episode length "
                f"mean {lengths.mean():.2f} (max {lengths.max()}), terminated {result.task_terminated.mean():.0%}"
                f"{target}")

    say(f"evaluation, fresh network (run 0), skip_cycles={skip_cycles}:")
    evaluate("_fresh")

    def difficulty(key: str) -> None:
        scores, wall, cpu = clock(curriculum.learner_difficulty)
        out[f"difficulty_pass{key}_s"] = round(wall, 3)
        out[f"difficulty_pass{key}_cpu_s"] = round(cpu, 3)
        say(f"  {wall:6.2f} s (cpu {cpu:.2f} s) for {scores.size:,} demonstrations ({n_pairs:,} pairs), mean "
            f"log Psi^L {scores.mean():.3f}   target <= {TARGETS['difficulty_pass_s']:g} s; authors "
            f"{AUTHORS['difficulty_pass_s']}")

    say("learner-difficulty pass, fresh network:")
    difficulty("_fresh")

    pending: list = []

    def train(n: int) -> tuple[int, int]:
        """The next ``n`` batches, epoch after epoch (Agn: every demonstration, permuted): (pairs, steps)."""
        pairs = steps = 0
        while steps < n:
            if not pending:  # one epoch's batches; the run sees each through its observer as it is trained
                pending.extend(curriculum.epoch_batches(curriculum.select(1, experiment.epochs)[0]))
            take = pending[: n - steps]
            del pending[: len(take)]
            done = curriculum.train_batches(take)
            pairs, steps = pairs + done[0], steps + done[1]
        return pairs, steps

    policy.set_training_mode(True)
    train(args.warmup)
    (pairs, steps), wall, cpu = clock(lambda: train(args.batches))
    out.update(train_pairs_per_s=round(pairs / wall, 1), train_pairs_per_cpu_s=round(pairs / cpu, 1),
               train_batches=steps, train_pairs=pairs, train_s=round(wall, 3), train_cpu_s=round(cpu, 3))
    say(f"training, Agn, {steps} batches of {experiment.demos_per_batch} demonstrations ({pairs:,} pairs, after "
        f"{args.warmup} untimed), the original loss:\n  {pairs / wall:8,.0f} pairs/s ({wall:.1f} s; per CPU second "
        f"{pairs / cpu:,.0f})   target >= {TARGETS['train_pairs_per_s']:,}; authors {AUTHORS['train_pairs_per_s']}")

    say(f"learner-difficulty pass, network after {args.warmup + steps} batches:")
    difficulty("")
    say(f"evaluation, network after {args.warmup + steps} batches (as in training):")
    evaluate("")
    if args.model is not None:
        policy.load_state_dict(torch.load(args.model, map_location=args.device, weights_only=True))
        say(f"evaluation, {args.model}:")
        evaluate("_model")

    if args.full_run:
        full = NavExperiment(dataset=str(args.dataset), dataset_digest=digest, curricula=(AGN,),
                             max_batches=args.max_batches, device=args.device, progress=not args.json)
        say(f"full run: Agn run 0, {full.epochs} epochs, evaluation every {full.eval_every} batches"
            + (f", stopped after {args.max_batches} batches" if args.max_batches else "") + " ...")
        load_before = load()
        result, wall, cpu = clock(lambda: full.run_cell(AGN, 0, run_seed_sequence(args.seed, 0)))
        out.update(full_run_s=round(wall, 1), full_run_cpu_s=round(cpu, 1), full_run_batches=result.extras["batches"],
                   full_run_epochs=result.extras["epochs"], full_run_best_test=round(result.extras["best_test"], 4),
                   full_run_load_avg_start=load_before, full_run_load_avg_end=load())
        say(f"  {wall / 60:6.1f} min (cpu {cpu / 60:.1f} min) for {result.extras['batches']:,} batches, "
            f"{result.extras['epochs']} epochs, best test return {result.extras['best_test']:.3f}   target <= "
            f"{TARGETS['full_run_s'] / 60:g} min; authors {AUTHORS['full_run_s']}")
    out["load_avg_end"] = load()
    if args.json:
        print(json.dumps(out))
    else:
        say(f"load average at the end {' / '.join(map(str, out['load_avg_end']))}"
            + ("" if args.full_run else "; full run not timed (--full-run)"))


if __name__ == "__main__":
    main()
