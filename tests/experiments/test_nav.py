"""The navigation experiment (`curteach nav`): runs, pairing, model selection, checkpoints, outputs, bad input."""

import io
import json
import math

import numpy as np
import pytest
import torch as th

from curteach_envs.navigation.dataset import save_dataset
from curteach_envs.navigation.generate import generate_dataset
from curteach_teaching.cli import main
from curteach_teaching.curriculum import CurriculumCallback
from curteach_teaching.experiments.nav.data import demonstration_features, file_digest, prepare
from curteach_teaching.experiments.nav.evaluation import evaluate_split
from curteach_teaching.experiments.nav.experiment import NavExperiment
from curteach_teaching.experiments.nav.parts import BestModel
from curteach_teaching.experiments.nav.report import NavReport
from curteach_teaching.experiments.nav.run import NavRun
from curteach_teaching.experiments.nav.show import load_policy
from curteach_teaching.learners.networks import NavigationCNNPolicy
from curteach_teaching.sweeps.backends import run_seed_sequence
from curteach_teaching.sweeps.reports import read_summary
from curteach_teaching.sweeps.sweep import run_sweep

SIZES = {"train": 1, "test": 1, "val": 1}


@pytest.fixture(scope="module")
def sp_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("nav") / "sp.npz"
    save_dataset(generate_dataset("shortest_path", SIZES, seed=3, workers=1, progress=False), path)
    return str(path)


@pytest.fixture(scope="module")
def tsp_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("nav") / "tsp.npz"
    save_dataset(generate_dataset("tsp", {"train": 6, "test": 3, "val": 3}, seed=3, workers=1, progress=False), path)
    return str(path)


def _experiment(path, **kwargs):
    options = dict(epochs=2, eval_every=4, curricula=("Agn", "Cur"))
    options.update(kwargs)
    return NavExperiment(dataset=path, dataset_digest=file_digest(path), **options)


def _same(a, b):
    assert a.curves.keys() == b.curves.keys()
    for name in a.curves:
        np.testing.assert_array_equal(a.curves[name], b.curves[name])
    for record in a.records:
        np.testing.assert_array_equal(a.records[record]["test"], b.records[record]["test"])
    assert a.extras == b.extras and a.artifacts == b.artifacts


def test_a_run_is_deterministic_and_paired_across_curricula(sp_file):
    experiment = _experiment(sp_file)
    first = experiment.run_cell("Cur", 0, run_seed_sequence(0, 0))
    _same(first, experiment.run_cell("Cur", 0, run_seed_sequence(0, 0)))
    agn = experiment.run_cell("Agn", 0, run_seed_sequence(0, 0))
    # same initial network in every curriculum of run 0: the evaluation before training agrees
    assert agn.curves["test"][0] == first.curves["test"][0] and agn.curves["val"][0] == first.curves["val"][0]
    other = experiment.run_cell("Cur", 1, run_seed_sequence(0, 1))
    assert other.artifacts["model.pt"] != first.artifacts["model.pt"]
    # evaluations at 0 and every 4 optimizer steps; demonstrations seen grow with the batches
    batches = first.records["batches"]["test"]
    assert batches[0] == 0 and np.all(np.diff(batches) == 4) and batches[-1] <= first.extras["batches"]
    assert np.all(np.diff(first.records["seen"]["test"]) > 0)
    assert first.extras["epochs"] == 2 and len(first.extras["epoch_val"]) == 2


def test_selected_fraction_per_epoch_follows_linear_pacing(sp_file):
    experiment = _experiment(sp_file, epochs=3)
    n = prepare(sp_file, file_digest(sp_file)).train.n_demos
    cur = experiment.run_cell("Cur", 0, run_seed_sequence(0, 0))
    expected = [int(0.5 * n + min(1.0, e / (0.8 * 3)) * 0.5 * n) / n for e in (1, 2, 3)]
    assert cur.extras["selected_fraction"] == pytest.approx(expected)
    agn = experiment.run_cell("Agn", 0, run_seed_sequence(0, 0))
    assert agn.extras["selected_fraction"] == [1.0, 1.0, 1.0]
    # batches of 32 whole demonstrations, the last one partial
    assert agn.extras["epoch_batches"] == [math.ceil(n / 32) * e for e in (1, 2, 3)]
    kept = [int(f * n + 0.5) for f in cur.extras["selected_fraction"]]
    assert cur.extras["batches"] == sum(math.ceil(k / 32) for k in kept)


