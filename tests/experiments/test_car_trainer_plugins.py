"""car-trainers with a user's own car trainer (a recipe plug-in): what the recipe receives, how its cells are named,
the entry-point path, and the errors of a broken one."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("imitation")

from curteach_teaching.cli import main  # noqa: E402
from curteach_teaching.experiments.car.trainers import CarTrainersExperiment, split_cell  # noqa: E402

PLUGIN = '''
CALLS = []


def expert_copy(setup, curriculum, seed_sequence, *, callbacks=()):
    """A trainer that is the expert from the start: the curve is the expert's exact reward at every step."""
    CALLS.append((setup, curriculum, seed_sequence, list(callbacks)))
    return [setup.reward(setup.expert.policy)] * (setup.settings.steps + 1)


expert_copy.name = "expert-copy"


def unnamed(setup, curriculum, seed_sequence, *, callbacks=()):
    return [0.0] * (setup.settings.steps + 1)


def too_short(setup, curriculum, seed_sequence, *, callbacks=()):
    return [0.0]


def with_underscore(setup, curriculum, seed_sequence, *, callbacks=()):
    return [0.0] * (setup.settings.steps + 1)


with_underscore.name = "my_trainer"
NOT_A_RECIPE = 3


def divides(setup, curriculum, seed_sequence, *, callbacks=()):
    return [1.0 / 0.0]
'''


@pytest.fixture
def carplug(fake_distribution):
    fake_distribution("carplug", {"carplug.py": PLUGIN}, "[curteach.car_trainers]\ncopy-ep = carplug:expert_copy\n")
    import carplug

    return carplug


def command(out, trainers, *extra):
    return ["car-trainers", "--trainers", trainers, "--curricula", "Agn,Cur", "--scale", "small", "--steps", "2",
            "--runs", "2", "--seed", "3", "--backend", "serial", "--no-progress", "--no-figures", "--out", str(out),
            *extra]


def test_a_plugin_recipe_gets_the_runs_setup_curriculum_and_seed_and_is_named_by_its_name(carplug, tmp_path):
    assert main(command(tmp_path, "carplug:expert_copy,carplug:unnamed,carplug:with_underscore")) == 0
    experiment = CarTrainersExperiment(trainers=("carplug:expert_copy",), curricula=("Agn", "Cur"), steps=2,
                                       adversarial_timesteps=100, mce_iterations=3, pretrain_iterations=5)
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == [
        "expert-copy_Agn", "expert-copy_Cur", "my_trainer_Agn", "my_trainer_Cur", "unnamed_Agn", "unnamed_Cur"]
    assert split_cell("my_trainer_Cur") == ("my_trainer", "Cur")  # curricula have no '_', so a trainer may
    assert len(carplug.CALLS) == 4  # 2 curricula x 2 runs of the recorded trainer
    for setup, curriculum, seed_sequence, callbacks in carplug.CALLS:
        assert curriculum in ("Agn", "Cur") and len(callbacks) == 1  # the experiment's loss callback
        index = seed_sequence.entropy[1]
        run_seed = np.random.SeedSequence([3, index])
        fresh = experiment.setup(run_seed)  # the same road, pool and pre-trained learner
        trainer_seed = run_seed.spawn(1)[0]  # the run's next child after the setup's
        assert list(seed_sequence.entropy) == [3, index] and seed_sequence.spawn_key == trainer_seed.spawn_key
        np.testing.assert_array_equal(setup.theta, fresh.theta)
        assert [d.obs.tolist() for d in setup.demonstrations] == [d.obs.tolist() for d in fresh.demonstrations]
        assert setup.settings.steps == 2
    run = json.loads((tmp_path / "runs" / "expert-copy_Cur" / "run_00001.json").read_text())["data"]
    setup = carplug.CALLS[-1][0]
    assert run["curves"]["reward"] == [setup.reward(setup.expert.policy)] * 3
    assert "train:loss" not in run["curves"]  # the recipe fed the loss observer nothing
    rows = (tmp_path / "summary.csv").read_text().splitlines()
    assert {row.split(",")[0] for row in rows[1:]} == {"expert-copy", "unnamed", "my_trainer"}


def test_an_entry_point_recipe_by_its_short_name(carplug, tmp_path, capsys):
    assert main(command(tmp_path, "bc,copy-ep", "--steps", "1")) == 0
    assert "final expected reward, expert-copy (n=2)" in capsys.readouterr().out  # shown under its name attribute
    assert {p.name for p in (tmp_path / "runs").iterdir()} == {"bc_Agn", "bc_Cur", "expert-copy_Agn",
                                                               "expert-copy_Cur"}


@pytest.mark.parametrize("trainers, message", [
    ("carplug:too_short", "car trainer 'too_short' returned a curve of shape (1,); a recipe returns the expected "
                          "reward before teaching and after each of the 2 steps, (3,)"),
    ("bc,carplug:divides", "car trainer 'divides' raised ZeroDivisionError with curriculum 'Agn': float division by "
                           "zero"),
    ("carplug:NOT_A_RECIPE", "car trainer 'carplug:NOT_A_RECIPE' is not callable (got int)"),
    ("carplug:missing", "module 'carplug' has no attribute 'missing'"),
    ("bc,ppo", "unknown car trainer 'ppo'; available: bc, dagger, gail, airl, mce-irl, copy-ep. To add one, pass "
               "'module:attr'"),
    ("bc,carplug:expert_copy,copy-ep", "trainers must have distinct names"),
])
def test_a_broken_recipe_is_named(carplug, tmp_path, capsys, trainers, message):
    code = main(command(tmp_path / "out", trainers))
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.count("\n") == 1, err
    if "carplug:divides" in trainers:  # failed in a run: its traceback is kept
        assert "carplug.py" in (tmp_path / "out" / "errors.log").read_text()
    elif "carplug:too_short" in trainers:  # what it returned is refused where it enters
        assert "Found here" in (tmp_path / "out" / "errors.log").read_text()
    else:  # refused before the folder is claimed
        assert not (tmp_path / "out").exists()
