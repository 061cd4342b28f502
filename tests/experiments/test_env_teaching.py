"""curteach teach: the generic learners against independent implementations, the experiment, and the command with
plug-in learners and teachers."""

import csv
import os
import subprocess
import sys
import textwrap

import gymnasium as gym
import numpy as np
import pytest

from curteach_envs import CarTeachEnv, TabularMDP
from curteach_envs.gymnasium_ids import registered_id
from curteach_teaching.demonstrations import occupancy_per_start
from curteach_teaching.experiments.tabular.experiment import EnvTeachingExperiment, exact_return, teaching_starts
from curteach_teaching.learners import MaxEntIRLLearner
from curteach_teaching.learners.tabular import LinearMaxEntIRL, TabularSoftmaxBC
from curteach_teaching.planning import expected_return, hard_value_iteration, occupancy, soft_value_iteration
from curteach_teaching.sweeps.backends import run_seed_sequence
from curteach_teaching.teaching.loop import Lesson


def test_linear_maxent_irl_matches_the_planners_on_a_cyclic_mdp():
    mdp = TabularMDP.from_gymnasium(gym.make("FrozenLake-v1", map_name="8x8"), gamma=0.95)
    theta = np.random.default_rng(0).normal(size=mdp.n_features)
    starts = teaching_starts(mdp)
    learner = LinearMaxEntIRL(mdp, start_states=starts, initial_parameters=theta)
    planned = soft_value_iteration(mdp, mdp.features @ theta, tol=1e-13)
    np.testing.assert_allclose(learner.log_policy, planned.log_policy, atol=1e-9)
    np.testing.assert_allclose(learner.occupancy_per_start(),
                               occupancy(mdp, np.exp(planned.log_policy), mdp.state_indicator(starts)), atol=1e-9)


def test_linear_maxent_irl_equals_the_car_learner():
    # two independent implementations of the linear MaxEnt-IRL step: the car original's (level induction, task
    # decomposition) and the generic one (soft policy iteration, dense solves)
    mdp = CarTeachEnv(layout_seed=3).tabular()
    expert = hard_value_iteration(mdp)
    rho = occupancy_per_start(mdp, expert.policy)
    car = MaxEntIRLLearner(mdp, reward_model="linear", learning_rate=0.2, initial_parameters=np.zeros(8))
    generic = LinearMaxEntIRL(mdp, learning_rate=0.2)
    np.testing.assert_allclose(generic.log_policy, car.log_policy, atol=1e-10)
    live = ~mdp.absorbing  # the car learner leaves the sink out of its per-start occupancy (zero features there)
    np.testing.assert_allclose(generic.occupancy_per_start()[:, live], car.occupancy_per_start()[:, live], atol=1e-10)
    for k in (3, 17, 3, 30):
        state = int(mdp.start_states[k])
        car.update(rho[k], state)
        generic.learn(Lesson(state, k, np.zeros((1, 1), int), np.zeros((1, 1), int), rho[k]))
        np.testing.assert_allclose(generic.parameters, car.parameters, atol=1e-9)
    np.testing.assert_allclose(generic.gradients_per_start(rho), car.gradients_per_start(rho), atol=1e-9)


def test_softmax_bc_step_by_hand():
    learner = TabularSoftmaxBC(2, 3, learning_rate=0.6)
    lesson = Lesson(0, 0, np.array([[0, 0, 1]]), np.array([[2, 2, 0]]))
    learner.learn(lesson)
    # state 0: two pairs on action 2 against uniform 1/3 each; state 1: one pair on action 0; mean over 3 pairs
    expected = np.array([[-2 / 3, -2 / 3, 2 - 2 / 3], [1 - 1 / 3, -1 / 3, -1 / 3]]) * 0.6 / 3
    np.testing.assert_allclose(learner.logits, expected)
    np.testing.assert_allclose(np.exp(learner.action_log_probabilities()).sum(axis=1), 1.0)


