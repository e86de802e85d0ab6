"""Row names that tell rows apart.

``key_averages()`` keys a row by its name, whether it ran on the host or the device,
and whether it is a user annotation: a ``record_function`` range and its GPU-side twin
(``user_annotation`` / ``gpu_user_annotation``) are two rows, printed by PyTorch under
one name.  Here such rows carry their kind after the name, so that two different rows
never look the same; a name no other row of the table shares is shown as it is.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence


def _kind_label(kind: str) -> str:
    """A row kind (``optable.KIND_NAMES``) as words: "device annotation"; a memory row
    (``gpu_memcpy`` / ``gpu_memset``) is a "copy"."""
    return "copy" if kind == "memory" else kind.replace("_", " ")


def distinct_names(keys: Sequence[tuple[str, ...]], kinds: Sequence[str]) -> list[str]:
    """Per row, its name (``keys[i][0]``), followed by its kind in brackets where
    another row has the same key (name, and the shapes or stack it is grouped by).

    A name may itself end like a label ("step (annotation)", from a hostile or unlucky
    file): a row whose plain name meets another row's label gets its kind too, and any
    rows still alike after that are numbered, so no two rows are ever shown alike."""
    shared = {key for key, count in Counter(keys).items() if count > 1}
    if not shared:
        return [key[0] for key in keys]
    labels = [f"{key[0]} ({_kind_label(kind)})" if key in shared else key[0] for key, kind in zip(keys, kinds)]
    shown = [(label, *key[1:]) for label, key in zip(labels, keys)]
    alike = {row for row, count in Counter(shown).items() if count > 1}
    if not alike:
        return labels
    for i, (key, kind) in enumerate(zip(keys, kinds)):
        if key not in shared and shown[i] in alike:
            labels[i] = f"{key[0]} ({_kind_label(kind)})"
    shown = [(label, *key[1:]) for label, key in zip(labels, keys)]
    seen: Counter[tuple[str, ...]] = Counter()
    repeated = {row for row, count in Counter(shown).items() if count > 1}
    for i, row in enumerate(shown):
        if row in repeated:
            seen[row] += 1
            labels[i] = f"{labels[i]} #{seen[row]}"
    return labels
