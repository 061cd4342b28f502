"""One place declares which settings enter a run's fingerprint (curteach_teaching.sweeps.fingerprints): a setting added
with a default that reproduces the runs saved before leaves their fingerprint as it was at that default, and changes it
away from it; what is no setting (a file name, where a run shows its progress) never enters."""

from __future__ import annotations

import dataclasses
import json

import pytest

from curteach_teaching.sweeps.fingerprints import (
    ALWAYS,
    NEVER,
    WHEN_NOT_DEFAULT,
    cell_fields,
    fingerprint_rule,
    setting,
    setting_names,
    shared_settings,
)
from curteach_teaching.sweeps.results import fingerprint


@dataclasses.dataclass(frozen=True)
class Toy:
    path: str = setting(fingerprint=NEVER)
    rate: float = 0.1
    keep: float = setting(0.6, cell=True)
    late: int = setting(2, fingerprint=WHEN_NOT_DEFAULT)
    late_cell: str = setting("pool", fingerprint=WHEN_NOT_DEFAULT, cell=True)
    progress: bool = setting(False, fingerprint=NEVER, compare=False)


def test_each_rule_and_the_cells_settings():
    toy = Toy(path="/data/a.npz")
    assert [fingerprint_rule(f) for f in dataclasses.fields(Toy)] == [NEVER, ALWAYS, ALWAYS, WHEN_NOT_DEFAULT,
                                                                      WHEN_NOT_DEFAULT, NEVER]
    assert setting_names(Toy) == setting_names(toy) == ("rate", "keep", "late", "late_cell")
    assert shared_settings(toy) == {"rate": 0.1}  # the path, the progress bar, the cells' settings: none of them
    assert shared_settings(Toy(path="/elsewhere", progress=True)) == shared_settings(toy)
    assert list(shared_settings(Toy(path="", late=3))) == ["rate", "late"]  # in declaration order
    assert shared_settings(toy, read_by_every_cell=("keep", "late_cell")) == {"rate": 0.1, "keep": 0.6}
    assert cell_fields(toy, ("late_cell", "keep")) == {"keep": 0.6}
    assert list(cell_fields(Toy(path="", late_cell="group"), ("late_cell", "keep"))) == ["late_cell", "keep"]
    with pytest.raises(ValueError, match=r"not settings of Toy: \['progress'\]"):
        cell_fields(toy, ("keep", "progress"))


def test_a_declaration_is_checked():
    with pytest.raises(ValueError, match="fingerprint must be one of"):
        setting(1, fingerprint="sometimes")
    with pytest.raises(ValueError, match="needs a default"):
        setting(fingerprint=WHEN_NOT_DEFAULT)
    # the other arguments are dataclasses.field's, and metadata of the field's own is kept beside the rule
    extra = setting(1, fingerprint=NEVER, compare=False, metadata={"unit": "s"})
    assert extra.compare is False and extra.metadata == {"unit": "s", "fingerprint": NEVER, "cell": False}


