"""dataset-bc's uses on a mixed-quality Minari dataset made outside the package: the ensemble teacher without an
expert, select and weight, ``selection.csv``, the share of bad episodes dropped, and the cells' one-line errors."""

from __future__ import annotations

import csv
import json
from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("minari")
pytest.importorskip("imitation")

from curteach_teaching.cli import main  # noqa: E402
from curteach_teaching.experiments.dataset_bc.cells import parse_cell  # noqa: E402
from curteach_teaching.experiments.dataset_bc.selection_table import selection_quality  # noqa: E402

MIXED = "test/cartpole-mixed-v0"
NOISY = {2, 5, 8, 11}  # as the mixed_root fixture writes them
QUICK = ["--runs", "2", "--max-batches", "20", "--eval-every", "20", "--eval-episodes", "2", "--ensemble-batches",
         "100", "--ensemble-size", "3", "--backend", "serial", "--no-progress", "--no-figures"]


def _selection(path):
    with open(path, newline="") as stream:
        return list(csv.DictReader(stream))


def test_select_and_weight_by_the_ensemble_drop_the_noisy_episodes(mixed_root, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(mixed_root))
    out = tmp_path / "select"
    args = ["dataset-bc", "--dataset", MIXED, "--curricula", "Agn,Cur-T,Cur-T@weight", "--task-difficulty",
            "ensemble", "--use", "select", "--keep", "0.6", *QUICK, "--out", str(out)]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "ensemble teacher ready" in printed and "Cur-T+weight - Agn: final" in printed
    rows = _selection(out / "selection.csv")
    assert list(rows[0]) == ["curriculum", "run", "epoch", "dataset", "episode_id", "weight"]
    cells = {row["curriculum"] for row in rows}
    assert cells == {"Agn", "Cur-T+select", "Cur-T+weight"}  # --use select: named so (issue 43)
    agn = [r for r in rows if r["curriculum"] == "Agn"]
    assert {r["weight"] for r in agn} == {"1"} and len(agn) % 12 == 0
    kept = {int(r["episode_id"]) for r in rows if r["curriculum"] == "Cur-T+select" and r["weight"] == "1"}
    assert len(kept) == 7  # round(0.6 * 12), the same in every epoch and run
    dropped = set(range(12)) - kept
    assert len(dropped & NOISY) >= 3  # mostly the noisy ones
    weighted = [r for r in rows if r["curriculum"] == "Cur-T+weight" and r["run"] == "0" and r["epoch"] == "1"]
    weights = {int(r["episode_id"]): float(r["weight"]) for r in weighted}
    assert np.mean([weights[i] for i in NOISY]) < 0.5 * np.mean([w for i, w in weights.items() if i not in NOISY])
    summary = (out / "summary.csv").read_text().splitlines()
    assert summary[0].startswith("curriculum,use,task,batches,mean") and summary[1].startswith("Agn,all,,0,")
    assert any(line.startswith("Cur-T+weight,weight,ensemble,") for line in summary)
    report = json.loads((out / "report.json").read_text())
    assert report["cell_settings"]["Cur-T+select"]["use"] == "select" and "selection.csv" in report["files"]
    # the same command again: every run and the ensemble come from the folder
    assert main(args) == 0
    again = capsys.readouterr().out
    assert "0 computed" in again and "ensemble teacher ready (read from the cache)" in again


def test_selection_quality_by_hand():
    pool = type("Pool", (), {"lengths": np.array([1, 1, 2, 4]), "groups": ("a", "a", "b", "b"),
                             "__len__": lambda self: 4})()
    bad = np.array([False, True, True, False])
    run = SimpleNamespace
    sweep = SimpleNamespace(cells={
        "Agn": [run(extras={"selection": [None], "use": "order"})],
        "Cur-T+select": [run(extras={"selection": [{"selected": [0, 1, 3]}, {"selected": [0, 3]}], "use": "select"}),
                         run(extras={"selection": [{"selected": [0, 3]}], "use": "select"})],
        "Cur-T+weight": [run(extras={"selection": [{"weights": [1.0, 0.5, 0.25, 1.5]}], "use": "weight"})],
    })
    quality = selection_quality(sweep, pool, bad)
    assert quality["bad_share"] == 0.5 and "Agn" not in quality["cells"]
    # select reads the last epoch: both runs drop 1 and 2, both bad; the kept 0 and 3 hold no bad transition
    select = quality["cells"]["Cur-T+select"]
    assert select.pop("by_dataset") == {name: {"dropped": 1.0, "dropped_bad_share": 1.0, "kept_bad_share": 0.0,
                                               "kept_bad_transition_share": 0.0} for name in ("a", "b")}
    assert select == {"dropped": 2.0, "dropped_bad_share": 1.0, "kept_bad_share": 0.0,
                      "kept_bad_transition_share": 0.0}
    # weight: bad transitions carry 0.5 * 1 + 0.25 * 2 = 1 of 1 + 0.5 + 0.5 + 6 = 8; they are 3 of 8 transitions;
    # within a: 0.5 of 1.5 and 1 of 2 transitions, within b: 0.5 of 6.5 and 2 of 6
    weight = quality["cells"]["Cur-T+weight"]
    assert weight.pop("by_dataset") == {"a": {"bad_weight_share": pytest.approx(1 / 3), "bad_transition_share": 0.5},
                                        "b": {"bad_weight_share": pytest.approx(1 / 13),
                                              "bad_transition_share": pytest.approx(1 / 3)}}
    assert weight == {"bad_weight_share": 1 / 8, "bad_transition_share": 3 / 8}
    # an order cell that keeps a long bad episode: its share of the kept transitions is not its share of the kept
    order = {"Cur": [run(extras={"selection": [{"selected": [0, 2, 3]}], "use": "order"})]}
    kept = selection_quality(SimpleNamespace(cells=order), pool, bad)["cells"]["Cur"]
    assert (kept["kept_bad_share"], kept["kept_bad_transition_share"]) == (pytest.approx(1 / 3), pytest.approx(2 / 7))


def test_cells_by_hand():
    assert parse_cell("Cur-T@select/return").name == "Cur-T+select+return"
    assert parse_cell("Cur").name == "Cur" and parse_cell("Cur@weight").use == "weight"
    assert parse_cell("Cur-T/pkg.mod:score").name == "Cur-T+pkg.mod.score"


@pytest.mark.parametrize(("flags", "message"), [
    (["--curricula", "Agn@select"], "Agn has no preference"),
    (["--curricula", "Agn,Cur@rank"], "must be one of"),
    (["--curricula", "Agn,Cur-T/"], "task score"),
    (["--keep", "0"], "--keep must be"),
    (["--temperature", "-1"], "--temperature must be"),
    (["--ensemble-size", "1"], "--ensemble-size"),
])
def test_bad_cells_and_uses_are_one_line(mixed_root, tmp_path, monkeypatch, capsys, flags, message):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(mixed_root))
    assert main(["dataset-bc", "--dataset", MIXED, *flags, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]
    assert not (tmp_path / "out").exists()
