"""Whether Python frames are nodes of PyTorch's op tree: the one rule, by PyTorch release.

``key_averages()`` reads a tree of host events (``EventList._populate_cpu_children``):
an event's Self CPU is its duration less its direct children's.  Whether the
``python_function`` frames that ``with_stack=True`` records are nodes of that tree
changed between releases, and a Kineto trace does not say which release wrote it:

* **classic** — up to PyTorch 2.11 (seen with 2.11.0+cu130 on an H200, CPU and CUDA
  activities alike): Python frames never reach ``key_averages()``.  They are neither
  rows nor nodes, so a ``record_function`` range's Self CPU is its time outside the ops
  it encloses, the Python between them included.
* **python** — from PyTorch 2.12 (pytorch PR 178168, March 2026, passes Python frames
  to ``events()``; seen with 2.13.0+cpu): Python frames are nodes of the tree and rows
  of ``key_averages()``, so that range's Self CPU is only what no frame or op covers.
  From 2.14 (PR 188631) ``key_averages()`` leaves the frames' rows out by default but
  keeps them in the tree; the op table shows them as rows either way (``p`` hides
  them).  2.12 is placed by the PR's date; only 2.11 and 2.13 were run here.

``auto`` takes the release from a capture's ``session.json`` and is **classic** where
none is known: the rule of every release before 2026, and the one under which Self CPU
says how long the host spent between ops.  Either can be asked for (``--op-tree``).
"""

from __future__ import annotations

import re

AUTO = "auto"
CLASSIC = "classic"
PYTHON = "python"
CHOICES = (AUTO, CLASSIC, PYTHON)

FIRST_RELEASE_WITH_FRAMES = (2, 12)

_RELEASE = re.compile(r"\s*(\d+)\.(\d+)")


def resolve(requested: str, torch_version: str = "") -> str:
    """``classic`` or ``python`` for ``requested`` (one of ``CHOICES``), where ``auto``
    reads ``torch_version`` (``"2.13.0+cpu"``; empty or unreadable: classic)."""
    if requested in (CLASSIC, PYTHON):
        return requested
    if requested != AUTO:
        raise ValueError(f"unknown op-tree rule {requested!r}: choose {', '.join(CHOICES)}")
    release = _RELEASE.match(torch_version or "")
    if release is None:
        return CLASSIC
    major, minor = int(release.group(1)), int(release.group(2))
    return PYTHON if (major, minor) >= FIRST_RELEASE_WITH_FRAMES else CLASSIC


def describe(rule: str) -> str:
    """One line for the op table's notes: what the rule does to Self CPU."""
    if rule == PYTHON:
        return "Python frames are nodes of the op tree (PyTorch 2.12+): Self CPU leaves out time inside them"
    return "Python frames are outside the op tree (PyTorch up to 2.11): Self CPU counts the Python between ops"
