"""The explorer's panes: each registers itself where it is defined.

A pane is a full screen a user moves between (op table, drill-down, compare, timeline,
diagnosis, …).  ``@pane("Title")`` on its class puts it in the one list that drives
the help screen's sections (its bindings' tooltips are the text), the warnings key
(``ExplorerScreen.analyses_shown``), the back key (``ExplorerScreen.action_back``) and
the command palette; a new pane touches nothing else.  Panes never import each other:
they ask the app to show another by posting a message (``trnscope.tui.messages``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

from textual.screen import Screen

S = TypeVar("S", bound=type[Screen[Any]])


class PaneInfo(NamedTuple):
    title: str  # the help screen's section title
    screen: type[Screen[Any]]
    order: int  # where its section comes in the help screen


_PANES: list[PaneInfo] = []


def pane(title: str, order: int) -> Callable[[S], S]:
    """Register a screen class as a pane (a class decorator)."""

    def register(screen: S) -> S:
        if not any(info.screen is screen for info in _PANES):
            _PANES.append(PaneInfo(title, screen, order))
        return screen

    return register


def registered_panes() -> list[PaneInfo]:
    return sorted(_PANES, key=lambda info: info.order)
