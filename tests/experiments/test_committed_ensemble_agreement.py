"""The ensemble's batched fit selects what its sequential fit selects on the committed mixed-quality data (issue 52
item 2), and the committed sweeps still read their cached scores.

Each check regenerates its data with the page's ``make-dataset`` command (seeded: the bytes the sweep was run on,
which the sweep's recorded digest confirms), finds the committed cache of the sequential fit under the key the sweep
wrote it with ("today's scores"), and compares:

* **BabyAI** (docs/experiments/order-or-select.md): the page's data is cheap to regenerate (about 30 s per noise
  level), so the committed caches are checked at the page's scale: found under their key and read without fitting,
  and their noisy share among the dropped at ``--keep 0.6`` is what the committed report says Cur-T+select dropped.
  The members are BabyAI's FiLM policy, which the batched fit does not batch
  (:func:`~curteach_teaching.learners.batched_members.batch_reason`): ``fit="batched"`` trains them one after another,
  so its scores are the sequential fit's bit for bit. The page's fit (5 x 500 steps of 128 on 14,473 steps of FiLM,
  3 to 17 minutes) is too long for a test, so a smaller regenerated set of both levels stands in for the fit: there
  the two fits are compared whole.
* **Meta-World** (docs/experiments/metaworld.md): the batched fit of the committed settings (5 x 3,000 steps of 256,
  ``mlp-256``) against the committed cache: a Spearman correlation of at least 0.95 and the same count of noisy
  episodes among the dropped at ``--keep 0.6``, within one. Minutes of CPU (``slow``); ``CURTEACH_METAWORLD_MIXED``
  names a folder of the page's data to skip regenerating it.

Without the data (and fast): each committed cache is the one file of its folder, named by the sequential fit's key of
the sweep's settings and its data's digest (``CACHED_DATA``, which the slow tests check against the regenerated
data), that key the closed form every cache before the batched fit was written under; the batched fit's is another.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("imitation")
pytest.importorskip("minari")

from curteach_teaching.cli import main  # noqa: E402
from curteach_teaching.datasets import read_pool  # noqa: E402
from curteach_teaching.datasets.curation import rank_episodes  # noqa: E402
from curteach_teaching.datasets.labels import bad_episodes  # noqa: E402
from curteach_teaching.datasets.prepare import learner_factory  # noqa: E402
from curteach_teaching.datasets.prepared import pool_digest  # noqa: E402
from curteach_teaching.datasets.scores.ensemble import EnsembleTeacher  # noqa: E402
from curteach_teaching.datasets.scores.registry import trained_score  # noqa: E402
from curteach_teaching.digests import trajectories_digest  # noqa: E402
from curteach_teaching.experiments.dataset_bc.experiment import DatasetBCExperiment  # noqa: E402
from curteach_teaching.experiments.dataset_bc.upgrade_digest import (  # noqa: E402
    legacy_pool_digest,
    legacy_trajectories_digest,
)

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs" / "results"
KEEP = 0.6  # both pages' --keep
#: the environment variable naming a folder of the Meta-World page's mixed data (skips regenerating it)
METAWORLD_DATA = "CURTEACH_METAWORLD_MIXED"

#: each committed sweep's data as its ensemble cache is keyed by, as the slow tests below find it in the regenerated
#: data: the BabyAI sweeps still record the earlier digests (their cache keyed by
#: ``upgrade_digest.legacy_trajectories_digest``); the Meta-World sweep was re-keyed by its page's command to the
#: current digests (``digests.trajectories_digest``; its sweep.json records ``pool_digest``)
CACHED_DATA = {"babyai-mixed-0.2": "c29e16b28ebc40b18722e10d67f8f047f7b90b1ebe9c5dc74f1047b1c4df7481",
               "babyai-mixed-0.4": "e499faca3822190e18730ef14fb0704acae59739a83667ddf2c6c2e51f4c919a",
               "metaworld-mixed": "0c1e358a34f357fd7be2d252310ec09a87f0edb310b86fbe84f4c24d36859056"}
#: the folders whose sweep.json records the current digest (the others: the earlier one)
CURRENT = {"metaworld-mixed"}

BABYAI_MAKE = ["make-dataset", "babyai", "--levels", "GoToLocal,PickupLoc", "--episodes", "1000", "--noise", "{noise}",
               "--seed", "2"]
METAWORLD_MAKE = ["make-dataset", "metaworld", "--tasks", "push,pick-place,peg-insert-side", "--episodes", "100",
                  "--seed", "1", "--noise", "1.0", "--noise-share", "0.4", "--workers", "1"]


def _page_says(page: str, command: list[str]) -> None:
    """The page gives ``command`` (its words in order, line continuations aside): the test regenerates what the page
    says the sweep ran on."""
    text = " ".join((ROOT / "docs" / "experiments" / page).read_text(encoding="utf-8").replace("\\\n", " ").split())
    assert "curteach " + " ".join(command) in text


def _make(command: list[str], out: Path) -> Path:
    assert main([*command, "--out", str(out)]) == 0
    return out


def _committed(folder: str, pool, scratch: Path,
               **settings) -> tuple[DatasetBCExperiment, EnsembleTeacher, np.ndarray]:
    """The committed sweep ``folder``'s experiment prepared on ``pool``, its ensemble teacher (the sequential fit)
    and the difficulty read from its committed cache (copied into ``scratch`` under the key a sweep of this version
    reads it by).

    A committed sweep records the digest of its data, of the earlier form (actions and rewards only) or of the
    current one, under which its cache is named (:mod:`~curteach_teaching.experiments.dataset_bc.upgrade_digest`);
    the pool read now must have that digest, and the cache is read where that key puts it, by a learner that fails
    if asked to fit.
    """
    recorded = json.loads((RESULTS / folder / "sweep.json").read_text())["settings"]["digest"]
    current = folder in CURRENT
    # the regenerated data are the sweep's
    assert (pool_digest(pool) if current else legacy_pool_digest(pool)) == recorded
    experiment = DatasetBCExperiment(task_difficulty="ensemble", **settings).prepare(pool)
    teacher = trained_score("ensemble", experiment.score_options()).teacher(experiment.teacher_seed)
    assert teacher.fit == "sequential"  # dataset-bc's default: the committed sweeps' fit
    trajectories = experiment.data.trajectories
    assert len(trajectories) == len(pool)
    assert (trajectories_digest if current else legacy_trajectories_digest)(trajectories) == CACHED_DATA[folder]
    cache = RESULTS / folder / "teachers"
    path = teacher.cache_path(cache, CACHED_DATA[folder], f"{experiment.policy}|{recorded}")
    assert [p.name for p in cache.glob("ensemble-*.npz")] == [path.name]

    def refuse(*args, **kwargs):
        raise AssertionError("the committed cache was not read")

    # a sweep's first command upgrades the folder (upgrade_digest), renaming the file to the new key: read it there
    scratch.mkdir(parents=True, exist_ok=True)
    label = experiment.cache_label()
    teacher.cache_file(trajectories, scratch, label).write_bytes(path.read_bytes())
    return experiment, teacher, teacher.scores(trajectories, refuse, cache=scratch, label=label).difficulty


@pytest.mark.parametrize("folder, batches, batch_size, policy, episodes", [
    ("babyai-mixed-0.2", 500, 128, "auto", 2000), ("babyai-mixed-0.4", 500, 128, "auto", 2000),
    ("metaworld-mixed", 3000, 256, "mlp-256", 300)])
def test_the_committed_caches_keep_the_sequential_fits_key(folder, batches, batch_size, policy, episodes):
    teacher = EnsembleTeacher(size=5, batches=batches, batch_size=batch_size, learning_rate=1e-3, seed=0)
    recorded = json.loads((RESULTS / folder / "sweep.json").read_text())["settings"]["digest"]
    label = f"{policy}|{recorded}"
    cache = RESULTS / folder / "teachers"
    path = teacher.cache_path(cache, CACHED_DATA[folder], label)
    # the key as every cache before the batched fit was written: the settings, data and label as sorted JSON
    key = {"size": 5, "batches": batches, "batch_size": batch_size, "learning_rate": 1e-3, "seed": 0,
           "data": CACHED_DATA[folder], "label": label}
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:20]
    assert path == cache / f"ensemble-{digest}.npz"
    assert [p.name for p in cache.glob("ensemble-*.npz")] == [path.name]
    scores, problem = teacher.read_cache(path, episodes)
    assert problem == "" and scores.difficulty.shape == (episodes,)
    assert dataclasses.replace(teacher, fit="batched").cache_path(cache, CACHED_DATA[folder], label) != path


def _dropped_noisy(difficulty: np.ndarray, noisy: np.ndarray) -> int:
    """How many noisy episodes the selection at ``KEEP`` drops (dataset-bc's select rule)."""
    return int((noisy & ~rank_episodes(difficulty, KEEP).kept).sum())


def _agreement(batched: np.ndarray, sequential: np.ndarray, noisy: np.ndarray) -> dict:
    from scipy.stats import spearmanr

    dropped = int((~rank_episodes(sequential, KEEP).kept).sum())
    return {"spearman": float(spearmanr(batched, sequential).statistic), "dropped": dropped,
            "noisy_dropped": (_dropped_noisy(batched, noisy), _dropped_noisy(sequential, noisy)),
            "largest_difference": float(np.abs(batched - sequential).max())}


BABYAI_SETTINGS = dict(curricula=("Agn", "Cur", "Cur-T@select", "Cur-T@weight", "Cur-T@select/return"), keep=KEEP,
                       batch_size=128, max_batches=1000, eval_every=500, eval_episodes=50, ensemble_batches=500)


@pytest.mark.slow
@pytest.mark.parametrize("noise", ["0.2", "0.4"])
def test_the_committed_babyai_caches_are_read_and_are_what_the_sweep_selected(noise, tmp_path):
    pytest.importorskip("minigrid")
    command = [word.format(noise=noise) for word in BABYAI_MAKE]
    _page_says("order-or-select.md", [word.format(noise="0.2") for word in BABYAI_MAKE] + ["--out", "data/mixed-0.2"])
    assert "and the same with `0.4`" in (ROOT / "docs" / "experiments" / "order-or-select.md").read_text()
    pool = read_pool(str(_make(command, tmp_path / "data")))
    experiment, teacher, difficulty = _committed(f"babyai-mixed-{noise}", pool, tmp_path / "cache",
                                                **BABYAI_SETTINGS)
    noisy = bad_episodes(pool, "noisy")
    quality = json.loads((RESULTS / f"babyai-mixed-{noise}" / "report.json").read_text())["selection_quality"]
    selected = quality["cells"]["Cur-T+select"]
    dropped = ~rank_episodes(difficulty, KEEP).kept
    assert selected["dropped"] == dropped.sum() == 800
    assert selected["dropped_bad_share"] == pytest.approx(noisy[dropped].mean(), abs=1e-12)
    # the batched fit of these members is the sequential fit: FiLM members are not batched, and it says so
    said = []
    batched = dataclasses.replace(teacher, fit="batched")
    factory = learner_factory(experiment.policy, experiment.data, batch_size=teacher.batch_size,
                              learning_rate=teacher.learning_rate)
    assert batched._batched(list(experiment.data.trajectories), teacher.halves(len(pool)), factory, said.append) \
        is None
    assert said == ["ensemble teacher: the members train one after another (BabyAIFiLMPolicy is a logits policy (its "
                    "own network and scores; BabyAI's packs its missions per batch))"]


def test_on_babyai_data_the_batched_fit_is_the_sequential_fit(tmp_path):
    pytest.importorskip("minigrid")
    # the page's levels, noise and seed at 30 episodes a level: the page's fit takes minutes (module docstring)
    command = ["make-dataset", "babyai", "--levels", "GoToLocal,PickupLoc", "--episodes", "30", "--noise", "0.4",
               "--seed", "2"]
    pool = read_pool(str(_make(command, tmp_path / "data")))
    noisy = bad_episodes(pool, "noisy")
    assert 0 < noisy.sum() < len(pool)
    experiment = DatasetBCExperiment(**{**BABYAI_SETTINGS, "batch_size": 32, "ensemble_batches": 10},
                                     task_difficulty="ensemble").prepare(pool)
    teacher = trained_score("ensemble", experiment.score_options()).teacher(0)
    factory = learner_factory(experiment.policy, experiment.data, batch_size=32)
    sequential = teacher.scores(experiment.data.trajectories, factory).difficulty
    said = []
    batched = dataclasses.replace(teacher, fit="batched").scores(experiment.data.trajectories, factory,
                                                                 say=said.append).difficulty
    assert any("one after another (BabyAIFiLMPolicy is a logits policy" in line for line in said)
    np.testing.assert_array_equal(batched, sequential)
    found = _agreement(batched, sequential, noisy)
    assert found["spearman"] == pytest.approx(1.0) and found["noisy_dropped"][0] == found["noisy_dropped"][1]


@pytest.fixture(scope="module")
def metaworld_mixed(tmp_path_factory) -> Path:
    """The Meta-World page's mixed data: the folder ``CURTEACH_METAWORLD_MIXED`` names, else regenerated (45 s)."""
    given = os.environ.get(METAWORLD_DATA)
    if given:
        return Path(given)
    pytest.importorskip("metaworld", reason="Meta-World needs the metaworld extra (Gymnasium >= 1.1)")
    return _make(METAWORLD_MAKE, tmp_path_factory.mktemp("metaworld-mixed"))


@pytest.mark.slow
def test_on_the_metaworld_mixed_pool_the_batched_fit_selects_what_the_committed_cache_selects(metaworld_mixed,
                                                                                             tmp_path):
    _page_says("metaworld.md", METAWORLD_MAKE)
    tasks = ("push", "pick-place", "peg-insert-side")  # the sweep's --dataset order
    pool = read_pool([str(metaworld_mixed / f"metaworld-{task}-v0") for task in tasks])
    experiment, teacher, committed = _committed(
        "metaworld-mixed", pool, tmp_path / "cache", policy="mlp-256", batch_size=256, max_batches=3000, eval_every=500,
        eval_episodes=20, sampled=False,
        curricula=("Agn", "Cur", "Cur-T@select", "Cur-T@weight", "Cur-T@select/length",
                   "Cur-T@select/ensemble+100*not:success"))
    assert (teacher.size, teacher.batches, teacher.batch_size) == (5, 3000, 256)
    noisy = bad_episodes(pool, "noisy")
    factory = learner_factory(experiment.policy, experiment.data, batch_size=teacher.batch_size,
                              learning_rate=teacher.learning_rate)
    said = []
    batched = dataclasses.replace(teacher, fit="batched").scores(experiment.data.trajectories, factory,
                                                                 say=said.append).difficulty
    assert not any("one after another" in line for line in said)  # batched indeed
    found = _agreement(batched, committed, noisy)
    print(f"\nMeta-World mixed, batched fit against the committed cache: {found}")
    assert found["spearman"] >= 0.95
    assert abs(found["noisy_dropped"][0] - found["noisy_dropped"][1]) <= 1
    assert found["noisy_dropped"][1] >= 0.6 * noisy.sum()  # the check means something: the ensemble finds them
