"""Profile an unmodified script: ``trnscope capture run SCRIPT.py [ARGS...]``.

The script runs in this process through ``runpy``.  Each optimizer step (a global
``torch.optim`` step hook) — or each ``capture.mark_step()`` call, for scripts
without an optimizer — advances the profiler schedule: ``warmup`` steps run
unprofiled, one more warms the profiler up, then ``steps`` steps are recorded.
"""

from __future__ import annotations

import contextlib
import runpy
import sys
import time
from pathlib import Path
from typing import Any

from trnscope.capture.device import plan_device, profiler_kwargs, synchronize
from trnscope.capture.kineto_markers import QuietSteps
from trnscope.capture.recorder import NEFF_CACHE_DIR, CaptureOptions, new_manifest
from trnscope.capture.reference import reference_rows
from trnscope.capture.workspace import one_line, partial_session, slug_label
from trnscope.core.base import settings
from trnscope.core.base.errors import Terminated, TrnscopeError
from trnscope.core.model.session import VariantRecord

_active: dict[str, Any] = {}


def mark_step() -> None:
    """Advance the profiler schedule by one step (for scripts without an optimizer)."""
    stepper = _active.get("step")
    if stepper is not None:
        stepper()


class _StopScript(Exception):
    """Raised inside the script once the profiled window is complete."""


def run_script(  # noqa: C901 - the script runs inside one profiler context whose hooks and restores must stay together
    script: Path,
    argv: list[str],
    *,
    out: Path,
    options: CaptureOptions,
    stop_when_done: bool = True,
    whose: str = "",
) -> Path:
    """``whose``: "rank 1 of 2: " under a launcher, so that each rank's line says whose it is."""
    from torch.profiler import profile, schedule

    if not script.is_file():
        raise TrnscopeError(f"no such script: {script}")
    label = slug_label(script.stem)
    plan = plan_device(options.device)
    with partial_session(out) as workspace:
        manifest = new_manifest(plan, notes=f"script {script.name} {' '.join(argv)}".strip())
        trace = workspace.temp / (label if plan.kind == "neuron" else f"{label}.pt.trace.json.gz")
        if plan.kind == "neuron":
            trace.mkdir()
        kwargs, _ = profiler_kwargs(
            plan,
            trace if plan.kind == "neuron" else workspace.temp,
            options.neuron,
            neff_cache_dir=trace / NEFF_CACHE_DIR if plan.kind == "neuron" else None,
        )
        needed = options.warmup + 1 + options.steps
        counter = {"steps": 0}
        started = time.perf_counter()
        try:
            prof = profile(
                schedule=schedule(wait=options.warmup, warmup=1, active=options.steps, repeat=1),
                record_shapes=options.record_shapes,
                with_stack=options.with_stack,
                profile_memory=options.profile_memory,
                with_flops=options.with_flops,
                **kwargs,
            )

            profiler_step = QuietSteps(prof.step, wait=options.warmup, active=options.steps)

            def step(*_: Any) -> None:
                synchronize(plan)
                profiler_step()
                counter["steps"] += 1
                if stop_when_done and counter["steps"] >= needed:
                    raise _StopScript()

            from torch.optim.optimizer import register_optimizer_step_post_hook

            primary: dict[str, Any] = {}

            def on_optimizer_step(optimizer: Any, *_: Any) -> None:
                # Global post-hooks run inside "Optimizer.step#…", so stepping the profiler
                # there would bill its own work to the optimizer.  On the first step, wrap
                # the optimizer's bound step so later steps advance the schedule after the
                # range closes; only the first optimizer seen drives the schedule.
                if primary:
                    return
                original = optimizer.step

                def stepped(*args: Any, **kwargs: Any) -> Any:
                    result = original(*args, **kwargs)
                    step()
                    return result

                primary["optimizer"] = optimizer
                optimizer.step = stepped
                step()

            handle = register_optimizer_step_post_hook(on_optimizer_step)
            _active["step"] = step
            saved_argv, saved_path = sys.argv, list(sys.path)
            sys.argv = [str(script), *argv]
            sys.path.insert(0, str(script.parent.resolve()))
            try:
                with prof:
                    try:
                        runpy.run_path(str(script), run_name="__main__")
                    except _StopScript:
                        sys.stderr.write(
                            f"trnscope: {whose}stopped {script.name} after {counter['steps']} steps: the profiled window "
                            "is recorded (the rest of the script does not run)\n"
                        )
                    except SystemExit as exit_:
                        if exit_.code not in (None, 0):
                            raise TrnscopeError(f"{script.name} exited with status {exit_.code}") from None
            finally:
                profiler_step.write_back()  # (the script may end before the trace stops)
                handle.remove()
                if "optimizer" in primary:
                    with contextlib.suppress(AttributeError):
                        del primary["optimizer"].step
                _active.clear()
                sys.argv, sys.path[:] = saved_argv, saved_path
            if counter["steps"] < needed:
                raise TrnscopeError(
                    f"{script.name} made {counter['steps']} optimizer steps; {needed} are needed "
                    f"({options.warmup} warm-up + 1 + {options.steps} profiled): lower --warmup/--steps, "
                    "or call capture.mark_step() once per iteration"
                )
            if plan.kind != "neuron":
                prof.export_chrome_trace(str(trace))
            record = VariantRecord(
                label=label,
                description=f"{script} {' '.join(argv)}".strip(),
                trace=trace.name,
                trace_format="neuron" if plan.kind == "neuron" else "kineto",
                warmup=options.warmup,
                steps=options.steps,
                wall_ms=round((time.perf_counter() - started) * 1000.0, 3),
                reference=reference_rows(prof),
                reference_grouped_by_shape=reference_rows(prof, group_by_input_shape=True)
                if options.record_shapes
                else [],
            )
            manifest.variants.append(record)
            return workspace.commit(manifest)
        except TrnscopeError:
            workspace.abort()
            raise
        except BaseException as failure:
            workspace.abort()
            if isinstance(failure, (KeyboardInterrupt, Terminated)):
                raise
            if settings.debug():
                raise
            raise TrnscopeError(f"{script.name} raised {one_line(failure)}") from None
