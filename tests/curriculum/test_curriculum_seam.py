"""The curriculum's public per-step seam: plans, observers and the trainer-agnostic core, checked against what the
trainer actually received."""

from contextlib import nullcontext

import numpy as np
import pytest
import torch as th
from imitation.data import rollout
from imitation.data.types import Trajectory

from curteach_teaching.curriculum import (
    BatchInfo,
    Curriculum,
    CurriculumBC,
    CurriculumCallback,
    CurriculumSelection,
    DemonstrationBatches,
    DemonstrationIndex,
    EpochPlan,
    EveryNSteps,
    LinearPacing,
    TransitionBatches,
)
from curteach_teaching.learners.bc import QuadraticSoftmaxPolicy

pytestmark = pytest.mark.filterwarnings("ignore:Converting a tensor with requires_grad")


#: these tests train with imitation's own entropy weight (BC's default), the other curriculum modules with none
BC_ENT_WEIGHT = 1e-3
#: Whole-demonstration batches with the original loss, and imitation's transition batches with its own loss.
BOTH_BATCH_UNITS = pytest.mark.parametrize(("batch_unit", "options"), [
    ("demonstrations", {"demos_per_batch": 5, "loss": "original"}),
    ("transitions", {}),
])


class Recorder(CurriculumCallback):
    """Every plan, batch and record, with the optimizer steps the trainer had taken when each batch arrived."""

    def __init__(self, trainer, events):
        self.trainer, self.events = trainer, events
        self.plans, self.batches, self.records = [], [], []

    def on_epoch_start(self, plan):
        self.plans.append(plan)
        self.events.append(("plan", plan.epoch))

    def on_batch(self, batch):
        self.batches.append(batch)
        self.events.append(("batch", batch.step))

    def on_epoch_end(self, record):
        self.records.append(record)
        self.events.append(("record", record.epoch))


def record_training(trainer, events):
    """Wrap the policy's evaluate_actions: the (obs, acts) of every minibatch BC trains on (scoring uses no_grad)."""
    received = []
    original = trainer.policy.evaluate_actions
    optimizer_step = trainer.optimizer.step

    def wrapped(obs, acts):
        if th.is_grad_enabled():
            received.append((np.asarray(obs).reshape(-1).copy(), np.asarray(acts).reshape(-1).copy()))
        return original(obs, acts)

    def step(*args, **kwargs):
        events.append(("optimizer", None))
        return optimizer_step(*args, **kwargs)

    trainer.policy.evaluate_actions = wrapped
    trainer.optimizer.step = step
    return received


@BOTH_BATCH_UNITS
def test_observers_see_exactly_the_batches_the_optimizer_received(car_short_demos, batch_unit, options, bc_trainer):
    mdp, log_expert, demos = car_short_demos
    trainer = bc_trainer(mdp, batch_size=16, minibatch_size=8, ent_weight=BC_ENT_WEIGHT)
    events = []
    received = record_training(trainer, events)
    recorder = Recorder(trainer, events)
    curriculum = CurriculumBC(trainer, demos, variant="Cur", teacher=lambda o, a: log_expert[o, a],
                              batch_unit=batch_unit, callbacks=[recorder], **options)
    curriculum.add_callback(EveryNSteps(1, lambda step: events.append(("hook", step))))
    curriculum.train(3)

    flat = rollout.flatten_trajectories(demos)
    assert [p.epoch for p in recorder.plans] == [1, 2, 3] == [r.epoch for r in recorder.records]
    planned = [batch for plan in recorder.plans for batch in plan]
    assert [b is p for b, p in zip(recorder.batches, planned, strict=True)] == [True] * len(planned)
    assert [b.step for b in recorder.batches] == list(range(1, curriculum.step + 1))
    # the minibatches of each step, concatenated, are that step's batch, transition for transition
    pieces = iter(received)
    for batch in recorder.batches:
        obs, acts = [], []
        while sum(len(a) for a in acts) < batch.size:
            o, a = next(pieces)
            obs.append(o)
            acts.append(a)
        np.testing.assert_array_equal(np.concatenate(obs), flat.obs[batch.transitions])
        np.testing.assert_array_equal(np.concatenate(acts), flat.acts[batch.transitions])
    assert next(pieces, None) is None
    # each plan holds the epoch's selection; each batch is made of selected demonstrations only
    for plan, record in zip(recorder.plans, recorder.records, strict=True):
        np.testing.assert_array_equal(plan.selection.selected, record.selected)
        trained = np.concatenate([b.demonstrations for b in plan])
        assert set(trained.tolist()) <= set(record.selected.tolist())
        assert sum(b.size for b in plan) == record.n_transitions and len(plan) == record.n_batches
        if batch_unit == "demonstrations":  # whole demonstrations: each selected one exactly once, in time order
            assert sorted(trained.tolist()) == sorted(record.selected.tolist())
            for b in plan:
                np.testing.assert_array_equal(b.time_steps, np.concatenate([np.arange(n) for n in
                                                                            b.index.lengths[b.demonstrations]]))
    # order: the plan, then per step the optimizer step, the observers, the hooks; the record last
    sequence = [name for name, _ in events]
    first_epoch = sequence[: sequence.index("record") + 1]
    assert first_epoch[0] == "plan" and first_epoch[-1] == "record"
    assert first_epoch[1:-1] == ["optimizer", "batch", "hook"] * recorder.records[0].n_batches


