"""The ``trnscope`` command line's arguments: every command and option, parsed without
loading NumPy or any of the analysis.

Parsing comes first and costs only ``argparse``, so that ``--help`` answers at once and
a command can start decompressing the gzip traces it reads (``inflate_ahead``) before
the rest of trnscope is imported (``trnscope.cli.run``).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

from trnscope.core.model import op_tree

PROG = "trnscope"

# stands for the op table's sort keys until help is printed (``_SortKeysFormatter``)
_SORT_KEYS_HERE = "{sort keys}"


def _terminal_columns() -> int:
    """What ``shutil.get_terminal_size().columns`` answers (``COLUMNS``, else the
    terminal of stdout, else 80), without importing ``shutil``."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else 80


class _Formatter(argparse.HelpFormatter):
    """argparse's help formatter, told the terminal's width.  Left to find it, it
    imports ``shutil`` (with ``bz2`` and ``lzma``: 2.3 ms) while the parser is built —
    ``add_argument`` makes a formatter for every option it checks — which a command
    that reads a small trace never needs (a parallel decode imports it later anyway,
    with ``multiprocessing``)."""

    def __init__(
        self, prog: str, indent_increment: int = 2, max_help_position: int = 24, width: int | None = None
    ) -> None:
        super().__init__(prog, indent_increment, max_help_position, _terminal_columns() - 2 if width is None else width)


class _Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose help formatter is ``_Formatter`` unless told
    otherwise; its subcommands' parsers are ``_Parser`` too."""

    def __init__(self, *args: Any, formatter_class: type[argparse.HelpFormatter] = _Formatter, **kwargs: Any) -> None:
        kwargs["formatter_class"] = formatter_class
        super().__init__(*args, **kwargs)


def _instance_choice(text: str) -> int | str:
    """``--instance``: a number, or slowest / median / fastest (argparse says which is
    wrong, as for any other value)."""
    # (chain.INSTANCE_PICKS, spelled here: parsing must not import NumPy, which chain does)
    if text in ("slowest", "median", "fastest"):
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give a number, or slowest, median, fastest") from None


class _LinesFormatter(_Formatter):
    """Keeps the description's lines as written (``capture``'s three forms, indented)."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return "".join(indent + line for line in text.splitlines(keepends=True))


class _SortKeysFormatter(_Formatter):
    """Writes the op table's sort keys into the help when it is printed: they come from
    the columns catalogue, which imports NumPy, and parsing must not."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = super()._get_help_string(action)
        if text is not None and _SORT_KEYS_HERE in text:
            from trnscope.core.analysis.columns import SORT_KEYS

            text = text.replace(_SORT_KEYS_HERE, ", ".join(SORT_KEYS))
        return text


def _add_format(parser: argparse.ArgumentParser, choices: tuple[str, ...]) -> None:
    """``--format``, its first choice the default.  The tables' commands say ``table``
    and the others ``text`` for the same thing, printed for a person: each takes the
    other word too (``summary --format text`` was an error after ``diagnose --format
    text`` worked)."""
    plain = choices[0]
    same = {"text": plain, "table": plain} if plain in ("text", "table") else {}

    def normalised(value: str) -> str:
        return same.get(value, value)

    parser.add_argument("--format", choices=choices, default=plain, type=normalised)


def _add_op_tree(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--op-tree",
        choices=op_tree.CHOICES,
        default=op_tree.AUTO,
        help="Python frames in PyTorch's op tree, which sets Self CPU: classic (PyTorch up to 2.11: not in it), "
        "python (2.12+: nodes and rows); auto: the release a capture's session.json names, else classic",
    )


def _add_load_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--select", metavar="LABEL", help="which trace of a folder, session or multi-rank profile (label or index)"
    )
    parser.add_argument(
        "--skip", action="append", default=[], metavar="CATEGORY", help="drop a category at load, e.g. --skip python"
    )
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write the parsed-index cache")
    _add_op_tree(parser)
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        metavar="N",
        help="parallel processes: decoding one trace, or reading traces with --merge (default: CPU count)",
    )
    parser.add_argument(
        "--warmup",
        type=int,
        default=0,
        metavar="N",
        help="leave out the first N NeuronCore executions of each kernel (benchmark warm-ups)",
    )
    parser.add_argument(
        "--export",
        action="store_true",
        help="run neuron-explorer first on raw Neuron captures (.pb/.ntff) that have no export yet",
    )


