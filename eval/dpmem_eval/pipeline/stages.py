"""The stages of `dpmem-eval run`, in order: data, kernel, generation (and the pairwise
auditor), audit, judge, report; and the rerun of one stage from an earlier run's saved
results (`dpmem-eval audit | judge | report --out DIR`).

Every stage takes the resolved configuration and the results directory and records its wall
time in `timings`; `run_stages` runs them all and writes run.json (provenance.py). Argument
parsing, error printing and exit statuses are cli.py's."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpmem_eval.pipeline.errors import UserError, input_errors

if TYPE_CHECKING:
    from dpmem_eval.pipeline.auditor import Encoder
    from dpmem_eval.pipeline.cache import ResponseCache
    from dpmem_eval.pipeline.config import RunConfig
    from dpmem_eval.pipeline.methods import MethodSpec, PublicPolicy
    from dpmem_eval.pipeline.runner import Transcript


def seed_everything(seed: int, torch_too: bool) -> None:
    import random

    import numpy as np

    random.seed(seed)
    np.random.seed(seed)
    if torch_too:
        import torch

        torch.manual_seed(seed)


def cache_root(config_cache: str | None) -> Path:
    from dpmem_eval.pipeline.models import default_cache_dir

    return Path(config_cache) if config_cache else default_cache_dir()


def make_judge(spec: str, encoder: Encoder, config: RunConfig, cache: ResponseCache) -> Any:
    from dpmem_eval.pipeline.backends import DecodingConfig, make_backend
    from dpmem_eval.pipeline.generation import CachedGenerator
    from dpmem_eval.pipeline.judge import GeneratorJudge, OpenAIChatBackend, ProxyJudge

    if spec == "proxy":
        return ProxyJudge(encoder)
    if spec == "checklist":
        from dpmem_eval.pipeline.checklist import ChecklistJudge

        return ChecklistJudge(encoder)
    decoding = DecodingConfig(max_new_tokens=256, temperature=0.0, seed=config.seed)
    if spec.startswith("local:"):
        from dpmem_eval.pipeline.backends import backend_options

        backend = make_backend(config.backend if config.backend != "echo" else "hf", spec[len("local:"):],
                               batch_size=config.batch_size, cache_dir=config.cache_dir, **backend_options(config))
    else:
        url, _, model = spec[len("openai:"):].partition("#")
        backend = OpenAIChatBackend(url, model)
    return GeneratorJudge(CachedGenerator(backend, cache, decoding, batch_size=config.batch_size, progress=config.progress,
                                          token_budget=config.token_budget))


def load_encoder(encoder_class: Callable[..., Encoder], config: RunConfig) -> Encoder:
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
        if isinstance(exc, input_errors()):
            raise
        raise UserError(f"--encoder {config.encoder}: not a usable sentence-transformers model ({type(exc).__name__})") from None
    return encoder


# --- the run's stages ----------------------------------------------------------------------


def stage_data(config: RunConfig, timings: dict[str, float]) -> tuple[list[Any], str | None]:
    """PairedMem and the transfer track (nothing written yet: a bad input leaves --out as it was)."""
    from dpmem_eval.pipeline.readers import check_selection
    from dpmem_eval.pipeline.runner import load_pairs

    start = time.perf_counter()
    pairs, corpora = load_pairs(config, with_origin=True)
    check_selection(pairs, config)
    timings["data_s"] = round(time.perf_counter() - start, 2)
    return pairs, corpora


def data_header(config: RunConfig, pairs: list[Any], corpora: str | None, timings: dict[str, float]) -> None:
    from dpmem_eval.pipeline.summary import note, stage

    stage(1, f"data: PairedMem and the transfer track ({timings['data_s']:.1f} s)")
    origin = {"excerpt": "the corpus excerpt shipped with dpmem-eval (full corpora not given: --corpora DIR or "
              "DPMEM_CORPORA)", "full": "the public corpora"}.get(corpora or "")
    if config.data_dir:
        origin = f"the dataset in {config.data_dir}"
    note(f"{len(pairs)} pairs; transfer track from {origin or 'nothing (no transfer pairs asked for)'}")


def stage_kernel(out: Path, config: RunConfig, pairs: list[Any], timings: dict[str, float]) -> tuple[Any, tuple[Any, ...], list[Any]]:
    """Every interface's conditioning through the kernel; writes the charge traces and the
    score-channel controls. Returns the public policy, the methods and the transcript templates."""
    from dpmem_eval.pipeline import methods as M
    from dpmem_eval.pipeline.runner import build_transcripts, write_transcripts
    from dpmem_eval.pipeline.summary import stage

    policy = M.load_public_policy()
    methods = M.all_methods(config.caps, config.ks)
    if config.methods is not None:
        methods = tuple(m for m in methods if m.key in config.methods)
    start = time.perf_counter()
    stage(2, f"kernel: conditioning of {len(methods)} interfaces (DP-MemView variants through Algorithm 1)")
    templates = build_transcripts(config, pairs, methods, policy)
    timings["kernel_s"] = round(time.perf_counter() - start, 2)
    write_transcripts(out / "traces.jsonl", "kernel", [t for t in templates if t.method in {m.key for m in methods if m.kind == "dp"}])
    write_transcripts(out / "score-channel.jsonl", "kernel", [t for t in templates if t.method == M.SCORE_CHANNEL.key])
    return policy, methods, templates


def stage_generation(out: Path, config: RunConfig, policy: PublicPolicy, methods: tuple[MethodSpec, ...],
                     templates: list[Transcript], cache: ResponseCache, timings: dict[str, float]) -> dict[str, Any]:
    """Responses of every response model (one resident at a time), then the pairwise auditor
    if asked for. Returns each model's generation statistics."""
    from dataclasses import replace

    from dpmem_eval.pipeline import methods as M
    from dpmem_eval.pipeline.batching import close_backend
    from dpmem_eval.pipeline.generation import response_generator
    from dpmem_eval.pipeline.runner import generate_transcripts, model_slug, write_transcripts
    from dpmem_eval.pipeline.summary import generation_line, note, stage

    generating = {m.key for m in methods if m.generates}
    postprocess = {"output_filter": M.output_filter(policy)}
    generation_stats = {}
    stage(3, f"generation: {', '.join(config.models)} ({config.backend}), {config.horizon} turns per transcript")
    for model in config.models:
        start = time.perf_counter()
        generator = response_generator(config, model, cache)
        backend = generator.backend
        transcripts = [replace(t, responses=[]) for t in templates if t.method in generating]
        try:
            generate_transcripts(transcripts, generator, config, postprocess)
        finally:
            close_backend(backend)  # one model resident at a time
        write_transcripts(out / f"transcripts-{model_slug(model)}.jsonl", model, transcripts)
        stats = generator.stats.as_dict()
        stats["wall_s"] = round(time.perf_counter() - start, 2)
        stats["engine"] = backend.resolved() if hasattr(backend, "resolved") else {}
        generation_stats[model] = stats
        note(generation_line(model, stats))
    if config.pairwise:  # after every response model is unloaded: one engine resident at a time
        from dpmem_eval.pipeline.runner import pairwise_stage

        pairwise_stage(out, config, cache, timings)
    cache.close()
    timings["generation_s"] = round(sum(s["wall_s"] for s in generation_stats.values()), 2)
    return generation_stats