def test_best_model_is_kept_with_greater_or_equal(sp_file):
    """Validation returns 1, 0, 1, 2: the best model changes at the 1st, 3rd (a tie) and 4th evaluation, and the
    test split is evaluated only then."""
    data = prepare(sp_file, file_digest(sp_file))
    policy = NavigationCNNPolicy.for_navigation(seed=0)
    scripted = iter([1.0, 0.0, 1.0, 2.0])
    calls = []

    def fake(model, split, batch):
        assert model is policy and batch is not None
        calls.append(split.name)
        return next(scripted) if split.name == "val" else float(len(calls))

    best = BestModel(policy, data.val, data.test, evaluate=fake)
    tests = []
    for step in range(4):
        with th.no_grad():  # a different model each time
            next(policy.parameters()).add_(1.0)
        best.consider(step)
        tests.append(best.best_test)
    assert calls == ["val", "test", "val", "val", "test", "val", "test"]
    assert tests == [2.0, 2.0, 5.0, 7.0]
    assert best.best_val == 2.0
    np.testing.assert_array_equal(best.best_state["net.head.bias"], policy.state_dict()["net.head.bias"])


def test_the_best_model_file_reproduces_its_test_return(sp_file, tmp_path):
    result = _experiment(sp_file, curricula=("Agn",)).run_cell("Agn", 0, run_seed_sequence(0, 0))
    path = tmp_path / "model.pt"
    path.write_bytes(result.artifacts["model.pt"])
    data = prepare(sp_file, file_digest(sp_file))
    assert evaluate_split(load_policy(path), data.test).mean_return == result.extras["best_test"]


class StopAfterEpoch(CurriculumCallback):
    """Interrupts a run at the end of an epoch (after the run itself has saved its checkpoint)."""

    def __init__(self, epoch):
        self.epoch = epoch

    def on_epoch_end(self, record):
        if record.epoch == self.epoch:
            raise KeyboardInterrupt


def test_an_interrupted_run_resumes_from_its_checkpoint(sp_file, tmp_path):
    experiment = _experiment(sp_file, epochs=3, checkpoint_dir=str(tmp_path / "ckpt"))
    straight = _experiment(sp_file, epochs=3).run_cell("Cur", 0, run_seed_sequence(0, 0))
    run = NavRun.build(experiment, "Cur", 0, run_seed_sequence(0, 0))
    run.curriculum.add_callback(StopAfterEpoch(2))
    with pytest.raises(KeyboardInterrupt):
        run.run()
    assert [path.name for path in (tmp_path / "ckpt").glob("Cur_run_00000_*.pt")] == [
        experiment.checkpoint_path("Cur", 0).name]
    resumed = experiment.run_cell("Cur", 0, run_seed_sequence(0, 0))
    _same(straight, resumed)
    assert list((tmp_path / "ckpt").glob("*.pt")) == []  # removed once the run ended


def test_a_damaged_checkpoint_is_a_clear_error(sp_file, tmp_path):
    experiment = _experiment(sp_file, checkpoint_dir=str(tmp_path))
    path = experiment.checkpoint_path("Agn", 0)
    path.write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="cannot be used.*delete it"):
        experiment.run_cell("Agn", 0, run_seed_sequence(0, 0))
    assert path.exists()


def test_sweep_report_and_worker_count(sp_file, tmp_path, capsys):
    experiment = _experiment(sp_file, epochs=1)
    one = run_sweep(experiment, tmp_path / "a", 2, seed=1, workers=1, progress=False)
    two = run_sweep(experiment, tmp_path / "b", 2, seed=1, workers=2, progress=False)
    for a, b in zip(one.all_results, two.all_results, strict=True):
        _same(a, b)
    report = NavReport(experiment, window=experiment.window, title="test").write(one, tmp_path / "a")
    rows = read_summary(tmp_path / "a" / "summary.csv")
    assert list(rows[0]) == ["curriculum", "batches", "mean", "sem", "n"]
    agn = [r for r in rows if r["curriculum"] == "Agn"]
    expected = np.mean([r.curves["test"][-1] for r in one.cells["Agn"]])
    assert agn[-1]["mean"] == pytest.approx(expected) and agn[-1]["n"] == 2
    assert {"test_reward.png", "curriculum_features.png"} <= set(report["files"])
    assert json.loads((tmp_path / "a" / "report.json").read_text())["paper_window"] == [1000, 11000]
    assert "test return of the best-on-validation model, Cur (n=2)" in capsys.readouterr().out


