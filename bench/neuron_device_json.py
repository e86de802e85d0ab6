"""Read a large SYNTHETIC Neuron device-profile JSON (explorer ≤2.30 shape): time and
peak memory.  Real files reach 600 MB–1.7 GB per core (neuron-evidence.md §3).

    python bench/neuron_device_json.py [instructions]   # default 1,000,000
"""

from __future__ import annotations

import resource
import sys
import tempfile
import time
from pathlib import Path

ENGINE_ROWS = ("pe", "act", "dve", "pool", "sp")


def write(path: Path, count: int) -> None:
    with open(path, "w") as out:
        out.write('{"summary": [{"total_time": 0.048}], "metadata": [], "instruction": [')
        for i in range(count):
            if i:
                out.write(",")
            out.write(
                f'{{"timestamp": {i * 40}, "duration": 35, "label": "{ENGINE_ROWS[i % 5]}", "subgroup": "x", '
                f'"opcode": "MATMUL", "operands": "src=SB[{i % 4096}] dst=PSUM[{i % 8}]", '
                f'"hlo_name": "%dot.{i % 97}", "nki_source_location": "", "pcore_idx": {i % 2}}}'
            )
        out.write('], "dma": [], "cc_ops": []}')


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    from trnscope.core.formats.neuron.device import read_device_json

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "i-0synthetic_pid_1_nc_0_session_0.json"
        write(path, count)
        size = path.stat().st_size
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        started = time.perf_counter()
        profile = read_device_json(path)
        seconds = time.perf_counter() - started
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert len(profile.instructions) == count
    print(
        f"{count:,} instructions, {size / 1e6:.0f} MB JSON: read in {seconds:.2f} s "
        f"({size / 1e6 / seconds:.0f} MB/s); peak RSS {peak * 1024 / 1e6:.0f} MB (was {before * 1024 / 1e6:.0f} MB before)"
    )


if __name__ == "__main__":
    main()