def test_exact_return_and_teaching_starts():
    mdp = TabularMDP.from_gymnasium(gym.make(registered_id("CliffWalking-v0")), gamma=0.9)
    policy = np.full((mdp.n_states, mdp.n_actions), 0.25)
    assert exact_return(mdp)(policy) == pytest.approx(expected_return(mdp, policy), rel=1e-9)
    starts = teaching_starts(mdp)
    assert 36 in starts and 48 not in starts and 47 not in starts  # the start, not the sink nor the unreachable goal


def test_experiment_runs_and_plugins_are_seeded_by_name():
    experiment = EnvTeachingExperiment(env_id=registered_id("CliffWalking-v0"), teachers=("Cur", "Agn", "Omn"),
                                       steps=15)
    assert experiment.teachers == ("Agn", "Omn", "Cur")
    result = experiment.run(0, run_seed_sequence(0, 0))
    assert list(result.curves) == ["Agn", "Omn", "Cur"]
    for curve in result.curves.values():
        assert curve.shape == (16,) and np.all(np.isfinite(curve))
        assert curve[-1] > curve[0]  # imitating the expert helps on the cliff
    assert result.extras["expert_reward"] == pytest.approx(-9.733, abs=1e-3)  # 13 steps of -1 at gamma 0.95
    again = experiment.run(0, run_seed_sequence(0, 0))
    for name in result.curves:
        np.testing.assert_array_equal(again.curves[name], result.curves[name])


def test_bad_settings():
    with pytest.raises(ValueError, match="unknown learner 'nope'; available: maxent-irl, bc"):
        EnvTeachingExperiment(learner="nope")
    with pytest.raises(ValueError, match=r"built-in teachers .*; got \['Scot'\]"):
        EnvTeachingExperiment(teachers=("Agn", "Scot"))
    with pytest.raises(ValueError, match="reward depends on the action"):
        EnvTeachingExperiment(env_id=registered_id("Taxi-v3"), teachers=("Agn", "BBox")).check_environment()
    with pytest.raises(ValueError, match="CartPole-v1 has no transition table"):
        EnvTeachingExperiment(env_id="CartPole-v1").check_environment()
    with pytest.raises(ValueError, match="cannot make environment 'NoSuchEnv-v9'"):
        EnvTeachingExperiment(env_id="NoSuchEnv-v9").check_environment()


LEARNER_PLUGIN = textwrap.dedent("""
    import numpy as np

    class Counting:
        '''A tabular learner that copies the empirical action frequencies of everything it was shown.'''
        name = "Counting"

        def __init__(self, context):
            self.counts = np.ones((context.mdp.n_states, context.mdp.n_actions))

        def action_log_probabilities(self):
            return np.log(self.counts / self.counts.sum(axis=1, keepdims=True))

        def learn(self, lesson):
            np.add.at(self.counts, (lesson.states.ravel(), lesson.actions.ravel()), 1.0)
""")


def run_cli(args, env):
    return subprocess.run([sys.executable, "-m", "curteach_teaching.cli", "teach", *args], env=env,
                          capture_output=True, text=True, timeout=600)


def test_command_with_a_plugin_learner(tmp_path):
    (tmp_path / "mylearners.py").write_text(LEARNER_PLUGIN)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    out = tmp_path / "out"
    common = ["--env", "FrozenLake-v1", "--runs", "2", "--steps", "6", "--workers", "2", "--no-progress",
              "--no-figures", "--out", str(out)]
    done = run_cli(["--learner", "mylearners:Counting", "--teachers", "Agn,Cur", *common], env)
    assert done.returncode == 0, done.stderr
    with open(out / "summary.csv") as stream:
        rows = list(csv.DictReader(stream))
    assert {r["teacher"] for r in rows} == {"Agn", "Cur"} and {r["t"] for r in rows} == {str(t) for t in range(7)}
    assert all(r["n"] == "2" and np.isfinite(float(r["mean"])) for r in rows)
    again = run_cli(["--learner", "mylearners:Counting", "--teachers", "Agn,Cur", *common], env)
    assert "0 computed, 2 reused" in again.stdout
    bad = run_cli(["--env", registered_id("Taxi-v3"), "--teachers", "BBox", "--out", str(tmp_path / "bad")], env)
    assert bad.returncode == 2 and "depends on the action" in bad.stderr and not (tmp_path / "bad").exists()


