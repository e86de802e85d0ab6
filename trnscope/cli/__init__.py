"""The ``trnscope`` command line: argument parsing and the text/CSV/JSON presenters."""

from trnscope.cli.main import main, run

__all__ = ["main", "run"]
