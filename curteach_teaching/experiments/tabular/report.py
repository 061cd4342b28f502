"""The report of ``curteach teach``: the sweep's summary, and which learners diverged.

A learner whose step would make it non-finite (a learning rate too large for it) stops learning and keeps its last
finite parameters; the run records the step in ``extras["diverged"]`` (teacher -> step). Its curve is then flat from
that step on, which looks like a learner that has converged: the printed summary says which teachers' learners
diverged, in how many runs, as the car experiments do, and ``report.json`` keeps the runs and steps.
"""

from __future__ import annotations

from collections.abc import Sequence

from curteach_teaching.sweeps.reports import Report
from curteach_teaching.sweeps.results import RunResult

__all__ = ["TeachReport", "diverged_runs"]


def diverged_runs(results: Sequence[RunResult]) -> dict:
    """Run index -> (teacher -> the step at which its learner diverged), for the runs where one did."""
    found = {}
    for result in results:
        steps = {name: int(step) for name, step in (result.extras.get("diverged") or {}).items()}
        if steps:
            found[int(result.index)] = steps
    return found


class TeachReport(Report):
    """:class:`~curteach_teaching.sweeps.reports.Report` of ``curteach teach``, with ``report.json``'s
    ``diverged_runs`` (run -> teacher -> step) and ``diverged_share`` (teacher -> share of runs), and a printed line
    when a learner diverged."""

    label = "teacher"
    reference_extra = "expert_reward"
    extras_not_averaged = ("diverged",)
    curves_compared = True
    metric_name = "expected return"

    def report_data(self, sweep, rows: list) -> dict:
        """Which learners diverged, run by run and as a share of the runs."""
        results = sweep.all_results
        runs = diverged_runs(results)
        share = {name: sum(name in steps for steps in runs.values()) / len(results) if results else float("nan")
                 for name in self.curve_names(sweep)}
        return {"diverged_runs": {str(index): steps for index, steps in sorted(runs.items())},
                "diverged_share": share}

    def print_summary(self, sweep, report: dict, out_dir) -> None:
        """The final means, after a line naming the learners that diverged (if any)."""
        share = {name: value for name, value in report["diverged_share"].items() if value > 0}
        if share:
            steps = sorted({step for run in report["diverged_runs"].values() for step in run.values()})
            shown = ", ".join(str(step) for step in steps[:5]) + (", ..." if len(steps) > 5 else "")
            text = ", ".join(f"{name} {value:.2f}" for name, value in share.items())
            print(f"diverged (learner kept its last finite parameters; a smaller --learning-rate avoids it): share "
                  f"of runs {text}; at steps {shown}")
        super().print_summary(sweep, report, out_dir)
