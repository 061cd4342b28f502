"""Wall time of the real SCOT on the car MDP, step by step, against the original's stand-in.

Usage: ``python benchmarks/scot.py [--seeds 5] [--json]``.

For each of ``--seeds`` roads (the setups of car-irl runs 0, 1, ...): the BEC constraints over all 800 non-terminal
states, their de-duplication, the LP redundancy removal, the candidates' constraints and the greedy cover over the
pool's 400 trajectories, for the linear and the quadratic feature map; and the stand-in's cover of the 40 starts.
The median over the seeds is printed with the sizes (raw, unique and minimal BEC, batch). Nothing is asserted;
docs/teaching/scot.md quotes the figures.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from curteach_teaching.experiments.car.irl import CarIRLExperiment
from curteach_teaching.sweeps.backends import run_seed_sequence
from curteach_teaching.teaching import scot as S
from curteach_teaching.teaching.teachers import scot_batch


def measure(setup, kind: str) -> dict:
    mdp, policy, pool = setup.mdp, setup.expert.policy, setup.pool
    K, n, L = pool.actions.shape
    times = {}
    begin = time.perf_counter()
    psi = S.feature_map(mdp.features, kind)
    mu_sa = S.state_action_feature_expectations(mdp, policy, psi)
    raw, nonzero = S.bec_constraints(mdp, policy, psi)
    times["bec_constraints_s"] = time.perf_counter() - begin
    begin = time.perf_counter()
    units, _ = S.unique_directions(raw, nonzero=nonzero)
    times["unique_s"] = time.perf_counter() - begin
    begin = time.perf_counter()
    bec = units[S.remove_redundant(units)]
    times["redundancy_lp_s"] = time.perf_counter() - begin
    begin = time.perf_counter()
    cand, valid = S.demonstration_constraints(mdp, mu_sa, pool.states.reshape(K * n, L), pool.actions.reshape(K * n, L))
    picks, uncovered = S.greedy_cover(bec, cand, valid)
    times["cover_s"] = time.perf_counter() - begin
    begin = time.perf_counter()
    S.scot(mdp, policy, pool.states.reshape(K * n, L), pool.actions.reshape(K * n, L), kind=kind)
    times["scot_total_s"] = time.perf_counter() - begin
    return {**times, "raw": len(raw), "unique": len(units), "bec": len(bec), "batch": len(picks),
            "uncovered": int(uncovered.sum())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    experiment = CarIRLExperiment()
    rows = {"linear": [], "quadratic": [], "original": []}
    for index in range(args.seeds):
        setup = experiment.build_setup(run_seed_sequence(0, index))
        for kind in ("linear", "quadratic"):
            rows[kind].append(measure(setup, kind))
        begin = time.perf_counter()
        batch = scot_batch(setup.expert_features_per_start)
        rows["original"].append({"scot_total_s": time.perf_counter() - begin, "batch": len(batch)})
    summary = {kind: {key: float(np.median([r[key] for r in values])) for key in values[0]}
               for kind, values in rows.items()}
    if args.json:
        print(json.dumps(summary))
        return
    for kind, values in summary.items():
        text = ", ".join(f"{key} {value:.3f}" if key.endswith("_s") else f"{key} {value:g}"
                         for key, value in values.items())
        print(f"{kind:9s} (median of {args.seeds} roads): {text}")


if __name__ == "__main__":
    main()
