"""``trnscope capture``: built-in demos and user scripts."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

from trnscope.core.base.errors import TrnscopeError


def _require_torch() -> None:
    if importlib.util.find_spec("torch") is None:
        raise TrnscopeError("capture needs torch: pip install 'trnscope[capture]' (the viewer itself runs without it)")


def _log(message: str) -> None:
    sys.stderr.write(f"capture: {message}\n")
    sys.stderr.flush()


_OWN_OPTIONS = {
    "--out": "out",
    "--steps": "steps",
    "--warmup": "warmup",
    "--device": "device",
    "--demo": "demo",
    "--size": "size",
    "--iterations": "iterations",
}
_OWN_FLAGS = {"--memory": "memory"}


def split_script_arguments(rest: list[str], args: argparse.Namespace) -> list[str]:
    """``run SCRIPT [ARGS...] --steps N --out DIR``: our options may follow the
    script's arguments; anything after a literal ``--`` belongs to the script."""
    kept: list[str] = []
    index = 0
    while index < len(rest):
        item = rest[index]
        if item == "--":
            kept.extend(rest[index + 1 :])
            break
        if item in _OWN_FLAGS:
            setattr(args, _OWN_FLAGS[item], True)
            index += 1
            continue
        name, _, inline = item.partition("=")
        if name in _OWN_OPTIONS and (inline or index + 1 < len(rest)):
            value = inline or rest[index + 1]
            field = _OWN_OPTIONS[name]
            setattr(args, field, int(value) if field in ("steps", "warmup", "iterations") else value)
            index += 1 if inline else 2
            continue
        kept.append(item)
        index += 1
    return kept


def _capture_nki(rest: list[str], args: argparse.Namespace) -> int:
    from trnscope.capture.nki_benchmark import load_variants, record

    if len(rest) != 1:
        raise TrnscopeError("usage: trnscope capture nki KERNELS.py --out DIR [--warmup W] [--iterations N]")
    variants = load_variants(Path(rest[0]))
    warmup = 3 if args.warmup is None else max(0, args.warmup)
    iterations = max(1, getattr(args, "iterations", None) or 50)
    written = record(variants, Path(args.out), warmup=warmup, iterations=iterations, log=_log)
    _log(f"{len(written)} benchmark events files in {args.out}: trnscope compare {args.out}")
    return 0


def cmd_capture(args: argparse.Namespace, usage: str = "") -> int:  # noqa: C901 - one branch per capture form (demo, run, nki, help); each is a call
    rest = list(args.rest or [])
    if rest and rest[0] == "--":
        rest = rest[1:]
    if any(item in ("-h", "--help") for item in rest[:2]) and "--" not in rest[:2]:
        print(usage, end="")
        return 0
    try:
        rest = split_script_arguments(rest, args)
    except ValueError as error:
        raise TrnscopeError(f"bad capture option: {error}") from None
    if args.demo == "list":
        from trnscope.capture.demos import SIZES

        for name in SIZES:
            print(name)
        return 0
    if not args.out:
        raise TrnscopeError("capture needs --out DIR (the session folder to create)")
    from trnscope.capture.launcher import launcher_rank, rank_folder
    from trnscope.capture.workspace import check_output_folder

    if rest and rest[0] == "nki":  # NKI kernel benchmarks: no torch needed
        check_output_folder(Path(args.out))  # before any work: a refusal should come first
        return _capture_nki(rest[1:], args)
    # one rank of a job (torchrun, mpirun): every rank has the same --out, so each
    # writes its own session folder in it
    rank = launcher_rank()
    out = rank_folder(Path(args.out), rank)
    check_output_folder(out)  # before any work: a refusal should come first
    whose = "" if rank is None else f"rank {rank.rank} of {rank.world_size}: "
    _require_torch()
    from trnscope.capture.recorder import CaptureOptions

    options = CaptureOptions(device=args.device, profile_memory=bool(getattr(args, "memory", False)))
    if args.steps is not None:
        options.steps = max(1, args.steps)
    if args.warmup is not None:
        options.warmup = max(0, args.warmup)
    if rest and rest[0] == "run":
        if len(rest) < 2:
            raise TrnscopeError("usage: trnscope capture run SCRIPT.py [ARGS...] --out DIR")
        from trnscope.capture.runscript import run_script

        try:
            session = run_script(Path(rest[1]), rest[2:], out=out, options=options, whose=whose)
        except TrnscopeError as failure:  # each rank's error line says whose it is
            raise TrnscopeError(f"{whose}{failure}") from None
        _log(f"{whose}session written to {session}")
        if rank is not None and rank.rank == 0:
            _log(f"once every rank is done: trnscope ranks {args.out}")
        return 0
    if rest:
        raise TrnscopeError(f"unexpected arguments: {' '.join(rest)}")
    if not args.demo:
        raise TrnscopeError("capture needs --demo NAME, 'run SCRIPT.py' or 'nki KERNELS.py' (capture --help)")
    from trnscope.capture.demos import build_demo
    from trnscope.capture.device import plan_device
    from trnscope.capture.recorder import compare

    plan = plan_device(options.device)
    demo = build_demo(args.demo, plan.device, args.size or "small")
    options.region = demo.region
    options.rtol, options.atol = demo.rtol, demo.atol
    _log(f"{demo.name} on {plan.kind} ({plan.name}): {', '.join(demo.variants)}")
    session = compare(
        demo.variants,
        demo.inputs,
        out=out,
        options=options,
        descriptions=demo.descriptions,
        demo=demo.name,
        plan=plan,
        log=_log,
    )
    _log(f"{whose}session written to {session}")
    return 0
