"""The learners' hyper-parameter flags and refusals through ``dataset-bc`` and ``rank``: a flag of another policy and
a policy that cannot learn the data are one line, exit 2, before any training; the options and the learning rate
recorded in rank.json; a sweep's fingerprint holds the options only when given."""

from __future__ import annotations

import dataclasses
import json

import pytest

pytest.importorskip("minari")
pytest.importorskip("h5py")
pytest.importorskip("imitation")

from curteach_teaching.cli import main  # noqa: E402
from curteach_teaching.experiments.dataset_bc.experiment import DatasetBCExperiment  # noqa: E402

KEYS = "object,robot0_eef_pos"
TINY = ["--score", "policy-loss", "--policy-steps", "3", "--no-progress"]


def _one_line(capsys, message):
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err


@pytest.mark.parametrize(("command", "flags", "message"), [
    ("dataset-bc", ["--policy", "diffusion", "--rnn-window", "5"], "--rnn-window applies to --policy bc-rnn only"),
    ("rank", ["--ddim-steps", "5"], "--ddim-steps applies to --policy diffusion only, not auto"),
    ("rank", ["--policy", "bc-rnn", "--rnn-components", "0"], "--rnn-components must be an integer >= 1"),
])
def test_a_flag_of_another_policy_is_one_line_before_any_reading(command, flags, message, tmp_path, capsys):
    # the dataset does not exist: the flag is refused before it is read
    assert main([command, "--dataset", str(tmp_path / "missing.hdf5"), *flags, "--out", str(tmp_path / "o")]) == 2
    _one_line(capsys, message)


@pytest.fixture
def episodes(robot_files):
    return robot_files.reaching_episodes(6, seed=2)


@pytest.mark.parametrize(("policy", "message"), [("diffusion", "diffusion needs Box actions; got Discrete(2)"),
                                               ("bc-rnn", "bc-rnn learns continuous (1-D Box) actions; got Discrete")])
def test_a_policy_that_cannot_learn_the_data_is_refused_before_any_training(policy, message, cartpole_root, tmp_path,
                                                                           monkeypatch, capsys):
    # the same check (prepare's check_learner, before any fit) refuses bc-rnn's image and Dict observations
    # (tests/learners/test_bc_rnn.py: the kind's check on those spaces)
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(cartpole_root))
    for argv in (["rank", *TINY], ["dataset-bc", "--curricula", "Agn,Cur", "--task-difficulty", "ensemble",
                                   "--runs", "1"]):
        out = tmp_path / argv[0]
        assert main([*argv, "--dataset", "test/cartpole-scripted-v0", "--policy", policy,
                     "--out", str(out)]) == 2
        _one_line(capsys, message)
        assert not (out / "teachers").exists() and not (out / "runs").exists()


def test_rank_records_the_options_and_the_learners_learning_rate(robot_files, tmp_path, episodes):
    path = robot_files.write_robomimic(tmp_path / "mh.hdf5", episodes)
    out = tmp_path / "rnn"
    # the ensemble: policy-loss does not score windows yet (a bc-rnn learner reads a window per step)
    assert main(["rank", "--dataset", str(path), "--obs-keys", KEYS, "--score", "ensemble", "--ensemble-size", "2",
                 "--ensemble-batches", "3", "--no-progress", "--policy", "bc-rnn", "--rnn-hidden", "8",
                 "--rnn-window", "3", "--rnn-layers", "2", "--out", str(out)]) == 0
    record = json.loads((out / "rank.json").read_text())["ensemble"]
    assert record["learner_options"] == {"rnn_hidden": 8, "rnn_window": 3}  # rnn-layers 2 is the default
    assert record["learning_rate"] == 1e-3 and record["policy"] == "bc-rnn"
    out = tmp_path / "diffusion"
    assert main(["rank", "--dataset", str(path), "--obs-keys", KEYS, *TINY, "--policy", "diffusion",
                 "--denoiser-width", "16", "--out", str(out)]) == 0
    record = json.loads((out / "rank.json").read_text())["policy-loss"]
    assert record["learning_rate"] == 3e-3 and record["learner_options"] == {"denoiser_width": 16}
    out = tmp_path / "mlp"
    assert main(["rank", "--dataset", str(path), "--obs-keys", KEYS, *TINY, "--out", str(out)]) == 0
    record = json.loads((out / "rank.json").read_text())["policy-loss"]
    assert record["learning_rate"] == 1e-3 and "learner_options" not in record


def test_the_fingerprint_holds_the_options_only_when_given():
    plain = DatasetBCExperiment(policy="bc-rnn", digest="d")
    assert "learner_options" not in plain.settings()
    given = dataclasses.replace(plain, learner_options=(("rnn_hidden", 64), ("rnn_window", 5)))
    assert given.settings()["learner_options"] == {"rnn_hidden": 64, "rnn_window": 5}
    assert {k: v for k, v in given.settings().items() if k != "learner_options"} == plain.settings()
    assert given.cache_label() == "bc-rnn|d|rnn_hidden=64,rnn_window=5" and plain.cache_label() == "bc-rnn|d"
    with pytest.raises(ValueError, match="learner_options must be sorted"):
        dataclasses.replace(plain, learner_options=(("rnn_window", 10),))  # a default is not an option
    with pytest.raises(ValueError, match="--ddim-steps applies to --policy diffusion only"):
        dataclasses.replace(plain, learner_options=(("ddim_steps", 5),))