# what a first look at `trnscope --help` should leave a user able to do
_START_HERE = """\
start here:
  trnscope open TRACE.json.gz       explore it (enter drills in, ? lists keys)
  trnscope summary TRACE.json.gz    the op table, as key_averages() prints it
  trnscope diagnose TRACE.json.gz   why it is slow, findings ranked by time
  trnscope ranks DIR                which rank held the others back, and where
  trnscope capture --demo rmsnorm --out DIR, then trnscope open DIR
  trnscope COMMAND --help           each command's options
"""


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description="Terminal trace explorer for PyTorch profiles (Trainium, CUDA, ROCm, MTIA, CPU).",
        epilog=_START_HERE,
        formatter_class=_LinesFormatter,
    )
    parser.add_argument("--version", action=_VersionAction)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("open", help="explore one or more profiles in the terminal UI")
    p.add_argument(
        "paths", nargs="+", metavar="PATH", help="trace file, capture session, Neuron profile folder; several = compare"
    )
    p.add_argument("--theme", default=None, help="Textual theme; 'ansi' uses the terminal's own colours")
    _add_load_options(p)

    p = sub.add_parser(
        "summary", help="print the op and kernel tables (key_averages style)", formatter_class=_SortKeysFormatter
    )
    p.add_argument("path", metavar="PATH")
    p.add_argument("--group-by", choices=("op", "shape", "stack"), default="op")
    p.add_argument(
        "--stack-depth", type=int, default=5, metavar="N", help="frames in the stack key (with --group-by stack)"
    )
    p.add_argument(
        "--sort",
        default=None,
        metavar="COLUMN",
        help=f"one of {_SORT_KEYS_HERE} (memory and FLOPs columns where the trace has them)",
    )
    p.add_argument(
        "--with",
        dest="extras",
        action="append",
        default=[],
        metavar="EXTRAS",
        help="figures computed only when asked: memory (reads every [memory] record), flops (every op's shapes), "
        "or all; the text table computes those its width shows",
    )
    p.add_argument(
        "--limit", type=int, default=None, metavar="N", help="rows to print (table default 30; csv/json default all)"
    )
    p.add_argument(
        "--match",
        metavar="REGEX",
        help="only rows whose name matches (case-insensitive; the input shape and stack too when grouped by "
        "them; a kernel's launching op too), as / filters in the explorer",
    )
    _add_format(p, ("table", "csv", "json"))
    p.add_argument(
        "--table",
        choices=("both", "ops", "kernels"),
        default="both",
        help="which table (csv prints one: ops unless kernels)",
    )
    p.add_argument("--step", type=int, default=-1, metavar="N", help="only ProfilerStep#N (the number the TUI shows)")
    p.add_argument(
        "--hide",
        action="append",
        default=[],
        metavar="KIND",
        help="hide rows of a kind: python, annotation, runtime, device, op",
    )
    p.add_argument(
        "--merge", action="store_true", help="sum the tables of every trace in a folder / multi-rank profile / session"
    )
    _add_load_options(p)

    p = sub.add_parser("chain", help="follow one op instance from dispatch to the device")
    p.add_argument("path", metavar="PATH")
    p.add_argument(
        "--op",
        metavar="NAME",
        help="op name (exact, or a unique substring); default: the op at the top of the op table (most self device "
        "time, else self CPU time)",
    )
    p.add_argument(
        "--instance",
        type=_instance_choice,
        default=None,
        metavar="K",
        help="K-th instance (0-based, in time order), or slowest, median, fastest; default: the slowest",
    )
    p.add_argument(
        "--context",
        action="store_true",
        help="list the op's parents and Python frames one by one (text: one line by default, as the explorer "
        "shows them first; json always has them)",
    )
    _add_format(p, ("text", "json"))
    _add_load_options(p)

    p = sub.add_parser("diagnose", help="device busy / idle, host- or device-bound steps, ranked findings")
    p.add_argument("path", metavar="PATH")
    _add_format(p, ("text", "json"))
    p.add_argument(
        "--all-steps",
        action="store_true",
        help="list every step (text otherwise lists the slowest few under a summary line; JSON has all)",
    )
    _add_load_options(p)

    p = sub.add_parser("timeline", help="the timeline as text: one lane per thread, stream or NeuronCore")
    p.add_argument("path", metavar="PATH")
    p.add_argument("--width", type=int, default=None, metavar="N", help="columns (default: the terminal's)")
    p.add_argument(
        "--from", dest="time_from", default=None, metavar="T", help="start, e.g. 1.5ms (from the trace start)"
    )
    p.add_argument("--to", dest="time_to", default=None, metavar="T", help="end, e.g. 3ms")
    p.add_argument("--step", type=int, default=None, metavar="K", help="only ProfilerStep#K")
    p.add_argument("--lanes", default=None, metavar="PATTERN", help="only lanes whose label matches this regex")
    p.add_argument("--nested", action="store_true", help="host ops at every depth, not only the top level")
    p.add_argument(
        "--python-threads",
        action="store_true",
        help="also threads with only Python frames (their frames span waits as well as work)",
    )
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    _add_load_options(p)

    p = sub.add_parser("compare", help="compare two or three variants op by op")
    p.add_argument("paths", nargs="+", metavar="PATH", help="two or three traces, or one capture session")
    _add_format(p, ("table", "csv", "json"))
    p.add_argument("--limit", type=int, default=None, metavar="N")
    p.add_argument(
        "--match",
        metavar="REGEX",
        help="only the regions, device work and ops whose name matches (case-insensitive), as / filters in the "
        "explorer's comparison",
    )
    p.add_argument(
        "--hide",
        action="append",
        default=[],
        metavar="KIND",
        help="hide op rows of a kind in the table: python (the default), annotation, runtime, op, or none "
        "(comma-separated, repeatable); JSON and CSV keep every row",
    )
    p.add_argument(
        "--align",
        action="append",
        default=[],
        metavar="A=B",
        help="kernel benchmarks: the baseline's kernel A goes with kernel B of the other variants (repeatable)",
    )
    p.add_argument(
        "--metric",
        choices=("device_total", "self_cpu", "cpu_total", "dispatch", "calls"),
        default=None,
        help="what rows are compared and sorted by (default: device total if any variant has device time, else CPU total)",
    )
    _add_load_options(p)

    _add_ranks_command(sub)

    from trnscope.cli.capture_usage import CAPTURE_USAGE

    p = sub.add_parser(
        "capture",
        help="record a profile: a built-in demo, your script (capture run SCRIPT.py) or NKI kernels (capture nki FILE.py)",
        usage=CAPTURE_USAGE.split("\n\n", 1)[0].removeprefix("usage: "),
        description=CAPTURE_USAGE.split("\n\n", 1)[1],
        formatter_class=_LinesFormatter,
    )
    p.add_argument("--demo", metavar="NAME", help="built-in demo: rmsnorm, attention (or 'list')")
    p.add_argument("--out", metavar="DIR", help="session folder to create")
    p.add_argument("--steps", type=int, default=None, metavar="N", help="steps profiled (default 5)")
    p.add_argument(
        "--warmup", type=int, default=None, metavar="W", help="steps (nki: runs) before the profiled ones (default 3)"
    )
    p.add_argument("--device", default=None, metavar="KIND", help="neuron, cuda or cpu (default: what this host has)")
    p.add_argument("--size", default=None, metavar="PRESET", help="demo size preset: small (default) or large")
    p.add_argument("--memory", action="store_true", help="profile_memory=True: memory columns per op (adds overhead)")
    p.add_argument(
        "--iterations", type=int, default=None, metavar="N", help="capture nki: measured runs per kernel (default 50)"
    )
    p.add_argument(
        "rest", nargs=argparse.REMAINDER, metavar="run|nki ...", help="run SCRIPT.py [ARGS...] or nki KERNELS.py: above"
    )

    p = sub.add_parser("cache", help="show or clear the parsed-index cache")
    p.add_argument("action", choices=("info", "clear"), nargs="?", default="info", help="default: info")

    p = sub.add_parser("neuron-export", help="convert raw Neuron .pb/.ntff captures with neuron-explorer")
    p.add_argument("path", metavar="DIR")
    p.add_argument("--yes", action="store_true", help="run neuron-explorer without asking")

    p = sub.add_parser("serve", help="serve the terminal UI to a browser on localhost (textual-serve)")
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.add_argument("--port", type=int, default=8000, help="1–65535 (default 8000)")
    p.add_argument(
        "--host", default="localhost", help="address to listen on (default localhost; any other is warned about)"
    )
    return parser


