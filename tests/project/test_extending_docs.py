"""docs/extending.md: every example it shows is its file as it is, runs, and says what the page says it does.

The page shows the files of examples/plugins/ verbatim (checked here, block by block), so running those files runs the
page: the Python scripts in one interpreter, the command lines as a user would (a copy of examples/plugins/ under a
temporary working folder; the entry points from a real ``pip install`` of its pyproject.toml, into a target folder
instead of this environment).
"""

import csv
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from curteach_teaching.curriculum.selection import CurriculumSelection
from curteach_teaching.demonstrations import DemonstrationPool
from curteach_teaching.experiments.tabular.experiment import EnvTeachingExperiment
from curteach_teaching.teaching.factories import TEACHERS
from curteach_teaching.teaching.loop import LEARNERS, LessonBook, teach
from curteach_teaching.teaching.observability import ProbedPolicyView

ROOT = Path(__file__).resolve().parents[2]
PLUGINS = ROOT / "examples" / "plugins"
PAGE = ROOT / "docs" / "extending.md"
SCRIPTS = ("environments.py", "teach_in_python.py", "curriculum_in_python.py", "probing.py")
BIN = str(Path(sys.executable).parent)


def _copy_plugins(work: Path) -> None:
    shutil.copytree(PLUGINS, work / "examples" / "plugins", ignore=shutil.ignore_patterns("__pycache__"))


def _run(command, cwd: Path, pythonpath: str, timeout: int = 300,
         extra: dict | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": os.pathsep.join([BIN, os.environ.get("PATH", "")]), "PYTHONPATH": pythonpath,
           "MPLBACKEND": "Agg", **(extra or {})}
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def _teachers_in(summary: Path) -> set[str]:
    with open(summary) as stream:
        return {row["teacher"] for row in csv.DictReader(stream)}


#: an example on the page: its path as a caption, then its text in a fenced block (so that it reads on GitHub too,
#: where MkDocs' include lines would show as they are)
_SHOWN = re.compile(r"^`examples/plugins/([^`]+)`:\n\n```[a-z]*\n(.*?)^```$", re.M | re.S)


