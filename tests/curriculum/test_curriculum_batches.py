"""CurriculumBC's options: batches of whole demonstrations, the original's loss, hooks every N optimizer steps, the
LR schedule, max_steps and resuming from a checkpoint."""

import io
import json

import numpy as np
import pytest
import torch as th
from imitation.data.types import Trajectory

from curteach_teaching.curriculum import (
    AtEpochEnd,
    CurriculumBC,
    EveryNSteps,
    LinearPacing,
    StepLRSchedule,
    StepMeanLoss,
)

pytestmark = pytest.mark.filterwarnings("ignore:Converting a tensor with requires_grad")


def cut(demos, lengths):
    """The first ``lengths[i]`` actions of demonstration ``i`` (so that lengths differ)."""
    return [Trajectory(obs=d.obs[: n + 1], acts=d.acts[:n], infos=None, terminal=True)
            for d, n in zip(demos, lengths, strict=False)]


# --------------------------------------------------------------------------------------- demonstration batches
@pytest.mark.parametrize("remainder", ["partial", "drop"])
def test_demonstration_batches_whole_demos_permuted_last_partial(car_demos, remainder, bc_trainer):
    mdp, _, demos = car_demos
    lengths = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
    demos = cut(demos, lengths)
    trainer = bc_trainer(mdp)
    curriculum = CurriculumBC(trainer, demos, variant="Agn", batch_unit="demonstrations", demos_per_batch=4,
                              remainder=remainder, rng=np.random.default_rng(3))
    selected = np.arange(10)
    order = np.random.default_rng(3).permutation(10)  # the curriculum's permutation of the selection
    groups = curriculum.epoch_batches(selected)
    expected_groups = [order[0:4], order[4:8], order[8:10]] if remainder == "partial" else [order[0:4], order[4:8]]
    assert len(groups) == len(expected_groups)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    for group, demo_ids in zip(groups, expected_groups, strict=True):
        # the group's transitions are its demonstrations', one after the other, each in time order
        expected = np.concatenate([np.arange(starts[d], starts[d] + lengths[d]) for d in demo_ids])
        assert np.array_equal(group, expected)
        assert np.array_equal(curriculum.time_steps(group), np.concatenate([np.arange(lengths[d]) for d in demo_ids]))
    # a selection smaller than one batch is one batch of its size, whatever the remainder
    small = curriculum.epoch_batches(np.array([2, 7]))
    assert len(small) == 1 and sorted(small[0].tolist()) == sorted(
        list(range(starts[2], starts[2] + 3)) + list(range(starts[7], starts[7] + 8)))


def test_demonstration_batches_train_one_step_per_group(car_demos, bc_trainer, count_training_pairs):
    mdp, _, demos = car_demos
    lengths = np.arange(1, 11)
    demos = cut(demos, lengths)  # 55 transitions in 10 demonstrations
    trainer = bc_trainer(mdp, batch_size=16)
    trainer.minibatch_size = 8
    seen = count_training_pairs(trainer)
    curriculum = CurriculumBC(trainer, demos, variant="Agn", batch_unit="demonstrations", demos_per_batch=4,
                              rng=np.random.default_rng(1))
    order = np.random.default_rng(1).permutation(10)
    record = curriculum.train(1)[0]
    assert seen == [lengths[order[0:4]].sum(), lengths[order[4:8]].sum(), lengths[order[8:]].sum()]
    assert (record.n_batches, record.n_transitions, curriculum.step) == (3, 55, 3)
    assert (trainer.batch_size, trainer.minibatch_size) == (16, 8)  # restored
    # demos_per_batch defaults to trainer.batch_size (counted in demonstrations)
    assert CurriculumBC(trainer, demos, variant="Agn", batch_unit="demonstrations").demos_per_batch == 16


def test_agn_trains_every_demonstration_every_epoch_and_the_difficulty_covers_all(car_demos, bc_trainer):
    mdp, _, demos = car_demos
    demos = cut(demos, np.arange(20) % 7 + 1)
    trainer = bc_trainer(mdp)
    curriculum = CurriculumBC(trainer, demos, variant="Agn", batch_unit="demonstrations", demos_per_batch=6)
    for record in curriculum.train(3):
        assert record.n_selected == 20 and record.n_transitions == sum(len(d.acts) for d in demos)
        assert record.n_batches == 4
    small_chunks = CurriculumBC(trainer, demos, variant="Cur-L", difficulty_chunk_size=3)
    np.testing.assert_allclose(small_chunks.learner_difficulty(), curriculum.learner_difficulty(), rtol=1e-12)
    assert small_chunks.learner_difficulty().shape == (20,)


