"""The navigation learner's opt-in optimizer and ``curteach nav --scale demo``."""

import json
from pathlib import Path

import numpy as np
import pytest

from curteach_teaching.experiments.nav.experiment import NavExperiment
from curteach_teaching.sweeps.results import fingerprint

RESULTS = Path(__file__).resolve().parents[2] / "docs" / "results"


@pytest.mark.parametrize("task", ["shortest-path", "tsp"])
def test_sgd_runs_keep_the_fingerprints_of_the_committed_runs(task):
    # the optimizer option is left out of the settings for SGD: the committed paper runs are still reused
    folder = RESULTS / f"nav-{task}-paper"
    settings = json.loads((folder / "report.json").read_text())["settings"]
    kwargs = {k: v for k, v in settings.items() if k != "experiment"}
    experiment = NavExperiment(dataset="unused.npz", **kwargs)
    assert "optimizer" not in experiment.settings()
    for run_file in sorted((folder / "runs").glob("*/run_*.json")):
        assert json.loads(run_file.read_text())["fingerprint"] == fingerprint(experiment.settings()), run_file


def test_adam_is_an_opt_in_setting():
    import torch as th

    from curteach_teaching.experiments.nav.parts import nav_trainer
    from curteach_teaching.learners.networks import NavigationCNNPolicy

    sgd = NavExperiment(dataset="d.npz", dataset_digest="0")
    adam = NavExperiment(dataset="d.npz", dataset_digest="0", optimizer="adam", learning_rate=1e-3)
    assert adam.settings()["optimizer"] == "adam" and fingerprint(adam.settings()) != fingerprint(sgd.settings())
    with pytest.raises(ValueError, match="optimizer must be one of"):
        NavExperiment(dataset="d.npz", dataset_digest="0", optimizer="rmsprop")
    policy = NavigationCNNPolicy.for_navigation(seed=0)
    trainers = {name: nav_trainer(policy, learning_rate=1e-3, batch_size=32, rng=np.random.default_rng(0),
                                  device="cpu", optimizer=name) for name in ("sgd", "adam")}
    assert type(trainers["sgd"].optimizer) is th.optim.SGD and trainers["sgd"].optimizer.defaults["momentum"] == 0
    assert type(trainers["adam"].optimizer) is th.optim.Adam
    assert trainers["adam"].optimizer.param_groups[0]["lr"] == 1e-3


@pytest.fixture(scope="module")
def tiny_sp(tmp_path_factory):
    from curteach_envs.navigation.dataset import save_dataset
    from curteach_envs.navigation.generate import generate_dataset

    path = tmp_path_factory.mktemp("demo") / "sp.npz"
    save_dataset(generate_dataset("shortest_path", {"train": 1, "val": 1, "test": 1}, seed=5, workers=1,
                                  progress=False), path)
    return path


def _experiment_of(monkeypatch, tmp_path, argv):
    """The NavExperiment `curteach nav ARGV` would run (the sweep itself is not run)."""
    from curteach_teaching.cli import main
    from curteach_teaching.commands import nav

    seen = {}

    def capture(args, experiment, report, out, session=None):
        seen["experiment"] = experiment
        return 0

    monkeypatch.setattr(nav, "run_sweep_command", capture)
    assert main(["nav", "--runs", "1", "--no-progress", "--out", str(tmp_path / "out"), *argv]) == 0
    return seen["experiment"]


def test_demo_scale_is_what_the_docs_say(monkeypatch, tmp_path, tiny_sp):
    from curteach_teaching.commands.nav import DEMO_TRAINING, SCALES
    from curteach_teaching.experiments.nav.data import DEMO_SPLIT_SIZES

    assert SCALES["demo"] == ("demo", 8, 50) and DEMO_SPLIT_SIZES == {"train": 10, "val": 1, "test": 1}
    assert DEMO_TRAINING == {"optimizer": "adam", "learning_rate": 3e-3, "loss": "mean", "max_batches": 600}
    demo = _experiment_of(monkeypatch, tmp_path, ["--scale", "demo", "--dataset", str(tiny_sp)])
    assert (demo.optimizer, demo.learning_rate, demo.loss, demo.max_batches, demo.epochs, demo.eval_every) == (
        "adam", 3e-3, "mean", 600, 8, 50)
    # flags win over the scale's settings
    mine = _experiment_of(monkeypatch, tmp_path, ["--scale", "demo", "--dataset", str(tiny_sp), "--loss",
                                                  "original", "--max-batches", "100", "--overwrite"])
    assert (mine.optimizer, mine.loss, mine.max_batches) == ("adam", "original", 100)
    # the other scales keep the original's training settings
    small = _experiment_of(monkeypatch, tmp_path, ["--scale", "small", "--dataset", str(tiny_sp), "--overwrite"])
    assert (small.optimizer, small.learning_rate, small.loss, small.max_batches) == ("sgd", 0.01, "original", None)
    # the documented settings, in the docs
    page = (Path(__file__).resolve().parents[2] / "docs" / "experiments" / "nav.md").read_text()
    for text in ("--scale demo", "Adam", "3e-3", "600 batches", "10 demonstrations per configuration"):
        assert text in page, text


def test_demo_scale_refuses_tsp(tmp_path, capsys):
    from curteach_teaching.cli import main

    assert main(["nav", "--scale", "demo", "--task", "tsp", "--no-progress", "--out", str(tmp_path / "o")]) == 2
    assert "--scale demo is made and measured for --task shortest-path" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
def test_a_demo_run_ends_well_above_the_untrained_network(tmp_path):
    # the demo's point: Agn at the demo scale leaves the plateau (about -7.6, the network driving off the grid)
    from curteach_teaching.cli import main

    out = tmp_path / "demo"
    assert main(["nav", "--scale", "demo", "--runs", "1", "--curricula", "Agn", "--workers", "1", "--no-progress",
                 "--no-figures", "--out", str(out)]) == 0
    run = json.loads((out / "runs" / "Agn" / "run_00000.json").read_text())["data"]
    test = np.asarray(run["curves"]["test"], dtype=float)
    assert test[-1] > max(test[0], -7.7) + 3.0