def test_the_page_shows_every_example_as_it_is():
    text = PAGE.read_text(encoding="utf-8")
    shown = {name: body for name, body in _SHOWN.findall(text)}
    files = {str(p.relative_to(PLUGINS)) for p in PLUGINS.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    assert files - {"mypkg/__init__.py"} <= set(shown), f"not on the page: {sorted(files - set(shown))}"
    assert set(shown) <= files, f"the page shows files that do not exist: {sorted(set(shown) - files)}"
    for name, body in shown.items():  # a file changed without the page, or the page without the file
        assert body == (PLUGINS / name).read_text(encoding="utf-8"), f"the page's {name} differs from the file"
    assert "--8<--" not in text  # an include line reads as itself on GitHub


def test_python_examples(tmp_path):
    driver = ("import runpy, sys\n"
              "for path in sys.argv[1:]:\n"
              "    print('=== ' + path, flush=True)\n"
              "    runpy.run_path(path, run_name='__main__')\n")
    done = _run([sys.executable, "-c", driver, *(str(PLUGINS / name) for name in SCRIPTS)], tmp_path, str(PLUGINS))
    assert done.returncode == 0, done.stderr[-3000:]
    out = dict(zip(SCRIPTS, re.split(r"^=== .*$", done.stdout, flags=re.M)[1:]))
    assert "FrozenLake 8x8: 65 states, 4 actions, features (65, 64), reward (65, 4)" in out["environments.py"]
    assert "own features: (65, 3)" in out["environments.py"]
    assert "the expert's value at the start -7.458" in out["environments.py"]  # -(1 - 0.9^13) / 0.1
    assert "chain: optimal values [9.0, 10.0, 0.0]" in out["environments.py"]  # 1 + 0.9 * 10 = 10 at state 1
    assert "Taxi: 501 states, reward (501, 6)" in out["environments.py"]
    assert "ValueError: CartPole-v1 has no transition table" in out["environments.py"]
    lanes = re.findall(r"^(Cur|Agn|Cur-eps) +after 10, 20, 30 steps: ([\d.]+), ([\d.]+), ([\d.]+)",
                       out["teach_in_python.py"], flags=re.M)
    assert [name for name, *_ in lanes] == ["Cur", "Agn", "Cur-eps"]
    expert = float(re.search(r"expert ([\d.]+)", out["teach_in_python.py"]).group(1))
    for _, *values in lanes:  # every learner ends close to the expert's return, none above it
        assert expert * 0.9 < float(values[-1]) <= expert + 1e-9
    assert "preference [1.0, 1.0, -2.0, 4.0, 0.5] -> kept [3, 0]" in out["curriculum_in_python.py"]
    assert "by module:attr: TeacherWeighted" in out["curriculum_in_python.py"]
    noise = [float(x) for x in re.findall(r"mean noise of the kept ([\d.]+)", out["curriculum_in_python.py"])]
    assert len(noise) == 4 and noise[0] < noise[-1] == 0.30  # the careful demonstrators first, all by the end
    assert "recorded as Cur-2T" in out["curriculum_in_python.py"]
    assert "probe refreshes: 4" in out["probing.py"]
    assert "SB3 policy: (S, A) = (17, 4)" in out["probing.py"]


def test_module_attr_commands(tmp_path):
    _copy_plugins(tmp_path)
    done = _run(["bash", "-e", "examples/plugins/module_attr.sh"], tmp_path, "")
    assert done.returncode == 0, done.stderr[-3000:]
    assert _teachers_in(tmp_path / "results/plugin-car-irl/summary.csv") == {"Agn", "Cur", "Cur-eps"}
    assert _teachers_in(tmp_path / "results/plugin-teach/summary.csv") == {"Agn", "Cur", "Cur-eps"}
    assert (tmp_path / "results/plugin-car-irl/curriculum_Cur-eps_all.png").is_file()  # --heatmap-teacher Cur-eps
    assert (tmp_path / "results/plugin-teach/report.json").is_file()
    runs = tmp_path / "results/plugin-car-trainers/runs"
    assert {p.name for p in runs.iterdir()} == {f"{t}_{c}" for t in ("bc", "mlp-bc") for c in ("Agn", "Cur", "Cur-2T")}
    run = json.loads((runs / "mlp-bc_Cur-2T" / "run_00001.json").read_text())["data"]
    assert len(run["curves"]["reward"]) == 4 and len(run["curves"]["train:loss"]) == 4  # 3 epochs; BC's loss
    assert np.all(np.isfinite(run["curves"]["train:loss"][1:])) and run["extras"]["expert_reward"] > 0


def test_the_trained_score_example_in_rank_and_dataset_bc(tmp_path):
    _copy_plugins(tmp_path)
    (tmp_path / "examples" / "datasets").mkdir()
    shutil.copy(ROOT / "examples" / "datasets" / "scripted_cartpole.py", tmp_path / "examples" / "datasets")
    done = _run(["bash", "-e", "examples/plugins/trained_score.sh"], tmp_path, str(ROOT))
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count("action disagreement: 6000 states, 5 neighbours each") == 2  # fitted once per command
    with open(tmp_path / "results/plugin-rank/scores.csv") as stream:
        rows = list(csv.DictReader(stream))
    dropped = {int(row["episode_id"]) for row in rows if row["kept"] == "0"}
    assert len(rows) == 12 and {0, 1, 2, 3} <= dropped  # the noisy third (every third action flipped) goes
    report = json.loads((tmp_path / "results/plugin-rank/rank.json").read_text())
    assert report["mypkg.scores:ActionDisagreement"]["knn_k"] == 5
    runs = tmp_path / "results/plugin-dataset-bc/runs"
    assert {p.name for p in runs.iterdir()} == {"Agn", "Cur-T+select",
                                                "Cur-T+select+mypkg.scores.ActionDisagreement+length"}
    record = json.loads((tmp_path / "results/plugin-dataset-bc/sweep.json").read_text())
    own = record["cells"]["Cur-T+select"]  # the score's settings enter the cell's fingerprint
    assert own["task"] == "mypkg.scores:ActionDisagreement" and own["knn_k"] == 5 and own["teacher_seed"] == 0


def test_entry_point_commands(tmp_path):
    _copy_plugins(tmp_path)
    lines = (PLUGINS / "entry_points.sh").read_text().splitlines()
    commands = [line for line in lines if line.strip() and not line.startswith("#")]
    assert commands[0] == "pip install ./examples/plugins"
    # the same installation, into a folder of its own rather than this environment (offline, with its setuptools)
    site = tmp_path / "site"
    install = _run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index",
                    "--target", str(site), "./examples/plugins"], tmp_path, "")
    assert install.returncode == 0, install.stderr[-3000:]
    rest = "\n".join(line for line in lines if line != commands[0])
    done = _run(["bash", "-e", "-c", rest], tmp_path, str(site))
    assert done.returncode == 0, done.stderr[-3000:]
    assert _teachers_in(tmp_path / "results/plugin-car-irl-ep/summary.csv") == {"Agn", "Cur", "Cur-eps"}
    assert _teachers_in(tmp_path / "results/plugin-teach-ep/summary.csv") == {"Agn", "Cur", "Cur-eps"}
    runs = tmp_path / "results/plugin-car-trainers-ep/runs"
    assert {p.name for p in runs.iterdir()} == {f"{t}_{c}" for t in ("bc", "mlp-bc") for c in ("Agn", "Cur-2T")}