# -------------------------------------------------------------------------------------------- the original loss
def hand_loss(policy, demos):
    """sum_l mean_{j active at l} -log pi(a_jl | s_jl), written out step by step from the policy's log-table."""
    table = policy.log_policy_table()
    total = 0.0
    for step in range(max(len(d.acts) for d in demos)):
        active = [d for d in demos if len(d.acts) > step]
        total += np.mean([-table[d.obs[step], d.acts[step]] for d in active])
    return total


def test_step_mean_loss_against_a_hand_computed_batch(car_demos, bc_trainer):
    mdp, _, demos = car_demos
    batch = cut(demos[3:6], [3, 2, 1])
    policy = bc_trainer(mdp).policy
    with th.no_grad():
        policy.theta.add_(th.linspace(-0.3, 0.2, policy.theta.numel(), dtype=policy.theta.dtype))
    obs = np.concatenate([d.obs[:-1] for d in batch])
    acts = np.concatenate([d.acts for d in batch])
    steps = np.array([0, 1, 2, 0, 1, 0])
    metrics = StepMeanLoss(steps)(policy, obs, acts)
    table = policy.log_policy_table()
    lp = table[obs, acts]
    by_hand = -(lp[0] + lp[3] + lp[5]) / 3 - (lp[1] + lp[4]) / 2 - lp[2]  # 3, 2, then 1 active
    assert float(metrics.loss) == pytest.approx(by_hand, rel=1e-12)
    assert float(metrics.neglogp) == pytest.approx(hand_loss(policy, batch), rel=1e-12)
    # not the per-pair mean
    assert float(metrics.loss) != pytest.approx(-lp.mean())
    # the order of the transitions in the batch does not matter, only their time steps
    perm = np.array([5, 2, 0, 4, 1, 3])
    assert float(StepMeanLoss(steps[perm])(policy, obs[perm], acts[perm]).loss) == pytest.approx(by_hand, rel=1e-12)
    # BC's entropy and L2 terms keep their weights; the entropy is weighted like the log-likelihood
    weighted = StepMeanLoss(steps, ent_weight=0.1, l2_weight=0.01)(policy, obs, acts)
    entropy = -(np.exp(table) * table).sum(axis=1)[obs]
    entropy_by_hand = (entropy[0] + entropy[3] + entropy[5]) / 3 + (entropy[1] + entropy[4]) / 2 + entropy[2]
    l2 = float((policy.theta.detach() ** 2).sum()) / 2
    assert float(weighted.entropy) == pytest.approx(entropy_by_hand, rel=1e-12)
    assert float(weighted.loss) == pytest.approx(by_hand - 0.1 * entropy_by_hand + 0.01 * l2, rel=1e-12)
    with pytest.raises(ValueError, match="batch of 5 transitions for 6 time steps"):
        StepMeanLoss(steps)(policy, obs[:5], acts[:5])
    with pytest.raises(ValueError, match="steps must be"):
        StepMeanLoss(np.array([0.5]))


@pytest.mark.parametrize(("loss", "ent_weight", "l2_weight"), [("original", 0.0, 0.0), ("original", 0.05, 0.01),
                                                                ("mean", 0.0, 0.0)])
def test_one_training_step_descends_the_chosen_loss(car_demos, loss, ent_weight, l2_weight, bc_trainer):
    """One SGD step through BC equals theta - lr * grad of the loss written by hand for the batch."""
    mdp, _, demos = car_demos
    batch = cut(demos[3:6], [3, 2, 1])
    lr = 0.1
    trainer = bc_trainer(mdp, lr=lr, ent_weight=ent_weight, l2_weight=l2_weight)
    policy = trainer.policy
    theta = policy.theta.detach().clone().requires_grad_(True)
    reference = bc_trainer(mdp).policy
    with th.no_grad():
        reference.theta.copy_(theta)
    obs = th.as_tensor(np.concatenate([d.obs[:-1] for d in batch]))
    acts = th.as_tensor(np.concatenate([d.acts for d in batch]))
    reference.theta.requires_grad_(True)
    _, log_prob, entropy = reference.evaluate_actions(obs, acts)
    steps = [0, 1, 2, 0, 1, 0]
    if loss == "original":
        nll = -(log_prob[[0, 3, 5]].mean() + log_prob[[1, 4]].mean() + log_prob[2])
        ent = entropy[[0, 3, 5]].mean() + entropy[[1, 4]].mean() + entropy[2]
    else:
        nll, ent = -log_prob.mean(), entropy.mean()
    total = nll - ent_weight * ent + l2_weight * (reference.theta**2).sum() / 2
    (grad,) = th.autograd.grad(total, reference.theta)
    assert len(steps) == len(acts)
    curriculum = CurriculumBC(trainer, batch, variant="Agn", batch_unit="demonstrations", demos_per_batch=3,
                              loss=loss)
    record = curriculum.train(1)[0]
    assert record.n_batches == 1
    expected = (theta - lr * grad).detach().numpy()
    np.testing.assert_allclose(policy.theta.detach().numpy(), expected, rtol=1e-12, atol=1e-15)
    assert type(trainer.loss_calculator).__name__ == "BehaviorCloningLossCalculator"  # restored after the call


