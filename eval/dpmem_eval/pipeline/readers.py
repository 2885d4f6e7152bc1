"""Typed readers of the files the pipeline stages read back from a results directory.

    run.json                       -> RunFile (the run's RunConfig, timings, the rest kept as is)
    audit.json, judge.json         -> checked result trees (the shape `tables` reads)
    transcripts-*.jsonl, traces.jsonl, score-channel.jsonl (or their .gz siblings)
                                   -> checked transcript rows

Each reader checks every field it or a later stage uses and raises `InputFileError` (one line,
the file and the field, never a value: transcripts carry conditioning built from memory text).
The generic rules (bounded reads, regular files only, strict UTF-8 and JSON) are in
`dpmem_eval.readers`; the PairedMem data files are read by `dpmem_eval.data.export.read_pairs`.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from dpmem_eval.pipeline.config import (
    EM_SEED_MAX,
    FIELDS,
    PRESETS,
    ConfigError,
    Flag,
    Integer,
    Integers,
    Names,
    Number,
    RunConfig,
)
from dpmem_eval.readers import InputFileError, Record, display, iter_jsonl, jsonl_source, read_json

SIDES = ("M", "M'")
TRANSCRIPT_SPLITS = ("train", "validation", "test", "transfer")


@dataclass(frozen=True)
class RunFile:
    data: dict[str, Any]
    config: Any  # RunConfig


def _config_field(row: Record, name: str) -> Any:
    """One RunConfig field of run.json, its JSON type checked (by the field's parser in
    config.FIELDS) before the table reads it."""
    parse = FIELDS[name].parse
    if isinstance(parse, Integers):
        return row.ints(name)
    if isinstance(parse, Names):
        return None if parse.unset is not None and row.raw(name) is None else row.strs(name)
    if isinstance(parse, Integer):
        return row.integer(name, nullable=parse.unset is not None)
    if isinstance(parse, Flag):
        return row.flag(name)
    if isinstance(parse, Number):
        return row.number(name)
    return row.text(name, nullable=not parse.required)


def read_run(out: Path) -> RunFile:
    """run.json of a results directory: its config as a validated RunConfig."""
    path = out / "run.json"
    if not os.path.lexists(path):
        raise InputFileError(f"--out {display(out)}", f"no run.json; run `dpmem-eval run --out {display(out)}` first")
    where = display(path)
    run = Record(read_json(path), where)
    config_row = run.obj("config")
    assert config_row is not None
    preset = config_row.text("preset")
    if preset not in PRESETS:
        raise config_row.fail("preset", f"expected one of {', '.join(sorted(PRESETS))}")
    values = {name: _config_field(config_row, name) for name in FIELDS if name in config_row.data}
    config_row.done()
    try:
        config = replace(PRESETS[preset], **values).validate()
    except ConfigError as exc:
        raise InputFileError(where, f"config.{exc}") from None
    timings = run.obj("timings", optional=True)
    if timings is not None:
        for key in list(timings.data):
            timings.number(key)
    if "judge" in run.data:
        run.text("judge")
    return RunFile(run.data, config)


def _metric_tree(node: Record, depth: int, leaf: Any) -> None:
    """A nesting of objects `depth` levels deep whose leaves `leaf` checks."""
    for key in list(node.data):
        child = node.obj(key)
        assert child is not None
        if depth > 1:
            _metric_tree(child, depth - 1, leaf)
        else:
            leaf(child)


def _audit_method(entry: Record) -> None:
    by_prefix = entry.obj("by_prefix")
    for key in list(by_prefix.data) if by_prefix else []:
        assert by_prefix is not None
        for row in by_prefix.records(key):
            row.integer("prefix", 1, 10**6)
            row.number("auc", allow_nan=True)
            row.number("tpr5", allow_nan=True)
    ci = entry.obj("ci")
    for key in list(ci.data) if ci else []:
        assert ci is not None
        track = ci.obj(key)
        assert track is not None
        for metric in ("auc", "tpr5"):
            bounds = track.array(metric, optional=True)
            if bounds is None:
                continue
            if len(bounds) != 2 or any(isinstance(b, bool) or not isinstance(b, (int, float)) or math.isinf(b) for b in bounds):
                raise track.fail(metric, "expected [low, high] numbers")
    entry.flag("identical_sides")


def _models_present(results: Record, models: tuple[str, ...] | None) -> None:
    for model in models or ():
        if model not in results.data:
            raise results.fail(model, "missing (a model of the run); rerun the stage that writes this file")


def _read_results(out: Path, name: str, label: str, models: tuple[str, ...] | None, leaf: Any) -> dict[str, Any]:
    """{label: str, "results": {model: {method: leaf}}}, every model of the run present."""
    path = out / name
    data = Record(read_json(path, nonfinite=True), display(path))
    data.text(label)
    results = data.obj("results")
    assert results is not None
    _models_present(results, models)
    _metric_tree(results, 2, leaf)
    return data.data


def read_audit(out: Path, models: tuple[str, ...] | None = None) -> dict[str, Any]:
    """audit.json: {"encoder": str, "results": {model: {method: {by_prefix, ci, ...}}}}."""
    return _read_results(out, "audit.json", "encoder", models, _audit_method)


def _judge_track(entry: Record) -> None:
    for key in list(entry.data):
        track = entry.obj(key)
        assert track is not None
        for metric in ("U", "tRec", "Unsup"):
            track.number(metric, allow_nan=True)


def read_judge(out: Path, models: tuple[str, ...] | None = None) -> dict[str, Any]:
    """judge.json: {"judge": str, "results": {model: {method: {track: {U, tRec, Unsup}}}}}."""
    return _read_results(out, "judge.json", "judge", models, _judge_track)


def _transcript(row: Record) -> dict[str, Any]:
    row.text("model")
    row.text("method")
    row.text("pair_id")
    row.text("attribute")
    if row.text("split") not in TRANSCRIPT_SPLITS:
        raise row.fail("split", f"expected one of {', '.join(TRANSCRIPT_SPLITS)}")
    if row.text("side") not in SIDES:
        raise row.fail("side", "expected M or M'")
    row.integer("seed", 0, EM_SEED_MAX)
    turns = len(row.strs("queries"))
    for name in ("kind", "conditioning", "controls"):
        found = len(row.array(name))
        if found != turns and not (name == "controls" and found == 0):  # generated transcripts keep no controls
            raise row.fail(name, f"expected {turns} entries (one per query), found {found}")
    row.strs("kind")
    for i, lines in enumerate(row.data["conditioning"]):
        if not isinstance(lines, list) or not all(isinstance(x, str) for x in lines):
            raise row.fail(f"conditioning[{i}]", "expected an array of strings")
    responses = row.strs("responses")
    if responses and len(responses) != turns:
        raise row.fail("responses", f"expected none or {turns} (one per query), found {len(responses)}")
    row.number("ledger_target", allow_inf=True)  # inf: a non-EM selection (CappedArgmax) has no finite bound
    row.number("reconstructed_target", allow_inf=True)
    return row.data


def _exposed_score(value: Any) -> bool:
    """What the top-score control writes per slot: its top score, or None where the slot
    fell back and nothing was scored (`TopScoreControl`, runner.audit_model reads it so)."""
    if value is None:
        return True
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)


def read_transcripts(path: Path, *, horizon: int | None = None, numeric_controls: bool = False) -> list[dict[str, Any]]:
    """Rows of a transcript file (or its .gz sibling), each checked; `horizon`: the run's T."""
    source = jsonl_source(path)
    if not os.path.lexists(source):
        raise InputFileError(display(path), "missing (rerun `dpmem-eval run` for this results directory)")
    rows = []
    for where, value in iter_jsonl(path, gzip_sibling=True, nonfinite=True):
        row = _transcript(Record(value, where))
        if horizon is not None and len(row["queries"]) != horizon:
            raise InputFileError(where, f"queries: expected {horizon} turns (the run's horizon), found {len(row['queries'])}")
        if numeric_controls:  # the top-score control: one slot per turn, null where it fell back
            for i, control in enumerate(row["controls"]):
                if not isinstance(control, list) or len(control) != 1 or not _exposed_score(control[0]):
                    raise InputFileError(
                        where, f"controls[{i}]: expected one finite number (the exposed top score), or null on a fallback turn"
                    )
        rows.append(row)
    return rows


