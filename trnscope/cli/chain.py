"""``trnscope chain``: the drill-down chain of one op instance, headless."""

from __future__ import annotations

import argparse
import sys

import msgspec

from trnscope.cli.sources import open_sources
from trnscope.core.analysis.chain import chain_for, render_chain_text
from trnscope.core.opening.sources import Mode


class _ChainOut(msgspec.Struct):
    op: str
    instance: int
    instances: int
    hops: list[dict]  # type: ignore[type-arg]
    gaps: dict  # type: ignore[type-arg]
    notes: list[str]


def cmd_chain(args: argparse.Namespace) -> int:
    opened = open_sources(args, [args.path], Mode.ONE)
    analysis = opened.analyses[0]
    chain = chain_for(analysis, args.op, args.instance)
    if args.format == "json":
        hops = [
            {
                "layer": h.layer,
                "name": h.name,
                "start_us": h.start_us,
                "dur_us": h.dur_us,
                "thread_or_stream": h.thread_or_stream,
                "details": h.details,
                "kind": h.kind,
                "depth": h.depth,
            }
            for h in chain.hops
        ]
        out = _ChainOut(chain.op, chain.instance, chain.instances, hops, msgspec.to_builtins(chain.gaps), chain.notes)
        sys.stdout.write(msgspec.json.format(msgspec.json.encode(out), indent=2).decode() + "\n")
    else:
        sys.stdout.write(render_chain_text(chain))
    sys.stdout.flush()
    opened.finish()
    return 0
