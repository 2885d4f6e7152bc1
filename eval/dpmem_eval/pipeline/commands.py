"""`dpmem-eval run | audit | judge | report`: the benchmark pipeline's subcommands.

    dpmem-eval run --preset smoke|cpu|paper [--models M1,M2] [--out DIR] [--config FILE]
    dpmem-eval audit  --out DIR [--encoder minilm|mpnet|PATH]     rerun the auditors
    dpmem-eval judge  --out DIR [--judge proxy|local:MODEL|openai:URL#MODEL]
    dpmem-eval report --out DIR                                    rebuild tables and plots

Configuration precedence: command line > --config TOML ([run] table) > preset.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any


class UserError(Exception):
    """A bad input: printed as one line, exit status 2."""


def handle_preflight(args: argparse.Namespace) -> int:
    args.dry_run = True
    return handle_run(args)


def _preflight(config, dry_run: bool) -> int | None:
    """Exit status 2 with one line per missing artefact; 0 after a clean dry run; None: go on."""
    from dpmem_eval.pipeline.preflight import cautions, check
    from dpmem_eval.readers import one_line

    for line in cautions(config):
        print(f"dpmem-eval: warning: {line}", file=sys.stderr)
    problems = check(config)
    for line in problems:  # the error form of every other bad input; a name may hold a newline
        print(f"dpmem-eval: error: missing {one_line(line)}", file=sys.stderr)
    if problems:
        return 2
    if dry_run:
        print(f"preflight: every artefact of preset {config.preset} (backend {config.backend}) is present", file=sys.stderr)
        return 0
    return None


# --- helpers -------------------------------------------------------------------------------


def _fail(message: str) -> int:
    from dpmem_eval.readers import one_line

    print(f"dpmem-eval: error: {one_line(message)}", file=sys.stderr)
    return 2


def _input_errors() -> tuple[type[BaseException], ...]:
    """Errors that mean a bad input (a file, an argument, a configuration value): one line, exit 2."""
    from dpmem_eval.data.export import DataError
    from dpmem_eval.pipeline.cache import CacheError
    from dpmem_eval.pipeline.config import ConfigError
    from dpmem_eval.pipeline.models import ModelNotFound
    from dpmem_eval.readers import InputFileError

    return (UserError, ConfigError, ModelNotFound, InputFileError, DataError, CacheError, FileNotFoundError, OSError)


def seed_everything(seed: int, torch_too: bool) -> None:
    import random

    import numpy as np

    random.seed(seed)
    np.random.seed(seed)
    if torch_too:
        import torch

        torch.manual_seed(seed)


def _cache_root(config_cache: str | None) -> Path:
    from dpmem_eval.pipeline.models import default_cache_dir

    return Path(config_cache) if config_cache else default_cache_dir()


def _overrides(args: argparse.Namespace, names: tuple[str, ...]) -> dict[str, Any]:
    return {n: getattr(args, n) for n in names if getattr(args, n, None) is not None}


def make_judge(spec: str, encoder, config, cache) -> Any:
    from dpmem_eval.pipeline.generation import CachedGenerator, DecodingConfig, make_backend
    from dpmem_eval.pipeline.judge import GeneratorJudge, OpenAIChatBackend, ProxyJudge

    if spec == "proxy":
        return ProxyJudge(encoder)
    decoding = DecodingConfig(max_new_tokens=256, temperature=0.0, seed=config.seed)
    if spec.startswith("local:"):
        from dpmem_eval.pipeline.generation import backend_options

        backend = make_backend(config.backend if config.backend != "echo" else "hf", spec[len("local:"):],
                               batch_size=config.batch_size, cache_dir=config.cache_dir, **backend_options(config))
    else:
        url, _, model = spec[len("openai:"):].partition("#")
        backend = OpenAIChatBackend(url, model)
    return GeneratorJudge(CachedGenerator(backend, cache, decoding, batch_size=config.batch_size, progress=config.progress,
                                          token_budget=config.token_budget))


# --- stages --------------------------------------------------------------------------------


def _encoder(encoder_class, config):
    """The auditor encoder, loaded now: a path that is not a sentence-transformers model is a
    bad --encoder (one line), found before anything is written. A missing encoder (an alias
    whose package is not installed, a path without modules.json) is named as such before
    sentence-transformers tries the hub (offline) and prints its own lines."""
    from dpmem_eval.pipeline.models import default_cache_dir
    from dpmem_eval.pipeline.preflight import encoder_missing

    missing = encoder_missing(config.encoder, Path(config.cache_dir) if config.cache_dir else default_cache_dir())
    if missing:
        raise UserError(f"missing {missing}")
    encoder = encoder_class(config.encoder, cache_dir=config.cache_dir)
    try:
        encoder.encode(["probe"])
    except (ValueError, OSError) as exc:
        if isinstance(exc, _input_errors()):
            raise
        raise UserError(f"--encoder {config.encoder}: not a usable sentence-transformers model ({type(exc).__name__})") from None
    return encoder


def stage_audit(out: Path, config, timings: dict[str, float], inputs: dict[str, Any] | None = None) -> dict[str, Any]:
    from dpmem_eval.data.scaffold import ATTRIBUTES
    from dpmem_eval.pipeline.auditor import Encoder
    from dpmem_eval.pipeline.readers import read_model_transcripts, read_run_transcripts
    from dpmem_eval.pipeline.runner import audit_model
    from dpmem_eval.readers import write_atomic

    inputs = inputs or {"transcripts": read_model_transcripts(out, config), "score": read_run_transcripts(out, config, "score-channel.jsonl")}
    start = time.perf_counter()
    encoder = _encoder(Encoder, config)
    results = {}
    for model in config.models:
        rows = inputs["transcripts"][model] + inputs["score"]
        results[model] = audit_model(rows, encoder, config, ATTRIBUTES)
    write_atomic(out / "audit.json", json.dumps({"encoder": config.encoder, "results": results}, indent=1, default=float))
    timings["audit_s"] = round(time.perf_counter() - start, 2)
    timings["encoder_load_s"] = round(encoder.load_seconds, 2)
    return results


def stage_judge(out: Path, config, pairs_by_id: dict[str, Any], timings: dict[str, float],
                inputs: dict[str, Any] | None = None) -> tuple[dict[str, Any], str]:
    from dpmem_eval.pipeline.auditor import Encoder
    from dpmem_eval.pipeline.cache import ResponseCache
    from dpmem_eval.pipeline.readers import check_pair_ids, read_model_transcripts
    from dpmem_eval.pipeline.runner import judge_model
    from dpmem_eval.readers import write_atomic

    transcripts = (inputs or {}).get("transcripts") or read_model_transcripts(out, config)
    check_pair_ids(transcripts, pairs_by_id)
    start = time.perf_counter()
    encoder = _encoder(Encoder, config)
    cache = ResponseCache(_cache_root(config.cache_dir) / "responses.sqlite")
    judge = make_judge(config.judge, encoder, config, cache)
    results = {}
    for model in config.models:
        results[model] = judge_model(transcripts[model], pairs_by_id, judge)
    label = judge.label
    judge.close()  # a local judge model leaves the GPU before the next stage
    write_atomic(out / "judge.json", json.dumps({"judge": label, "results": results}, indent=1, default=float))
    timings["judge_s"] = round(time.perf_counter() - start, 2)
    cache.close()
    return results, label


def stage_report(out: Path, config, timings: dict[str, float], inputs: dict[str, Any] | None = None) -> list[str]:
    from dpmem_eval.pipeline import methods as M
    from dpmem_eval.pipeline import tables
    from dpmem_eval.pipeline.readers import read_audit, read_judge, read_run_transcripts

    inputs = inputs or {}
    start = time.perf_counter()
    audit = (inputs.get("audit") or read_audit(out, config.models))["results"]
    judge_data = inputs.get("judge") or read_judge(out, config.models)
    judge, label = judge_data["results"], judge_data["judge"]
    traces = inputs.get("traces") or read_run_transcripts(out, config, "traces.jsonl")
    cfg = config.as_dict()
    grid = M.budget_grid(config.caps, config.ks)
    tables.table2(out, cfg, audit, judge, label)
    tables.table3(out, cfg, audit, judge, label, grid)
    tables.table4(out, cfg, audit, judge, label, tables.charge_bounds(traces))
    written = tables.plots(out, cfg, audit, judge, grid)
    timings["report_s"] = round(time.perf_counter() - start, 2)
    return written


def _pairs_by_id(config) -> dict[str, Any]:
    from dpmem_eval.pipeline.runner import load_pairs

    return {p.pair_id: p for p in load_pairs(config)}


# --- handlers ------------------------------------------------------------------------------


def handle_run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except Exception as exc:  # one line, no traceback, for the errors a user can fix
        if isinstance(exc, _input_errors()) or _is_data_error(exc):
            return _fail(str(exc))
        raise


def _is_data_error(exc: BaseException) -> bool:
    """The data package's input errors (e.g. a missing corpus file) are user errors too."""
    return type(exc).__name__ in ("CorpusError", "DataError")


