"""Every curation score's fit time beside the ensemble's, on one pool, in one run (issue 53, deliverable 5).

For every registered trained score (the ensemble first), it runs ``curteach rank --compare SCORE`` on the pool in a
fresh output folder, so that no cached fit is read and each score pays for its own policy (``action-likelihood`` and
``action-variance`` share ``policy-loss``'s policy within one ``rank --compare``; here each trains it), and prints
the score's ``seconds`` from ``compare.json`` (its fit and scoring alone, timed by ``rank --compare``; reading the
pool and torch's first optimizer are outside it) with its ratio to the ensemble's. A score that cannot be fitted on
the pool (``demo-score`` when no rollout succeeds) is reported with its one-line error and no time. Goals: a score that
needs no environment within 2x the ensemble's fit; one that rolls out its policy in the environment (``demo-score``,
``cupid``) within 10x.

The pool: ``--dataset`` (anything ``rank`` reads), else the Meta-World mixed pool of ``docs/experiments/
metaworld.md`` (3 tasks x 100 episodes, 40 % noisy; about 56,000 steps), made here by ``make-dataset metaworld`` in a
temporary folder (about a minute of one core) where Meta-World is installed, else the scripted Pendulum example
(40 episodes of 200 steps, every third noisy). The ensemble is ``rank``'s (5 members x 500 steps of 64 unless
``--ensemble-batches``/``--batch-size`` say otherwise, fitted as one batched model); the page's committed sweep used
5 x 3,000 of 256 (``--ensemble-batches 3000 --batch-size 256``). One math thread (``OMP_NUM_THREADS=1``) unless
``--threads``. Asserts nothing.

The fair reference: every score at ``rank``'s defaults, the ensemble included (5 x 500 of 64): that is what a user's
``rank --compare`` fits, and the trained scores' own training is at its default there too (``--policy-steps``: 500
steps of ``--batch-size`` for the one policy of ``policy-loss``, ``action-likelihood`` and ``action-variance``,
16 samples per step; ``deminf``: PCA codes and the whole-pool neighbour search, no training). The committed sweep's
ensemble (``-- --ensemble-batches 3000 --batch-size 256``) is the second reference: it trains the ensemble 24 times
the rows and the one policy 4 times (the batch size is shared, its steps are not), and ``deminf`` not at all, so a
score far within 2x of it may not be within 2x of the default. Report both where their verdicts differ.

Each score is fitted in its own ``rank --compare`` (a failing score cannot stop the others), so the three scores of
one policy each pay for it here, though one ``rank --compare`` naming all three trains it once.

    python benchmarks/scores.py [--dataset PATHS] [--scores a,b,...] [--threads 1] [--json] [-- extra rank flags]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from rank import MIXED  # noqa: E402  (the Meta-World mixed pool's make-dataset flags, spelt once)

ROOT = Path(__file__).resolve().parents[1]
#: the goals of issue 53: (no environment, with an environment) x the ensemble's fit time
GOALS = (2.0, 10.0)
#: the scores that read one fitted policy (datasets.scores.fitted_policy): their seconds add up
POLICY_SCORES = ("policy-loss", "action-likelihood", "action-variance")


def parse_args() -> tuple[argparse.Namespace, list[str]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default=None, help="what rank --dataset reads (default: made here, see above)")
    parser.add_argument("--scores", default=None, help="comma-separated scores (default: every registered score)")
    parser.add_argument("--threads", type=int, default=1, help="math threads (default 1)")
    parser.add_argument("--json", action="store_true", help="print one JSON object (and nothing else)")
    args, extra = parser.parse_known_args()
    if args.threads < 1:
        parser.error("--threads must be >= 1")
    return args, [flag for flag in extra if flag != "--"]


def curteach(*flags: str, env: dict) -> subprocess.CompletedProcess:
    """``python -m curteach_teaching.cli FLAGS`` in this checkout (its output captured)."""
    return subprocess.run([sys.executable, "-m", "curteach_teaching.cli", *flags], env=env, cwd=ROOT,
                          capture_output=True, text=True)


def default_pool(folder: Path, env: dict) -> tuple[str, str]:
    """``(dataset flag, what it is)``: the Meta-World mixed pool where Meta-World imports, else scripted Pendulum."""
    import importlib.util

    if importlib.util.find_spec("metaworld") is None:
        root = folder / "minari"
        env["MINARI_DATASETS_PATH"] = str(root)
        done = subprocess.run([sys.executable, str(ROOT / "examples" / "datasets" / "scripted_pendulum.py"),
                               "--root", str(root), "--episodes", "40"], env=env, capture_output=True, text=True)
        if done.returncode:
            raise SystemExit(f"scripted_pendulum.py failed: {done.stderr.strip().splitlines()[-1:]}")
        return "pendulum/scripted-v0", "the scripted Pendulum example (40 episodes of 200 steps)"
    made = curteach("make-dataset", "metaworld", *MIXED, "--out", str(folder / "mixed"), env=env)
    if made.returncode:
        raise SystemExit(f"make-dataset failed: {made.stderr.strip().splitlines()[-1:]}")
    paths = sorted(str(p) for p in (folder / "mixed").iterdir())
    return ",".join(paths), "the Meta-World mixed pool (3 tasks x 100 episodes, 40 % noisy)"


def registered_scores() -> tuple[list[str], set[str]]:
    """``(every trained score's name, ensemble first; the names that need an environment)``."""
    from curteach_teaching.datasets.scores.registry import TASK_SCORES, trained_names

    names = sorted(trained_names(), key=lambda name: name != "ensemble")
    return names, {name for name in names if getattr(TASK_SCORES.load(name)[1], "needs_env", False)}


def main() -> None:
    args, extra = parse_args()
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads), "MKL_NUM_THREADS": str(args.threads),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    trained, needs_env = registered_scores()
    names = args.scores.split(",") if args.scores else trained
    if "ensemble" not in names:
        names = ["ensemble", *names]
    with tempfile.TemporaryDirectory(prefix="curteach-bench-scores-") as tmp:
        folder = Path(tmp)
        dataset, what = (args.dataset, args.dataset) if args.dataset else default_pool(folder, env)
        results, episodes = {}, None
        for name in names:
            out = folder / f"rank-{name}"
            done = curteach("rank", "--dataset", dataset, "--compare", name, "--out", str(out), "--no-progress",
                            *extra, env=env)
            if done.returncode:
                lines = done.stderr.strip().splitlines() or [f"exit {done.returncode}"]
                results[name] = {"seconds": None, "error": lines[-1], "goal": GOALS[name in needs_env]}
                continue
            report = json.loads((out / "compare.json").read_text())
            episodes = report["episodes"]
            results[name] = {"seconds": report["scores"][name]["seconds"], "goal": GOALS[name in needs_env]}
    base = results["ensemble"]["seconds"]
    if base is None:
        raise SystemExit(f"the ensemble could not be fitted: {results['ensemble']['error']}")
    for row in results.values():
        row["over_ensemble"] = None if row["seconds"] is None else row["seconds"] / base
    if args.json:
        print(json.dumps({"pool": what, "episodes": episodes, "threads": args.threads, "extra_flags": extra,
                          "scores": results}))
        return
    print(f"each score's fit on {what} ({episodes} episodes), {args.threads} math thread(s), one rank --compare "
          f"per score{' with ' + ' '.join(extra) if extra else ''}")
    print(f"{'score':<20} {'seconds':>9} {'x ensemble':>11} {'goal':>6}")
    for name, row in results.items():
        if row["seconds"] is None:
            print(f"{name:<20} {'-':>9} {'-':>11} {row['goal']:5.0f}x  not fitted: {row['error']}")
            continue
        met = "" if name == "ensemble" else ("  met" if row["over_ensemble"] <= row["goal"] else "  NOT met")
        print(f"{name:<20} {row['seconds']:9.2f} {row['over_ensemble']:10.2f}x {row['goal']:5.0f}x{met}")


if __name__ == "__main__":
    main()
