"""Bad input to `dpmem-eval`: one line naming the file and field, exit 2, no traceback, no memory
text in the message, and the output directory left as it was.

One or more cases per class, for every file the pipeline reads: data files (pairs, stores,
trajectories, gold, splits, datacard), results files (run.json, audit.json, judge.json,
transcripts and their .gz siblings), the response cache, --config, and arguments. Each class
is tested broadly by parametrization: truncated, random bytes, wrong JSON types, missing and
extra fields, empty, a directory / FIFO / device in its place, non-UTF-8 bytes, huge numbers,
NaN/Infinity, a corrupt gzip sibling. Everything here is refused before any model loads."""

from __future__ import annotations

import gzip
import json
import os
import random
from pathlib import Path

import pytest
from bad_input_support import MARK, marked_pairs, refused, run_args, write_data

from dpmem_eval.cli import main

# --- fixtures ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pairs():
    return marked_pairs()


@pytest.fixture
def data(tmp_path, pairs) -> Path:
    return write_data(tmp_path, pairs)


def transcript_row(**change) -> dict:
    row = {"model": "smollm2", "method": "dp_on", "pair_id": "pm-debt-000", "attribute": "debt", "split": "test",
           "side": "M", "seed": 0, "queries": ["q1", "q2"], "kind": ["views", "views"],
           "conditioning": [[f"{MARK} line"], ["line"]], "responses": ["r1", "r2"], "ledger_target": 0.0,
           "reconstructed_target": 0.0, "controls": []}
    row.update(change)
    return row


@pytest.fixture
def results(tmp_path) -> Path:
    """A results directory whose files are all well formed (the stage reads them in order)."""
    from dpmem_eval.pipeline.config import PRESETS

    out = tmp_path / "out"
    out.mkdir()
    config = PRESETS["smoke"].as_dict() | {"backend": "echo", "cache_dir": str(tmp_path / "cache")}
    (out / "run.json").write_text(json.dumps({"config": config, "timings": {"data_s": 0.1}, "judge": "proxy"}))
    for name in ("traces.jsonl", "transcripts-smollm2.jsonl"):
        (out / name).write_text(json.dumps(transcript_row()) + "\n")
    # A fallback turn exposes no top score: the control is [null] (what the cpu preset writes).
    (out / "score-channel.jsonl").write_text(json.dumps(transcript_row(method="score_channel", controls=[[1.0], [None]])) + "\n")
    (out / "audit.json").write_text(json.dumps({"encoder": "minilm", "results": {"smollm2": {"dp_on": {
        "by_prefix": {"test": [{"prefix": 1, "auc": 0.5, "tpr5": 0.0}]}, "ci": {"test": {"auc": [0.4, 0.6]}},
        "identical_sides": False}}}}))
    (out / "judge.json").write_text(json.dumps({"judge": "proxy", "results": {"smollm2": {"dp_on": {
        "pairedmem": {"U": 0.5, "tRec": 0.5, "Unsup": 0.5, "n_pairs": 1}}}}}))
    return out


# --- file-level damage: every file, every class --------------------------------------------

