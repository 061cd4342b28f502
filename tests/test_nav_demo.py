"""The navigation learner's opt-in optimizer and ``curteach nav --scale demo``."""

import json
from pathlib import Path

import numpy as np
import pytest

from curteach_teaching.experiments.nav import NavExperiment
from curteach_teaching.experiments.results import fingerprint

RESULTS = Path(__file__).resolve().parents[1] / "docs" / "results"


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

    from curteach_teaching.experiments.nav_parts import nav_trainer
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
