"""Order, select and weight: the selections and weights of each use by hand, the weighted BC loss against BC's own
and against the formula, and what imitation's BC actually trained on under each use."""

import numpy as np
import pytest
import torch as th
from imitation.algorithms.bc import BehaviorCloningLossCalculator

from curteach_teaching.curriculum import CurriculumBC
from curteach_teaching.curriculum.callbacks import CurriculumCallback
from curteach_teaching.curriculum.loss import WeightedLoss
from curteach_teaching.curriculum.pacing import LinearPacing
from curteach_teaching.curriculum.selection import CurriculumSelection
from curteach_teaching.curriculum.uses import Order, Select, Weight, check_use, preference_weights

LN2 = np.log(2.0)


def test_preference_weights_by_hand():
    # exp(p) = [1, 2, 0.5, 1]; sum L_i exp(p_i) = 1 + 2 + 1 + 4 = 8 = sum L_i, so c = 1
    weights = preference_weights(np.array([0.0, LN2, -LN2, 0.0]), np.array([1, 1, 2, 4]))
    np.testing.assert_allclose(weights, [1.0, 2.0, 0.5, 1.0])
    # temperature 2 halves the logits: exp = [1, sqrt2, 1/sqrt2, 1], sum L e = 1 + 1.4142 + 1.4142 + 4 = 7.8284
    c = 8 / (1 + 2 * np.sqrt(2) + 4)
    np.testing.assert_allclose(preference_weights(np.array([0.0, LN2, -LN2, 0.0]), np.array([1, 1, 2, 4]), 2.0),
                               c * np.array([1, np.sqrt(2), 1 / np.sqrt(2), 1]))
    # preferences far apart: no overflow, the mean transition weight stays 1
    far = preference_weights(np.array([1000.0, -1000.0, 0.0]), np.array([1, 1, 1]))
    np.testing.assert_allclose(far, [3.0, 0.0, 0.0], atol=1e-300)
    assert preference_weights(np.array([-np.inf, 0.0]), np.array([1, 3]))[0] == 0.0
    with pytest.raises(ValueError, match="finite or -inf"):
        preference_weights(np.array([np.nan, 0.0]), np.array([1, 1]))


def test_each_use_selects_by_hand():
    prefer = np.array([0.0, LN2, -LN2, 0.0])  # ranking: 1, 0, 3 (tie with 0, later index), 2
    sizes = np.array([1, 1, 2, 4])
    assert Order().choose(prefer, 2, sizes)[0].tolist() == [1, 0]
    assert Select(0.5).choose(prefer, 99, sizes)[0].tolist() == [1, 0]  # the pacing's count is not read
    assert Select(0.6).kept(4) == 2 and Select(0.625).kept(4) == 3 and Select(0.01).kept(4) == 1
    selected, weights = Weight().choose(prefer, 1, sizes)
    assert selected.tolist() == [1, 0, 3, 2]
    np.testing.assert_allclose(weights, [1.0, 2.0, 0.5, 1.0])
    assert check_use("select") == Select(0.6) and check_use(Weight(2.0)) == Weight(2.0)
    for bad, message in ((lambda: Select(0.0), "keep"), (lambda: Select(1.5), "keep"),
                         (lambda: Weight(0.0), "temperature"), (lambda: check_use("rank"), "use must be")):
        with pytest.raises(ValueError, match=message):
            bad()


def test_select_within_groups_by_hand():
    # task a is preferred throughout: one cut over the pool keeps a alone; within groups each keeps round(0.5 n_g)
    prefer = np.array([5.0, 4.0, 3.0, 2.0, 1.0, 0.5, 0.2, 0.1, 0.05])
    groups = ["a"] * 4 + ["b"] * 5
    sizes = np.ones(9)
    assert Select(0.5).choose(prefer, 1, sizes)[0].tolist() == [0, 1, 2, 3, 4]
    within = Select(0.5, groups=groups)
    assert within.choose(prefer, 1, sizes)[0].tolist() == [0, 1, 4, 5, 6]  # a: 2 of 4; b: round(2.5) = 3 of 5
    assert within.config() == {"use": "select", "keep": 0.5, "within": "group"} and "within" not in Select().config()
    with pytest.raises(ValueError, match="3 group labels for 9 demonstrations"):
        Select(0.5, groups=["a", "b", "a"]).choose(prefer, 1, sizes)