# --------------------------------------------------------------------------------------------- hooks and the LR
def test_step_lr_hook_values_and_state():
    parameter = th.nn.Parameter(th.zeros(2))
    optimizer = th.optim.SGD([{"params": [parameter], "lr": 0.01}, {"params": [], "lr": 0.2}])
    hook = StepLRSchedule(optimizer, period=500)
    assert hook.every == 500
    for step, factor in ((0, 1.0), (499, 1.0), (500, 0.5), (999, 0.5), (1000, 0.25), (5000, 0.5**10)):
        hook(step)
        assert [g["lr"] for g in optimizer.param_groups] == [0.01 * factor, 0.2 * factor]
    state = hook.state_dict()
    assert json.loads(json.dumps(state)) == state
    # a resumed run: the optimizer's LR has already decayed; the hook's base LRs come from the state
    fresh = th.optim.SGD([{"params": [parameter], "lr": 0.01 * 0.5**10}, {"params": [], "lr": 0.2 * 0.5**10}])
    resumed = StepLRSchedule(fresh, period=500)
    resumed.load_state_dict(state)
    assert resumed.base_lrs == [0.01, 0.2] and resumed.last_step == 5000
    resumed(5500)
    assert fresh.param_groups[0]["lr"] == 0.01 * 0.5**11
    with pytest.raises(ValueError, match="differs"):
        StepLRSchedule(fresh, period=5000).load_state_dict(state)
    with pytest.raises(ValueError, match="period must be"):
        StepLRSchedule(optimizer, period=0)
    with pytest.raises(ValueError, match="gamma must be"):
        StepLRSchedule(optimizer, gamma=0.0)
    with pytest.raises(ValueError, match="torch optimizer"):
        StepLRSchedule(object())


def test_lr_schedule_through_training(car_demos, bc_trainer):
    """The LR after 0, period - 1, period and 2 period optimizer steps, counted across epochs."""
    mdp, _, demos = car_demos
    trainer = bc_trainer(mdp, lr=0.04)
    lrs = {}
    period = 5
    hook = StepLRSchedule(trainer.optimizer, period=period)
    curriculum = CurriculumBC(trainer, cut(demos[:12], [3] * 12), variant="Agn", batch_unit="demonstrations",
                              demos_per_batch=4, callbacks=[hook, EveryNSteps(1, lambda s: lrs.setdefault(
                                  s, trainer.optimizer.param_groups[0]["lr"]), at_start=True)])
    curriculum.train(4)  # 3 steps per epoch: 12 steps
    assert curriculum.step == 12
    assert lrs[0] == 0.04 and lrs[period - 1] == 0.04
    assert lrs[period] == 0.02 and lrs[2 * period] == 0.01 and lrs[12] == 0.01


@pytest.mark.parametrize("batch_unit", ["transitions", "demonstrations"])
def test_hooks_run_at_global_steps_across_epochs(car_demos, batch_unit, bc_trainer):
    mdp, _, demos = car_demos
    demos = cut(demos[:9], [2, 3, 4, 5, 6, 7, 8, 9, 10])  # 54 transitions
    trainer = bc_trainer(mdp, batch_size=8)
    calls = []
    options = {"demos_per_batch": 2} if batch_unit == "demonstrations" else {}

    def evaluate(step):
        trainer.policy.set_training_mode(False)  # as SB3's predict does
        calls.append(("eval", step))

    curriculum = CurriculumBC(trainer, demos, variant="Cur-L", batch_unit=batch_unit,
                              callbacks=[EveryNSteps(3, evaluate, at_start=True),
                                         (2, lambda s: calls.append(("two", s)))],
                              **options)
    every_step = []
    curriculum.add_callback(EveryNSteps(1, every_step.append))
    records = curriculum.train(3)
    total = sum(r.n_batches for r in records)
    assert curriculum.step == total and every_step == list(range(1, total + 1))
    assert [s for name, s in calls if name == "eval"] == [0] + list(range(3, total + 1, 3))
    assert [s for name, s in calls if name == "two"] == list(range(2, total + 1, 2))
    assert calls[0] == ("eval", 0) and calls.index(("eval", 6)) < calls.index(("two", 6))  # in the hooks' order
    assert trainer.policy.training  # the training mode is restored after the hooks
    curriculum.train(1)  # a later call: no second step-0 call, steps go on counting
    assert [s for name, s in calls if name == "eval"].count(0) == 1 and every_step[-1] == curriculum.step


