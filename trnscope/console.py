"""The ``trnscope`` console script (and ``python -m trnscope``): Ctrl+C, SIGTERM and
SIGHUP are held from its first line, before anything else is imported, until
``trnscope.cli.run`` has its handlers in place and lets them through.

Held from ``run`` only, a Ctrl+C in the first ~40 ms landed inside an import (the CLI
package's, ``typing``'s) and printed a traceback; a SIGTERM there ended the process
without a word.  Now either arrives as a moment later: one line, status 130 or 143.
Only the interpreter's own start (``site``) comes before this; nothing of ours does.
"""

import sys

try:
    import signal
except KeyboardInterrupt:  # Ctrl+C while ``signal`` builds its enums (a few ms): nothing has started
    sys.stderr.write("trnscope: interrupted\n")
    raise SystemExit(130) from None


def main() -> None:
    # the endings as ``core.base.signals.ENDINGS`` names them, written out here so that
    # nothing is imported before they are held (a test keeps the two the same)
    endings = {signal.SIGINT, signal.SIGTERM, *([signal.SIGHUP] if hasattr(signal, "SIGHUP") else [])}
    mask_at_start = signal.pthread_sigmask(signal.SIG_BLOCK, endings) if hasattr(signal, "pthread_sigmask") else None

    from trnscope.cli import run

    run(mask_at_start)