class _VersionAction(argparse.Action):
    """``--version``, read from the package metadata only when asked (importing
    ``importlib.metadata`` costs every other command ~20 ms)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help="show the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
        sys.stdout.write(f"{PROG} {_version()}\n")
        parser.exit()


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("trnscope")
    except Exception:  # pragma: no cover - not installed
        return "0"


def _add_ranks_command(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "ranks",
        help="many ranks: which rank held the others back, in which step, at which collective",
        description=(
            "Reads one trace per rank (a folder of per-rank traces, several files, or a Neuron multi-rank "
            "profile), matches every collective across ranks, and names stragglers. Runs on a local process "
            "pool, or on a Dask cluster with --scheduler / --scheduler-file / DASK_SCHEDULER_ADDRESS "
            "(pip install 'trnscope[dask]')."
        ),
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="a folder of per-rank traces, or the traces themselves")
    _add_format(p, ("text", "json"))
    p.add_argument("--step", type=int, default=None, metavar="K", help="only ProfilerStep#K")
    p.add_argument(
        "--workers", type=int, default=None, metavar="N", help="local processes reading ranks (default: CPU count)"
    )
    where = p.add_mutually_exclusive_group()
    where.add_argument("--scheduler", default="", metavar="ADDRESS", help="a Dask scheduler, e.g. tcp://host:8786")
    where.add_argument(
        "--scheduler-file", default="", metavar="FILE", help="a Dask scheduler file (SLURM and the like)"
    )
    p.add_argument(
        "--skip", action="append", default=[], metavar="CATEGORY", help="drop a category at load, e.g. --skip python"
    )
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the parsed-index cache")
    _add_op_tree(p)
    p.add_argument(
        "--warmup", type=int, default=0, metavar="N", help="leave out the first N NeuronCore executions of each kernel"
    )


# options whose value may start with "-" (a time before the trace start): argparse
# would read "--from -1ms" as two options
_SIGNED_VALUE_OPTIONS = ("--from", "--to")


def _join_signed_values(argv: Sequence[str]) -> list[str]:
    out: list[str] = []
    pending = False
    for arg in argv:
        if pending and arg.startswith("-") and (arg[1:2].isdigit() or arg[1:2] == "."):
            out[-1] = f"{out[-1]}={arg}"
        else:
            out.append(arg)
        pending = arg in _SIGNED_VALUE_OPTIONS
    return out


def parse_command_line(argv: Sequence[str]) -> argparse.Namespace:
    """The parsed arguments (argparse exits, status 2, on a usage error; 0 for --help)."""
    return build_parser().parse_args(_join_signed_values(argv))


# commands that read one trace, whole
_ONE_PATH = ("summary", "chain", "diagnose", "timeline")
VARIANTS_READ_AHEAD = 3  # compare and open take two or three variants


def traces_read_whole(args: argparse.Namespace) -> list[str]:
    """The paths a command reads whole, each as one trace when it is a trace file:
    ``summary`` (without ``--merge``), ``chain``, ``diagnose``, ``timeline``, and the
    variants of ``compare`` and ``open`` (up to three).  Folders and sessions are
    decided later; ``ranks`` and ``--merge`` read in worker processes."""
    if args.command in _ONE_PATH and not getattr(args, "merge", False):
        return [str(args.path)]
    if args.command in ("open", "compare") and len(args.paths) <= VARIANTS_READ_AHEAD:
        return [str(path) for path in args.paths]
    return []
