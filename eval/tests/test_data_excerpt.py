"""The transfer track without external corpora, from the excerpt shipped in the
package (dpmem_eval/data/corpus_excerpt/); the full corpora are used whenever they are given."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest

from dpmem_eval.data import corpus_files as C
from dpmem_eval.data.corpus_files import EXCERPT_DIR, LICENCE_FILES, MARKER, is_excerpt


@pytest.fixture
def no_corpora(monkeypatch, tmp_path):
    """Nothing given and nothing beside the repository: a user's fresh clone."""
    monkeypatch.delenv("DPMEM_CORPORA", raising=False)
    monkeypatch.setattr(C, "DEFAULT_CORPORA", tmp_path / "no-sibling")


def _full() -> Path | None:
    """The full corpora when this machine has them (DPMEM_CORPORA or the sibling folder)."""
    for candidate in (Path(os.environ.get("DPMEM_CORPORA") or C.DEFAULT_CORPORA), C.DEFAULT_CORPORA):
        if (candidate / C.LOCOMO).is_file() and not is_excerpt(candidate):
            return candidate
    return None


def test_without_corpora_the_excerpt_is_used_and_says_so(no_corpora):
    assert C.resolve_corpora(None) == EXCERPT_DIR
    assert C.corpora_origin(EXCERPT_DIR) == "excerpt"


def test_given_corpora_win_over_the_excerpt(no_corpora, monkeypatch, tmp_path):
    assert C.resolve_corpora(str(tmp_path / "mine")) == tmp_path / "mine"
    monkeypatch.setenv("DPMEM_CORPORA", str(tmp_path / "env"))
    assert C.resolve_corpora(None) == tmp_path / "env"


def test_excerpt_carries_its_licences_and_sources():
    assert (EXCERPT_DIR / MARKER).is_file()
    for relative in LICENCE_FILES:
        assert (EXCERPT_DIR / relative).stat().st_size > 1000, relative
    for folder in ("locomo", "empathetic_dialogues", "medical_qa/chatdoctor_genmedgpt5k"):
        source = (EXCERPT_DIR / folder / "SOURCE").read_text()
        assert len(source.split()[1]) == 40, folder  # the upstream commit
    total = sum(p.stat().st_size for p in EXCERPT_DIR.rglob("*") if p.is_file())
    assert total < 300_000  # a small excerpt, not the corpora


def test_transfer_track_from_the_excerpt_validates(no_corpora):
    from dpmem_eval.data import build_dataset

    dataset = build_dataset(0)
    assert len(dataset.transfer) == 80 and [p.pair_id for p in dataset.transfer if p.validation] == []
    assert dict(dataset.transfer_stats)["corpora"] == "excerpt"
    sources = {i.source.split(":")[0] for p in dataset.transfer for i in p.store_m}
    assert {"locomo10", "ed-hypemo", "chatdoctor5k"} <= sources


@pytest.mark.skipif(_full() is None, reason="the full public corpora are not available here")
def test_excerpt_gives_the_same_transfer_pairs_as_the_full_corpora():
    from dpmem_eval.data.pairedmem import build_pairedmem
    from dpmem_eval.data.transfer import build_transfer

    pairedmem = build_pairedmem(0)
    full, full_stats = build_transfer(pairedmem, _full(), 0)
    mine, mine_stats = build_transfer(pairedmem, EXCERPT_DIR, 0)
    assert mine == full
    assert mine_stats["evidence_pool_sizes"] == full_stats["evidence_pool_sizes"]
    assert (full_stats["corpora"], mine_stats["corpora"]) == ("full", "excerpt")


def test_data_build_without_corpora_prints_the_excerpt_line(no_corpora, tmp_path, capsys):
    from dpmem_eval.cli.data import add_data_parser

    parser = argparse.ArgumentParser(prog="dpmem-eval")
    add_data_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["data", "build", "--out", str(tmp_path / "data")])
    assert args.handler(args) == 0
    out = capsys.readouterr().out
    assert "corpus excerpt shipped with dpmem-eval" in out
    assert '"corpora": "excerpt"' in (tmp_path / "data" / "datacard.json").read_text()
