"""The cheap step of CurriculumBC: BC.train's arithmetic to the bit on the CPU, every tensor on the run's device, the
metrics read from the device only when asked."""

import warnings

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from imitation.algorithms.bc import BC
from imitation.data.types import Trajectory
from stable_baselines3.common.policies import ActorCriticPolicy

from curteach_teaching.curriculum.adapters.bc import CurriculumBC
from curteach_teaching.curriculum.callbacks import BatchInfo, CurriculumCallback, EveryNSteps, metrics_read
from curteach_teaching.curriculum.index import DemonstrationIndex
from curteach_teaching.curriculum.metrics import MetricMean
from curteach_teaching.curriculum.step_metrics import StepMetrics, floats_of
from curteach_teaching.datasets.scores.ensemble import EnsembleTeacher
from curteach_teaching.learners.dataset_learner import LearnerFactory
from curteach_teaching.learners.quiet_logger import silent_logger

OBS = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
DISCRETE = gym.spaces.Discrete(3)
BOX = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)


def demos(action_space, n=6, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for j in range(n):
        steps = 3 + j % 4
        acts = (rng.integers(0, 3, steps) if isinstance(action_space, gym.spaces.Discrete)
                else rng.uniform(-1, 1, (steps, 2)).astype(np.float32))
        out.append(Trajectory(obs=rng.normal(size=(steps + 1, 4)).astype(np.float32), acts=acts, infos=None,
                              terminal=True))
    return out


def trainer(action_space, device="cpu", seed=0, **options):
    with th.random.fork_rng(devices=[]):
        th.manual_seed(seed)
        policy = ActorCriticPolicy(OBS, action_space, lambda _: 0.0, net_arch=[8])
    return BC(observation_space=OBS, action_space=action_space, policy=policy, rng=np.random.default_rng(seed),
              device=device, custom_logger=silent_logger(), **options)


@pytest.mark.parametrize("space", [DISCRETE, BOX], ids=["discrete", "box"])
@pytest.mark.parametrize("weights", [{}, {"ent_weight": 0.0}, {"ent_weight": 0.01, "l2_weight": 0.001}],
                         ids=["bc-defaults", "no-entropy", "entropy-and-l2"])
@pytest.mark.parametrize("sizes", [(4, 2), (4, 4), (3, 3)], ids=["minibatches", "power-of-two", "three"])
@pytest.mark.parametrize("read", [False, True], ids=["unread", "all-read"])
def test_the_step_is_bc_train_to_the_bit_on_the_cpu(space, weights, sizes, read):
    """Each planned batch stepped by CurriculumBC gives the same parameters, byte for byte, as imitation's own
    BC.train on the same batch (minibatches of 2 in batches of 4, or whole batches of 4 or 3; the smaller last batch
    on its own mean), with BC's entropy and L2 terms at weight 0 (no autograd through them here) or not, and BC's
    logged-only metrics computed (a callback reads every metric) or not (no callback reads them)."""
    pool = demos(space)
    batch_size, minibatch_size = sizes
    ours, theirs = (trainer(space, batch_size=batch_size, minibatch_size=minibatch_size, **weights)
                    for _ in range(2))
    plans, seen = [], []
    callbacks = [type("Plans", (), {"on_epoch_start": plans.append})()]
    if read:
        callbacks.append(type("Reads", (), {"on_batch": lambda self, batch: seen.append(dict(batch.metrics))})())
    curriculum = CurriculumBC(ours, pool, variant="Agn", rng=np.random.default_rng(1), log=False,
                              callbacks=callbacks)
    curriculum.train(2)
    from imitation.data import rollout

    flat = rollout.flatten_trajectories(pool)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for plan in plans:
            for batch in plan.batches:
                index = batch.transitions
                size = index.size
                theirs.batch_size, theirs.minibatch_size = size, (minibatch_size if size == batch_size else size)
                pieces = [index[i : i + theirs.minibatch_size] for i in range(0, size, theirs.minibatch_size)]
                theirs.set_demonstrations([{"obs": flat.obs[p], "acts": flat.acts[p]} for p in pieces])
                theirs.train(n_epochs=1, progress_bar=False, log_interval=10**9)
    assert sum(len(p.batches) for p in plans) == curriculum.step > 2
    assert len(seen) == (curriculum.step if read else 0)
    assert all(set(metrics) == {"neglogp", "entropy", "ent_loss", "prob_true_act", "l2_norm", "l2_loss", "loss"}
               for metrics in seen)
    for a, b in zip(ours.policy.state_dict().values(), theirs.policy.state_dict().values(), strict=True):
        assert a.numpy().tobytes() == b.numpy().tobytes()


@pytest.mark.parametrize("space", [DISCRETE, BOX], ids=["discrete", "box"])
@pytest.mark.parametrize("kind", ["weighted", "original"])
def test_every_tensor_of_a_step_is_on_the_runs_device(space, kind, distribution_checks):
    """On the ``meta`` device (no data: any tensor made elsewhere and mixed in fails the step): the policy, its
    optimizer's state, the resident pool, its weights and the step's metrics are all there."""
    bc = trainer(space, device="meta", batch_size=4)
    options = (dict(variant="Cur-T", teacher=-np.arange(6.0), use="weight") if kind == "weighted"
               else dict(variant="Agn", batch_unit="demonstrations", demos_per_batch=2, loss="original"))
    losses = []
    watch = type("Watch", (), {"on_batch": lambda self, b: losses.append(b.metrics.tensor("loss"))})()
    with distribution_checks(False):
        curriculum = CurriculumBC(bc, demos(space), rng=np.random.default_rng(1), log=False, callbacks=[watch],
                                  **options)
        curriculum.train(1)
    pool = curriculum.step_trainer._pool
    tensors = [pool.obs, pool.acts, pool.time_step, *losses, *bc.policy.parameters(),
               # Adam keeps its step counter on the CPU unless "capturable" (torch's choice, read by the host)
               *(v for state in bc.optimizer.state.values() for k, v in state.items() if k != "step")]
    if kind == "weighted":
        tensors.append(pool.weights(th.arange(2, device="meta")))
    assert curriculum.step >= 2 and losses
    assert {t.device.type for t in tensors} == {"meta"}


def test_an_ensemble_member_trains_on_the_device_it_is_given(distribution_checks):
    with distribution_checks(False):
        member = EnsembleTeacher(size=2, batches=3, batch_size=4).fit_member(
            0, demos(DISCRETE), np.ones(6, dtype=bool), LearnerFactory("mlp", OBS, DISCRETE, device="meta"))
    assert {p.device.type for p in member.policy.parameters()} == {"meta"}


def test_step_metrics_stay_tensors_until_read():
    metrics = StepMetrics()
    loss = th.tensor(0.25, dtype=th.float32)
    metrics.update({"loss": loss * 2, "entropy": th.ones(1) / 3})
    metrics["steps"] = 4
    assert list(metrics) == ["loss", "entropy", "steps"] and "loss" in metrics and len(metrics) == 3
    assert th.is_tensor(metrics.tensor("loss")) and metrics.tensor("steps") == 4
    assert metrics["loss"] == 0.5
    assert not th.is_tensor(metrics.tensor("loss")) and th.is_tensor(metrics.tensor("entropy"))  # on the CPU: one
    assert metrics["entropy"] == float(th.ones(1) / 3)  # exactly float(tensor)
    assert dict(metrics) == {"loss": 0.5, "entropy": float(th.ones(1) / 3), "steps": 4} and metrics == dict(metrics)
    del metrics["steps"]
    assert "steps" not in metrics
    assert floats_of([1.5, th.tensor(2.0, dtype=th.float64), th.tensor([0.1], dtype=th.float32)]) == \
        [1.5, 2.0, float(np.float32(0.1))]


def test_metric_mean_reads_device_values_at_close_only():
    index = DemonstrationIndex(np.array([1, 1]))
    mean = MetricMean("loss")
    values = [th.tensor(v, dtype=th.float32) for v in (0.1, 0.7, -0.2)]
    for step, value in enumerate(values):
        metrics = StepMetrics({"loss": value})
        mean.on_batch(BatchInfo(1, step + 1, 0, np.array([0]), index, metrics=metrics))
        assert th.is_tensor(metrics.tensor("loss"))  # nothing read
    assert mean.state_dict() == {"values": [float(v) for v in values]}
    assert mean.close() == pytest.approx(np.mean([float(v) for v in values]), rel=1e-15)
    assert np.isnan(mean.close())


def test_metrics_read_by_the_callbacks():
    """What the callbacks may read: only those with an on_batch count; one that does not say means any metric."""

    class Silent(CurriculumCallback):
        def on_batch(self, batch):
            pass

    class Loss(Silent):
        reads_metrics = frozenset(("loss",))

    assert metrics_read([]) == frozenset()
    assert metrics_read([CurriculumCallback(), EveryNSteps(3, print), MetricMean("neglogp"), Loss()]) == {
        "neglogp", "loss"}
    assert metrics_read([Loss(), Silent()]) is None
    assert metrics_read([Loss(), type("Plain", (), {"on_batch": lambda self, batch: None})()]) is None


@pytest.mark.parametrize("space", [DISCRETE, BOX], ids=["discrete", "box"])
@pytest.mark.parametrize("weights", [{"ent_weight": 0.0}, {}], ids=["no-entropy", "bc-defaults"])
def test_metrics_no_one_reads_are_left_out_and_nothing_else_changes(space, weights):
    """A run whose callbacks read only the loss computes none of BC's logged-only metrics (the entropy only where its
    weight puts it in the loss), and its step losses (as bits) and parameters are those of a run whose callbacks
    read every metric."""
    class Watch(CurriculumCallback):
        def __init__(self, reads):
            self.reads_metrics, self.seen = reads, []

        def on_batch(self, batch):
            self.seen.append((set(batch.metrics), np.float64(batch.metrics["loss"]).tobytes()))

    runs = []
    for reads in (None, frozenset(("loss",))):
        bc, watch = trainer(space, batch_size=4, **weights), Watch(reads)
        CurriculumBC(bc, demos(space), variant="Agn", rng=np.random.default_rng(1), log=False,
                     callbacks=[watch]).train(2)
        runs.append((watch.seen, [p.detach().numpy().tobytes() for p in bc.policy.parameters()]))
    (every, every_params), (loss_only, loss_only_params) = runs
    assert [bits for _, bits in every] == [bits for _, bits in loss_only] and every_params == loss_only_params
    assert all(names == {"neglogp", "entropy", "ent_loss", "prob_true_act", "l2_norm", "l2_loss", "loss"}
               for names, _ in every)
    expected = {"loss"} if weights else {"neglogp", "entropy", "ent_loss", "loss"}
    assert all(names == expected for names, _ in loss_only)
