"""What the bad-input tests share (test_bad_input.py, test_bad_input_cache_args.py): a marker
in every memory text, the refusal check (exit 2, one line, no traceback, no marker, the
watched directory unchanged), the marked pairs, and the arguments of a smoke run on echo."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from dpmem_eval.cli import main
from dpmem_eval.data.export import write_jsonl

MARK = "SECRETMARK-eval-7f3a"


def snapshot(directory: Path) -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "special"
            for p in sorted(directory.rglob("*")) if not p.is_symlink() or p.exists()}


def refused(capsys: pytest.CaptureFixture[str], argv: list[str], watch: Path, *expected: str) -> str:
    before = snapshot(watch)
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1, err
    assert "Traceback" not in err and MARK not in err, err
    for part in expected:
        assert part in err, err
    assert snapshot(watch) == before, "a refused input changed the directory"
    return err


def marked_pairs() -> list:
    """One selected PairedMem pair per attribute and split (train/validation/test), with a
    marker in every memory text and tag, so any echo of store contents is caught."""
    from dataclasses import replace

    from dpmem_eval.data.pairedmem import build_pairedmem
    from dpmem_eval.data.records import MemoryItem

    chosen, seen = [], {}
    for pair in build_pairedmem(0):
        key = (pair.attribute, pair.split)
        if pair.selected and seen.get(key, 0) < 1:
            seen[key] = seen.get(key, 0) + 1
            marked = tuple(MemoryItem((*i.tags, MARK), f"{MARK} {i.text}", i.source) for i in pair.store_m)
            chosen.append(replace(pair, store_m=marked))
    return chosen


def write_data(tmp_path: Path, pairs: list) -> Path:
    directory = tmp_path / "data"
    write_jsonl(pairs, directory)
    return directory


def run_args(data: Path, tmp_path: Path, *extra: str) -> list[str]:
    return ["run", "--preset", "smoke", "--backend", "echo", "--no-progress", "--data-dir", str(data),
            "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "new-out"), *extra]
