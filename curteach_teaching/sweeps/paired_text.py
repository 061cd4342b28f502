"""The printed lines of paired statistics (:mod:`curteach_teaching.sweeps.paired`): one per compared cell, three
significant digits, and a brief line per group of per-dataset scalars."""

from __future__ import annotations

from collections.abc import Mapping

from curteach_teaching.sweeps.paired import PairedDifference, PairedStatistics
from curteach_teaching.sweeps.sample_size import ALPHA, DETECTABLE_PRINTED_FROM, below_floor

__all__ = ["summary_lines"]


def _number(value: float, signed: bool = False) -> str:
    return format(value, "+.3g" if signed else ".3g")


def _interval_text(difference: PairedDifference) -> str | None:
    """``[low, high]``, or None where the difference has no interval."""
    return None if difference.low is None else f"[{_number(difference.low)}, {_number(difference.high)}]"


def _difference_text(difference: PairedDifference, more: str = "") -> str:
    if difference.mean is None:
        return f"n/a ({more})" if more else "n/a"
    interval = _interval_text(difference) or "[no interval]"
    p = "p n/a" if difference.p_value is None else f"p={_number(difference.p_value)}"
    if below_floor(difference):  # the test's floor, so that p=0.0625 is not read as "nearly 0.05"
        p += f", floor 2/2^{difference.nonzero}={_number(difference.min_p_value)}"
    elif (difference.p_value is not None and difference.p_value >= ALPHA and difference.detectable is not None
          and difference.pairs >= DETECTABLE_PRINTED_FROM):  # what "no difference found" can mean at these pairs
        p += f", t-test detects ±{_number(difference.detectable)}"
    return (f"{_number(difference.mean, signed=True)} {interval} ({p}, better in {difference.better}/"
            f"{difference.pairs}, ties {difference.ties}{'; ' + more if more else ''})")


def _brief_text(difference: PairedDifference) -> str:
    """A difference in a few characters: ``+0.12 [0.03, 0.2] p=0.031`` (the full figures are in the JSON)."""
    if difference.mean is None:
        return "n/a"
    interval = _interval_text(difference)
    p = "" if difference.p_value is None else f" p={_number(difference.p_value)}"
    return f"{_number(difference.mean, signed=True)}{'' if interval is None else ' ' + interval}{p}"


def summary_lines(results: Mapping[str, PairedStatistics]) -> list[str]:
    """The printed lines: one per cell, for example
    ``Cur - Agn: final +0.42 [0.1, 0.71] (p=0.0312, better in 9/10, ties 0); IQM 3.12 vs 2.7;
    steps to target -280 [-450, -120] (p=0.0625, floor 2/2^5=0.0625, better in 5/5, ties 0; both reach 5/5: Cur
    5/5, Agn 5/5)`` (three significant digits; intervals at the results' confidence; scalars appended as
    ``; name …``), each followed by one indented line per group of scalars named ``group:member`` (e.g. a
    success rate per dataset), in brief: ``  success: reach +0 [0, 0] p=1; push +0.12 [0.03, 0.2]
    p=0.031`` (ten of them in full made a line of about 2,000 characters). A p-value whose ``m`` non-zero pairs
    cannot take it below 0.05 names its floor ``2/2^m``; one of 0.05 or more, from 10 pairs, the smallest difference
    a paired t-test detects with 80 % power (``p=0.41, t-test detects ±0.12``);
    :func:`~curteach_teaching.sweeps.sample_size.sample_size_note` says what that means for the whole comparison.
    """
    lines = []
    for cell, result in results.items():
        parts = [f"{cell} - {result.baseline}: final {_difference_text(result.final)}",
                 f"IQM {_number(result.iqm)} vs {_number(result.baseline_iqm)}"]
        target = result.steps_to_target
        if target is not None:
            reach = (f"both reach {target.difference.pairs}/{target.runs}: {cell} {target.reached}/{target.runs}, "
                     f"{result.baseline} {target.baseline_reached}/{target.runs}")
            parts.append(f"steps to target {_difference_text(target.difference, reach)}")
        groups: dict[str, list[str]] = {}
        for name, difference in result.scalars.items():
            group, colon, member = name.partition(":")
            if colon:
                groups.setdefault(group, []).append(f"{member} {_brief_text(difference)}")
            else:
                parts.append(f"{name} {_difference_text(difference)}")
        lines.append("; ".join(parts))
        lines += [f"  {group}: {'; '.join(members)}" for group, members in groups.items()]
    return lines