def test_features_are_normalised(sp_file, tsp_file):
    for path in (sp_file, tsp_file):
        data = prepare(path, file_digest(path))
        names, values = demonstration_features(data.train)
        assert values.shape == (data.train.n_demos, len(names))
        assert values.min() >= 0.0 and values.max() <= 1.0


def test_nav_command_small(tmp_path, capsys):
    out = tmp_path / "nav"
    args = ["nav", "--scale", "small", "--runs", "1", "--curricula", "Agn,Cur-L", "--epochs", "1",
            "--workers", "1", "--no-progress", "--out", str(out)]
    assert main(args) == 0
    assert (out / "runs" / "Cur-L" / "run_00000.model.pt").exists()
    assert (out / "test_reward.png").exists() and (out / "summary.csv").exists()
    assert main(args + ["--no-figures"]) == 0
    assert "0 computed, 2 reused" in capsys.readouterr().out
    model = out / "runs" / "Agn" / "run_00000.model.pt"
    for name in ("show.png", "show.gif"):
        assert main(["nav-show", "--model", str(model), "--task", "shortest-path", "--dataset",
                     str(next(out.glob("dataset-*.npz"))), "--index", "1", "--out", str(tmp_path / name)]) == 0
        assert (tmp_path / name).stat().st_size > 0


