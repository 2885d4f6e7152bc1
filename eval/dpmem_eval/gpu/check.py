"""`scripts/gpu_check.sh`: the hf bf16 path end to end on the paper preset's shapes.

For each paper architecture (Qwen2.5-7B, Llama-3.1-8B, Gemma-2-9B) a RANDOM-WEIGHT model is
built from its published configuration (archs.py; no weights can be downloaded on the lent
machine) directly on the GPU in bf16, wrapped in the pipeline's own `HFBackend`, and driven
through the pipeline's `CachedGenerator` (the run's batching by token budget from the memory
plan, the out-of-memory halving, the stage unload): `--batch` (the preset's 64) prompts of
turns 1, 8 and 16 with the full 16-turn prefix, 256 new tokens each (end-of-sequence
disabled, so every sequence is full length). It records tokens/s, generations/s, peak GPU
memory and the memory plan's prediction per architecture and turn, checks that the model is
released after `close()`, and projects the hf path's wall time for Table 2's generation by
interpolating the measured seconds per generation over the 16 turns (PROJECTED from the
measurement), beside the roofline projection of memory_plan (PROJECTED, NOT MEASURED).

Without CUDA, or with --tiny, the same code runs tiny configurations of the same three
classes on the CPU (the CI test): its figures mean nothing.
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import sys
import tempfile
import time
import weakref
from pathlib import Path
from types import ModuleType
from typing import Any

from dpmem_eval.gpu import memory_plan as plan
from dpmem_eval.gpu.archs import PAPER_ARCHS, Shape, build_model, tiny
from dpmem_eval.gpu.synthetic import paper_shaped_prompts, word_tokenizer

RANDOM_WEIGHTS_NOTE = ("weights are RANDOM (built from the published config.json of each model; nothing can be "
                       "downloaded on this machine): speed and memory are those of the real shapes, the text is noise")
TINY_SHAPE = plan.PromptShape(system=12, query=4, per_message=8, max_new=8, turns=16)
TINY_DEVICE_BYTES = 2 * 1024**2  # a nominal device for the tiny run's token budget


def _torch() -> ModuleType:
    import torch

    return torch


def measure_turn(backend: Any, shape: plan.PromptShape, turn: int, batch: int, vocab: int, token_budget: int | None,
                 cuda: bool) -> dict[str, Any]:
    """One turn's prompts through the pipeline's CachedGenerator (fresh cache: all misses)."""
    from dpmem_eval.pipeline.cache import ResponseCache
    from dpmem_eval.pipeline.generation import CachedGenerator, DecodingConfig

    torch = _torch()
    prompts = paper_shaped_prompts(shape, turn, batch, vocab)
    with tempfile.TemporaryDirectory() as tmp:
        cache = ResponseCache(Path(tmp) / "responses.sqlite")
        generator = CachedGenerator(backend, cache, DecodingConfig(max_new_tokens=shape.max_new), batch_size=batch,
                                    progress=False, token_budget=token_budget)
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        began = time.perf_counter()
        generator.generate(prompts, description=f"turn {turn}")
        if cuda:
            torch.cuda.synchronize()
        seconds = time.perf_counter() - began
        cache.close()
    stats = generator.stats
    prompt_tokens = backend.count_tokens(prompts[0])
    return {
        "turn": turn, "prompts": batch, "prompt_tokens": prompt_tokens, "new_tokens_per_prompt": shape.max_new,
        "generated": stats.generated, "new_tokens": stats.new_tokens, "seconds": round(seconds, 3),
        "tokens_per_second": round(stats.new_tokens / seconds, 2), "generations_per_second": round(stats.generated / seconds, 3),
        "token_budget": stats.token_budget, "batches": stats.batches, "oom_halvings": stats.oom_halvings,
        "peak_gpu_memory_gb": round(torch.cuda.max_memory_allocated() / 1e9, 2) if cuda else None,
    }


def projected_hours(turns: list[dict[str, Any]], shape: plan.PromptShape) -> float:
    """Table 2 generation (every transcript set of the paper preset) for one model on the hf
    path: seconds per generation interpolated linearly in the turn between measured turns."""
    points = sorted((t["turn"], t["seconds"] / t["generated"]) for t in turns if t["generated"])
    if not points:
        return float("nan")
    per_turn = plan.PAPER_PAIRS * 2 * plan.GENERATING_SETS
    total = 0.0
    for turn in range(1, shape.turns + 1):
        lower = max((p for p in points if p[0] <= turn), default=points[0])
        upper = min((p for p in points if p[0] >= turn), default=points[-1])
        if upper[0] == lower[0]:
            seconds = lower[1]
        else:
            seconds = lower[1] + (upper[1] - lower[1]) * (turn - lower[0]) / (upper[0] - lower[0])
        total += per_turn * seconds
    return total / 3600


def check_architecture(name: str, config: dict[str, Any], args: argparse.Namespace, cuda: bool,
                       deadline: float) -> dict[str, Any]:
    from dpmem_eval.pipeline.backends.hf import HFBackend

    if time.perf_counter() > deadline:
        return {"model": name, "skipped": "time limit reached before this architecture", "turns": [],
                "released_after_close": True}
    torch = _torch()
    shape = TINY_SHAPE if args.tiny else plan.PromptShape(max_new=args.max_new_tokens)
    dtype = torch.bfloat16
    began = time.perf_counter()
    model = build_model(config, dtype=dtype, device="cuda" if cuda else "cpu")
    model.generation_config.eos_token_id = None  # full-length sequences: the paper's worst case
    tokenizer = word_tokenizer(config["vocab_size"])
    build_seconds = time.perf_counter() - began
    budget = None
    if not cuda:  # the tiny run exercises the same budget arithmetic on a nominal device
        budget = plan.token_budget(config, TINY_DEVICE_BYTES, shape.response_prompt(shape.turns), shape.max_new)
    backend = HFBackend.from_loaded(model, tokenizer, f"random:{name}", batch_size=args.batch, token_budget=budget)
    record: dict[str, Any] = {
        "model": name, "class": type(model).__name__, "parameters": sum(p.numel() for p in model.parameters()),
        "dtype": str(next(model.parameters()).dtype).replace("torch.", ""),
        "attn_implementation": getattr(model.config, "_attn_implementation", None),
        "build_seconds": round(build_seconds, 2), "turns": [], "skipped_turns": [],
        "planned_gb_turn16": round(plan.stage_plan(name, "generation", args.batch, shape.response_prompt(shape.turns),
                                                   shape.max_new).total_bytes / 1e9, 1) if not args.tiny else None,
    }
    model_ref = weakref.ref(model)
    del model
    for turn in args.turns:
        if time.perf_counter() > deadline:
            record["skipped_turns"].append(turn)
            continue
        result = measure_turn(backend, shape, turn, args.batch, config["vocab_size"], budget, cuda)
        record["turns"].append(result)
        print(f"  {name} turn {turn:>2}: {result['prompts']} x ({result['prompt_tokens']}+{shape.max_new}) tokens, "
              f"{result['tokens_per_second']} tok/s, {result['generations_per_second']} gen/s, "
              f"peak {result['peak_gpu_memory_gb']} GB, {result['batches']} batch(es) under budget {result['token_budget']}", file=sys.stderr)
    backend.close()
    gc.collect()
    record["released_after_close"] = model_ref() is None
    if cuda:
        record["gpu_memory_after_close_gb"] = round(torch.cuda.memory_allocated() / 1e9, 3)
    measured = [t for t in record["turns"] if t["generated"]]
    if measured:
        record["tokens_per_second"] = round(sum(t["new_tokens"] for t in measured) / sum(t["seconds"] for t in measured), 2)
        record["generations_per_second"] = round(sum(t["generated"] for t in measured) / sum(t["seconds"] for t in measured), 3)
        record["peak_gpu_memory_gb"] = max((t["peak_gpu_memory_gb"] or 0.0) for t in measured) if cuda else None
        record["projected_table2_generation_hours_hf"] = round(projected_hours(measured, shape), 2)
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gpu_check", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="results/gpu/gpu_check.json")
    parser.add_argument("--tiny", action="store_true", help="tiny configs on the CPU (automatic without CUDA)")
    parser.add_argument("--turns", default="1,8,16", help="turns to measure (prefix of t-1 turns)")
    parser.add_argument("--batch", type=int, default=None, help="prompts per turn (default: the paper preset's 64; tiny: 4)")
    parser.add_argument("--max-new-tokens", dest="max_new_tokens", type=int, default=256)
    parser.add_argument("--time-limit", dest="time_limit", type=float, default=330.0,
                        help="seconds after which remaining measurements are skipped (default 330)")
    parser.add_argument("--models", default=",".join(PAPER_ARCHS), help="subset of the paper models")
    args = parser.parse_args(argv)
    torch = _torch()
    cuda = torch.cuda.is_available() and not args.tiny
    args.tiny = not cuda
    args.turns = [int(t) for t in args.turns.split(",") if t]
    args.batch = args.batch or (4 if args.tiny else plan.PAPER_BATCH)
    deadline = time.perf_counter() + args.time_limit
    print(f"gpu_check: {RANDOM_WEIGHTS_NOTE}", file=sys.stderr)
    if args.tiny:
        print("gpu_check: no CUDA (or --tiny): tiny configurations on the CPU; the figures mean nothing", file=sys.stderr)
    report: dict[str, Any] = {
        "note": RANDOM_WEIGHTS_NOTE, "mode": "tiny-cpu" if args.tiny else "cuda", "random_weights": True,
        "device": torch.cuda.get_device_name(0) if cuda else platform.processor() or "cpu",
        "gpu_memory_gb": round(torch.cuda.get_device_properties(0).total_memory / 1e9, 1) if cuda else None,
        "torch": torch.__version__, "transformers": __import__("transformers").__version__,
        "batch": args.batch, "turns": args.turns, "max_new_tokens": TINY_SHAPE.max_new if args.tiny else args.max_new_tokens,
        "architectures": [],
    }
    for name in [m for m in args.models.split(",") if m]:
        config = PAPER_ARCHS[name]
        print(f"gpu_check: {name} ({Shape.of(config).parameters / 1e9:.2f}B parameters in the real config)", file=sys.stderr)
        report["architectures"].append(check_architecture(name, tiny(config) if args.tiny else config, args, cuda, deadline))
    measured = [a.get("projected_table2_generation_hours_hf") for a in report["architectures"]]
    report["projected_table2_generation_hours_hf"] = round(sum(h for h in measured if h is not None), 2)
    report["projection_note"] = ("PROJECTED from the measured hf path (seconds per generation interpolated over turns 1-16, "
                                 f"{plan.PAPER_PAIRS} pairs x 2 sides x {plan.GENERATING_SETS} transcript sets x 16 turns per "
                                 "model; response generation only, no prefix cache, no deduplication)")
    roofline = plan.projected_table2_hours()
    report["roofline_projection_hours_one_h200"] = {k: round(v, 2) for k, v in roofline.items()}
    report["roofline_note"] = "PROJECTED, NOT MEASURED: memory_plan.projected_table2_hours (batch 64, no prefix cache)"
    report["seconds"] = round(args.time_limit - (deadline - time.perf_counter()), 1)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"gpu_check: wrote {out} in {report['seconds']} s; projected Table 2 generation on the hf path: "
          f"{report['projected_table2_generation_hours_hf']} h (roofline: {report['roofline_projection_hours_one_h200']['total']:.1f} h)",
          file=sys.stderr)
    return 0 if all(a["released_after_close"] for a in report["architectures"]) else 1


if __name__ == "__main__":
    raise SystemExit(main())
