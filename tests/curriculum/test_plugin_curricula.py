"""Curricula from outside the package: a preference object, module:attr and an entry point, in the selection and
in imitation's BC through CurriculumBC (checked on the observations the trainer actually received)."""

import textwrap

import numpy as np
import pytest
import torch as th

from curteach_teaching.curriculum import CurriculumBC
from curteach_teaching.curriculum.selection import CurriculumSelection, check_variant, preference
from curteach_teaching.demonstrations import sample_demonstrations
from curteach_teaching.planning import hard_value_iteration

pytestmark = pytest.mark.filterwarnings("ignore:Converting a tensor with requires_grad")

LEARNER = np.array([3.0, 1.0, 2.0, 2.0])  # log Psi^L
TEACHER = np.array([1.0, 0.0, 2.0, -1.0])  # log Psi^E


class Tempered:
    """Cur with the teacher's difficulty counted twice: log Psi^L - 2 log Psi^E."""

    name = "Cur-2T"

    def preference(self, learner, teacher):
        return learner - 2.0 * teacher


class TeacherOnly:
    name = "Shortest"
    needs_learner = False

    def preference(self, learner, teacher):
        assert learner is None  # said it does not need it, so it is not computed
        return -teacher


PLUGIN = textwrap.dedent("""
    class Reversed:
        name = "Anti-Cur"

        def preference(self, learner, teacher):
            return teacher - learner

    class Broken:
        def preference(self, learner, teacher):
            return [1.0, 2.0]

    class Snake:
        name = "snake_case"

        def preference(self, learner, teacher):
            return learner

    class Raises:
        name = "Boom"

        def preference(self, learner, teacher):
            return {"not": "numbers"}[learner]

    class NeedsArguments:
        def __init__(self, strength):
            self.strength = strength
""")


@pytest.fixture
def plugins(fake_distribution):
    return fake_distribution("myprefs", {"myprefs.py": PLUGIN}, "[curteach.curricula]\nAntiEP = myprefs:Reversed\n")


def test_selection_with_a_preference_object():
    selection = CurriculumSelection(4, Tempered(), TEACHER, pacing=lambda e, E, n: 2)
    chosen = selection.select(1, 3, LEARNER)
    np.testing.assert_array_equal(chosen.preference, [1.0, 1.0, -2.0, 4.0])
    np.testing.assert_array_equal(chosen.selected, [3, 0])  # ties to the lower index
    only = CurriculumSelection(4, TeacherOnly(), TEACHER, pacing=lambda e, E, n: 1)
    assert not only.needs_learner_difficulty
    np.testing.assert_array_equal(only.select(1, 3).selected, [3])


def test_names_from_module_attr_and_entry_points(plugins):
    anti = check_variant("myprefs:Reversed")  # a class is instantiated
    assert type(anti).__name__ == "Reversed"
    np.testing.assert_array_equal(preference(anti, LEARNER, TEACHER), TEACHER - LEARNER)
    np.testing.assert_array_equal(preference("AntiEP", LEARNER, TEACHER), TEACHER - LEARNER)
    assert check_variant("Cur") == "Cur"
    with pytest.raises(ValueError, match=r"curriculum 'Broken' returned a preference of shape \(2,\)"):
        preference("myprefs:Broken", LEARNER, TEACHER)
    with pytest.raises(ValueError, match="unknown curriculum 'Nope'; available: Cur, Cur-L, Cur-T, Agn, AntiEP"):
        check_variant("Nope")


def test_a_failing_plugin_curriculum_is_named_with_its_traceback(plugins):
    from curteach_teaching.registry import PluginError

    selection = CurriculumSelection(4, "myprefs:Raises", TEACHER)
    with pytest.raises(PluginError, match=r"^curriculum 'Boom' raised TypeError in preference: ") as raised:
        selection.select(1, 3, LEARNER)
    assert "myprefs.py" in raised.value.details  # the plug-in's own traceback, for the sweep's errors.log
    with pytest.raises(PluginError, match=r"^curriculum 'Boom' returned set from preference; it must be None or "
                                          r"\(4,\) without NaN$"):
        preference(type("Boom", (), {"name": "Boom", "preference": lambda self, lr, te: {1.0}})(), LEARNER, TEACHER)
    with pytest.raises(PluginError, match=r"^curriculum factory 'NeedsArguments' raised TypeError: "):
        check_variant("myprefs:NeedsArguments")  # a class is instantiated without arguments


