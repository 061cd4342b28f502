"""The learner flags shared by dataset-bc and rank (curteach_teaching.commands.learner_options)."""

import argparse

from curteach_teaching.cli import build_parser
from curteach_teaching.commands import learner_options
from curteach_teaching.learners.dataset_learner import DATASET_LEARNERS
from curteach_teaching.learners.policy_kinds import POLICY_KINDS


def test_the_help_lists_the_kinds_the_registry_resolves():
    assert learner_options.POLICY_KINDS is POLICY_KINDS
    assert DATASET_LEARNERS.names()[: len(POLICY_KINDS)] == POLICY_KINDS


def _subcommand(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices[name]


def test_dataset_bc_and_rank_take_the_learner_flags_alike():
    parser = build_parser()
    for command in ("dataset-bc", "rank"):
        sub = _subcommand(parser, command)
        flags = {a.dest: a for a in sub._actions}
        # --learning-rate's default is the learner kind's own (resolve_learner_arguments): 1e-3 but for diffusion
        assert (flags["policy"].default, flags["batch_size"].default, flags["learning_rate"].default) == \
            ("auto", 64, None)
        assert all(kind in flags["policy"].help for kind in POLICY_KINDS)
    args = parser.parse_args(["rank", "--dataset", "d", "--policy", "mlp-256", "--batch-size", "256",
                              "--learning-rate", "0.0003"])
    assert (args.policy, args.batch_size, args.learning_rate) == ("mlp-256", 256, 3e-4)
