"""``trnscope chain``: the drill-down chain of one op instance, headless."""

from __future__ import annotations

import argparse
import sys

from trnscope.cli.sources import open_sources
from trnscope.cli.textout import write_json
from trnscope.cli.width import output_width
from trnscope.core.analysis.chain import chain_for, top_op
from trnscope.core.analysis.chain_text import render_chain_text
from trnscope.core.analysis.contracts import chain_document
from trnscope.core.base.errors import TrnscopeError
from trnscope.core.base.text import safe_text, wrap_words
from trnscope.core.opening.sources import Mode


def cmd_chain(args: argparse.Namespace) -> int:
    opened = open_sources(args, [args.path], Mode.ONE)
    analysis = opened.analyses[0]
    op = args.op
    if op is None:
        top = top_op(analysis)
        if top is None:
            raise TrnscopeError("no op or device event in this trace to follow (`trnscope summary` lists what it has)")
        op, why = top
        said = f"chain of {safe_text(op)}: {why} (--op NAME follows another)"
        sys.stderr.write("\n".join(wrap_words(said, output_width(), "", cut_long_words=True)) + "\n")
    chain = chain_for(analysis, op, args.instance)
    if args.format == "json":
        write_json(chain_document(chain))
    else:
        sys.stdout.write(render_chain_text(chain, output_width(), context=args.context))
    sys.stdout.flush()
    opened.finish()
    return 0
