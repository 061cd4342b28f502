"""The curriculum adapters of imitation's DAgger, GAIL/AIRL and MCE-IRL: what each trainer actually receives."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
import scipy.sparse as sp
import torch as th

from curteach_envs.tabular import TabularMDP

pytest.importorskip("imitation")

from imitation.algorithms.mce_irl import MCEIRL, TabularPolicy  # noqa: E402
from imitation.data import rollout  # noqa: E402
from imitation.data.types import Trajectory  # noqa: E402
from imitation.rewards.reward_nets import BasicRewardNet  # noqa: E402
from imitation.util import logger as imit_logger  # noqa: E402

from curteach_teaching.curriculum.adapters.mce_irl import CurriculumMCEIRL, time_dependent_log_probs  # noqa: E402


def keep_two(epoch, n_epochs, n_items):
    """A pacing that keeps the two most preferred demonstrations."""
    return 2


def layered_mdp() -> TabularMDP:
    """Three layers of two states (0-1, 2-3, 4-5) and a sink 6; action a moves to the next layer's state a."""
    S, A = 7, 2
    rows, cols = [], []
    for s in range(S):
        for a in range(A):
            rows.append(s * A + a)
            cols.append(2 * (s // 2 + 1) + a if s < 4 else 6)
    transitions = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(S * A, S))
    features = np.array([[1, 0], [0, 1], [1, 0], [0, 1], [1, 0], [0, 1], [0, 0]], dtype=float)
    init = np.array([0.5, 0.5, 0, 0, 0, 0, 0])
    return TabularMDP(transitions=transitions, reward=features @ np.array([1.0, -1.0]), features=features,
                      initial_state_dist=init, gamma=1.0, horizon=3)


def demo(states) -> Trajectory:
    """The trajectory through ``states`` (4 states: 3 actions, each the parity of the next state)."""
    states = np.asarray(states, dtype=np.int64)
    actions = np.where(states[1:] == 6, 0, states[1:] % 2)
    return Trajectory(obs=states, acts=actions.astype(np.int64), infos=None, terminal=True)


DEMOS = [demo([0, 2, 4, 6]), demo([1, 3, 5, 6]), demo([0, 3, 4, 6]), demo([1, 2, 5, 6])]
SCORES = np.array([3.0, 0.0, 1.0, 2.0])  # Cur-T keeps the lowest log Psi^E first: demos 1 and 2


def silent_logger(folder):
    return imit_logger.configure(str(folder), format_strs=[])


# ---------------------------------------------------------------------------------------------------- MCE-IRL
def mce_trainer(tmp_path, mdp=None):
    env = (mdp or layered_mdp()).to_seals()
    net = BasicRewardNet(env.observation_space, env.action_space, use_action=False, hid_sizes=())
    with th.no_grad():
        for parameter in net.parameters():
            parameter.zero_()
    return MCEIRL(None, env, net, np.random.default_rng(0), discount=1.0, log_interval=None,
                  optimizer_kwargs={"lr": 0.1}, custom_logger=silent_logger(tmp_path))


def test_time_dependent_log_probs_floor_zero_probabilities():
    pi = np.zeros((2, 3, 2))
    pi[:, :, 0] = 1.0
    pi[1, 2] = [0.25, 0.75]
    log_probs = time_dependent_log_probs(pi, np.array([2, 2, 2]), np.array([1, 1, 0]), np.array([0, 1, 5]))
    assert log_probs[0] == -np.inf and log_probs[1] == pytest.approx(np.log(0.75))
    assert log_probs[2] == pytest.approx(np.log(0.25))  # beyond the horizon: the last step's policy


def test_mce_irl_matches_the_chosen_subset_from_its_starts(tmp_path):
    trainer = mce_trainer(tmp_path / "a")
    original_starts = trainer.env.initial_state_dist.copy()
    curriculum = CurriculumMCEIRL(trainer, DEMOS, variant="Cur-T", teacher=SCORES, pacing=keep_two,
                                  iterations_per_epoch=3)
    curriculum.train(1)
    chosen = [DEMOS[1], DEMOS[2]]
    expected_occupancy = np.bincount(np.concatenate([d.obs for d in chosen]), minlength=7) / 2
    np.testing.assert_array_equal(trainer.demo_state_om, expected_occupancy)
    np.testing.assert_array_equal(curriculum.history[0].selected, [1, 2])
    np.testing.assert_array_equal(trainer.env.initial_state_dist, original_starts)  # restored
    # the same three steps by hand, with the environment started where the chosen demonstrations start
    by_hand = mce_trainer(tmp_path / "b")
    by_hand.env.initial_state_dist = np.bincount([0, 1], minlength=7) / 2.0
    by_hand.set_demonstrations(chosen)
    by_hand.train(max_iter=3)
    for mine, theirs in zip(trainer.reward_net.parameters(), by_hand.reward_net.parameters(), strict=True):
        assert th.equal(mine, theirs)
    np.testing.assert_array_equal(trainer.policy.pi, by_hand.policy.pi)
    # the selection went through imitation's logger
    recorded = trainer.logger.default_logger.name_to_value
    assert recorded["curriculum/selected"] == "1 2" and recorded["curriculum/n_selected"] == 2
    assert recorded["curriculum/fraction"] == 0.5


def test_mce_irl_learner_difficulty_is_the_policy_tables_at_each_time_step(tmp_path):
    trainer = mce_trainer(tmp_path)
    pi = np.full((3, 7, 2), 0.5)
    pi[1, 3] = [1.0, 0.0]  # demonstration 1 takes action 1 in state 3 at t = 1: probability 0
    trainer.policy.set_pi(pi)
    curriculum = CurriculumMCEIRL(trainer, DEMOS, variant="Cur-L", min_log_prob=-50.0)
    difficulty = curriculum.learner_difficulty()
    assert not np.isnan(difficulty).any()
    np.testing.assert_allclose(difficulty, [3 * np.log(2), 50 + 2 * np.log(2), 2 * np.log(2), 3 * np.log(2)])
    curriculum.train(1)  # Cur-L: the hardest for the learner (demonstration 1) first
    assert curriculum.history[0].selected[0] == 1


def test_mce_irl_resumes_exactly(tmp_path):
    def fresh(folder):
        return CurriculumMCEIRL(mce_trainer(folder), DEMOS, variant="Cur", teacher=SCORES, iterations_per_epoch=2)

    whole = fresh(tmp_path / "whole")
    whole.train(3)
    first = fresh(tmp_path / "first")
    first.train(3, max_steps=1)
    state = first.state_dict()
    resumed = fresh(tmp_path / "resumed")
    resumed.load_state_dict(state)
    resumed.train(3, start_epoch=2)
    np.testing.assert_array_equal(resumed.trainer.policy.pi, whole.trainer.policy.pi)
    assert [r.selected.tolist() for r in resumed.history] == [r.selected.tolist() for r in whole.history]


def test_mce_irl_refuses_what_it_cannot_use(tmp_path):
    trainer = mce_trainer(tmp_path)
    with pytest.raises(ValueError, match="supported trainers: bc: imitation.algorithms.bc.BC"):
        CurriculumMCEIRL(object(), DEMOS)
    float_obs = Trajectory(obs=np.zeros((4, 2), dtype=np.float32), acts=np.zeros(3, dtype=np.int64), infos=None,
                           terminal=True)
    with pytest.raises(ValueError, match="state indices in \\[0, 6\\]"):
        CurriculumMCEIRL(trainer, [float_obs])
    with pytest.raises(ValueError, match="give a sequence of imitation Trajectory objects"):
        CurriculumMCEIRL(trainer, rollout.flatten_trajectories(DEMOS))
    with pytest.raises(ValueError, match="needs a teacher difficulty"):
        CurriculumMCEIRL(trainer, DEMOS, variant="Cur")


# -------------------------------------------------------------------------------------------------- GAIL, AIRL
def venv_of(mdp, seed=0):
    from seals.base_envs import ExposePOMDPStateWrapper
    from stable_baselines3.common.vec_env import DummyVecEnv

    env = mdp.to_seals()
    venv = DummyVecEnv([lambda: ExposePOMDPStateWrapper(env)])
    venv.seed(seed)
    return venv


@pytest.mark.parametrize("kind", ["gail", "airl"])
def test_adversarial_expert_data_is_the_ranked_paced_subset(tmp_path, kind):
    from imitation.algorithms.adversarial.airl import AIRL
    from imitation.algorithms.adversarial.gail import GAIL
    from imitation.rewards.reward_nets import BasicShapedRewardNet
    from stable_baselines3 import PPO

    from curteach_teaching.curriculum.adapters.adversarial import CurriculumAdversarial
    from curteach_teaching.learners.bc import QuadraticSoftmaxPolicy, action_features

    mdp = layered_mdp()
    with th.random.fork_rng(devices=[]):
        th.manual_seed(0)
        venv = venv_of(mdp)
        generator = PPO(QuadraticSoftmaxPolicy, venv, n_steps=6, batch_size=6, n_epochs=1, device="cpu",
                        policy_kwargs={"action_features": action_features(mdp)})
        net_class, trainer_class = (BasicRewardNet, GAIL) if kind == "gail" else (BasicShapedRewardNet, AIRL)
        trainer = trainer_class(demonstrations=DEMOS, demo_batch_size=3, venv=venv, gen_algo=generator,
                                reward_net=net_class(venv.observation_space, venv.action_space),
                                custom_logger=silent_logger(tmp_path), log_dir=tmp_path)
        seen, metrics, updates = [], [], []
        original = trainer.train_disc

        def users_own(*args, **kwargs):  # a user's override on the instance: what each discriminator update returned
            stats = original(*args, **kwargs)
            updates.append(stats)
            return stats

        trainer.train_disc = users_own
        watcher = type("Watch", (), {"on_epoch_start": seen.append, "on_batch": metrics.append})
        curriculum = CurriculumAdversarial(trainer, DEMOS, variant="Cur-T", teacher=SCORES, pacing=keep_two,
                                           callbacks=[watcher()])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            curriculum.train(2)
    # each step's metrics: the means over its discriminator updates (2 per round), the loss the discriminator's
    n = trainer.n_disc_updates_per_round
    assert len(updates) == 2 * n and vars(trainer)["train_disc"] is users_own  # the override is put back
    for step, batch in enumerate(metrics):
        mine = updates[step * n: (step + 1) * n]
        assert batch.metrics["disc_loss"] == pytest.approx(np.mean([s["disc_loss"] for s in mine]), rel=1e-12)
        assert batch.metrics["disc_acc"] == pytest.approx(np.mean([s["disc_acc"] for s in mine]), rel=1e-12)
        assert batch.metrics["loss"] == batch.metrics["disc_loss"]
    expected = rollout.flatten_trajectories([DEMOS[1], DEMOS[2]])
    received = trainer._demo_data_loader.dataset  # the discriminator's expert data after set_demonstrations
    assert sorted(zip(received.obs.tolist(), received.acts.tolist(), strict=True)) == sorted(
        zip(expected.obs.tolist(), expected.acts.tolist(), strict=True))
    assert trainer._global_step == 2  # one trainer round per curriculum epoch
    assert [plan.selection.selected.tolist() for plan in seen] == [[1, 2], [1, 2]]
    assert curriculum.step == 2


def test_adversarial_learner_difficulty_is_the_generators(tmp_path):
    from imitation.algorithms.adversarial.gail import GAIL
    from stable_baselines3 import PPO

    from curteach_teaching.curriculum.adapters.adversarial import CurriculumAdversarial
    from curteach_teaching.curriculum.index import DemonstrationIndex
    from curteach_teaching.curriculum.scores import policy_difficulty
    from curteach_teaching.learners.bc import QuadraticSoftmaxPolicy, action_features

    mdp = layered_mdp()
    venv = venv_of(mdp)
    generator = PPO(QuadraticSoftmaxPolicy, venv, n_steps=6, batch_size=6, device="cpu",
                    policy_kwargs={"action_features": action_features(mdp)})
    generator.policy.set_theta(np.array([2.0, -1.0, 0.5, 0.0]))
    trainer = GAIL(demonstrations=DEMOS, demo_batch_size=3, venv=venv, gen_algo=generator,
                   reward_net=BasicRewardNet(venv.observation_space, venv.action_space),
                   custom_logger=silent_logger(tmp_path), log_dir=tmp_path)
    curriculum = CurriculumAdversarial(trainer, DEMOS, variant="Cur-L")
    flat = rollout.flatten_trajectories(DEMOS)
    expected = policy_difficulty(generator.policy, flat.obs, flat.acts, DemonstrationIndex.from_trajectories(DEMOS))
    np.testing.assert_array_equal(curriculum.learner_difficulty(), expected)
    log_table = generator.policy.log_policy_table()
    by_hand = [-sum(log_table[s, a] for s, a in zip(d.obs[:-1], d.acts, strict=True)) for d in DEMOS]
    np.testing.assert_allclose(expected, by_hand, rtol=1e-12)
    with pytest.raises(ValueError, match="fewer than the trainer's demo_batch_size 3"):
        CurriculumAdversarial(trainer, [Trajectory(obs=np.array([4, 6]), acts=np.array([0]), infos=None,
                                                   terminal=True)], variant="Agn")


# ----------------------------------------------------------------------------------------------------- DAgger
def dagger_trainer(tmp_path, bc_trainer):
    from imitation.algorithms.dagger import DAggerTrainer

    mdp = layered_mdp()
    # BC's own optimizer, rate and entropy weight
    bc = bc_trainer(mdp, batch_size=3, optimizer=th.optim.Adam, lr=None, ent_weight=1e-3,
                    logger=silent_logger(tmp_path / "log"))
    return DAggerTrainer(venv=venv_of(mdp), scratch_dir=tmp_path / "scratch", rng=np.random.default_rng(1),
                         bc_trainer=bc, custom_logger=silent_logger(tmp_path / "log"))


def test_dagger_bc_step_runs_on_the_curriculum_over_aggregated_demonstrations(tmp_path, bc_trainer):
    from curteach_teaching.curriculum.adapters.dagger import CurriculumDAgger

    dagger = dagger_trainer(tmp_path, bc_trainer)
    bc = dagger.bc_trainer
    expert_pi = np.zeros((3, 7, 2))
    expert_pi[..., 0] = 1.0  # the expert always takes action 0 (the even state of the next layer)
    expert = TabularPolicy(gym.spaces.Discrete(7), gym.spaces.Discrete(2), expert_pi, np.random.default_rng(2))
    log_expert = np.log(np.clip(expert_pi[0], 1e-300, None))
    plans = []
    curriculum = CurriculumDAgger(dagger, DEMOS, n_rounds=2, epochs_per_round=1, variant="Cur-T",
                                  teacher=lambda obs, acts: log_expert[obs, acts], pacing=lambda e, n, k: k - 1,
                                  callbacks=[type("Plans", (), {"on_epoch_start": plans.append})()])
    received = []  # the actions of every minibatch BC's loss calculator computes
    own_loss = bc.loss_calculator
    bc.loss_calculator = lambda policy, obs, acts: (received.append(acts), own_loss(policy, obs, acts))[1]
    with th.random.fork_rng(devices=[]), warnings.catch_warnings():
        th.manual_seed(0)
        warnings.simplefilter("ignore")
        collected = curriculum.collect(expert, min_episodes=2, min_timesteps=3)
        assert curriculum.update() == 1
    pool = curriculum.aggregated()
    assert len(pool) == len(DEMOS) + len(collected)
    assert all(np.array_equal(a.obs, b.obs) for a, b in zip(pool[:4], DEMOS, strict=True))
    assert all(np.all(d.acts == 0) for d in pool[4:])  # DAgger's saved demonstrations carry the expert's labels
    selected = plans[0].selection.selected
    # Cur-T keeps all but the hardest for the teacher: one of the initial demonstrations with an action 1
    assert len(selected) == len(pool) - 1 and set(range(4, len(pool))) <= set(selected.tolist())
    # what the BC trainer received in its last step: the transitions of the plan's last batch
    batch = plans[0].batches[-1].transitions
    flat = rollout.flatten_trajectories(pool)
    np.testing.assert_array_equal(received[-1].numpy().reshape(-1), flat.acts[batch][-len(received[-1]):])
    assert set(plans[0].batches[0].demonstrations.tolist()) <= set(selected.tolist())
    recorded = dagger.logger.default_logger.name_to_value
    assert recorded.get("curriculum/n_selected", len(selected)) == len(selected)
    # a Curriculum with the core's state; the config holds the trainer's round
    from curteach_teaching.curriculum.core import Curriculum
    from curteach_teaching.curriculum.state import STATE_KEYS

    state = curriculum.state_dict()
    assert isinstance(curriculum, Curriculum) and set(state) == set(STATE_KEYS)
    assert state["config"]["round"] == 1 and state["history"][0]["selected"] == selected.tolist()
    assert curriculum.step == state["step"] == len(plans[0].batches) and curriculum.epoch == 1
    resumed = CurriculumDAgger(dagger, DEMOS, n_rounds=2, epochs_per_round=1, variant="Cur-T",
                               teacher=lambda obs, acts: log_expert[obs, acts], pacing=lambda e, n, k: k - 1)
    resumed.load_state_dict(state)
    assert resumed.step == curriculum.step and resumed.history[0].selected.tolist() == selected.tolist()
    with pytest.raises(ValueError, match=r"differs from this one in \['round'\]"):
        CurriculumDAgger(dagger_trainer(tmp_path / "other", bc_trainer), DEMOS, n_rounds=2, epochs_per_round=1,
                         variant="Cur-T", teacher=lambda obs, acts: log_expert[obs, acts],
                         pacing=lambda e, n, k: k - 1).load_state_dict(state)


def test_dagger_pool_grows_under_one_selection_and_step_count(tmp_path, bc_trainer):
    from curteach_teaching.curriculum.adapters.dagger import CurriculumDAgger

    dagger = dagger_trainer(tmp_path, bc_trainer)
    expert_pi = np.zeros((3, 7, 2))
    expert_pi[..., 1] = 1.0
    expert = TabularPolicy(gym.spaces.Discrete(7), gym.spaces.Discrete(2), expert_pi, np.random.default_rng(2))
    steps = []
    curriculum = CurriculumDAgger(dagger, DEMOS, n_rounds=2, epochs_per_round=2, variant="Agn",
                                  callbacks=[type("Steps", (), {"on_batch": lambda self, b: steps.append(b.step)})()])
    assert curriculum.n_demonstrations == 0 and curriculum.history == [] and curriculum.step == 0
    with th.random.fork_rng(devices=[]), warnings.catch_warnings():
        th.manual_seed(0)
        warnings.simplefilter("ignore")
        for _ in range(2):
            curriculum.train_round(expert, min_episodes=1, min_timesteps=3)
    pools = [record.n_selected for record in curriculum.history]  # Agn: the whole pool, which grew in round 1
    assert len(pools) == 4 and len(DEMOS) < pools[0] == pools[1] < pools[2] == pools[3]
    assert curriculum.n_demonstrations == pools[-1] and [r.epoch for r in curriculum.history] == [1, 2, 3, 4]
    assert steps == list(range(1, curriculum.step + 1))  # one step count over all rounds
    assert curriculum.selection_matrix().shape == (4, pools[-1])


def test_dagger_refuses_fixed_scores_and_other_trainers(tmp_path, bc_trainer):
    from curteach_teaching.curriculum.adapters.dagger import CurriculumDAgger

    with pytest.raises(ValueError, match="supported trainers"):
        CurriculumDAgger(mce_trainer(tmp_path), n_rounds=1)
    with pytest.raises(ValueError, match="fixed per-demonstration scores cannot follow them"):
        CurriculumDAgger(dagger_trainer(tmp_path, bc_trainer), DEMOS, n_rounds=1, teacher=SCORES)
    with pytest.raises(ValueError, match="needs a teacher"):
        CurriculumDAgger(dagger_trainer(tmp_path, bc_trainer), DEMOS, n_rounds=1, variant="Cur")


def test_adversarial_match_starts_starts_the_generator_where_the_chosen_demonstrations_start(tmp_path):
    from imitation.algorithms.adversarial.gail import GAIL
    from seals.base_envs import ExposePOMDPStateWrapper
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import DummyVecEnv

    from curteach_teaching.curriculum.adapters.adversarial import CurriculumAdversarial
    from curteach_teaching.learners.bc import QuadraticSoftmaxPolicy, action_features

    class Starts(gym.Wrapper):  # what the generator's episodes actually started from
        seen: list = []

        def reset(self, **kwargs):
            obs, info = self.env.reset(**kwargs)
            Starts.seen.append(int(obs))
            return obs, info

    mdp = layered_mdp()
    env = mdp.to_seals()
    own = np.array(env.initial_state_dist)
    venv = DummyVecEnv([lambda: Starts(ExposePOMDPStateWrapper(env))])
    venv.seed(0)
    with th.random.fork_rng(devices=[]):
        th.manual_seed(0)
        generator = PPO(QuadraticSoftmaxPolicy, venv, n_steps=30, batch_size=30, n_epochs=1, device="cpu",
                        policy_kwargs={"action_features": action_features(mdp)})
        trainer = GAIL(demonstrations=DEMOS, demo_batch_size=3, venv=venv, gen_algo=generator,
                       reward_net=BasicRewardNet(venv.observation_space, venv.action_space),
                       custom_logger=silent_logger(tmp_path), log_dir=tmp_path)
        curriculum = CurriculumAdversarial(trainer, DEMOS, variant="Cur-T", teacher=SCORES,
                                           pacing=lambda e, n, k: 1, match_starts=True)
        Starts.seen.clear()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            curriculum.train(2)
    # Cur-T keeps demo 1 alone (the lowest teacher difficulty), which starts at state 1; the environment starts
    # at 0 or 1 otherwise. The first reset is the generator's, made before the curriculum's first epoch.
    assert len(Starts.seen) > 10 and set(Starts.seen[1:]) == {1}
    np.testing.assert_array_equal(env.initial_state_dist, own)  # put back after each epoch
    assert curriculum.config()["match_starts"] is True
    from curteach_teaching.curriculum.adapters.starts import starts_matched, tabular_envs

    with pytest.raises(ValueError, match="match_starts needs a DummyVecEnv of tabular environments"):
        tabular_envs(DummyVecEnv([lambda: gym.make("CartPole-v1")]))
    features = Trajectory(obs=np.array([[0.5, 1.0], [1.0, 0.0]]), acts=np.array([0]), infos=None, terminal=True)
    with pytest.raises(ValueError, match=r"observations are state indices in \[0, 7\)"), \
            starts_matched(tabular_envs(venv), [features]):
        pass
