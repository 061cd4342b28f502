"""curteach car-trainers: the exact metric, the BC path against car-bc, the summary and resuming."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

pytest.importorskip("imitation")

from curteach_envs.car import car_tabular, sample_road  # noqa: E402
from curteach_teaching.cli import main  # noqa: E402
from curteach_teaching.experiments.car.recipes import finite_horizon_return  # noqa: E402
from curteach_teaching.experiments.car.trainers import CarTrainersExperiment, split_cell  # noqa: E402
from curteach_teaching.experiments.car.trainers_report import steps_to_target  # noqa: E402
from curteach_teaching.planning import expected_return  # noqa: E402


def test_finite_horizon_return_of_a_stationary_policy_is_the_discounted_return():
    mdp = car_tabular(sample_road(np.random.default_rng(3)), gamma=0.999)
    policy = np.random.default_rng(4).dirichlet(np.ones(mdp.n_actions), size=mdp.n_states)
    tiled = np.broadcast_to(policy, (mdp.horizon, mdp.n_states, mdp.n_actions))
    assert finite_horizon_return(mdp, tiled) == pytest.approx(expected_return(mdp, policy), rel=1e-12)


def test_finite_horizon_return_by_hand():
    import scipy.sparse as sp

    from curteach_envs.tabular import TabularMDP

    # states 0 (start), 1 (+1), 2 (-1), 3 the sink; action a from 0 goes to 1 + a, everything else to the sink
    rows = [0, 1, 2, 3, 4, 5, 6, 7]
    cols = [1, 2, 3, 3, 3, 3, 3, 3]
    mdp = TabularMDP(transitions=sp.csr_matrix((np.ones(8), (rows, cols)), shape=(8, 4)),
                     reward=np.array([0.5, 1.0, -1.0, 0.0]), features=np.eye(4)[:, :2],
                     initial_state_dist=np.array([1.0, 0, 0, 0]), gamma=1.0, horizon=2)
    pi = np.full((2, 4, 2), 0.5)
    pi[0, 0] = [0.75, 0.25]
    assert finite_horizon_return(mdp, pi) == pytest.approx(0.5 + 0.75 - 0.25)
    assert finite_horizon_return(mdp, pi, gamma=0.5) == pytest.approx(0.5 + 0.5 * 0.5)


def test_steps_to_target():
    curves = np.array([[0.0, 1.0, 2.0], [0.0, 0.5, 0.9]])
    np.testing.assert_array_equal(steps_to_target(curves, np.array([1.0, 1.0])), [1, 3])


@pytest.fixture
def one_thread():
    """One torch math thread, as the sweep's backends give every run (many threads crawl on a loaded machine)."""
    from curteach_teaching.sweeps.backends import one_math_thread

    with one_math_thread():
        yield


@pytest.mark.slow  # about 2 min on a loaded 2-core machine
def test_bc_path_starts_from_car_bcs_learner_and_steps_as_it_does(one_thread):
    from curteach_teaching.curriculum import CurriculumBC
    from curteach_teaching.experiments.car.bc import CarBCExperiment
    from curteach_teaching.learners.bc_car import BCCarLearner

    seed = np.random.SeedSequence([5, 0])
    car_bc = CarBCExperiment(init_types=2, steps=1, pretrain_sweeps=2).run(0, np.random.SeedSequence([5, 0]))
    experiment = CarTrainersExperiment(trainers=("bc",), curricula=("Agn",), init_types=2, steps=1,
                                       pretrain_sweeps=2)
    result = experiment.run_cell("bc_Agn", 0, seed)
    assert result.curves["reward"][0] == car_bc.extras["initial_reward"]  # the same road, pool and pre-training
    # one curriculum step on a batch of whole demonstrations is car-bc's step on the same pairs
    setup = experiment.setup(np.random.SeedSequence([5, 0]))
    from curteach_teaching.experiments.car.recipes import _bc_trainer

    trainer = _bc_trainer(setup, np.random.default_rng(0))
    batches = []
    curriculum = CurriculumBC(trainer, setup.demonstrations, variant="Agn", batch_unit="demonstrations",
                              demos_per_batch=setup.settings.n_per_start,
                              callbacks=[type("Batches", (), {"on_batch": batches.append})()])
    curriculum.train(1, max_steps=1)
    demos = [setup.demonstrations[i] for i in batches[0].demonstrations]
    learner = BCCarLearner(setup.mdp, update="batch", learning_rate=experiment.learning_rate,
                           n_pairs=trainer.batch_size, rng=np.random.default_rng(0))
    learner.set_theta(setup.theta)
    learner.train_sets(np.concatenate([d.obs[:-1] for d in demos])[None], np.concatenate([d.acts for d in demos])[None])
    np.testing.assert_array_equal(trainer.policy.theta_numpy(), learner.theta)


def read_summary(path):
    with open(path, newline="") as stream:
        return list(csv.DictReader(stream))


