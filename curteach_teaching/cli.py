"""The ``curteach`` command.

Each sub-command lives in its own module under :mod:`curteach_teaching.commands` and exposes
``add_parser(subparsers)``, which registers an ``argparse`` parser whose ``func`` default runs it. To add a command,
write the module and list it in ``_COMMAND_MODULES``.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import sys
from collections.abc import Sequence

from curteach_teaching.sweeps.interrupts import EXIT_CODE, handle_interrupts

_COMMAND_MODULES = (
    "curteach_teaching.commands.datasets",
    "curteach_teaching.commands.demo",
    "curteach_teaching.commands.car_irl",
    "curteach_teaching.commands.car_bc",
    "curteach_teaching.commands.car_trainers",
    "curteach_teaching.commands.nav",
    "curteach_teaching.commands.sensitivity",
    "curteach_teaching.commands.monotonicity",
    "curteach_teaching.commands.teach",
    "curteach_teaching.commands.dataset_bc",
    "curteach_teaching.commands.rank",
    "curteach_teaching.commands.report",
)


#: what the teaching extra installs: a command that needs it names the extra instead of a traceback
_TEACHING_STACK = frozenset({"torch", "stable_baselines3", "seals", "matplotlib", "threadpoolctl", "datasets",
                             "jsonpickle", "tensorboard"})
#: imitation is not in the extra (its pins would hold Gymnasium at 0.29): the two ways to add it (docs/installation.md)
_IMITATION_HINT = ("install it with pip install --no-deps imitation==1.0.1 (today's stack, after curteach[teaching]) "
                   "or pip install 'curteach[teaching,classic]' (imitation's own pins)")


def _version() -> str:
    try:
        return importlib.metadata.version("curteach")
    except importlib.metadata.PackageNotFoundError:
        return "unknown (not installed)"


class OneLineErrorParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line, ``curteach dataset-bc: error: ...``, and a pointer to
    ``--help``, instead of argparse's usage block (over twenty lines for the larger commands); exit code 2 as
    argparse's. Sub-parsers are made of the same class (``add_subparsers`` takes the parent's class)."""

    #: sub-command name -> its parser (set by :func:`build_parser`), so that an unknown flag is reported by the
    #: sub-command it was given to rather than by ``curteach``
    commands: dict = {}

    def error(self, message: str):
        """argparse's hook for every parse error: one line on stderr, exit code 2."""
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    def parse_args(self, args=None, namespace=None):
        """As argparse's, with unrecognized arguments reported by the sub-command's parser, or handed to it in
        ``passed_on`` where it says so (``passes_on_unknown``)."""
        namespace, extras = self.parse_known_args(args, namespace)
        if extras:
            owner = self.commands.get(getattr(namespace, "command", None), self)
            if not getattr(owner, "passes_on_unknown", False):
                owner.error(f"unrecognized arguments: {' '.join(extras)}")
            namespace.passed_on = extras  # `curteach report DIR --paired-against X`: flags of the recorded command
        return namespace


def build_parser() -> argparse.ArgumentParser:
    """The ``curteach`` parser with every sub-command of ``_COMMAND_MODULES``."""
    parser = OneLineErrorParser(
        prog="curteach",
        description="Curriculum design for teaching via demonstrations (Yengera et al., NeurIPS 2021).",
    )
    parser.add_argument("--version", action="version", version=f"curteach {_version()}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for name in _COMMAND_MODULES:
        importlib.import_module(name).add_parser(subparsers)
    parser.commands = dict(subparsers.choices)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; a ``ValueError`` (bad input) or an ``OSError`` (a full disk, ...) becomes a one-line
    message and exit code 2, a run lost with its worker (:class:`~curteach_teaching.sweeps.backends.LostRun`)
    a one-line message and exit code 1, Ctrl-C exit code 130, SIGTERM 143 (see
    :mod:`curteach_teaching.sweeps.interrupts`). Called without ``argv`` it is the program: it leaves both signals
    ignored when it returns, so that a Ctrl-C after the command's last line does not kill the process by the signal."""
    from curteach_teaching.sweeps.backends import LostRun

    parser = build_parser()
    program = argv is None  # the process is the command: it ends when main returns
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:  # a bare `curteach` asks what there is: the help, not an error
        parser.print_help()
        return 0
    args = parser.parse_args(argv)
    args.command_line = ["curteach", *argv]  # recorded in report.json
    try:
        with handle_interrupts(exiting=program):
            result = args.func(args)
    except ValueError as error:
        print(f"curteach {args.command}: error: {error}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as error:
        missing = (error.name or "").split(".")[0]
        if missing == "imitation":
            print(f"curteach {args.command}: error: this command needs imitation, which is not installed; "
                  f"{_IMITATION_HINT}", file=sys.stderr)
            return 2
        if missing not in _TEACHING_STACK:
            raise
        print(f"curteach {args.command}: error: this command needs the teaching layer ({error.name} is not installed); "
              "install it with pip install 'curteach[teaching]'", file=sys.stderr)
        return 2
    except OSError as error:  # the machine, not the input: a full disk, a file that vanished, a lost permission
        where = f" ({error.filename})" if getattr(error, "filename", None) else ""
        print(f"curteach {args.command}: error: {error.strerror or error}{where}; every run finished before it is "
              "saved", file=sys.stderr)
        return 2
    except LostRun as error:  # the machine lost a worker more often than it is retried
        print(f"curteach {args.command}: error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as interruption:  # the sweep has said what it kept; no traceback
        return getattr(interruption, "exit_code", EXIT_CODE)  # 143 for a SIGTERM (Terminated)
    return int(result or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