@pytest.fixture
def mypkg_on_path(monkeypatch):
    monkeypatch.syspath_prepend(str(PLUGINS))
    yield
    for name in [name for name in sys.modules if name == "mypkg" or name.startswith("mypkg.")]:
        del sys.modules[name]


def test_the_errors_the_page_quotes(mypkg_on_path):
    with pytest.raises(ValueError, match=r"^unknown teacher 'Greedy'; available: Agn, Omn, Scot, Cur, Cur-T, Cur-L, "
                       r"BBox.*\. To add one, pass 'module:attr' \(e\.g\. mypkg\.module:Mine\) or declare an entry "
                       r"point in the group 'curteach\.teachers'$"):
        TEACHERS.load("Greedy")
    with pytest.raises(ValueError, match=r"^teacher 'mypkg\.teachers:Greedy': module 'mypkg\.teachers' has no "
                       r"attribute 'Greedy'$"):
        TEACHERS.load("mypkg.teachers:Greedy")
    assert TEACHERS.load("mypkg.teachers:EpsilonCur")[0] == "Cur-eps"  # shown by its name attribute
    assert LEARNERS.load("mypkg.learners:RecencyImitator")[0] == "recency"
    experiment = EnvTeachingExperiment(teachers=("Agn", "Omn"), learner="mypkg.learners:RecencyImitator")
    with pytest.raises(ValueError, match=r"^Omn needs a learner with fit\(\), gradients_per_start\(\) and parameters "
                       r".*learner 'recency' lacks fit, gradients_per_start, parameters \(leave Omn out\)$"):
        experiment.check_environment()
    with pytest.raises(ValueError, match=r"^learner factory 'recency' raised ValueError: RecencyImitator needs a "
                       r"learning rate in \(0, 1\]; got 2\.0$"):
        EnvTeachingExperiment(teachers=("Omn",), learner="mypkg.learners:RecencyImitator",
                              learning_rate=2.0).check_environment()


class _Picks:
    name = "Cur-eps"

    def __init__(self, state):
        self.state = state

    def select(self, view, step):
        return self.state if step == 3 else 0


class _Uniform:
    def action_log_probabilities(self):
        return np.full((17, 4), -np.log(4))

    def learn(self, lesson):
        pass


class _Bad:
    name = "Cur-2T"

    def preference(self, learner, teacher):
        return [1.0, 2.0]


def test_the_errors_of_a_running_plugin():
    pool = DemonstrationPool(start_states=np.array([0, 4]), observations=np.zeros((2, 1, 4), dtype=np.int64),
                             actions=np.zeros((2, 1, 3), dtype=np.int64), terminal=np.zeros((2, 1), dtype=bool))
    for state, message in [(None, r"^teacher 'Cur-eps' returned None from select at step 3; select must return a "
                                  r"start state \(an int from start_states\)$"),
                           (7, r"^teacher 'Cur-eps' at step 3: state 7 is not a start state of the demonstration "
                               r"pool$")]:
        with pytest.raises(ValueError, match=message):
            teach({"Cur-eps": _Picks(state)}, {"Cur-eps": _Uniform()}, 5, lessons=LessonBook(pool),
                  evaluate=lambda learner: 0.0)
    selection = CurriculumSelection(40, _Bad(), np.zeros(40))
    with pytest.raises(ValueError, match=r"^curriculum 'Cur-2T' returned a preference of shape \(2,\) \(or with "
                       r"NaN\); it must be None or \(40,\) without NaN$"):
        selection.select(1, 4, np.zeros(40))
    view = ProbedPolicyView(lambda obs: np.zeros(17), 1, 20, observations=np.arange(17), n_actions=4)
    with pytest.raises(ValueError, match=r"^the probed callable must return \(340,\) integer actions for 340 "
                       r"observations; got float64 of shape \(17,\)$"):
        view.at_step(0)


def _dataset_source_section() -> str:
    text = PAGE.read_text(encoding="utf-8")
    assert "\n## A dataset source\n" in text
    return text.split("\n## A dataset source\n", 1)[1].split("\n## ", 1)[0]


