"""Teachers from outside the package in the car experiments: by module:attr and by entry point, named in the
summary by their name attribute, with errors that name a broken factory."""

import csv
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from curteach_teaching.experiments.car.bc import CarBCExperiment
from curteach_teaching.experiments.car.irl import CarIRLExperiment
from curteach_teaching.sweeps.backends import run_seed_sequence
from curteach_teaching.teaching.factories import TEACHERS

PLUGIN = textwrap.dedent("""
    import numpy as np

    class Greedy:
        name = "Greedy"

        def __init__(self, context):
            self.pool, self.start_states = context.pool, context.start_states

        def select(self, view, step):
            log_p = view.action_log_probabilities()[self.pool.states, self.pool.actions]
            return int(self.start_states[np.argmin(log_p.mean(axis=(1, 2)))])

    def coin(context):
        rng = context.rng

        class Coin:
            def select(self, view, step):
                return int(rng.choice(context.start_states))

        return Coin()

    def broken(context):
        raise KeyError("no such thing")

    def not_a_teacher(context):
        return 42
""")


@pytest.fixture
def plugins(fake_distribution):
    return fake_distribution("myteachers", {"myteachers.py": PLUGIN},
                             "[curteach.teachers]\nGreedyEP = myteachers:Greedy\n")


def test_plugins_play_after_the_builtins_under_their_names(plugins):
    small = {"init_types": 1, "steps": 8, "target_steps": 20, "pretrain_steps": 20}
    experiment = CarIRLExperiment(**small, teachers=("myteachers:coin", "Cur", "myteachers:Greedy", "Agn"))
    assert experiment.teachers == ("Agn", "Cur", "myteachers:coin", "myteachers:Greedy")
    assert experiment.teacher_names == ("Agn", "Cur", "coin", "Greedy")
    result = experiment.run(0, run_seed_sequence(0, 0))
    assert list(result.curves) == ["Agn", "Cur", "coin", "Greedy"]
    # the built-ins are untouched by the plug-ins: same curves as without them
    alone = CarIRLExperiment(**small, teachers=("Agn", "Cur")).run(0, run_seed_sequence(0, 0))
    for name in ("Agn", "Cur"):
        np.testing.assert_array_equal(result.curves[name], alone.curves[name])
    # a plug-in's generator depends on the run and its own spec only
    again = CarIRLExperiment(**small, teachers=("myteachers:coin",)).run(0, run_seed_sequence(0, 0))
    np.testing.assert_array_equal(again.curves["coin"], result.curves["coin"])


def test_entry_point_teacher(plugins):
    assert "GreedyEP" in TEACHERS.names()
    experiment = CarBCExperiment(steps=3, pretrain_sweeps=2, teachers=("Cur", "GreedyEP"))
    assert experiment.teacher_names == ("Cur", "Greedy")
    assert list(experiment.run(0, run_seed_sequence(0, 0)).curves) == ["Cur", "Greedy"]


def test_errors_name_the_plugin(plugins):
    with pytest.raises(ValueError, match="unknown teacher 'Nobody'; available: Agn, Omn, Scot, Cur"):
        CarIRLExperiment(teachers=("Agn", "Nobody"))
    with pytest.raises(ValueError, match=r"built-in teachers \['Agn', 'Cur', 'Cur-T', 'Cur-L'\]; got \['Omn'\]"):
        CarBCExperiment(teachers=("Agn", "Omn"))
    with pytest.raises(ValueError, match="distinct names; Greedy"):
        CarIRLExperiment(teachers=("GreedyEP", "myteachers:Greedy"))
    for spec, message in [("myteachers:broken", "teacher factory 'broken' raised KeyError"),
                          ("myteachers:not_a_teacher", "factory 'not_a_teacher' returned int, which is not a teacher")]:
        experiment = CarIRLExperiment(init_types=0, steps=2, target_steps=5, teachers=("Agn", spec))
        with pytest.raises(ValueError, match=message):
            experiment.run(0, run_seed_sequence(0, 0))


def test_the_command_line_runs_a_plugin(plugins, tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugins), os.environ.get("PYTHONPATH", "")])}
    out = tmp_path / "out"
    command = [sys.executable, "-m", "curteach_teaching.cli", "car-irl", "--init", "T0", "--runs", "2", "--steps",
               "5", "--teachers", "Agn,myteachers:Greedy", "--workers", "2", "--no-progress", "--no-figures",
               "--out", str(out)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    with open(out / "summary.csv") as stream:
        rows = list(csv.DictReader(stream))
    assert {row["teacher"] for row in rows} == {"Agn", "Greedy"}
    assert all(row["n"] == "2" for row in rows if row["subset"] == "all")
    bad = subprocess.run(command[:-2] + ["--teachers", "Agn,nomodule_xyz:T", "--out", str(tmp_path / "bad")],
                         env=env, capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "cannot import 'nomodule_xyz'" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1 and not (tmp_path / "bad").exists()
