"""The ``trnscope`` command line: argument parsing and the text/CSV/JSON presenters."""

from trnscope.cli.main import main

__all__ = ["main"]
