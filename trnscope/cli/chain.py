"""``trnscope chain``: the drill-down chain of one op instance, headless."""

from __future__ import annotations

import argparse
import sys

from trnscope.cli.sources import open_sources
from trnscope.cli.textout import write_json
from trnscope.cli.width import output_width
from trnscope.core.analysis.chain import chain_for
from trnscope.core.analysis.chain_text import render_chain_text
from trnscope.core.analysis.contracts import chain_document
from trnscope.core.opening.sources import Mode


def cmd_chain(args: argparse.Namespace) -> int:
    opened = open_sources(args, [args.path], Mode.ONE)
    analysis = opened.analyses[0]
    chain = chain_for(analysis, args.op, args.instance)
    if args.format == "json":
        write_json(chain_document(chain))
    else:
        sys.stdout.write(render_chain_text(chain, output_width()))
    sys.stdout.flush()
    opened.finish()
    return 0