def check_summary(out, trainers, curricula, steps, runs):
    rows = read_summary(out / "summary.csv")
    assert list(rows[0]) == ["trainer", "curriculum", "step", "mean", "sem", "n"]
    cells = {(r["trainer"], r["curriculum"], int(r["step"])) for r in rows}
    assert cells == {(t, c, s) for t in trainers for c in curricula for s in range(steps + 1)}
    assert all(np.isfinite(float(r["mean"])) and np.isfinite(float(r["sem"])) for r in rows)
    assert all(int(r["n"]) == runs for r in rows)


def test_command_writes_every_trainer_curriculum_step_and_resumes(tmp_path, capsys):
    args = ["car-trainers", "--trainers", "bc", "--curricula", "Agn,Cur", "--scale", "small", "--steps", "1",
            "--runs", "2", "--backend", "serial", "--no-progress", "--no-figures", "--out", str(tmp_path)]
    assert main(args) == 0
    check_summary(tmp_path, ["bc"], ["Agn", "Cur"], 1, 2)
    loss = json.loads((tmp_path / "runs" / "bc_Cur" / "run_00000.json").read_text())["data"]["curves"]["train:loss"]
    assert len(loss) == 2 and np.isnan(loss[0]) and np.isfinite(loss[1]) and loss[1] > 0  # BC's loss of epoch 1
    assert main(args) == 0
    assert "(0 computed, 4 reused)" in capsys.readouterr().out


def test_command_refuses_an_unknown_trainer(tmp_path, capsys):
    assert main(["car-trainers", "--trainers", "bc,ppo", "--out", str(tmp_path / "x"), "--no-progress"]) == 2
    message = capsys.readouterr().err
    assert "unknown car trainer 'ppo'; available: bc, dagger, gail, airl, mce-irl" in message
    assert not (tmp_path / "x").exists()
    assert split_cell("mce-irl_Cur-T") == ("mce-irl", "Cur-T")


@pytest.mark.slow
def test_command_small_scale_all_trainers(tmp_path, capsys):
    trainers = ["bc", "dagger", "gail", "airl", "mce-irl"]
    args = ["car-trainers", "--trainers", ",".join(trainers), "--curricula", "Agn,Cur", "--scale", "small",
            "--runs", "2", "--workers", "2", "--no-progress", "--out", str(tmp_path)]
    assert main(args) == 0
    check_summary(tmp_path, trainers, ["Agn", "Cur"], 3, 2)
    assert {f"learning_curves_{t}.png" for t in trainers} <= {p.name for p in tmp_path.iterdir()}
    for trainer in trainers:  # a training loss per epoch where the trainer has one (the discriminator's for GAIL, AIRL)
        curves = json.loads((tmp_path / "runs" / f"{trainer}_Cur" / "run_00000.json").read_text())["data"]["curves"]
        assert ("train:loss" in curves) == (trainer != "mce-irl")
        if trainer != "mce-irl":
            assert np.isnan(curves["train:loss"][0]) and np.all(np.isfinite(curves["train:loss"][1:]))
    assert main(args) == 0
    assert "(0 computed, 20 reused)" in capsys.readouterr().out


def test_the_adversarial_budget_reaches_the_trainer_and_old_runs_keep_their_fingerprint(tmp_path, monkeypatch):
    from imitation.algorithms.adversarial.common import AdversarialTrainer

    received = []
    original = AdversarialTrainer.train_disc

    def counted(self, *args, **kwargs):  # what the GAIL trainer was asked to do, round by round
        received.append((self.n_disc_updates_per_round, self.gen_train_timesteps))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(AdversarialTrainer, "train_disc", counted)
    from curteach_teaching.curriculum.adapters import adversarial, starts

    matched = []

    def recorded(envs, chosen):  # the starts each round's generator episodes were given
        matched.append(sorted({int(demo.obs[0]) for demo in chosen}))
        return starts.starts_matched(envs, chosen)

    monkeypatch.setattr(adversarial, "starts_matched", recorded)
    args = ["car-trainers", "--trainers", "gail", "--curricula", "Cur", "--scale", "small", "--steps", "2",
            "--disc-updates", "3", "--adversarial-timesteps", "60", "--match-starts", "--runs", "1", "--backend",
            "serial", "--no-progress", "--no-figures", "--out", str(tmp_path)]
    assert main(args) == 0
    assert received == [(3, 60)] * (2 * 3)  # 2 rounds of 3 discriminator updates, 60 generator steps each
    assert len(matched) == 2 and all(matched)  # one start distribution per round, from its demonstrations
    # a setting added later is fingerprinted only away from its default: runs saved before it stay valid
    default = CarTrainersExperiment(trainers=("bc",), curricula=("Agn",)).settings()
    assert "disc_updates" not in default and "match_starts" not in default
    assert CarTrainersExperiment(trainers=("bc",), curricula=("Agn",), disc_updates=16).settings()["disc_updates"] == 16
