"""Command palette: the current screen's actions, and a search over op names."""

from __future__ import annotations

from functools import partial

from textual.binding import Binding
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.screen import Screen

from trnscope.core.analysis.analysis import Analysis
from trnscope.tui.messages import ShowDrill
from trnscope.tui.screen_base import ExplorerScreen


def _screen_actions(screen: Screen[object]) -> list[tuple[str, str, str]]:
    """(title, action, key) for the screen's own bindings: the palette lists what the
    keys do, in the words of the bindings' tooltips (the help screen's text too)."""
    out = []
    for binding in screen.BINDINGS:
        if not isinstance(binding, Binding) or binding.action.startswith("app."):
            continue
        name = binding.action.split("(")[0]
        if hasattr(screen, f"action_{name}") and name not in ("back", "dismiss"):
            title = (binding.tooltip or binding.description).capitalize()
            out.append((title, binding.action, binding.key_display or binding.key.split(",")[0]))
    return out


class TrnscopeCommands(Provider):
    async def discover(self) -> Hits:
        screen = self.screen
        for title, action, key in _screen_actions(screen):
            yield DiscoveryHit(title, partial(screen.run_action, action), help=f"key {key}")

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        screen = self.screen
        for title, action, key in _screen_actions(screen):
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), partial(screen.run_action, action), help=f"key {key}")
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
        analysis = _analysis_of(self.screen)
        if analysis is not None:
            self.screen.post_message(ShowDrill(analysis, analysis.op_table(), group))


def _analysis_of(screen: object) -> Analysis | None:
    """The (first) analysis a pane shows, if it shows one."""
    shown = screen.analyses_shown() if isinstance(screen, ExplorerScreen) else []
    return shown[0] if shown else None