def test_curriculum_bc_trains_on_what_the_plugin_prefers(car_mdp, bc_trainer):
    mdp = car_mdp.replace(gamma=0.999)
    expert = hard_value_iteration(mdp)
    demos = sample_demonstrations(mdp, expert.policy, np.random.default_rng(0), n_per_start=1).all_trajectories()
    trainer = bc_trainer(mdp, batch_size=10, optimizer=th.optim.Adam)  # Adam: BC's default optimizer
    policy = trainer.policy
    teacher = np.arange(len(demos), dtype=float)  # log Psi^E: later demonstrations are harder for the teacher
    curriculum = CurriculumBC(trainer, demos, variant=TeacherOnly(), teacher=teacher, pacing=lambda e, E, n: 3,
                              batch_unit="demonstrations", demos_per_batch=3)
    seen = []
    original = policy.evaluate_actions

    def evaluate_actions(obs, actions):  # what BC's loss actually evaluated
        seen.append(sorted(np.asarray(obs.detach().cpu()).ravel().astype(int).tolist()))
        return original(obs, actions)

    policy.evaluate_actions = evaluate_actions
    curriculum.train(n_epochs=1)
    expected = sorted(int(s) for d in demos[:3] for s in d.obs[:-1])  # the three easiest for the teacher
    assert seen == [expected]
    config = curriculum.config() if callable(curriculum.config) else curriculum.config
    assert config["variant"] == "Shortest"


def test_nav_experiment_cells_are_named_by_the_plugin(plugins):
    from curteach_teaching.experiments.nav.experiment import NavExperiment

    experiment = NavExperiment(dataset="unused.npz", dataset_digest="0" * 64, curricula=("Cur", "myprefs:Reversed"))
    assert experiment.cells == ("Cur", "Anti-Cur")
    assert experiment.curriculum_names() == {"Cur": "Cur", "Anti-Cur": "myprefs:Reversed"}
    assert experiment.settings()["curricula"] == ["Cur", "myprefs:Reversed"]  # the spec is what is fingerprinted
    with pytest.raises(ValueError, match="unknown curriculum 'Nope'"):
        NavExperiment(dataset="unused.npz", dataset_digest="0" * 64, curricula=("Cur", "Nope"))
    with pytest.raises(ValueError, match="distinct names"):
        NavExperiment(dataset="unused.npz", dataset_digest="0" * 64, curricula=("AntiEP", "myprefs:Reversed"))


def test_car_trainers_runs_a_plugin_curriculum_by_its_name(plugins, tmp_path, capsys):
    import csv

    from curteach_teaching.cli import main
    from curteach_teaching.experiments.car.trainers import CarTrainersExperiment

    args = ["car-trainers", "--trainers", "bc", "--curricula", "Cur,myprefs:Reversed", "--scale", "small",
            "--steps", "2", "--runs", "1", "--backend", "serial", "--no-progress", "--no-figures", "--out",
            str(tmp_path / "out")]
    assert main(args) == 0
    rows = list(csv.DictReader(open(tmp_path / "out" / "summary.csv")))
    curves = {c: [float(r["mean"]) for r in rows if r["curriculum"] == c] for c in ("Cur", "Anti-Cur")}
    assert len(curves["Cur"]) == len(curves["Anti-Cur"]) == 3
    assert curves["Cur"][0] == curves["Anti-Cur"][0]  # the same pre-trained learner (paired)
    assert curves["Cur"][1:] != curves["Anti-Cur"][1:]  # the reversed order trains on other demonstrations first
    assert (tmp_path / "out" / "runs" / "bc_Anti-Cur" / "run_00000.json").exists()
    assert main(["car-trainers", "--curricula", "Cur,Nope", "--out", str(tmp_path / "x"), "--no-progress"]) == 2
    assert "unknown curriculum 'Nope'" in capsys.readouterr().err and not (tmp_path / "x").exists()

    with pytest.raises(ValueError, match="must not contain '_'"):
        CarTrainersExperiment(trainers=("bc",), curricula=("Cur", "myprefs:Snake"))
    # two specs of one curriculum (the entry point and module:attr of Reversed, both Anti-Cur) would share cells
    with pytest.raises(ValueError, match="curricula must have distinct names; 'AntiEP' and 'myprefs:Reversed' are "
                                         "both 'Anti-Cur'"):
        CarTrainersExperiment(trainers=("bc",), curricula=("AntiEP", "myprefs:Reversed"))
