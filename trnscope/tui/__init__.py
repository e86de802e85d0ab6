"""The terminal explorer (Textual).

Textual reads its frame-rate cap (``TEXTUAL_FPS``, default 60) once, when it is first
imported, and paints a screen from a timer at that rate.  After the timer has idled, its
next tick comes one to two periods after the last one (it rounds the missed ticks up and
then waits for the tick after that), so at 60 a press whose result comes from a worker
thread — a filter keystroke, a sort, a cursor move's detail — waited 17–33 ms for the
frame that shows it, after the work was done.  At 120 that wait is 8–17 ms: measured with
``bench/tui_latency.py`` at 2.9 M events (two runs each, alternating), p95 of a filter
keystroke 58–60 → 45–48 ms, of a cursor move 44–48 → 31–34 ms.  Frames are still only
painted when something changed, so an idle screen sends nothing.  A user's own
``TEXTUAL_FPS`` wins; an embedder that imported Textual first keeps its own rate."""

from __future__ import annotations

import os
import sys

if "textual" not in sys.modules:
    os.environ.setdefault("TEXTUAL_FPS", "120")
