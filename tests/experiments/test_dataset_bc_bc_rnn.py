"""``dataset-bc --policy bc-rnn`` end to end on the scripted Pendulum pool: Agn, Cur and a length selection, in the
environment and on held-out demonstrations, with finite numbers; and the spaces it cannot learn refused in one line,
exit 2, before any training."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("minari")
pytest.importorskip("imitation")

from curteach_teaching.cli import main  # noqa: E402

PENDULUM = "test/pendulum-scripted-v0"  # the pendulum_root fixture's dataset (tests/experiments/conftest.py)

QUICK = ["--runs", "1", "--max-batches", "4", "--eval-every", "2", "--batch-size", "32", "--backend", "serial",
         "--no-progress", "--no-figures", "--policy", "bc-rnn"]
CELLS = ["--curricula", "Agn,Cur,Cur-T@select", "--task-difficulty", "length"]


def test_discrete_actions_are_refused_in_one_line_before_training(cartpole_root, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(cartpole_root))
    out = tmp_path / "out"
    assert main(["dataset-bc", "--dataset", "test/cartpole-scripted-v0", *QUICK, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "bc-rnn learns continuous (1-D Box) actions; got Discrete(2)" in err
    assert not out.exists()


@pytest.mark.parametrize("env", [[], ["--env", "none"]], ids=["rollouts", "held-out"])
def test_every_cell_runs_with_finite_numbers(pendulum_root, tmp_path, monkeypatch, env):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(pendulum_root))
    out = tmp_path / "out"
    flags = ["--eval-episodes", "2"] if not env else []
    assert main(["dataset-bc", "--dataset", PENDULUM, *QUICK, *CELLS, *env, *flags, "--out", str(out)]) == 0
    runs = sorted((out / "runs").rglob("*.json"))
    cells = set()
    for path in runs:
        record = json.loads(path.read_text())["data"]
        cells.add(record["cell"])
        curves = record["curves"]
        names = ("nll", "mse") if env else ("return", "sampled_return")
        for name in (*names, "train:loss"):
            values = np.asarray(curves[name], dtype=np.float64)
            assert values.size == 3, (name, values)
            assert np.isfinite(values[1:] if name == "train:loss" else values).all(), (path, name, values)
    assert cells == {"Agn", "Cur", "Cur-T+select"}