DAMAGE = {
    "empty": lambda p: p.write_bytes(b""),
    "truncated": lambda p: p.write_bytes(p.read_bytes()[: max(1, len(p.read_bytes()) // 2)]),
    "random bytes": lambda p: p.write_bytes(random.Random(0).randbytes(2048)),
    "non-UTF-8": lambda p: p.write_bytes(b'{"version": "\xff\xfe"}\n'),
    "directory": lambda p: (p.unlink(), p.mkdir()),
    "FIFO": lambda p: (p.unlink(), os.mkfifo(p)),
    "/dev/zero": lambda p: (p.unlink(), p.symlink_to("/dev/zero")),
    "missing": lambda p: p.unlink(),
    "NaN": lambda p: p.write_bytes(b'{"a": NaN}\n'),
    "Infinity": lambda p: p.write_bytes(b'{"a": -Infinity}\n'),
    "huge integer": lambda p: p.write_bytes(b'{"a": ' + b"9" * 5000 + b"}\n"),
    "deep nesting": lambda p: p.write_bytes(b"[" * 50000 + b"]" * 50000 + b"\n"),
    "top-level array": lambda p: p.write_bytes(b"[1, 2]\n"),
}
# Special files are refused before reading (a FIFO with a writer would block, /dev/zero never
# ends): the message says what the path is.
SPECIAL = {"directory": "is a directory", "FIFO": "is a FIFO", "/dev/zero": "not a regular file"}
RESULT_FILES = [("run.json", "report"), ("traces.jsonl", "report"), ("audit.json", "report"), ("judge.json", "report"),
                ("transcripts-smollm2.jsonl", "audit"), ("score-channel.jsonl", "audit"),
                ("transcripts-smollm2.jsonl", "judge")]
DATA_FILES = ["pairs.jsonl", "stores.jsonl", "trajectories.jsonl", "gold.jsonl", "splits.jsonl"]


@pytest.mark.parametrize("damage", sorted(DAMAGE))
@pytest.mark.parametrize(("name", "stage"), RESULT_FILES)
def test_damaged_results_file_is_refused(capsys, results, name, stage, damage):
    # NaN/Infinity: refused by the JSON reader in run.json; in audit/judge/transcripts (which the
    # pipeline writes with NaN for an undefined metric and inf for a missing bound) the constant
    # parses and the record is refused for its shape.
    if damage == "missing" and name == "score-channel.jsonl":
        pytest.skip("covered by the transcripts case")  # same reader, same message
    DAMAGE[damage](results / name)
    refused(capsys, [stage, "--out", str(results), "--no-progress"], results.parent, name, SPECIAL.get(damage, ""))


@pytest.mark.parametrize("damage", sorted(DAMAGE))
@pytest.mark.parametrize("name", DATA_FILES)
def test_damaged_data_file_is_refused_before_any_write(capsys, tmp_path, data, name, damage):
    DAMAGE[damage](data / name)
    refused(capsys, run_args(data, tmp_path), tmp_path, name, SPECIAL.get(damage, ""))
    assert not (tmp_path / "new-out").exists()


@pytest.mark.parametrize("damage", ["corrupt", "truncated"])
def test_corrupt_gzip_sibling_is_refused(capsys, results, damage):
    plain = results / "traces.jsonl"
    packed = gzip.compress(plain.read_bytes())
    plain.unlink()
    (results / "traces.jsonl.gz").write_bytes(b"\x1f\x8b garbage" if damage == "corrupt" else packed[:-12])
    refused(capsys, ["report", "--out", str(results), "--no-progress"], results.parent, "traces.jsonl.gz")


# --- wrong types, missing and extra fields, never quoting the value ------------------------


def _rewrite_first(path: Path, change) -> None:
    lines = path.read_text().splitlines()
    row = json.loads(lines[0])
    change(row)
    path.write_text("\n".join([json.dumps(row), *lines[1:]]) + "\n")


def _set(*keys, value):
    def change(row):
        target = row
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value
    return change


def _delete(*keys):
    def change(row):
        target = row
        for key in keys[:-1]:
            target = target[key]
        del target[keys[-1]]
    return change


DATA_FIELD_CASES = [
    ("stores.jsonl", _set("M", 0, "text", value=[MARK]), "M[0].text"),
    ("stores.jsonl", _set("M", 0, "tags", value=f"{MARK} as text"), "M[0].tags"),
    ("stores.jsonl", _set("M", 3, value=f"{MARK} memory"), "M[3]"),
    ("stores.jsonl", _set("M", 3, "extra", value=MARK), "M[3]"),
    ("stores.jsonl", _set("M", value=[]), "M"),
    ("stores.jsonl", _delete("M_prime"), "M_prime"),
    ("stores.jsonl", _set("version", value=MARK), "version"),
    ("pairs.jsonl", _set("attribute", value=MARK), "attribute"),
    ("pairs.jsonl", _set("groups", "debt", value=[0, 99]), "groups.debt"),
    ("pairs.jsonl", _set("template_id", value=10**400), "template_id"),
    ("pairs.jsonl", _set("selected", value="yes"), "selected"),
    ("pairs.jsonl", _set(MARK, value=1), "unexpected field"),
    ("pairs.jsonl", _set("pair_id", value=f"pm-{MARK}\n-1"), "pair_id"),
    ("trajectories.jsonl", _set("queries", 0, "slot", value="garden"), "queries[0].slot"),
    ("trajectories.jsonl", _set("queries", 0, "read_positions", value=[29]), "read_positions"),
    ("trajectories.jsonl", _set("queries", 0, "block", value=1.5), "block"),
    ("gold.jsonl", _set("gold", value={"x": MARK}), "gold"),
    ("splits.jsonl", _set("split", value="holdout"), "split"),
]


@pytest.mark.parametrize(("name", "change", "field"), DATA_FIELD_CASES)
def test_wrong_data_field_names_file_and_field_never_the_value(capsys, tmp_path, data, name, change, field):
    _rewrite_first(data / name, change)
    refused(capsys, run_args(data, tmp_path), tmp_path, name, field)


def test_show_refuses_a_damaged_store_without_memory_text(capsys, data):
    _rewrite_first(data / "stores.jsonl", _set("M", 0, "text", value=[MARK]))
    code = main(["data", "show", "pm-debt-000", "--data", str(data), "--plain"])
    err = capsys.readouterr().err
    assert code == 2 and MARK not in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(("missing_split"), ["train", "validation", "test"])
def test_empty_or_partial_dataset_is_refused_not_turned_into_empty_tables(capsys, tmp_path, data, missing_split):
    for name in DATA_FILES:
        path = data / name
        rows = [line for line in path.read_text().splitlines()]
        splits = {json.loads(x)["pair_id"]: json.loads(x)["split"] for x in (data / "splits.jsonl").read_text().splitlines()}
        path.write_text("".join(r + "\n" for r in rows if splits[json.loads(r)["pair_id"]] != missing_split))
    refused(capsys, run_args(data, tmp_path), tmp_path, missing_split)
    for name in DATA_FILES:
        (data / name).write_text("")
    refused(capsys, run_args(data, tmp_path), tmp_path, "pairs.jsonl", "no pairs")


RESULT_FIELD_CASES = [
    ("run.json", "report", _set("config", "seed", value=-1), "seed"),
    ("run.json", "report", _set("config", "horizon", value="x"), "config.horizon"),
    ("run.json", "report", _set("config", "models", value=5), "config.models"),
    ("run.json", "report", _set("config", "preset", value=MARK), "config.preset"),
    ("run.json", "report", _set("config", MARK, value=1), "unexpected field"),
    ("run.json", "report", _set("config", value=[]), "config"),
    ("run.json", "report", _set("timings", "data_s", value="slow"), "timings.data_s"),
    ("audit.json", "report", _set("results", "smollm2", "dp_on", "by_prefix", "test", 0, "auc", value=MARK), "auc"),
    ("audit.json", "report", _set("results", "smollm2", "dp_on", "ci", "test", "auc", value=[1]), "ci.test"),
    ("audit.json", "report", _delete("encoder"), "encoder"),
    ("audit.json", "report", _delete("results", "smollm2", "dp_on", "by_prefix"), "by_prefix: missing"),
    ("audit.json", "report", _delete("results", "smollm2"), "results.smollm2: missing"),
    ("judge.json", "report", _delete("results", "smollm2", "dp_on", "pairedmem", "tRec"), "tRec: missing"),
    ("judge.json", "report", _set("results", "smollm2", "dp_on", "pairedmem", "U", value=float("inf")), "pairedmem.U"),
    ("judge.json", "report", _set("results", value=[MARK]), "results"),
    ("traces.jsonl", "report", _set("conditioning", value=[[1], [MARK]]), "conditioning"),
    ("traces.jsonl", "report", _set("queries", value=["only one"]), "kind: expected 1 entries"),
    ("traces.jsonl", "report", _set("side", value=MARK), "side"),
    ("traces.jsonl", "report", _set("seed", value=2**70), "seed"),
    ("traces.jsonl", "report", _set("ledger_target", value=float("nan")), "ledger_target"),
    ("transcripts-smollm2.jsonl", "audit", _set("responses", value=[MARK]), "responses"),
    ("score-channel.jsonl", "audit", _set("controls", value=[[MARK], [1.0]]), "controls[0]"),
    ("score-channel.jsonl", "audit", _set("controls", value=[[1.0], [None, None]]), "controls[1]"),
    ("score-channel.jsonl", "audit", _set("controls", value=[[True], [None]]), "controls[0]"),
]


@pytest.mark.parametrize(("name", "stage", "change", "field"), RESULT_FIELD_CASES)
def test_wrong_results_field_names_file_and_field(capsys, results, name, stage, change, field):
    path = results / name
    if name.endswith(".json"):
        value = json.loads(path.read_text())
        change(value)
        path.write_text(json.dumps(value))
    else:
        _rewrite_first(path, change)
    refused(capsys, [stage, "--out", str(results), "--no-progress"], results.parent, name, field)
