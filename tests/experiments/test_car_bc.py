"""The car-bc experiment and command: pre-training, determinism, the two updates, runner outputs, resume."""

import csv

import numpy as np
import pytest

from curteach_teaching.cli import main
from curteach_teaching.experiments.car.bc import BCCarLearner, CarBCExperiment, pretraining_starts
from curteach_teaching.sweeps.sweep import run_seed_sequence

pytestmark = pytest.mark.filterwarnings("ignore:Converting a tensor with requires_grad")


def test_pretraining_starts_are_instance_major(car_mdp):
    starts = car_mdp.start_states
    picked = starts[pretraining_starts(starts, car_mdp.task_of_state, 4)]
    assert picked.tolist() == [(t + 8 * i) * 20 for i in range(5) for t in range(4)]


def test_t0_pretraining_is_a_no_op_and_t0_t3_is_not():
    seeds = run_seed_sequence(0, 0)
    for update in ("batch", "sequential"):
        learner = CarBCExperiment(init_types=1, update=update, pretrain_sweeps=3).build(seeds)[3]
        assert np.array_equal(learner.theta, np.ones(16))
        trained = CarBCExperiment(init_types=4, update=update, pretrain_sweeps=2).build(seeds)[3]
        assert not np.array_equal(trained.theta, np.ones(16))


def test_same_seed_same_run_and_paper_setup():
    experiment = CarBCExperiment(steps=6, pretrain_sweeps=1)
    a = experiment.run(0, run_seed_sequence(3, 1))
    b = experiment.run(0, run_seed_sequence(3, 1))
    for name in experiment.teachers:
        assert np.array_equal(a.curves[name], b.curves[name])
        assert np.array_equal(a.records["picks"][name], b.records["picks"][name])
    assert list(a.curves) == ["Agn", "Cur", "Cur-T", "Cur-L"]
    assert a.curves["Cur"].shape == (7,) and len({c[0] for c in a.curves.values()}) == 1
    assert a.extras["crash_step"] is None
    assert len(set(a.records["picks"]["Cur-T"].tolist())) == 6  # Cur-T's sweep has no repeats


def test_batch_and_sequential_move_the_same_weights_the_same_way(car_mdp):
    from curteach_teaching.demonstrations import sample_demonstrations
    from curteach_teaching.planning import hard_value_iteration

    mdp = car_mdp.replace(gamma=0.999)
    pool = sample_demonstrations(mdp, hard_value_iteration(mdp).policy, np.random.default_rng(0))
    states, actions = pool.states[3].reshape(1, -1), pool.actions[3].reshape(1, -1)  # a T3 set
    batch = BCCarLearner(mdp, update="batch", learning_rate=0.01, n_pairs=100, rng=np.random.default_rng(0))
    sequential = BCCarLearner(mdp, update="sequential", learning_rate=0.01, n_pairs=100, rng=np.random.default_rng(0))
    batch.train_sets(states, actions)
    sequential.train_sets(states, actions)
    # same direction per weight (both follow the gradient of the set's log-likelihood), different sizes
    assert np.array_equal(np.sign(batch.theta - 1), np.sign(sequential.theta - 1))
    assert np.abs(batch.theta - 1).max() > 0.1


def test_cli_outputs_and_resume(tmp_path, capsys):
    out = tmp_path / "bc"
    args = ["car-bc", "--runs", "2", "--steps", "4", "--pretrain-sweeps", "1", "--workers", "1", "--no-progress",
            "--out", str(out)]
    assert main(args + ["--update", "sequential"]) == 0
    with open(out / "summary.csv") as stream:
        rows = list(csv.DictReader(stream))
    assert list(rows[0]) == ["teacher", "subset", "t", "mean", "sem", "n"]
    assert {r["teacher"] for r in rows} == {"Agn", "Cur", "Cur-T", "Cur-L"}
    assert {r["t"] for r in rows} == {str(t) for t in range(5)}
    assert (out / "learning_curves_all.png").exists() and (out / "curriculum_Cur_all.png").exists()
    first = (out / "runs" / "main" / "run_00000.json").read_bytes()
    capsys.readouterr()
    assert main(args + ["--update", "sequential", "--no-figures"]) == 0
    assert "0 computed, 2 reused" in capsys.readouterr().out
    assert (out / "runs" / "main" / "run_00000.json").read_bytes() == first
    assert main(args + ["--update", "batch", "--no-figures"]) == 2  # other settings: refused, nothing touched
    assert "update: 'sequential' -> 'batch'" in capsys.readouterr().err
    assert (out / "runs" / "main" / "run_00000.json").read_bytes() == first
    assert main(args + ["--update", "batch", "--no-figures", "--overwrite"]) == 0  # replaced, never reused
    assert "2 computed, 0 reused" in capsys.readouterr().out


def test_bad_input(tmp_path, capsys):
    assert main(["car-bc", "--init", "T9", "--out", str(tmp_path)]) == 2
    assert "--init must be one of" in capsys.readouterr().err
    assert main(["car-bc", "--runs", "0", "--out", str(tmp_path)]) == 2
    assert main(["car-bc", "--teachers", "Agn,Omn", "--out", str(tmp_path)]) == 2
    with pytest.raises(ValueError, match="update must be one of"):
        CarBCExperiment(update="adam")
    with pytest.raises(ValueError, match="learning_rate"):
        CarBCExperiment(learning_rate=-1.0)


@pytest.mark.slow
def test_paper_ordering_init_t0():
    """Fig. 4 (init T0): Cur ends ahead of Agn and Cur-T; Cur-L stalls on T0."""
    experiment = CarBCExperiment()
    results = [experiment.run(i, run_seed_sequence(0, i)) for i in range(3)]
    final = {name: np.mean([r.curves[name][-1] for r in results]) for name in experiment.teachers}
    assert final["Cur"] > final["Agn"] and final["Cur"] > final["Cur-T"] and final["Cur-L"] < final["Agn"]
    assert all(np.mean(r.records["pick_types"]["Cur-L"] == 0) > 0.9 for r in results)


def test_cli_constants_match_the_experiment():
    """The CLI repeats two constants so that building the parser does not import torch."""
    import subprocess
    import sys

    from curteach_teaching.commands import car_bc as command
    from curteach_teaching.experiments.car import bc as experiment

    assert command.BC_TEACHER_NAMES == experiment.BC_TEACHER_NAMES
    assert command.UPDATES == experiment.UPDATES
    code = "import sys; from curteach_teaching.cli import build_parser; build_parser(); print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