@pytest.mark.parametrize("kwargs, shown", [('{"map_name": "9x9"}', "KeyError: '9x9'"),
                                           ('{"map_name": 3}', "KeyError: 3")])
def test_a_bad_value_in_env_kwargs_is_one_line(tmp_path, capsys, kwargs, shown):
    from curteach_teaching.cli import main

    out = tmp_path / "out"
    assert main(["teach", "--env", "FrozenLake-v1", "--env-kwargs", kwargs, "--runs", "1", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "refused the arguments" in err and shown in err, err
    assert not out.exists()


@pytest.mark.filterwarnings("error::RuntimeWarning")  # numpy's overflow warning must not leak: it is handled
def test_teach_prints_which_learners_diverged(tmp_path, capsys):
    import json

    from curteach_teaching.cli import main

    out = tmp_path / "out"
    assert main(["teach", "--env", "FrozenLake-v1", "--learner", "bc", "--learning-rate", "1e308", "--teachers",
                 "Agn,Cur", "--runs", "2", "--steps", "3", "--backend", "serial", "--no-progress", "--no-figures",
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "diverged (learner kept its last finite parameters; a smaller --learning-rate avoids it): share of runs " \
           "Agn 1.00, Cur 1.00; at steps 0" in printed
    report = json.loads((out / "report.json").read_text())
    assert report["diverged_share"] == {"Agn": 1.0, "Cur": 1.0}
    assert report["diverged_runs"] == {"0": {"Agn": 0, "Cur": 0}, "1": {"Agn": 0, "Cur": 0}}
    assert main(["teach", "--env", "FrozenLake-v1", "--teachers", "Agn,Cur", "--runs", "1", "--steps", "2",
                 "--backend", "serial", "--no-progress", "--no-figures", "--out", str(tmp_path / "calm")]) == 0
    assert "diverged" not in capsys.readouterr().out  # a learner that did not diverge is not mentioned


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_overflowing_learners_diverge_without_warnings():
    from curteach_teaching.learners.divergence import LearnerDiverged
    from curteach_teaching.teaching.teachers import OmniscientTeacher

    bc = TabularSoftmaxBC(2, 2, learning_rate=1e308)
    with pytest.raises(LearnerDiverged):  # 1e308 times the 4 pairs' gradient 2 overflows
        bc.learn(Lesson(0, 0, np.zeros((1, 4), dtype=np.int64), np.ones((1, 4), dtype=np.int64)))
    np.testing.assert_array_equal(bc.logits, 0.0)  # unchanged
    # rewards near the largest floats: the log-normaliser rounds away and tied actions would each get probability 1
    mdp = TabularMDP.from_gymnasium(gym.make(registered_id("CliffWalking-v0")), gamma=0.95)
    starts = teaching_starts(mdp)
    expert = hard_value_iteration(mdp)
    rho = occupancy_per_start(mdp, expert.policy, starts)
    learner = LinearMaxEntIRL(mdp, start_states=starts, learning_rate=1e200)
    with pytest.raises(LearnerDiverged):
        for k in range(starts.size):
            learner.step(rho[k], starts[k])
    np.testing.assert_allclose(np.exp(learner.action_log_probabilities()).sum(axis=1), 1.0)
    omn = OmniscientTeacher(starts, np.full(mdp.n_features, 1e300), rho)
    assert omn.select(learner, 0) in starts  # eta^2 and eta overflow in its objective: the argmin all the same