def stage_audit(out: Path, config: RunConfig, timings: dict[str, float], inputs: dict[str, Any] | None = None) -> dict[str, Any]:
    from dpmem_eval.data.scaffold import ATTRIBUTES
    from dpmem_eval.pipeline.auditor import Encoder
    from dpmem_eval.pipeline.readers import read_model_transcripts, read_run_transcripts
    from dpmem_eval.pipeline.runner import audit_model
    from dpmem_eval.readers import write_atomic

    inputs = inputs or {"transcripts": read_model_transcripts(out, config), "score": read_run_transcripts(out, config, "score-channel.jsonl")}
    start = time.perf_counter()
    encoder = load_encoder(Encoder, config)
    results = {}
    for model in config.models:
        rows = inputs["transcripts"][model] + inputs["score"]
        results[model] = audit_model(rows, encoder, config, ATTRIBUTES)
    write_atomic(out / "audit.json", json.dumps({"encoder": config.encoder, "results": results}, indent=1, default=float))
    timings["audit_s"] = round(time.perf_counter() - start, 2)
    timings["encoder_load_s"] = round(encoder.load_seconds, 2)
    return results


def stage_judge(out: Path, config: RunConfig, pairs_by_id: dict[str, Any], timings: dict[str, float],
                inputs: dict[str, Any] | None = None) -> tuple[dict[str, Any], str]:
    from dpmem_eval.pipeline.auditor import Encoder
    from dpmem_eval.pipeline.cache import ResponseCache
    from dpmem_eval.pipeline.readers import check_pair_ids, read_model_transcripts
    from dpmem_eval.pipeline.runner import judge_model
    from dpmem_eval.readers import write_atomic

    transcripts = (inputs or {}).get("transcripts") or read_model_transcripts(out, config)
    check_pair_ids(transcripts, pairs_by_id)
    start = time.perf_counter()
    encoder = load_encoder(Encoder, config)
    cache = ResponseCache(cache_root(config.cache_dir) / "responses.sqlite")
    judge = make_judge(config.judge, encoder, config, cache)
    results, calibration = {}, {}
    for model in config.models:
        if hasattr(judge, "calibrate"):  # the checklist judge: fitted per response model on its train pairs
            calibration[model] = judge.calibrate(transcripts[model], pairs_by_id)
        results[model] = judge_model(transcripts[model], pairs_by_id, judge, n_boot=config.n_boot)
    label = judge.label
    judge.close()  # a local judge model leaves the GPU before the next stage
    payload: dict[str, Any] = {"judge": label, "results": results}
    if calibration:
        payload["calibration"] = calibration
    write_atomic(out / "judge.json", json.dumps(payload, indent=1, default=float))
    timings["judge_s"] = round(time.perf_counter() - start, 2)
    cache.close()
    return results, label


