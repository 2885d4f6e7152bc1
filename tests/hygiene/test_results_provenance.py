"""Every directory under results/ names its commit and command (results/README.md,
"Provenance"), and the table agrees with the run.json the directory carries."""

from __future__ import annotations

import json
import re
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[2] / "results"


def _rows() -> dict[str, tuple[str, str]]:
    text = (RESULTS / "README.md").read_text()
    section = text.split("## Provenance", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`"):
            rows[cells[0].strip("`").rstrip("/")] = (cells[1], cells[2])
    return rows


def test_every_results_directory_names_its_commit_and_command():
    rows = _rows()
    directories = {str(p.relative_to(RESULTS)) for p in RESULTS.rglob("*") if p.is_dir()}
    assert directories and directories <= set(rows), sorted(directories - set(rows))
    for name, (commit, command) in rows.items():
        assert (RESULTS / name).is_dir(), f"results/README.md lists {name}/, which does not exist"
        assert re.search(r"\b[0-9a-f]{7,40}\b", commit) or commit == "none yet", name
        assert re.search(r"`(dpmem-eval|scripts/)[^`]*`", command), name


def test_table_agrees_with_each_run_json():
    rows = _rows()
    for run_file in RESULTS.rglob("run.json"):
        name = str(run_file.parent.relative_to(RESULTS))
        run = json.loads(run_file.read_text())
        commit = run["git"]["commit"]
        assert commit and commit[:7] in rows[name][0], f"{name}: run.json says {commit}, README says {rows[name][0]}"
        assert run["git"]["dirty"] is False, f"{name} was written from a dirty tree"
        if "command" in run:
            assert run["command"].split()[:3] == rows[name][1].strip("`").split("`")[0].split()[:3], name
