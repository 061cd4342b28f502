"""The docs' comparison of Scot's two variants on car-irl (docs/teaching/scot.md).

Usage, after the six sweeps of that page (``--runs 20``, init T0 and T0-T3; ``--scot-variant original``, ``bec``,
and ``bec --scot-features linear``; written to ``results/scot/car-irl-{original,bec,bec-linear}-{T0,T0-T3}``)::

    python docs/results/scot/compare.py [--results results/scot] [--out docs]

Writes ``docs/figures/scot-variants-{T0,T0-T3}.png`` (the Scot curves with Agn and Cur, all runs, t <= 60) and
prints the page's Markdown table (expected reward at a few steps, mean ± SEM, all runs and the finished subset),
then, from the run files, per variant: the range of Scot's batch size and of the minimal BEC's size, the uncovered
half-spaces, and the task types of the batch (mean starts per road).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from curteach_teaching.experiments.reports import read_summary
from curteach_teaching.plots import plot_learning_curves

INITS = ("T0", "T0-T3")
STEPS = (5, 10, 20, 50, 200)
#: folder part -> the name in the figure and the table
VARIANTS = {"original": "original", "bec": "bec (quadratic)", "bec-linear": "bec (linear)"}
STYLES = {
    "Scot original": dict(color="dimgray", linestyle="-.", marker="v"),
    "Scot bec (quadratic)": dict(color="black", linestyle="-", marker="o"),
    "Scot bec (linear)": dict(color="darkgoldenrod", linestyle="--", marker="d"),
}


def main() -> None:
    """Draw the figures and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", default="results/scot")
    parser.add_argument("--out", default="docs")
    args = parser.parse_args()
    results = Path(args.results)
    print("| init | subset | teacher | batch (median starts) | " + " | ".join(f"t = {t}" for t in STEPS) + " |")
    print("|---|---|---|---|" + "---|" * len(STEPS))
    for init in INITS:
        rows = {variant: read_summary(results / f"car-irl-{variant}-{init}" / "summary.csv")
                for variant in VARIANTS}
        sizes = {variant: json.loads((results / f"car-irl-{variant}-{init}" / "report.json").read_text())
                 ["scot_batch_size"]["median"] for variant in rows}
        curves = [dict(r, teacher=f"Scot {VARIANTS[variant]}") for variant, table in rows.items()
                  for r in table if r["teacher"] == "Scot" and r["subset"] == "all" and r["t"] <= 60]
        curves += [r for r in rows["original"] if r["teacher"] in ("Agn", "Cur") and r["subset"] == "all"
                   and r["t"] <= 60]
        plot_learning_curves(curves, Path(args.out) / "figures" / f"scot-variants-{init}.png", spacing=5, styles=STYLES,
                             title=f"MaxEnt-IRL, init {init}: Scot's variants (all runs)")
        for subset in ("all", "finished"):
            for variant, table in rows.items():
                mine = {r["t"]: r for r in table if r["teacher"] == "Scot" and r["subset"] == subset}
                cells = " | ".join(f"{mine[t]['mean']:.2f} ± {mine[t]['sem']:.2f}" for t in STEPS)
                n = mine[0]["n"]
                print(f"| {init} | {subset} (n={n}) | Scot {VARIANTS[variant]} | {sizes[variant]:g} | {cells} |")
            agn = {r["t"]: r for r in rows["original"] if r["teacher"] == "Agn" and r["subset"] == subset}
            cells = " | ".join(f"{agn[t]['mean']:.2f} ± {agn[t]['sem']:.2f}" for t in STEPS)
            print(f"| {init} | {subset} (n={agn[0]['n']}) | Agn | – | {cells} |")
    batches(results)


def batches(results: Path) -> None:
    """Print the batch sizes, BEC sizes, uncovered counts and task types of every variant, from the run files."""
    for variant, name in VARIANTS.items():
        runs = [json.loads(path.read_text())["data"]
                for path in sorted((results / f"car-irl-{variant}-T0" / "runs" / "main").glob("run_*.json"))]
        sizes = [r["extras"]["scot_batch_size"] for r in runs]
        types = np.zeros(8)
        for r in runs:
            np.add.at(types, np.asarray(r["records"]["pick_types"]["Scot"][: r["extras"]["scot_batch_size"]]), 1)
        text = f"Scot {name}, {len(runs)} roads: batch median {np.median(sizes):g} ({min(sizes)}-{max(sizes)})"
        if "scot_bec_size" in runs[0]["extras"]:
            bec = [r["extras"]["scot_bec_size"] for r in runs]
            uncovered = sum(r["extras"]["scot_uncovered"] for r in runs)
            text += f", minimal BEC median {np.median(bec):g} ({min(bec)}-{max(bec)}), uncovered {uncovered}"
        shares = ", ".join(f"T{k} {v / len(runs):.2f}" for k, v in enumerate(types) if v)
        print(f"{text}; starts per road by type: {shares}")


if __name__ == "__main__":
    main()