def stage_report(out: Path, config: RunConfig, timings: dict[str, float], inputs: dict[str, Any] | None = None) -> list[str]:
    from dpmem_eval.pipeline import methods as M
    from dpmem_eval.pipeline import tables
    from dpmem_eval.pipeline.plots import plots
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
    written = plots(out, cfg, audit, judge, grid, judge_note(label, judge_data.get("calibration", {})))
    timings["report_s"] = round(time.perf_counter() - start, 2)
    return written


def judge_note(label: str, calibration: dict[str, Any]) -> str:
    """The judge's name and, for the checklist judge, its agreement with held-out gold labels."""
    parts = [f"Judge: {label}."]
    for model, c in sorted(calibration.items()):
        if isinstance(c, dict) and "validation_kappa" in c:
            parts.append(f"Checklist judge vs held-out gold labels ({model}, {c.get('n_validation')} validation turns): "
                         f"accuracy {c['validation_accuracy']:.2f}, Cohen's kappa {c['validation_kappa']:.2f}, "
                         f"AUC {c['validation_auc']:.2f}" + (" - at chance: its tRec/Unsup differences carry no signal."
                                                           if c["validation_kappa"] < 0.2 else "."))
            control = c.get("control_memory_as_reply")
            if isinstance(control, dict) and "validation_kappa" in control:
                parts.append(f"Control, the memory text the model read in place of its reply: kappa "
                             f"{control['validation_kappa']:.2f}, AUC {control['validation_auc']:.2f}.")
    return " ".join(parts)


def pairs_by_id(config: RunConfig) -> dict[str, Any]:
    from dpmem_eval.pipeline.runner import load_pairs

    return {p.pair_id: p for p in load_pairs(config)}