def test_a_setting_added_with_a_default_needs_no_migration():
    """dataset-bc's settings as a later version would add one: today's runs keep their fingerprint at its default
    (the run files and sweep.json of every folder saved so far), and another value is another sweep."""
    from curteach_teaching.experiments.dataset_bc.experiment import DatasetBCExperiment
    from curteach_teaching.sweeps.sweep import cell_fingerprints

    @dataclasses.dataclass(frozen=True)
    class Later(DatasetBCExperiment):
        grad_clip: float | None = setting(None, fingerprint=WHEN_NOT_DEFAULT)
        mixup: float = setting(0.0, fingerprint=WHEN_NOT_DEFAULT, cell=True)  # read by the select cells alone

        def cell_settings(self, cell):
            own = super().cell_settings(cell)
            return {**own, **cell_fields(self, ("mixup",))} if own["use"] == "select" else own

    flags = dict(digest="d" * 64, curricula=("Agn", "Cur", "Cur-T@select/ensemble"), holdout=0.2, teacher_seed=3,
                 ensemble_batches=7, obs_keys=("a", "b"))
    today = DatasetBCExperiment(**flags)
    settings = today.settings()
    fingerprints = cell_fingerprints(today, settings)
    later = Later(**flags)
    assert json.dumps(later.settings()) == json.dumps(settings)  # sweep.json byte for byte, too
    assert cell_fingerprints(later, later.settings()) == fingerprints
    clipped = Later(**flags, grad_clip=1.0)
    assert clipped.settings()["grad_clip"] == 1.0
    assert set(cell_fingerprints(clipped, clipped.settings()).values()) & set(fingerprints.values()) == set()
    mixed = Later(**flags, mixup=0.2)
    assert mixed.settings() == settings  # a cell's setting: only the cells that read it are other runs
    changed = cell_fingerprints(mixed, mixed.settings())
    assert [cell for cell in fingerprints if changed[cell] != fingerprints[cell]] == ["Cur-T+select+ensemble"]


def test_dataset_bc_declares_every_field():
    """Every field of dataset-bc's experiment is a setting of one rule or no setting; the settings some cells read
    are those its cell_settings may name, and the fingerprint of a fixed sweep is the one its folders hold."""
    from curteach_teaching.datasets.scores.registry import trained_options
    from curteach_teaching.experiments.dataset_bc.experiment import DatasetBCExperiment

    rules = {f.name: (fingerprint_rule(f), f.metadata.get("cell", False)) for f in dataclasses.fields(
        DatasetBCExperiment)}
    assert {name for name, (rule, _) in rules.items() if rule == NEVER} == {"progress", "data", "device"}
    # the cells' own settings, and every built-in trained score's options (what the cells reading it are keyed by)
    assert {name for name, (_, cell) in rules.items() if cell} == {
        "curricula", "task_difficulty", "use", "keep", "temperature", "teacher_seed", "keep_within",
        *(option.name for option in trained_options())}
    # the settings of the committed Pendulum sweep (docs/results/dataset-bc-pendulum, once upgraded) and its cells
    experiment = DatasetBCExperiment(
        digest="282cbc94753a811d3906d0b9eacde7899e15c3f99548c143e677a79cef3fd4ed", curricula=("Agn", "Cur",
                                                                                               "Cur-T@select"),
        task_difficulty="ensemble", max_batches=3000, batch_size=256, eval_every=500, sampled=False,
        ensemble_batches=1000)
    assert fingerprint(experiment.settings()) == fingerprint({
        "digest": experiment.digest, "env_id": None, "learner_term": "per-step", "scale": "standard",
        "budget": "equal", "max_batches": 3000, "epochs": None, "batch_size": 256, "learning_rate": 0.001,
        "eval_every": 500, "eval_episodes": 20, "sampled": False, "pacing_a": 0.8, "pacing_b": 0.5,
        "policy": "auto", "experiment": "dataset-bc"})
    assert experiment.cell_settings("Cur-T+select") == {
        "curriculum": "Cur-T", "use": "select", "task": "ensemble", "keep": 0.6, "ensemble_size": 5,
        "ensemble_batches": 1000, "teacher_seed": 0}


def test_the_sweeps_page_example_runs():
    """docs/experiments/sweeps.md's example of a declaration runs as written (it asserts its own settings)."""
    import re
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "experiments" / "sweeps.md").read_text(encoding="utf-8")
    [block] = [b for b in re.findall(r"```python\n(.*?)```", page, re.S) if "shared_settings" in b]
    namespace: dict = {"__name__": "sweeps_page"}
    exec(compile(block, "sweeps.md", "exec", dont_inherit=True), namespace)  # not this module's __future__
    assert namespace["MyExperiment"](dataset="elsewhere.npz").settings() == {"learning_rate": 1e-3,
                                                                            "experiment": "mine"}
