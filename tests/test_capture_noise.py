"""Noisy captures are said: capture notes a variant whose steps vary more than 2×
(with the machine's load and torch's thread count), and compare notes a difference that
lies within the variants' own step-to-step spread."""

from __future__ import annotations

from pathlib import Path

from trnscope.capture.recorder import noise_notes
from trnscope.core.analysis.analysis import Analysis
from trnscope.core.analysis.compare import step_noise_notes
from trnscope.core.formats import discover, load_source
from trnscope.core.formats.options import NO_CACHE
from trnscope.core.model.session import SessionManifest, VariantRecord

SAMPLES = Path(__file__).resolve().parent.parent / "sample_traces"


def test_capture_says_when_steps_vary_more_than_twice() -> None:
    manifest = SessionManifest(
        cpu_count=2,
        load_average=[1.5, 1.0, 0.5],
        variants=[
            VariantRecord("steady", step_ms=[10.0, 10.5, 11.0], torch_threads=2),
            VariantRecord("noisy", step_ms=[1.1, 7.2, 4.4], torch_threads=1),
        ],
    )
    notes = noise_notes(manifest)
    assert len(notes) == 1 and notes[0].startswith("noisy: steps took 1.10–7.20 ms (6.5×)")
    assert "load 1.5, 1.0, 0.5 on 2 cores" in notes[0] and "1 thread competed" in notes[0]


def test_compare_says_a_difference_within_the_step_spread_may_be_noise() -> None:
    ref = discover(SAMPLES / "cpu_rmsnorm_session")
    analyses = [Analysis(load_source(s, NO_CACHE)) for s in ref.sources]
    labels = [s.label for s in ref.sources]
    notes = step_noise_notes(analyses, labels)
    # the bundled CPU sample was captured on a busy 2-core VM: its fused variant's steps
    # spread over more than the difference to eager
    assert any(n.startswith("fused's median step") and "may be noise" in n for n in notes)
    same = step_noise_notes([analyses[0], analyses[0]], ["a", "a again"])
    assert same and "×1.00" in same[0]