def test_plan_then_train_equals_train_epoch_and_the_plan_is_the_shuffle(car_short_demos, bc_trainer):
    mdp, log_expert, demos = car_short_demos

    def build():
        return CurriculumBC(bc_trainer(mdp, batch_size=16, ent_weight=BC_ENT_WEIGHT), demos, variant="Cur-L",
                            batch_unit="demonstrations", demos_per_batch=4, rng=np.random.default_rng(7))

    straight = build()
    straight.train_epoch(1, 3)
    driven = build()
    plan = driven.plan_epoch(1, 3)
    assert isinstance(plan, EpochPlan) and plan.epoch == 1 and plan.n_epochs == 3
    expected_order = plan.selection.selected[np.random.default_rng(7).permutation(plan.selection.selected.size)]
    np.testing.assert_array_equal(np.concatenate([b.demonstrations for b in plan]), expected_order)
    record = driven.train_plan(plan)
    assert record.n_batches == len(plan) == driven.step
    np.testing.assert_array_equal(driven.trainer.policy.theta_numpy(), straight.trainer.policy.theta_numpy())
    with pytest.raises(ValueError, match="the plan starts at step 1; the curriculum is at step"):
        driven.train_plan(plan)
    cut = driven.plan_epoch(2, 3, max_steps=driven.step + 2)
    assert len(cut) == 2 and [b.step for b in cut] == [driven.step + 1, driven.step + 2]


class ListTrainer:
    """A trainer without torch: it records the batches it is given and counts as one step each."""

    def __init__(self, difficulty):
        self.difficulty = difficulty
        self.trained = []

    def learner_difficulty(self):
        return self.difficulty.copy()

    def train_batches(self, batches, after_step):
        for batch in batches:
            self.trained.append(batch.copy())
            self.difficulty[np.unique(index.demo_of_transition[batch])] -= 1.0  # it learns what it saw
            after_step()

    def around_hooks(self):
        return nullcontext()


index = DemonstrationIndex(np.array([3, 1, 2, 4, 2, 1]))


def test_the_core_drives_any_step_trainer():
    trainer = ListTrainer(np.array([5.0, 1.0, 4.0, 2.0, 3.0, 0.0]))
    selection = CurriculumSelection(6, "Cur-L", pacing=LinearPacing(a=1.0, b=0.5))
    seen = []
    curriculum = Curriculum(trainer, index, selection, DemonstrationBatches(2), rng=np.random.default_rng(0),
                            callbacks=[type("Watch", (), {"on_batch": lambda self, b: seen.append(b)})()])
    records = curriculum.train(2)
    # epoch 1 keeps int(3 + 0.5 * 3) = 4 of 6, the hardest for the learner first: 0, 2, 4, 3
    np.testing.assert_array_equal(records[0].selected, [0, 2, 4, 3])
    assert [b.transitions.tolist() for b in seen] == [t.tolist() for t in trainer.trained]
    assert curriculum.step == len(seen) == sum(r.n_batches for r in records)
    assert all(isinstance(b, BatchInfo) for b in seen)
    state = curriculum.state_dict()
    assert state["format"] == "curteach.Curriculum/1" and state["config"]["batch_unit"] == "demonstrations"
    with pytest.raises(ValueError, match="selection is over 5 items, the index over 6"):
        Curriculum(trainer, index, CurriculumSelection(5, "Agn"), TransitionBatches(2), rng=np.random.default_rng())
    with pytest.raises(ValueError, match="a callback needs at least one of the methods"):
        curriculum.add_callback(object())


def test_a_trainer_that_skips_steps_is_an_error():
    class Lazy(ListTrainer):
        def train_batches(self, batches, after_step):
            after_step()  # one step for all

    curriculum = Curriculum(Lazy(np.zeros(6)), index, CurriculumSelection(6, "Agn"), TransitionBatches(4),
                            rng=np.random.default_rng(0))
    with pytest.raises(RuntimeError, match="took 1 optimizer steps for 4 batches"):
        curriculum.train(1)


def test_demonstration_index_by_hand():
    assert index.starts.tolist() == [0, 3, 4, 6, 10, 12] and index.n_transitions == 13
    assert index.time_step.tolist() == [0, 1, 2, 0, 0, 1, 0, 1, 2, 3, 0, 1, 0]
    assert index.transitions(np.array([3, 1])).tolist() == [6, 7, 8, 9, 3]
    assert index.demonstrations_in(np.array([9, 3, 7, 0, 6])).tolist() == [3, 1, 0]
    for lengths, match in (([], "non-empty"), ([2, 0], "demonstration 1 has no actions"), ([1.5], "integers")):
        with pytest.raises(ValueError, match=match):
            DemonstrationIndex(np.array(lengths))