def test_hooks_change_nothing_else_and_max_steps(car_demos, bc_trainer):
    mdp, log_expert, demos = car_demos

    def run(callbacks=(), max_steps=None, n_epochs=4):
        trainer = bc_trainer(mdp, seed=4, optimizer=th.optim.Adam, lr=0.02)
        curriculum = CurriculumBC(trainer, demos, teacher=lambda o, a: log_expert[o, a], callbacks=callbacks)
        curriculum.train(n_epochs, max_steps=max_steps)
        return trainer.policy.theta_numpy(), curriculum

    plain, _ = run()
    steps = []
    hooked, _ = run(callbacks=[(1, steps.append), EveryNSteps(7, lambda s: None, at_start=True)])
    assert np.array_equal(plain, hooked)
    _, stopped = run(max_steps=30)
    assert stopped.step == 30 and sum(r.n_batches for r in stopped.history) == 30
    full = run()[1]
    assert sum(r.n_batches for r in full.history) > 30  # it did stop early, mid-epoch
    epochs = len(stopped.history)
    assert stopped.history[-1].n_batches < full.history[epochs - 1].n_batches
    assert stopped.train(4, max_steps=30) == [] and stopped.step == 30


# ------------------------------------------------------------------------------------------------------ resume
class Interrupted(Exception):
    pass


def through_torch(obj):
    buffer = io.BytesIO()
    th.save(obj, buffer)
    buffer.seek(0)
    return th.load(buffer, weights_only=True)


@pytest.mark.parametrize(("batch_unit", "loss"), [("demonstrations", "original"), ("transitions", "mean")])
def test_resume_from_an_epoch_checkpoint_gives_the_same_run(car_demos, batch_unit, loss, bc_trainer):
    mdp, log_expert, demos = car_demos
    demos = cut(demos, np.arange(len(demos)) % 9 + 1)
    options = dict(variant="Cur", batch_unit=batch_unit, loss=loss, pacing=LinearPacing(0.8, 0.5))
    if batch_unit == "demonstrations":
        options["demos_per_batch"] = 8

    def build(seed):
        trainer = bc_trainer(mdp, batch_size=16, seed=seed, optimizer=th.optim.Adam, lr=0.05)
        evaluations = []
        hooks = [StepLRSchedule(trainer.optimizer, period=7), EveryNSteps(5, evaluations.append, at_start=True)]
        curriculum = CurriculumBC(trainer, demos, teacher=lambda o, a: log_expert[o, a], callbacks=hooks, **options)
        return trainer, curriculum, evaluations

    trainer, straight, straight_evaluations = build(seed=1)
    straight.train(3)

    trainer_a, first, evaluations_a = build(seed=1)
    saved = {}

    def checkpoint(record):
        saved["policy"] = through_torch(trainer_a.policy.state_dict())
        saved["optimizer"] = through_torch(trainer_a.optimizer.state_dict())
        saved["curriculum"] = through_torch(first.state_dict())
        if record.epoch == 2:
            raise Interrupted

    with pytest.raises(Interrupted):
        first.add_callback(AtEpochEnd(checkpoint))
        first.train(3)
    assert json.loads(json.dumps(saved["curriculum"])) == saved["curriculum"]

    trainer_b, resumed, evaluations_b = build(seed=99)  # fresh objects, another seed: everything comes from the files
    trainer_b.policy.load_state_dict(saved["policy"])
    trainer_b.optimizer.load_state_dict(saved["optimizer"])
    resumed.load_state_dict(saved["curriculum"])
    assert resumed.step == first.step and len(resumed.history) == 2
    resumed.train(3, start_epoch=len(resumed.history) + 1)

    assert np.array_equal(trainer_b.policy.theta_numpy(), trainer.policy.theta_numpy())
    assert resumed.step == straight.step
    assert trainer_b.optimizer.param_groups[0]["lr"] == trainer.optimizer.param_groups[0]["lr"]
    assert np.array_equal(resumed.selection_matrix(), straight.selection_matrix())
    for a, b in zip(resumed.history, straight.history, strict=True):
        assert a.epoch == b.epoch and np.array_equal(a.selected, b.selected)
        assert (a.n_transitions, a.n_batches, a.fraction) == (b.n_transitions, b.n_batches, b.fraction)
        assert a.learner_difficulty_mean == b.learner_difficulty_mean
    assert evaluations_a + evaluations_b == straight_evaluations
    assert resumed.train(3, start_epoch=4) == []  # a finished run has nothing left