# --- whole runs ----------------------------------------------------------------------------


def run_stages(config: RunConfig, out: Path, argv: list[str] | None) -> int:
    """`dpmem-eval run` after its configuration and preflight passed: every stage, run.json,
    the closing summary."""
    from dpmem_eval.pipeline.cache import ResponseCache
    from dpmem_eval.pipeline.provenance import git_commit, run_json
    from dpmem_eval.pipeline.summary import stage
    from dpmem_eval.readers import write_atomic

    total_start = time.perf_counter()
    timings: dict[str, float] = {}
    git = git_commit()  # the code the run starts with
    seed_everything(config.seed, torch_too=config.backend in ("hf", "vllm"))
    pairs, corpora = stage_data(config, timings)
    # Every input is checked before the first write: a refused cache leaves --out as it was.
    cache = ResponseCache(cache_root(config.cache_dir) / "responses.sqlite")
    out.mkdir(parents=True, exist_ok=True)
    # The first header only now: a bad input above is reported as its one line, nothing else.
    data_header(config, pairs, corpora, timings)
    policy, methods, templates = stage_kernel(out, config, pairs, timings)
    generation_stats = stage_generation(out, config, policy, methods, templates, cache, timings)
    stage(4, f"audit: embedding auditor ({config.encoder}) per method and prefix length")
    audit = stage_audit(out, config, timings)
    stage(5, f"judge: utility ({config.judge})")
    _, label = stage_judge(out, config, {p.pair_id: p for p in pairs}, timings)
    run_info = run_json(config, pairs, generation_stats, timings, label, git, corpora, argv)
    write_atomic(out / "run.json", json.dumps(run_info, indent=1, default=str))
    stage(6, "report: Tables 2-4 and plots")
    plots = stage_report(out, config, timings)
    timings["total_s"] = round(time.perf_counter() - total_start, 2)
    run_info = run_json(config, pairs, generation_stats, timings, label, git, corpora, argv)
    run_info["plots"] = plots
    write_atomic(out / "run.json", json.dumps(run_info, indent=1, default=str))
    print(f"wrote {out}/table2.md, table3.md, table4.md, plots/, run.json in {timings['total_s']:.0f}s", file=sys.stderr)
    from dpmem_eval.pipeline.summary import summary_text
    from dpmem_eval.pipeline.tables import charge_bounds

    traces = [t.to_json("kernel") for t in templates if t.method in {m.key for m in methods if m.kind == "dp"}]
    n_test = sum(1 for p in pairs if p.track != "transfer" and p.split == "test")
    print(summary_text(out, config, audit, charge_bounds(traces), len(traces), label, n_test, corpora), file=sys.stderr)
    return 0


def rerun_stage(stage: str, out: Path, updates: dict[str, Any]) -> int:
    """`dpmem-eval audit | judge | report --out DIR`: rerun one stage of an earlier run from its
    saved results (transcripts, traces, audit.json, judge.json), then rebuild the tables."""
    from dataclasses import replace

    from dpmem_eval.pipeline.readers import read_run, read_stage_inputs
    from dpmem_eval.readers import write_atomic

    run_file = read_run(out)
    run, config = run_file.data, run_file.config
    config = replace(config, **updates).validate()
    inputs = read_stage_inputs(out, config, stage)
    by_id = pairs_by_id(config) if stage == "judge" else {}
    timings = dict(run.get("timings", {}))
    if stage == "audit":
        stage_audit(out, config, timings, inputs)
        inputs.pop("audit", None)
    elif stage == "judge":
        _, run["judge"] = stage_judge(out, config, by_id, timings, inputs)
        inputs.pop("judge", None)
    stage_report(out, config, timings, inputs)
    run["config"] = config.as_dict()
    run["timings"] = timings
    write_atomic(out / "run.json", json.dumps(run, indent=1, default=str))
    print(f"{stage}: updated {out}", file=sys.stderr)
    return 0
