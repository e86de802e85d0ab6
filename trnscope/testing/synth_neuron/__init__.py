"""SYNTHETIC Trainium profiles, written from the documented formats, with ground truth.

No public TorchNeuron profile exists and no Trainium hardware was available, so the
Neuron readers are tested on profiles generated here.  Every field name, unit and
layout follows ``shared/reference/neuron-profile-formats.md``; where the reference says
a detail is unknown (exact PrivateUse1 event names, how TorchNeuron links trace.json
to the runtime), the choice made here is marked ``# synthetic choice`` and the reader
does not depend on it beyond what the reference documents.

Every generated folder holds ``SYNTHETIC.txt``; the framework trace carries
``"trnscope_synthetic"`` in its metadata; the session manifest says ``synthetic``.

One process-session folder (``<instance>_pid_<pid>/<timestamp>/``) holds:

* ``trace.json`` — Kineto framework trace: ``cpu_op`` with ``Sequence number``,
  ``privateuse1_runtime`` dispatch and ``privateuse1_driver`` submit events;
* ``framework_mapping_<YYYYMMDD_HHMMSS_mmm>.json`` — nrta_seq_id → seq_nr/th_id/stream_id;
* ``ntrace.pb``, ``trace_info.pb``, ``profile_nc_0_session_0.ntff``, ``neff_*.neff`` —
  placeholder bytes (the real ones have no published schema);
* ``neuron_explorer_json/`` — legacy JSON export: ``system_profile.json`` and one
  ``device_profile_model_<id>.json`` per compiled model;
* ``neuron_explorer_parquet/`` — Parquet export (schema 7.4.0 names): ``system/``
  (SystemProfileEvents, SystemProfileMetadata, DeviceProfileList) and one device
  profile folder (Instruction, DmaPacket, DmaPacketAggregated, Summary, Metadata).

The package, by job: ``model`` (constants, options, ground truth, workloads),
``session`` (one process-session's events), ``device`` (device profiles), ``exports``
(system profile JSON, every Parquet table), ``layouts`` (whole capture folders).
"""

from __future__ import annotations

from trnscope.testing.synth_neuron.layouts import (
    LAYOUTS,
    SAMPLE_OPTIONS,
    write_exports_for,
    write_layout,
    write_multi_rank,
    write_process_session,
    write_raw_only,
    write_synthetic_session,
)
from trnscope.testing.synth_neuron.model import (
    BASE_TIME_NS,
    DEVICE_CLOCK_OFFSET,
    INSTANCE,
    SYNTHETIC_NOTE,
    ExecTruth,
    NeuronTruth,
    OpTruth,
    SynthOptions,
    device_ns,
)

__all__ = [
    "BASE_TIME_NS",
    "DEVICE_CLOCK_OFFSET",
    "INSTANCE",
    "LAYOUTS",
    "SAMPLE_OPTIONS",
    "SYNTHETIC_NOTE",
    "ExecTruth",
    "NeuronTruth",
    "OpTruth",
    "SynthOptions",
    "device_ns",
    "write_exports_for",
    "write_layout",
    "write_multi_rank",
    "write_process_session",
    "write_raw_only",
    "write_synthetic_session",
]