def test_selection_applies_the_use_every_epoch():
    teacher = np.array([3.0, 1.0, 2.0, 0.0, 4.0])  # Cur-T prefers -teacher: 3, 1, 2, 0, 4
    order = CurriculumSelection(5, "Cur-T", teacher, LinearPacing(0.8, 0.5))
    select = CurriculumSelection(5, "Cur-T", teacher, LinearPacing(0.8, 0.5), use=Select(0.4))
    weight = CurriculumSelection(5, "Cur-T", teacher, use="weight", sizes=np.array([1, 2, 1, 1, 1]))
    # order: X_1 = int(2.5 + min(1, 1 / 3.2) * 2.5) = 3, X_4 = 5
    assert order.select(1, 4).selected.tolist() == [3, 1, 2]
    assert order.select(4, 4).selected.tolist() == [3, 1, 2, 0, 4]
    for epoch in (1, 4):  # select: round(0.4 * 5) = 2 in every epoch
        assert select.select(epoch, 4).selected.tolist() == [3, 1]
        assert select.select(epoch, 4).weights is None
    chosen = weight.select(1, 4)
    expected = np.exp(-teacher) * 6 / np.sum(np.array([1, 2, 1, 1, 1]) * np.exp(-teacher))
    assert chosen.selected.tolist() == [3, 1, 2, 0, 4]
    np.testing.assert_allclose(chosen.weights, expected)
    agn = CurriculumSelection(5, "Agn", use="weight").select(1, 4)
    assert agn.weights is None and agn.selected.tolist() == [0, 1, 2, 3, 4]


def test_weighted_loss_is_bcs_own_at_weight_one_and_the_formula_otherwise(car_short_demos, bc_trainer):
    mdp, _, demos = car_short_demos
    trainer = bc_trainer(mdp, ent_weight=0.1, l2_weight=0.01)
    obs = np.concatenate([d.obs[:-1] for d in demos[:5]])
    acts = np.concatenate([d.acts for d in demos[:5]])
    own = BehaviorCloningLossCalculator(ent_weight=0.1, l2_weight=0.01)(trainer.policy, obs, acts)
    ones = WeightedLoss([np.ones(len(acts))], ent_weight=0.1, l2_weight=0.01)(trainer.policy, obs, acts)
    for name in ("neglogp", "entropy", "loss", "l2_norm"):
        assert float(getattr(ones, name).detach()) == pytest.approx(float(getattr(own, name).detach()), rel=1e-6)
    w = np.linspace(0.0, 2.0, len(acts))
    weighted = WeightedLoss([w], ent_weight=0.1, l2_weight=0.01)(trainer.policy, obs, acts)
    with th.no_grad():
        _, log_prob, entropy = trainer.policy.evaluate_actions(th.as_tensor(obs), th.as_tensor(acts))
    neglogp = -np.mean(w * log_prob.numpy())
    assert float(weighted.neglogp) == pytest.approx(neglogp, rel=1e-5)
    expected = neglogp - 0.1 * np.mean(w * entropy.numpy()) + 0.01 * float(own.l2_norm)
    assert float(weighted.loss) == pytest.approx(expected, rel=1e-5)
    with pytest.raises(ValueError, match="2 weights"):
        WeightedLoss([np.ones(2)])(trainer.policy, obs, acts)


class _Batches(CurriculumCallback):
    def __init__(self):
        self.seen = []

    def on_batch(self, batch):
        self.seen.append((batch.transitions.copy(), dict(batch.metrics)))


@pytest.mark.parametrize("use", ["select", "weight"])
def test_bc_trains_on_what_the_use_chose(car_short_demos, bc_trainer, use):
    mdp, _, demos = car_short_demos
    trainer = bc_trainer(mdp, lr=0.0, batch_size=16)  # a rate of 0 keeps the policy, so every batch can be re-scored
    teacher = np.arange(len(demos), dtype=float)  # Cur-T prefers the lower indices
    batches = _Batches()
    curriculum = CurriculumBC(trainer, demos, variant="Cur-T", teacher=teacher, use=Select(0.25) if use == "select"
                              else Weight(4.0), callbacks=[batches], log=False)
    curriculum.train(2)
    index = curriculum.index
    owner = index.demo_of_transition
    trained = np.concatenate([t for t, _ in batches.seen])
    if use == "select":  # round(0.25 * 24) = 6: only demonstrations 0..5, every epoch
        assert set(owner[trained]) == set(range(6))
        assert [r.fraction for r in curriculum.history] == [0.25, 0.25]
        return
    assert set(owner[trained]) == set(range(len(demos)))  # every demonstration, weighted
    weights = preference_weights(-teacher, index.lengths, 4.0)
    obs = np.array(curriculum.step_trainer.transitions.obs)
    acts = np.array(curriculum.step_trainer.transitions.acts)
    with th.no_grad():
        _, log_prob, _ = trainer.policy.evaluate_actions(th.as_tensor(obs), th.as_tensor(acts))
    log_prob = log_prob.numpy()
    for transitions, metrics in batches.seen:  # the loss BC stepped on is the weighted one, batch by batch
        w = weights[owner[transitions]]
        assert metrics["neglogp"] == pytest.approx(-np.mean(w * log_prob[transitions]), rel=1e-5)
    assert curriculum.config()["use"] == "weight"


def test_weighting_needs_a_trainer_that_can_weight(car_short_demos, bc_trainer):
    mdp, _, demos = car_short_demos
    with pytest.raises(ValueError, match="loss='mean'"):
        CurriculumBC(bc_trainer(mdp), demos, variant="Cur-T", teacher=np.arange(24.0), use="weight",
                     batch_unit="demonstrations", demos_per_batch=4, loss="original")
