"""Generators of SYNTHETIC profiles with known ground truth: the test suite's fixtures,
the benchmark traces and the bundled synthetic Trainium sample.

Nothing in the product imports this package (an import-linter contract checks it); it
ships so that ``python -m trnscope.testing.build_samples`` can rebuild the samples and
so that users can make test traces of any size.  Its API:

* ``synth_kineto.generate(path, target_events, seed=0, **shape) -> GroundTruth`` — a
  Kineto trace with nested ``python_function`` frames, ``cpu_op``s with input shapes,
  runtime calls, kernels, flows and ``[memory]`` instants, plus the exact figures every
  op must show; ``generate_text`` returns the text instead; ``write_trace`` streams it.
* ``synth_neuron.write_synthetic_session(out)`` — a three-variant Trainium capture
  session (eager / compiled / NKI) with framework traces, ``framework_mapping_*.json``
  and Neuron Explorer exports; ``write_process_session``, ``write_multi_rank``,
  ``write_raw_only`` and ``write_exports_for`` make single pieces of one.  Each returns
  a ``NeuronTruth``: the executions, their ops and the device time to expect.

Every file these write says it is synthetic (file names, ``SYNTHETIC.txt``, trace
metadata), and trnscope shows a SYNTHETIC marker for it.
"""