def _run(args: argparse.Namespace) -> int:
    from dpmem_eval.pipeline.arguments import ENGINE_FIELDS
    from dpmem_eval.pipeline.config import resolve
    from dpmem_eval.pipeline.provenance import git_commit, run_json
    from dpmem_eval.pipeline.summary import generation_line
    from dpmem_eval.pipeline.summary import note as _note
    from dpmem_eval.pipeline.summary import stage as _stage

    names = ("methods", "models", "backend", "encoder", "judge", "horizon", "seeds", "caps", "ks", "max_new_tokens", "batch_size",
             "history_turns", "train_pairs", "validation_pairs", "test_pairs", "transfer_pairs", "data_dir",
             "corpora_dir", "pairwise", "cache_dir", "seed", "progress", *ENGINE_FIELDS)
    from dpmem_eval.pipeline.readers import check_config, check_selection
    from dpmem_eval.readers import write_atomic

    config = check_config(resolve(args.preset, args.config, _overrides(args, names)))
    status = _preflight(config, bool(getattr(args, "dry_run", False)))
    if status is not None:
        return status
    out = Path(args.out or f"runs/{config.preset}")  # results/ holds committed runs: never a default
    total_start = time.perf_counter()
    timings: dict[str, float] = {}
    git = git_commit()  # the code the run starts with
    seed_everything(config.seed, torch_too=config.backend in ("hf", "vllm"))

    from dpmem_eval.pipeline import methods as M
    from dpmem_eval.pipeline.batching import close_backend
    from dpmem_eval.pipeline.cache import ResponseCache
    from dpmem_eval.pipeline.generation import CachedGenerator, DecodingConfig, backend_options, make_backend
    from dpmem_eval.pipeline.runner import (
        build_transcripts,
        generate_transcripts,
        load_pairs,
        model_slug,
        write_transcripts,
    )

    start = time.perf_counter()
    pairs, corpora = load_pairs(config, with_origin=True)
    check_selection(pairs, config)
    timings["data_s"] = round(time.perf_counter() - start, 2)
    # Every input is checked before the first write: a refused cache leaves --out as it was.
    cache = ResponseCache(_cache_root(config.cache_dir) / "responses.sqlite")
    out.mkdir(parents=True, exist_ok=True)
    # The first header only now: a bad input above is reported as its one line, nothing else.
    _stage(1, f"data: PairedMem and the transfer track ({timings['data_s']:.1f} s)")
    origin = {"excerpt": "the corpus excerpt shipped with dpmem-eval (full corpora not given: --corpora DIR or "
              "DPMEM_CORPORA)", "full": "the public corpora"}.get(corpora or "")
    if config.data_dir:
        origin = f"the dataset in {config.data_dir}"
    _note(f"{len(pairs)} pairs; transfer track from {origin or 'nothing (no transfer pairs asked for)'}")
    policy = M.load_public_policy()
    methods = M.all_methods(config.caps, config.ks)
    if config.methods is not None:
        methods = tuple(m for m in methods if m.key in config.methods)
    start = time.perf_counter()
    _stage(2, f"kernel: conditioning of {len(methods)} interfaces (DP-MemView variants through Algorithm 1)")
    templates = build_transcripts(config, pairs, methods, policy)
    timings["kernel_s"] = round(time.perf_counter() - start, 2)
    write_transcripts(out / "traces.jsonl", "kernel", [t for t in templates if t.method in {m.key for m in methods if m.kind == "dp"}])
    write_transcripts(out / "score-channel.jsonl", "kernel", [t for t in templates if t.method == M.SCORE_CHANNEL.key])
    generating = {m.key for m in methods if m.generates}
    decoding = DecodingConfig(max_new_tokens=config.max_new_tokens, temperature=config.temperature, seed=config.seed)
    postprocess = {"output_filter": M.output_filter(policy)}
    generation_stats = {}
    _stage(3, f"generation: {', '.join(config.models)} ({config.backend}), {config.horizon} turns per transcript")
    for model in config.models:
        start = time.perf_counter()
        backend = make_backend(config.backend, model, batch_size=config.batch_size, cache_dir=config.cache_dir,
                               **backend_options(config))
        generator = CachedGenerator(backend, cache, decoding, batch_size=config.batch_size, progress=config.progress,
                                    token_budget=config.token_budget)
        transcripts = [_fresh(t) for t in templates if t.method in generating]
        try:
            generate_transcripts(transcripts, generator, config, postprocess)
        finally:
            close_backend(backend)  # one model resident at a time
        write_transcripts(out / f"transcripts-{model_slug(model)}.jsonl", model, transcripts)
        stats = generator.stats.as_dict()
        stats["wall_s"] = round(time.perf_counter() - start, 2)
        stats["engine"] = backend.resolved() if hasattr(backend, "resolved") else {}
        generation_stats[model] = stats
        _note(generation_line(model, stats))
    if config.pairwise:  # after every response model is unloaded: one engine resident at a time
        from dpmem_eval.pipeline.runner import pairwise_stage

        pairwise_stage(out, config, cache, timings)
    cache.close()
    timings["generation_s"] = round(sum(s["wall_s"] for s in generation_stats.values()), 2)
    _stage(4, f"audit: embedding auditor ({config.encoder}) per method and prefix length")
    audit = stage_audit(out, config, timings)
    _stage(5, f"judge: utility ({config.judge})")
    _, label = stage_judge(out, config, {p.pair_id: p for p in pairs}, timings)
    run_info = run_json(config, pairs, generation_stats, timings, label, git, corpora,
                        getattr(args, "argv", None))
    write_atomic(out / "run.json", json.dumps(run_info, indent=1, default=str))
    _stage(6, "report: Tables 2-4 and plots")
    plots = stage_report(out, config, timings)
    timings["total_s"] = round(time.perf_counter() - total_start, 2)
    run_info = run_json(config, pairs, generation_stats, timings, label, git, corpora,
                        getattr(args, "argv", None))
    run_info["plots"] = plots
    write_atomic(out / "run.json", json.dumps(run_info, indent=1, default=str))
    print(f"wrote {out}/table2.md, table3.md, table4.md, plots/, run.json in {timings['total_s']:.0f}s", file=sys.stderr)
    from dpmem_eval.pipeline.summary import summary_text
    from dpmem_eval.pipeline.tables import charge_bounds

    traces = [t.to_json("kernel") for t in templates if t.method in {m.key for m in methods if m.kind == "dp"}]
    n_test = sum(1 for p in pairs if p.track != "transfer" and p.split == "test")
    print(summary_text(out, config, audit, charge_bounds(traces), len(traces), label, n_test, corpora), file=sys.stderr)
    return 0


def _fresh(template):
    from dataclasses import replace

    return replace(template, responses=[])