def test_load_state_dict_refuses_other_runs(car_demos, bc_trainer):
    mdp, _, demos = car_demos
    trainer = bc_trainer(mdp)
    curriculum = CurriculumBC(trainer, demos, variant="Agn", batch_unit="demonstrations", demos_per_batch=8)
    curriculum.train(1)
    state = curriculum.state_dict()
    other = CurriculumBC(bc_trainer(mdp), demos, variant="Agn", batch_unit="demonstrations", demos_per_batch=4)
    with pytest.raises(ValueError, match=r"differs from this one in \['demos_per_batch'\]"):
        other.load_state_dict(state)
    with pytest.raises(ValueError, match="not a CurriculumBC state"):
        other.load_state_dict({"step": 3})
    with pytest.raises(ValueError, match="callback states"):  # a callback with a state the saved run did not have
        fresh = bc_trainer(mdp)
        CurriculumBC(fresh, demos, variant="Agn", batch_unit="demonstrations", demos_per_batch=8,
                     callbacks=[StepLRSchedule(fresh.optimizer)]).load_state_dict(state)
    # a callback without state may be added on resuming
    CurriculumBC(bc_trainer(mdp), demos, variant="Agn", batch_unit="demonstrations", demos_per_batch=8,
                 callbacks=[(1, print)]).load_state_dict(state)
    with pytest.raises(ValueError, match="history"):
        broken = {**state, "history": [{"epoch": 1}]}
        CurriculumBC(bc_trainer(mdp), demos, variant="Agn", batch_unit="demonstrations",
                     demos_per_batch=8).load_state_dict(broken)
    fresh = CurriculumBC(bc_trainer(mdp), demos, variant="Agn", batch_unit="demonstrations", demos_per_batch=8)
    fresh.load_state_dict(state)
    assert fresh.step == curriculum.step and fresh.history[0].n_batches == curriculum.history[0].n_batches


# --------------------------------------------------------------------------------------------------- bad input
def test_bad_options(car_demos, bc_trainer):
    mdp, _, demos = car_demos
    trainer = bc_trainer(mdp)
    with pytest.raises(ValueError, match="batch_unit must be one of"):
        CurriculumBC(trainer, demos, variant="Agn", batch_unit="episodes")
    with pytest.raises(ValueError, match="loss must be one of"):
        CurriculumBC(trainer, demos, variant="Agn", loss="sum")
    with pytest.raises(ValueError, match="needs batch_unit='demonstrations'"):
        CurriculumBC(trainer, demos, variant="Agn", loss="original")
    with pytest.raises(ValueError, match="demos_per_batch must be an integer >= 1"):
        CurriculumBC(trainer, demos, variant="Agn", batch_unit="demonstrations", demos_per_batch=0)
    with pytest.raises(ValueError, match="demos_per_batch applies"):
        CurriculumBC(trainer, demos, variant="Agn", demos_per_batch=32)
    with pytest.raises(ValueError, match="must be callable"):
        CurriculumBC(trainer, demos, variant="Agn", callbacks=[(10, "evaluate")])
    with pytest.raises(ValueError, match="every must be an integer >= 1"):
        CurriculumBC(trainer, demos, variant="Agn", callbacks=[(0, print)])
    with pytest.raises(ValueError, match="a callback needs at least one of the methods"):
        CurriculumBC(trainer, demos, variant="Agn", callbacks=[print])
    with pytest.raises(ValueError, match="callbacks must be a sequence"):
        CurriculumBC(trainer, demos, variant="Agn", callbacks=print)
    with pytest.raises(ValueError, match="difficulty_chunk_size"):
        CurriculumBC(trainer, demos, variant="Agn", difficulty_chunk_size=0)
    curriculum = CurriculumBC(trainer, demos, variant="Agn")
    with pytest.raises(ValueError, match="start_epoch"):
        curriculum.train(3, start_epoch=5)
    with pytest.raises(ValueError, match="max_steps"):
        curriculum.train(3, max_steps=0)
    assert curriculum.step == 0 and curriculum.history == []
