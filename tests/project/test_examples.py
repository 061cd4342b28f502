"""The example notebooks run from top to bottom, at a small size where they have one (``CURTEACH_SMALL=1``)."""

import re
from pathlib import Path

import nbformat
from nbclient import NotebookClient

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run_notebook(name: str, monkeypatch, path: Path = EXAMPLES, headless_plots: bool = False) -> list:
    """Execute ``examples/name`` at its small size in ``path`` and return the outputs of its code cells (none of them
    an error).

    ``headless_plots`` sets matplotlib's Agg backend (no inline pictures) for a notebook that only saves figures.
    """
    monkeypatch.setenv("CURTEACH_SMALL", "1")
    if headless_plots:
        monkeypatch.setenv("MPLBACKEND", "Agg")
    notebook = nbformat.read(EXAMPLES / name, as_version=4)
    NotebookClient(notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(path)}}).execute()
    outputs = [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.get("outputs", [])]
    assert not any(output.get("output_type") == "error" for output in outputs)
    return outputs


def text_of(outputs: list) -> str:
    return "\n".join(output.get("text", "") for output in outputs)


def n_images(outputs: list) -> int:
    return sum("image/png" in output.get("data", {}) for output in outputs)


def test_01_car_environment(monkeypatch):
    outputs = run_notebook("01_car_environment.ipynb", monkeypatch)
    text = text_of(outputs)
    assert "801 states, 3 actions" in text
    assert "T7: mean  11.421" in text
    assert "total visitation 10.46617" in text
    assert n_images(outputs) >= 1  # the road picture


def test_02_teaching_maxent_irl(monkeypatch, tmp_path):
    # it writes results
    text = text_of(run_notebook("02_teaching_maxent_irl.ipynb", monkeypatch, path=tmp_path, headless_plots=True))
    assert "expert's expected reward" in text
    assert "T0: mean score     0.00" in text
    assert "summary.csv" in text


def test_03_curriculum_for_imitation_bc(monkeypatch):
    outputs = run_notebook("03_curriculum_for_imitation_bc.ipynb", monkeypatch)
    text = text_of(outputs)
    assert "200 demonstrations of 9 steps" in text
    assert "epoch  1: kept 112 (56%)" in text  # int(0.5 * 200 + min(1, 1 / (0.8 * 10)) * 0.5 * 200)
    assert "| bc/" not in text  # the silent logger
    assert "epoch 10: kept 200 (100%)" in text
    assert n_images(outputs) >= 1
    assert "agreement with the expert" in text


def test_04_navigation_tasks(monkeypatch):
    outputs = run_notebook("04_navigation_tasks.ipynb", monkeypatch)
    text = text_of(outputs)
    assert "split sizes: small" in text
    assert "TabularMDP: 145 states, 3 actions" in text
    assert "planner's optimal value" in text and "exact optimum: return" in text
    assert "trajectories; the first has obs" in text
    assert n_images(outputs) == 2


def test_05_learner_centric_curriculum(monkeypatch, tmp_path):
    outputs = run_notebook("05_learner_centric_curriculum.ipynb", monkeypatch, path=tmp_path)
    text = text_of(outputs)
    assert "dataset size: small" in text
    assert "Agn : " in text and "trained each epoch on 100%, 100%, 100%, 100%" in text
    assert "Cur : " in text and "trained each epoch on 66%" in text  # int(0.5 N + N / (0.8 * 4) * 0.5) of N = 692
    assert "summary.csv" in text and "run_00000.model.pt" in text
    assert "the learner's return" in text
    assert n_images(outputs) == 2  # the curves with the features, and the rollout


def test_06_frozenlake_teaching(monkeypatch):
    outputs = run_notebook("06_frozenlake_teaching.ipynb", monkeypatch)
    text = text_of(outputs)
    assert "65 states (64 cells + the sink), 4 actions, reward (65, 4), 53 teaching starts" in text
    assert "expert 0.0483" in text and "theta* (Omn's target) reaches 0.0095" in text
    assert "learning rate 0.5: 2 runs done, 0 diverged lanes" in text
    assert "Cur - Agn: area" in text and "Cur - Omn: area" in text
    assert "distinct starts per run of 53" in text
    assert n_images(outputs) == 2  # the lake, the curves


def test_07_trainers_curriculum(monkeypatch):
    outputs = run_notebook("07_trainers_curriculum.ipynb", monkeypatch)
    text = text_of(outputs)
    assert "runs: 2 | rounds: 3 | GAIL: 100 PPO steps per round" in text
    assert "400 demonstrations of 10 steps" in text
    # GAIL's Cur keeps int(200 + min(1, e / 2.4) * 200) of 400; DAgger's Agn all, 10 more episodes a round
    assert "GAIL Cur: reward" in text and "demonstrations per round: 283, 366, 400" in text
    assert "DAgger Agn: reward" in text and "demonstrations per round: 410/410, 420/420, 430/430" in text
    assert text.count("the same curve as the experiment's recipe: True") == 2
    assert "GAIL: Cur - Agn after round 3" in text and "DAgger: Cur - Agn after round 3" in text
    assert n_images(outputs) == 1


def test_08_your_own_dataset(monkeypatch, tmp_path):
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # its Minari datasets and runs go to a tempfile.mkdtemp()
    outputs = run_notebook("08_your_own_dataset.ipynb", monkeypatch)
    text = text_of(outputs)
    assert "small: True" in text and "30 episodes of CartPole-v1" in text
    # 60 steps of 512 on 14,390 transitions: 3 epochs of 29 steps; Cur keeps int(15 + min(1, e / 2.4) * 15) of 30
    assert "Agn run 1: " in text and "epochs on 100%, 100%, 100% of the episodes" in text
    assert "Cur run 1: " in text and "epochs on 70%, 90%, 100% of the episodes" in text
    left_out = re.search(r"Cur's first epoch \(run 0\) left out episodes \[([\d, ]+)\]", text)
    assert left_out and {4, 9} <= {int(i) for i in left_out.group(1).split(", ")}  # the two lowest returns
    assert "paired against Agn" in text and "Cur - Agn: final" in text and "as in report.json: True" in text
    assert "babyai-GoToRedBallGrey-v0: 15 bot episodes" in text and "babyai-GoToLocal-v0: 15 bot episodes" in text
    for level in ("GoToRedBallGrey", "GoToLocal"):
        for curriculum in ("Agn", "Cur"):
            assert f"babyai-{level}-v0, {curriculum}: greedy success by step 0: " in text
    # continuous actions: the scripted Pendulum dataset (4 of 12 noisy), Agn, Cur and the ensemble teacher's selection
    assert "12 episodes of Pendulum-v1; actions Box(-2.0, 2.0, (1,), float32); noisy episodes [0, 3, 6, 9]" in text
    for cell in ("Agn", "Cur", "Cur-T+select"):
        assert f"{cell}: greedy return " in text and f"{cell} after 60 batches (n=2)" in text
    dropped = re.search(r"selection \(run 0\) drops episodes \[[\d, ]+\]: (\d) of them noisy, of 4 noisy", text)
    assert dropped and int(dropped.group(1)) >= 3  # the noisy torques are the ones its members find least likely
    assert "Cur-T+select - Agn: final" in text and "success defined: False" in text
    assert n_images(outputs) == 2  # CartPole's returns, BabyAI's success per level
    # its datasets and runs went to the temporary folder TMPDIR names
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("curteach-notebook-08-")]