def test_the_dataset_source_example(tmp_path, monkeypatch, capsys):
    """The page's source, registered as the page says, runs its commands with the output the page shows, and
    --overwrite replaces the dataset (the contract the page states: make-dataset itself removes nothing)."""
    pytest.importorskip("minari")
    from curteach_teaching.cli import main
    from curteach_teaching.datasets.reading import read_pool
    from curteach_teaching.datasets.sources import SOURCES
    from curteach_teaching.datasets.writing import write_pool

    section = _dataset_source_section()
    (code,) = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    namespace = {"__name__": "docs_dataset_source"}
    exec(compile(code, f"{PAGE}: A dataset source", "exec"), namespace)
    assert '"curteach.dataset_sources"]\ncartpole-controller = "mypkg.sources:ControllerSource"' in section
    monkeypatch.setitem(SOURCES._builtins, "cartpole-controller", lambda: namespace["ControllerSource"])
    monkeypatch.chdir(tmp_path)

    (shown,) = re.findall(r"```text\n(.*?)```", section, flags=re.S)
    sessions = re.findall(r"^\$ curteach (.*)\n((?:[^$].*\n)*)", shown, flags=re.M)
    assert len(sessions) == 3
    for command, expected in sessions:
        code = main(command.split())
        captured = capsys.readouterr()
        printed = captured.out if code == 0 else captured.err
        # the elapsed time is the machine's
        assert re.sub(r"in [\d.]+ s:", "in T s:", printed) == re.sub(r"in [\d.]+ s:", "in T s:", expected), command
        assert code == (0 if "error:" not in expected else 2)
    folder = tmp_path / "data" / "minari" / "cartpole" / "controller-v0"
    pool = read_pool(folder)
    assert pool.seeds == (0, 1, 2) and len(pool) == 3 and pool.env_specs["cartpole/controller-v0"].id == "CartPole-v1"
    assert (pool.lengths == 500).all()  # the controller balances the pole to CartPole's horizon

    # what a source that ignored the flag would meet: write_pool refuses an existing dataset, as the page quotes
    with pytest.raises(ValueError, match=r"^a dataset already exists at '.*controller-v0'; remove it or choose "
                       r"another id$"):
        write_pool(pool, "cartpole/controller-v0", root="data/minari")
    assert main(["make-dataset", "cartpole-controller", "--episodes", "2", "--seed", "5", "--out", "data/minari",
                 "--overwrite"]) == 0
    capsys.readouterr()
    assert read_pool(folder).seeds == (5, 6)  # replaced
    assert [p.name for p in (tmp_path / "data" / "minari").iterdir()] == ["cartpole"]  # no staging folder left


def test_the_dataset_learner_commands(tmp_path):
    """The page's dataset learner trains under three curricula in Pendulum-v1 and on held-out episodes, through
    nothing but ``--policy module:attr``; on discrete actions it is refused in one line, before any training."""
    _copy_plugins(tmp_path)
    shutil.copytree(ROOT / "examples" / "datasets", tmp_path / "examples" / "datasets",
                    ignore=shutil.ignore_patterns("__pycache__"))
    done = _run(["bash", "-e", "examples/plugins/dataset_learner.sh"], tmp_path, str(ROOT), timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    runs = tmp_path / "results/plugin-dataset-bc/runs"
    assert {p.name for p in runs.iterdir()} == {"Agn", "Cur", "Cur+weight"}
    weighted = json.loads((runs / "Cur+weight" / "run_00001.json").read_text())["data"]
    assert len(weighted["curves"]["return"]) == 3 and np.all(np.isfinite(weighted["curves"]["sampled_return"]))
    assert np.all(np.isfinite(weighted["curves"]["train:loss"][1:])) and "weights" in weighted["extras"]["selection"][0]
    held = json.loads((tmp_path / "results/plugin-dataset-bc-held-out/runs/Cur-L/run_00001.json").read_text())["data"]
    assert np.all(np.isfinite(held["curves"]["nll"])) and held["curves"]["nll"][-1] < held["curves"]["nll"][0]
    ranked = json.loads((tmp_path / "results/plugin-rank/rank.json").read_text())
    assert ranked["kept"] == 6 and ranked["ensemble"]["policy"] == "mypkg.dataset_learners:LinearGaussian"
    cartpole = _run([sys.executable, "examples/datasets/scripted_cartpole.py", "--root", "minari", "--episodes", "4"],
                    tmp_path, str(ROOT))
    assert cartpole.returncode == 0, cartpole.stderr[-3000:]
    refused = _run(["curteach", "dataset-bc", "--dataset", "cartpole/scripted-v0", "--policy",
                    "mypkg.dataset_learners:LinearGaussian", "--out", "refused"], tmp_path,
                   os.pathsep.join([str(tmp_path / "examples" / "plugins"), str(ROOT)]),
                   extra={"MINARI_DATASETS_PATH": str(tmp_path / "minari")})
    assert refused.returncode == 2 and refused.stderr.strip().splitlines() == [
        "curteach dataset-bc: error: linear-gaussian learns continuous (Box) actions; the dataset's are Discrete(2)"]
    assert not (tmp_path / "refused" / "runs").exists()