def test_batchers_by_hand():
    rng = np.random.default_rng(3)
    order = np.random.default_rng(3).permutation(10)  # 3 + 1 + 2 + 4 = 10 transitions of demonstrations 0..3
    transitions = np.arange(10)[order]
    batches = TransitionBatches(4).plan(index, np.arange(4), rng)
    assert [b.tolist() for b in batches] == [transitions[:4].tolist(), transitions[4:8].tolist(),
                                             transitions[8:].tolist()]
    assert len(TransitionBatches(4, "drop").plan(index, np.arange(4), np.random.default_rng(3))) == 2
    groups = DemonstrationBatches(2, "drop").plan(index, np.array([5, 0, 3]), np.random.default_rng(1))
    assert len(groups) == 1 and groups[0].size in (1 + 3, 1 + 4, 3 + 4)
    with pytest.raises(ValueError, match="remainder must be one of"):
        TransitionBatches(4, "pad")
    with pytest.raises(ValueError, match="batch_size must be an integer >= 1"):
        TransitionBatches(0)


@BOTH_BATCH_UNITS
def test_each_batch_carries_the_loss_its_step_minimised(car_short_demos, batch_unit, options, bc_trainer):
    mdp, log_expert, demos = car_short_demos
    trainer = bc_trainer(mdp, batch_size=16, minibatch_size=8, ent_weight=BC_ENT_WEIGHT)
    before = []  # the parameters at each optimizer step, before it moves them
    optimizer_step = trainer.optimizer.step

    def step(*args, **kwargs):
        before.append([p.detach().clone() for p in trainer.policy.parameters()])
        return optimizer_step(*args, **kwargs)

    trainer.optimizer.step = step
    recorder = Recorder(trainer, [])
    curriculum = CurriculumBC(trainer, demos, variant="Cur", teacher=lambda o, a: log_expert[o, a],
                              batch_unit=batch_unit, callbacks=[recorder], **options)
    curriculum.train(2)

    flat = rollout.flatten_trajectories(demos)
    ent_weight = trainer.loss_calculator.ent_weight
    probe = QuadraticSoftmaxPolicy.from_mdp(mdp)
    assert len(before) == len(recorder.batches) == curriculum.step
    for params, batch in zip(before, recorder.batches, strict=True):
        with th.no_grad():
            for p, value in zip(probe.parameters(), params, strict=True):
                p.copy_(value)
            _, log_prob, entropy = probe.evaluate_actions(th.as_tensor(flat.obs[batch.transitions]),
                                                          th.as_tensor(flat.acts[batch.transitions]))
        nll, ent = -log_prob.numpy().astype(np.float64), entropy.numpy().astype(np.float64)
        if batch_unit == "demonstrations":  # the original loss: per time step, the mean over the active demos
            steps = batch.time_steps
            nll_hand = sum(nll[steps == t].mean() for t in np.unique(steps))
            ent_hand = sum(ent[steps == t].mean() for t in np.unique(steps))
        else:  # imitation's: the mean over the batch (minibatches weighted by their size)
            nll_hand, ent_hand = nll.mean(), ent.mean()
        metrics = batch.metrics
        assert metrics["neglogp"] == pytest.approx(nll_hand, rel=1e-5)
        assert metrics["entropy"] == pytest.approx(ent_hand, rel=1e-5)
        assert metrics["loss"] == pytest.approx(nll_hand - ent_weight * ent_hand, rel=1e-5)
        assert metrics["loss"] == pytest.approx(metrics["neglogp"] + metrics["ent_loss"] + metrics["l2_loss"])
    assert curriculum.step_trainer.step_metrics() == {}  # nothing left over outside a step


def test_epoch_metric_mean_by_hand():
    from curteach_teaching.curriculum import EpochMetricMean

    index = DemonstrationIndex.from_trajectories([Trajectory(obs=np.arange(3), acts=np.arange(2), infos=None,
                                                             terminal=True)])
    mean = EpochMetricMean("loss")
    for value in (1.0, 2.0, 6.0):
        mean.on_batch(BatchInfo(1, 1, 0, np.array([0]), index, metrics={"loss": value, "other": 9.0}))
    mean.on_epoch_end(None)
    mean.on_batch(BatchInfo(2, 4, 0, np.array([1]), index))  # a step that reported no loss
    mean.on_epoch_end(None)
    mean.on_batch(BatchInfo(3, 5, 0, np.array([1]), index, metrics={"loss": -1.0}))
    mean.on_epoch_end(None)
    assert mean.per_epoch[0] == 3.0 and np.isnan(mean.per_epoch[1]) and mean.per_epoch[2] == -1.0
