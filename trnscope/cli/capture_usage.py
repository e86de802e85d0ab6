"""What ``trnscope capture --help`` and ``capture run --help`` print: its three forms
and what each does (kept here, in the CLI, where the parser reads it too)."""

CAPTURE_USAGE = """\
usage: trnscope capture --demo NAME --out DIR [--steps N] [--warmup W]
                        [--device KIND] [--size PRESET] [--memory]
       trnscope capture run SCRIPT.py [ARGS...] --out DIR [--steps N]
                        [--warmup W] [--device KIND] [--memory]
       trnscope capture nki KERNELS.py --out DIR [--warmup W] [--iterations N]

run: profiles your unmodified training script.  A step is an optimizer.step()
     (hooked for you) or a call to trnscope.capture.mark_step() in a loop
     without an optimizer; after W warm-up steps, N steps are profiled, then the
     script is stopped (said on stderr) and the trace is written into the
     session folder DIR.  Under torchrun or mpirun each rank writes DIR/rank<N>:
       torchrun --nproc-per-node 2 -m trnscope capture run train.py --out DIR
     then trnscope ranks DIR.
nki: benchmarks each (name, compiled kernel, inputs) of KERNELS.py's variants()
     in the Neuron runtime's trace session and saves its events JSON (trnscope
     compare DIR).
"""
