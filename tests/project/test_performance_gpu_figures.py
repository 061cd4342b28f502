"""docs/performance.md's GPU figures are those of the committed run of ``benchmarks/gpu.py``
(``docs/results/gpu/gpu.json``): the card, the table of training pairs/s and ratios, the difficulty pass, the
evaluations, the concurrency speed-ups and the extrapolations, each as the page rounds it."""

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIGURES = json.loads((ROOT / "docs" / "results" / "gpu" / "gpu.json").read_text())
HEADING = "#### Measured: an NVIDIA H200 at `94cbd13`"
#: the page's row labels -> the JSON's learners
ROWS = {"navigation CNN (SGD": "nav-cnn", "BabyAI's FiLM": "babyai-film",
        "Meta-World-sized Gaussian MLP": "metaworld-mlp"}


def _section() -> str:
    text = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    assert HEADING in text
    return text.split(HEADING, 1)[1].split("\n## ", 1)[0]


def _int(value: float) -> str:
    return f"{round(value):,}"


def test_the_card_and_the_table_of_pairs_per_second_are_the_runs():
    section = _section()
    assert FIGURES["device"] == "NVIDIA H200" and FIGURES["torch"].startswith("2.11.0") and FIGURES["cpus"] == 16
    assert f"took {round(FIGURES['total_s'])} s" in section
    for label, key in ROWS.items():
        row = next(line for line in section.splitlines() if line.startswith(f"| {label}"))
        cells = [cell.strip().strip("*") for cell in row.split("|")[1:-1]]
        learner = FIGURES["learners"][key]
        assert cells[1:] == [str(learner["bare"]["batch"]), _int(learner["bare"]["pairs_per_s"]),
                             _int(learner["agn"]["pairs_per_s"]), f"{learner['agn']['ratio']:.2f}",
                             _int(learner["cur"]["pairs_per_s"]), f"{learner['cur']['ratio']:.2f}"]
    run = FIGURES["learners"]["nav-cnn"]["agn_run"]
    assert f"| 208 | 43,545 | {_int(run['pairs_per_s'])} | **{run['ratio']:.2f}** |" in section


def test_the_goals_met_and_not_met_follow_from_the_ratios():
    section = _section()
    agn = {key: FIGURES["learners"][key]["agn"]["ratio"] for key in ROWS.values()}
    cur = {key: FIGURES["learners"][key]["cur"]["ratio"] for key in ROWS.values()}
    assert agn["nav-cnn"] < 0.75 and agn["metaworld-mlp"] < 0.75 and agn["babyai-film"] >= 0.75
    assert all(ratio >= 0.6 for ratio in cur.values())
    assert (f"**Not met**: Agn on the navigation CNN ({agn['nav-cnn']:.2f}; "
            f"{FIGURES['learners']['nav-cnn']['agn_run']['ratio']:.2f} with a") in section
    assert f"Agn on the Meta-World MLP ({agn['metaworld-mlp']:.2f}), both short of 0.75" in section


def test_the_other_figures_are_the_runs():
    section = " ".join(_section().split())  # lines joined
    evaluation, concurrency, extrapolation = FIGURES["nav_eval"], FIGURES["concurrency"], FIGURES["extrapolation"]
    assert f"| {evaluation['difficulty_pass_s']:.3f} s |" in section
    assert f"| {evaluation['val_s']:.3f} s / {evaluation['test_s']:.3f} s |" in section
    walls = re.search(r"N = 1: ([\d.]+) s; 4: ([\d.]+) s; 8: ([\d.]+) s", section)
    assert walls and [float(w) for w in walls.groups()] == [round(concurrency[f"wall_{n}_s"], 1) for n in (1, 4, 8)]
    assert f"S_4 = {concurrency['speedup_4']:.2f}, S_8 = {concurrency['speedup_8']:.2f}" in section
    for name, key in (("Figs. 6–7 whole", "figs67_min"), ("the BabyAI ladder", "babyai_min"),
                      ("the Meta-World ladder", "metaworld_min")):
        assert re.search(rf"\| {re.escape(name)}[^|]*\| \*\*{extrapolation[key]:.1f} min\*\*", section), name
    assert section.count("training and difficulty passes only") == 2