@pytest.mark.parametrize("extra, message", [
    (["--curricula", "Agn,Best"], "unknown curriculum 'Best'; available: Cur, Cur-L, Cur-T, Agn"),
    (["--epochs", "0"], "--epochs"),
    (["--max-batches", "0"], "--max-batches"),
    (["--eval-every", "-1"], "--eval-every"),
    (["--runs", "0"], "runs"),
    (["--device", "cuda"] if not th.cuda.is_available() else ["--runs", "-1"], "cuda|runs"),
])
def test_nav_command_bad_arguments(tmp_path, capsys, extra, message):
    assert main(["nav", "--scale", "small", "--out", str(tmp_path), "--no-progress", *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith("curteach nav: error:") and len(err.strip().splitlines()) == 1
    assert any(part in err for part in message.split("|"))


def test_nav_command_bad_datasets(sp_file, tmp_path, capsys):
    base = ["nav", "--scale", "small", "--runs", "1", "--no-progress", "--out", str(tmp_path / "out")]
    assert main(base + ["--task", "tsp", "--dataset", sp_file]) == 2
    assert "holds shortest_path tasks, not tsp" in capsys.readouterr().err
    damaged = tmp_path / "damaged.npz"
    data = bytearray(open(sp_file, "rb").read())
    data[len(data) // 2] ^= 0xFF
    damaged.write_bytes(bytes(data))
    assert main(base + ["--dataset", str(damaged)]) == 2
    assert "damaged.npz" in capsys.readouterr().err
    assert main(base + ["--dataset", str(tmp_path / "missing.npz")]) == 2
    assert not (tmp_path / "out" / "runs").exists()  # nothing computed


def test_experiment_rejects_bad_settings(sp_file):
    for kwargs, match in (
        ({"task": "maze"}, "task must be"),
        ({"curricula": ()}, "curricula"),
        ({"curricula": ("Cur", "Cur")}, "curricula"),
        ({"epochs": 0}, "epochs"),
        ({"learning_rate": float("nan")}, "learning_rate"),
        ({"loss": "sum"}, "loss"),
        ({"teacher_difficulty": "mine"}, "teacher_difficulty"),
        ({"device": "auto"}, "device"),
    ):
        with pytest.raises(ValueError, match=match):
            _experiment(sp_file, **kwargs)
    with pytest.raises(ValueError, match="not tsp"):
        _experiment(sp_file, task="tsp").run_cell("Agn", 0, run_seed_sequence(0, 0))
    with pytest.raises(ValueError, match="changed since"):
        NavExperiment(dataset=sp_file, dataset_digest="0" * 64).run_cell("Agn", 0, run_seed_sequence(0, 0))


def test_a_worker_without_the_driver_disk_reads_the_shipped_dataset(sp_file, tmp_path, monkeypatch):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    here = _experiment(sp_file)
    assert here.local_dataset() == sp_file  # no bytes: the path
    blob = open(sp_file, "rb").read()
    assert _experiment(sp_file, dataset_bytes=blob).local_dataset() == sp_file  # the file is here: used as is
    elsewhere = NavExperiment(dataset=str(tmp_path / "on-the-driver.npz"), dataset_digest=here.dataset_digest,
                              epochs=2, eval_every=4, curricula=("Agn", "Cur"), dataset_bytes=blob)
    assert elsewhere.settings() == here.settings()  # neither the path nor the bytes are settings
    copy = elsewhere.local_dataset()
    assert copy.startswith(str(tmp_path / "curteach-datasets")) and file_digest(copy) == here.dataset_digest
    _same(elsewhere.run_cell("Cur", 0, run_seed_sequence(0, 0)), here.run_cell("Cur", 0, run_seed_sequence(0, 0)))


def test_nav_on_ray_needs_an_explicit_gpu_request(tmp_path, capsys):
    base = ["nav", "--scale", "small", "--out", str(tmp_path), "--no-progress", "--backend", "ray"]
    assert main([*base, "--device", "cuda"]) == 2
    assert "--gpus-per-run" in capsys.readouterr().err
    assert main([*base, "--device", "auto", "--gpus-per-run", "1"]) == 2
    assert "--device auto" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()


@pytest.mark.skipif(th.cuda.is_available(), reason="checks the message of a machine without a GPU")
def test_a_cuda_run_on_a_machine_without_gpu_names_the_run(sp_file):
    with pytest.raises(ValueError, match="run 0 of Cur needs a GPU"):
        _experiment(sp_file, device="cuda").run_cell("Cur", 0, run_seed_sequence(0, 0))


def test_a_diverging_network_stops_training_and_keeps_its_best_model(sp_file, tmp_path, capsys):
    """SGD at 1e5 sends the weights to inf within two steps: the run stops there, is saved, and its later evaluation
    points keep the best model's test return (nothing NaN but the broken network's validation return)."""
    healthy = _experiment(sp_file).run_cell("Cur", 0, run_seed_sequence(0, 0))
    experiment = _experiment(sp_file, learning_rate=1e5)
    run = experiment.run_cell("Cur", 0, run_seed_sequence(0, 0))
    step = run.extras["diverged"]
    assert 1 <= step < healthy.extras["batches"] and run.extras["batches"] == step
    np.testing.assert_array_equal(run.records["batches"]["test"], healthy.records["batches"]["test"])
    assert np.all(np.isfinite(run.curves["test"])) and np.all(run.curves["test"] == run.extras["best_test"])
    after = run.records["batches"]["test"] >= step
    assert np.all(np.isnan(run.curves["val"][after])) and np.all(np.isfinite(run.curves["val"][~after]))
    state = th.load(io.BytesIO(run.artifacts["model.pt"]), weights_only=True)
    assert all(bool(th.isfinite(v).all()) for v in state.values() if v.is_floating_point())

    sweep = run_sweep(experiment, tmp_path, 1, seed=0, progress=False)
    report = NavReport(experiment).write(sweep, tmp_path)
    assert report["diverged_runs"] == {"Agn": {"0": sweep.cells["Agn"][0].extras["diverged"]}, "Cur": {"0": step}}
    assert "diverged (training stopped" in capsys.readouterr().out
    rows = read_summary(tmp_path / "summary.csv")
    assert all(np.isfinite(float(r["mean"])) for r in rows)


def test_non_finite_logits_at_an_evaluation_count_as_divergence(sp_file):
    from curteach_teaching.experiments.nav.evaluation import NonFiniteLogits

    calls = []

    def evaluate(policy, split, batch):
        calls.append(run.curriculum.step)
        if run.curriculum.step >= 8:
            raise NonFiniteLogits("the policy returned non-finite logits (NaN or inf)")
        return evaluate_split(policy, split, batch=batch).mean_return

    run = NavRun.build(_experiment(sp_file), "Agn", 0, run_seed_sequence(0, 0), evaluate=evaluate)
    result = run.run()
    assert result.extras["diverged"] == 8 == run.diverged_at
    assert np.isnan(result.curves["val"][2]) and np.isfinite(result.curves["val"][1])
    assert calls[0] == 0 and calls[-1] == 8


def test_a_run_assembled_from_its_parts_is_the_experiments_run(sp_file):
    """A notebook's assembly of public parts (network, trainer, curriculum, evaluator, features) gives the
    experiment's numbers; an observer added to its curriculum sees every batch the run trained on."""
    from curteach_teaching.experiments.nav.parts import FeatureTracker, nav_curriculum, nav_trainer

    expected = _experiment(sp_file).run_cell("Cur", 0, run_seed_sequence(0, 0))
    data = prepare(sp_file, file_digest(sp_file))
    network_seed, curriculum_seed, trainer_seed = run_seed_sequence(0, 0).spawn(3)
    policy = NavigationCNNPolicy.for_navigation(seed=int(network_seed.generate_state(1, np.uint64)[0] >> np.uint64(1)))
    trainer = nav_trainer(policy, learning_rate=0.01, batch_size=32, rng=np.random.default_rng(trainer_seed),
                          device="cpu")
    curriculum = nav_curriculum(trainer, data, variant="Cur", rng=np.random.default_rng(curriculum_seed))
    run = NavRun(curriculum=curriculum, evaluator=BestModel(policy, data.val, data.test),
                 features=FeatureTracker(data.features, data.feature_names), epochs=2, eval_every=4, cell="Cur")
    batches = []

    class Watch(CurriculumCallback):
        def on_batch(self, batch):
            batches.append(batch)

    curriculum.add_callback(Watch())
    _same(expected, run.run())
    assert [b.step for b in batches] == list(range(1, expected.extras["batches"] + 1))
    assert sum(b.demonstrations.size for b in batches) == run.features.seen
    # the training loss at each evaluation: the mean loss of the steps since the previous one (none before training)
    loss = expected.curves["train:loss"]
    at = expected.records["batches"]["test"]
    assert np.isnan(loss[0]) and np.all(np.isfinite(loss[1:]))
    steps = np.array([b.metrics["loss"] for b in batches])
    for k in range(1, len(at)):
        np.testing.assert_allclose(loss[k], steps[at[k - 1]: at[k]].mean(), rtol=1e-12)


def test_nav_show_pictures_carry_a_legend_of_their_colours(sp_file, tmp_path):
    from PIL import Image

    from curteach_envs.navigation.dataset import load_dataset
    from curteach_envs.navigation.render import NAV_COLOR_LEGEND
    from curteach_teaching.experiments.nav.show import draw_rollout

    policy = NavigationCNNPolicy.for_navigation(seed=0)
    split = load_dataset(sp_file)["test"]
    visited = dict(NAV_COLOR_LEGEND)["visited goal"]  # never on a shortest-path grid: only its legend shows it
    assert [label for label, _ in NAV_COLOR_LEGEND] == ["empty", "mud", "bomb", "goal", "visited goal",
                                                        "start / home", "agent (points where it faces)"]
    for name in ("show.png", "show.gif"):
        draw_rollout(policy, split, 0, tmp_path / name)
        image = Image.open(tmp_path / name)
        frames = []
        for k in range(getattr(image, "n_frames", 1)):
            image.seek(k)
            frames.append(np.asarray(image.convert("RGB")).reshape(-1, 3))
        for pixels in frames:  # every frame of the animation has the legend too
            assert (np.abs(pixels.astype(int) - visited).sum(axis=1) <= 6).any(), name


def test_a_damaged_dataset_cache_is_generated_again_with_a_note(tmp_path, capsys, monkeypatch):
    from curteach_envs.navigation.dataset import load_dataset
    from curteach_teaching.experiments.nav import data

    monkeypatch.setattr(data, "DEMO_SPLIT_SIZES", {"train": 1, "val": 1, "test": 1})  # a tiny generated dataset
    fresh, _ = data.cached_dataset(tmp_path / "fresh", "shortest_path", "demo", 0, workers=1)
    cache = tmp_path / "out" / fresh.name
    cache.parent.mkdir()
    cache.write_bytes(fresh.read_bytes()[: fresh.stat().st_size // 2])  # cut short, as by a full disk
    capsys.readouterr()
    path, dataset = data.cached_dataset(tmp_path / "out", "shortest_path", "demo", 0, workers=1)
    err = capsys.readouterr().err
    assert path == cache and err.count("\n") == 1
    assert err.startswith(f"note: cannot read dataset {str(cache)!r}")
    assert "cache of the generated dataset: generating it again" in err
    assert cache.read_bytes() == fresh.read_bytes()  # the same seed gives the same file: its digest is unchanged
    assert dataset.kind == "shortest_path" and load_dataset(cache).kind == "shortest_path"
    given = cache.with_name("given.npz")  # a file the user gave is never replaced
    given.write_bytes(b"not an archive")
    with pytest.raises(ValueError, match="not an .npz"):
        data.cached_dataset(tmp_path / "out", "shortest_path", "demo", 0, given=given)
    assert given.read_bytes() == b"not an archive"
    with pytest.raises(ValueError, match="--scale demo is made and measured for --task shortest-path"):
        data.cached_dataset(tmp_path / "out", "tsp", "demo", 0)

