"""Math threads are the backends' concern: every run computes at one torch thread, whatever the backend."""

import os

import numpy as np
import torch as th

from curteach_teaching.sweeps.backends import SerialBackend, Unit, one_math_thread
from curteach_teaching.sweeps.results import RunResult


class ThreadProbe:
    """An experiment whose runs report the torch threads they computed with."""

    cells = ("probe",)

    def run_cell(self, cell, index, seed_sequence):
        return RunResult(index=index, seed=0, curves={"threads": np.array([float(th.get_num_threads())])},
                         records={}, extras={}, cell=cell)


def test_a_serial_run_computes_at_one_thread_and_the_count_is_restored():
    before = th.get_num_threads()
    th.set_num_threads(2)
    try:
        results = list(SerialBackend().run_units(ThreadProbe(), [Unit("probe", 0, 0), Unit("probe", 1, 0)]))
        assert [r.curves["threads"][0] for _, r in results] == [1.0, 1.0]
        assert th.get_num_threads() == 2
    finally:
        th.set_num_threads(before)


def test_without_torch_loaded_the_run_sees_one_thread_in_the_environment(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setenv("MKL_NUM_THREADS", "3")
    monkeypatch.delitem(__import__("sys").modules, "torch")  # as if no run had imported torch yet
    with one_math_thread():
        assert os.environ["OMP_NUM_THREADS"] == os.environ["MKL_NUM_THREADS"] == "1"
    assert "OMP_NUM_THREADS" not in os.environ and os.environ["MKL_NUM_THREADS"] == "3"


def test_a_drivers_fit_runs_at_one_thread_unless_omp_num_threads_asks_for_more(monkeypatch):
    from curteach_teaching.sweeps.backends import fit_threads

    before = th.get_num_threads()
    th.set_num_threads(2)
    try:
        monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
        with fit_threads() as count:
            assert count == 1 and th.get_num_threads() == 1
        assert th.get_num_threads() == 2
        monkeypatch.setenv("OMP_NUM_THREADS", "3")
        with fit_threads() as count:
            assert count == 3 and th.get_num_threads() == 3
        monkeypatch.setenv("OMP_NUM_THREADS", "lots")  # not a count: one
        with fit_threads() as count:
            assert count == 1
        assert th.get_num_threads() == 2
    finally:
        th.set_num_threads(before)
