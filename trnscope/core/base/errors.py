"""Errors a user can meet, each with a one-line message meant to be printed as is."""

from __future__ import annotations

import signal


class TrnscopeError(Exception):
    """A problem with the user's input or environment (not a bug in trnscope).

    The CLI prints ``str(error)`` on one line and exits with status 2; the TUI shows it
    on its error screen.
    """

    exit_code = 2

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.split()))


class InputError(TrnscopeError):
    """The file or directory given cannot be read as a profile."""


class LoadCancelled(TrnscopeError):
    """The user cancelled a load in progress."""

    def __init__(self) -> None:
        super().__init__("load cancelled")


class Terminated(BaseException):
    """SIGTERM arrived, or SIGHUP (the terminal went away: an SSH connection dropped):
    raised where the program is (the CLI's handler), so every ``finally`` and cleanup
    runs; like KeyboardInterrupt, never caught as a failure."""

    def __init__(self, signum: int = 15) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum

    @property
    def reason(self) -> str:
        """What ended the command, as its one line says it."""
        return "hung up" if self.signum == getattr(signal, "SIGHUP", None) else "terminated"
