"""Command palette: the current screen's actions, and a search over op names."""

from __future__ import annotations

from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider

from trnscope.core.analysis.analysis import Analysis

ACTIONS = [
    ("Sort by next column", "sort(1)"),
    ("Reverse sort", "reverse"),
    ("Group by op / input shape / stack", "group"),
    ("Switch op table / kernel table", "toggle_mode"),
    ("Hide or show python_function rows", "toggle_python"),
    ("Hide or show annotations", "toggle_annotations"),
    ("Next ProfilerStep", "step(1)"),
    ("Previous ProfilerStep", "step(-1)"),
    ("Filter ops by name", "filter"),
    ("Pick a variant / rank", "variant"),
    ("Compare variants", "compare"),
]


class TrnscopeCommands(Provider):
    async def discover(self) -> Hits:
        screen = self.screen
        for title, action in ACTIONS:
            name = action.split("(")[0]
            if hasattr(screen, f"action_{name}"):
                yield DiscoveryHit(title, partial(screen.run_action, action), help=f"action {name}")

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        screen = self.screen
        for title, action in ACTIONS:
            name = action.split("(")[0]
            if hasattr(screen, f"action_{name}"):
                score = matcher.match(title)
                if score > 0:
                    yield Hit(score, matcher.highlight(title), partial(screen.run_action, action))
        analysis = _analysis_of(screen)
        if analysis is None:
            return
        table = analysis.op_table()
        seen: set[str] = set()
        for group, name in enumerate(table.name):
            if name in seen or table.is_device[group]:
                continue
            seen.add(name)
            title = f"Drill into {name}"
            score = matcher.match(title)
            if score > 0:
                yield Hit(
                    score,
                    matcher.highlight(title),
                    partial(self._open, group),
                    help=f"{int(table.calls[group]):,} calls",
                )

    def _open(self, group: int) -> None:
        from trnscope.tui.screen_drill import DrillScreen

        analysis = _analysis_of(self.screen)
        if analysis is not None:
            self.app.push_screen(DrillScreen(analysis, analysis.op_table(), group))


def _analysis_of(screen: object) -> Analysis | None:
    """The analysis a screen shows (op table, drill-down), if it shows one."""
    analysis = getattr(screen, "analysis", None)
    return analysis if isinstance(analysis, Analysis) else None
