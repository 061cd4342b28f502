"""The car commands that train a network (car-bc, car-bc-sensitivity, car-trainers) place each run on the runner's
device: every network of a run is built there, a CUDA run without a GPU names itself, and the CPU's settings are
those of the committed results (which therefore still resume)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("imitation")

import torch as th  # noqa: E402

from curteach_teaching.cli import main  # noqa: E402
from curteach_teaching.experiments.car.bc import CarBCExperiment  # noqa: E402
from curteach_teaching.experiments.car.trainers import CarTrainersExperiment  # noqa: E402
from curteach_teaching.learners.bc import QuadraticSoftmaxPolicy  # noqa: E402
from curteach_teaching.sweeps import devices  # noqa: E402
from curteach_teaching.sweeps.results import fingerprint  # noqa: E402

RESULTS = Path(__file__).resolve().parents[2] / "docs" / "results"


class Stop(Exception):
    """Ends a run where it first reads a value (a tensor on the meta device has none)."""


def _record_instances(monkeypatch, cls, made: list) -> None:
    original = cls.__init__

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(cls, "__init__", init)


@pytest.mark.parametrize("cell", ["car-bc", "bc_Cur", "dagger_Cur", "gail_Cur", "airl_Cur", "mce-irl_Cur"])
def test_every_network_of_a_car_run_is_on_the_runs_device(monkeypatch, cell):
    """The runner gives the run the ``meta`` device (tensors without data: a network left elsewhere is found, and
    one op mixing in a tensor from elsewhere fails). Every policy and reward net the run builds, car-bc's learner
    copies and the trainers' PPO, BC and MCE-IRL included, must be there when the run first reads a value: a
    learner's expected reward (car-bc), the reward of the starting policy (the recipes) or MCE-IRL's built trainer
    (which reads its reward net at once)."""
    from imitation.algorithms.mce_irl import MCEIRL
    from imitation.rewards.reward_nets import RewardNet

    from curteach_teaching.experiments.car import recipes
    from curteach_teaching.learners.bc_car import BCCarLearner

    asked = []
    monkeypatch.setattr(devices, "run_device", lambda device: asked.append(device) or "meta")
    made: list = []
    for cls in (QuadraticSoftmaxPolicy, RewardNet):
        _record_instances(monkeypatch, cls, made)
    # the pre-trained parameters the runs copy: meta holds none, so a stand-in (T0 pre-training trains nothing)
    monkeypatch.setattr(QuadraticSoftmaxPolicy, "theta_numpy", lambda self: np.ones(tuple(self.theta.shape)))

    def stop(*args, **kwargs):
        raise Stop

    monkeypatch.setattr(BCCarLearner, "expected_reward", stop)
    monkeypatch.setattr(recipes.CarSetup, "reward", stop)
    built_mce = MCEIRL.__init__
    monkeypatch.setattr(MCEIRL, "__init__", lambda self, *a, **k: (built_mce(self, *a, **k), stop()))
    seed_sequence = np.random.SeedSequence([0, 0])
    with pytest.raises(Stop):
        if cell == "car-bc":
            CarBCExperiment(steps=1, teachers=("Agn", "Cur")).run(0, seed_sequence)
        else:
            trainer, curriculum = cell.rsplit("_", 1)
            CarTrainersExperiment(trainers=(trainer,), curricula=(curriculum,), steps=1).run_cell(cell, 0,
                                                                                                  seed_sequence)
    assert asked == ["cpu"]  # the experiment's device, resolved once by the run
    if cell == "car-bc":  # the pre-trained learner and one copy per teacher
        assert sum(isinstance(module, QuadraticSoftmaxPolicy) for module in made) == 3
    if cell.startswith(("gail", "airl", "mce-irl")):
        assert any(isinstance(module, RewardNet) for module in made)
    places = {tensor.device.type for module in made for tensor in (*module.parameters(), *module.buffers())}
    assert places == {"meta"}


@pytest.mark.skipif(th.cuda.is_available(), reason="checks the message of a machine without a GPU")
def test_a_cuda_run_on_a_machine_without_gpu_names_the_run():
    with pytest.raises(ValueError, match="^run 3 needs a GPU"):
        CarBCExperiment(steps=1, device="cuda").run(3, np.random.SeedSequence([0, 3]))
    with pytest.raises(ValueError, match="^run 3 of bc_Agn needs a GPU"):
        CarTrainersExperiment(trainers=("bc",), curricula=("Agn",), steps=1, device="cuda").run_cell(
            "bc_Agn", 3, np.random.SeedSequence([0, 3]))


def test_the_device_is_checked_and_a_setting_only_away_from_the_cpu():
    for make in (CarBCExperiment, lambda **kw: CarTrainersExperiment(trainers=("bc",), **kw)):
        with pytest.raises(ValueError, match="device must be 'cpu' or 'cuda'"):
            make(device="auto")
        cpu, cuda = make().settings(), make(device="cuda").settings()
        assert "device" not in cpu and cuda.pop("device") == "cuda" and cuda == cpu


@pytest.mark.parametrize("folder, module", [
    ("car-trainers-T0", "car_trainers"),
    ("car-trainers-adversarial-T0", "car_trainers"),
    ("car-trainers-adversarial-matched-T0", "car_trainers"),
    ("car-trainers-adversarial-matched-airl-T0", "car_trainers"),
    ("car-bc-sensitivity-T0-batch", "sensitivity"),
])
def test_the_recorded_commands_of_the_committed_results_keep_their_settings(tmp_path, monkeypatch, folder, module):
    """The command each committed report records (on the CPU, the default device) builds an experiment of the
    recorded settings, fingerprint included: a rerun resumes the folder."""
    import importlib

    report = json.loads((RESULTS / folder / "report.json").read_text())
    built = []
    command_module = importlib.import_module(f"curteach_teaching.commands.{module}")
    monkeypatch.setattr(command_module, "run_sweep_command",
                        lambda args, experiment, report, out: built.append(experiment) or 0)
    command = list(report["command"][1:])
    command[command.index("--out") + 1] = str(tmp_path / folder)
    assert main(command) == 0
    settings = json.loads(json.dumps(built[0].settings()))
    assert settings == report["settings"] and fingerprint(settings) == fingerprint(report["settings"])