# --- a results directory's inputs, checked before a stage writes anything ------------------


def check_selection(pairs: list[Any], config: RunConfig) -> None:
    """The auditor needs train, validation and test pairs: an empty selection is refused, not
    turned into empty tables."""
    where = f"--data-dir {config.data_dir}" if config.data_dir else "the built dataset"
    for split in ("train", "validation", "test"):
        if not any(p.track != "transfer" and p.split == split for p in pairs):
            raise InputFileError(where, f"no selected {split} pairs in pairs.jsonl (the auditor needs train, validation and test)")


def read_run_transcripts(out: Path, config: RunConfig, name: str) -> list[dict[str, Any]]:
    """A transcript file's checked rows; an empty file is refused when the run's methods
    should have written rows to it (an empty file would otherwise give empty tables)."""
    from dpmem_eval.pipeline import methods as M

    rows = read_transcripts(out / name, horizon=config.horizon, numeric_controls=name == "score-channel.jsonl")
    methods = [m for m in M.all_methods(config.caps, config.ks) if config.methods is None or m.key in config.methods]
    expected = {"traces.jsonl": any(m.kind == "dp" for m in methods),
                "score-channel.jsonl": any(m.key == M.SCORE_CHANNEL.key for m in methods)}.get(
                    name, any(m.generates for m in methods))
    if expected and not rows:
        raise InputFileError(display(out / name), "no transcripts (the run's methods write some here); rerun `dpmem-eval run`")
    return rows


def read_model_transcripts(out: Path, config: RunConfig) -> dict[str, list[dict[str, Any]]]:
    from dpmem_eval.pipeline.runner import model_slug

    return {model: read_run_transcripts(out, config, f"transcripts-{model_slug(model)}.jsonl") for model in config.models}


def check_pair_ids(transcripts: dict[str, list[dict[str, Any]]], pairs_by_id: dict[str, Any]) -> None:
    for model, rows in transcripts.items():
        if any(row["pair_id"] not in pairs_by_id for row in rows):
            raise InputFileError(f"transcripts of {model}", "a pair_id is not in the dataset (rerun with the run's --data-dir)")


def read_stage_inputs(out: Path, config: RunConfig, stage: str) -> dict[str, Any]:
    """Everything the stage and the report read, checked before anything is written."""
    inputs: dict[str, Any] = {"traces": read_run_transcripts(out, config, "traces.jsonl")}
    if stage in ("audit", "judge"):
        inputs["transcripts"] = read_model_transcripts(out, config)
    if stage == "audit":
        inputs["score"] = read_run_transcripts(out, config, "score-channel.jsonl")
    else:
        inputs["audit"] = read_audit(out, config.models)
    if stage != "judge":
        inputs["judge"] = read_judge(out, config.models)
    return inputs
