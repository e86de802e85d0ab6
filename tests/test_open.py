"""What an open computes before the first table, and what it leaves for later."""

from __future__ import annotations


def test_forward_links_wait_until_after_the_first_table(tmp_path, monkeypatch) -> None:
    """The op table does not need forward → backward links: an open computes them in
    its deferred work (run once the first table is shown), not before."""
    from conftest import SAMPLES
    from trnscope.analysis.open import open_analysis
    from trnscope.load import SourceRef

    monkeypatch.setenv("TRNSCOPE_CACHE_DIR", str(tmp_path))
    path = SAMPLES / "cpu_rmsnorm_session" / "eager.pt.trace.json.gz"
    analysis = open_analysis(SourceRef("eager", str(path)), use_cache=False)
    assert analysis.links.forward_of is None
    assert len(analysis.op_table()) > 0
    analysis.finish()
    assert analysis.links.forward_of is not None
    assert analysis.links.forward_of.shape == (len(analysis.trace.events),)
