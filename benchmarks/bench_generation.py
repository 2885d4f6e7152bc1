"""Tokens/s of the smoke preset's generation step in isolation (issue 22, point 9).

Builds exactly the distinct prompts a cold `dpmem-eval run --preset smoke` generates (no
transcript prefix in the smoke preset, so every turn's prompt is known before generation),
loads SmolLM2-135M-Instruct once through the pipeline's HFBackend, and times
`CachedGenerator` over them with a throw-away cache, once per setting:

    python benchmarks/bench_generation.py [--cache-dir DIR] [--settings default,threads1,...]

Prints one line per setting: wall seconds, generations, new tokens, tokens/s, batches, and
the load average before and after (the machine is shared; read tokens/s beside the load).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "eval"), str(ROOT)]


def smoke_prompts() -> list[list[dict[str, str]]]:
    from dpmem_eval.pipeline import methods as M
    from dpmem_eval.pipeline.config import resolve
    from dpmem_eval.pipeline.prompts import build_messages, window
    from dpmem_eval.pipeline.runner import build_transcripts, load_pairs

    config = resolve("smoke")
    pairs = load_pairs(config)
    policy = M.load_public_policy()
    methods = [m for m in M.all_methods(config.caps, config.ks) if m.generates]
    templates = build_transcripts(config, pairs, methods, policy)
    prompts, seen = [], set()
    for t in templates:
        for turn in range(min(config.horizon, len(t.conditioning))):
            messages = build_messages(t.conditioning[turn], window((), config.history_turns))
            key = repr(messages)
            if key not in seen:
                seen.add(key)
                prompts.append(messages)
    return prompts


SETTINGS = {
    # name: (torch threads or None = torch's default, batch_size)
    "default": (None, 48),
    "threads1": (1, 48),
    "threads2": (2, 48),
    "batch16": (None, 16),
    "batch8-threads1": (1, 8),
    "batch96": (None, 96),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache-dir", default=None, help="model cache (default: the pipeline's)")
    parser.add_argument("--settings", default="default", help=f"comma-separated among {','.join(SETTINGS)}")
    args = parser.parse_args()
    import torch

    from dpmem_eval.pipeline.backends.hf import HFBackend
    from dpmem_eval.pipeline.cache import ResponseCache
    from dpmem_eval.pipeline.generation import CachedGenerator, DecodingConfig

    prompts = smoke_prompts()
    print(f"{len(prompts)} distinct smoke prompts; torch {torch.__version__}, default threads "
          f"{torch.get_num_threads()}, cpu_count {os.cpu_count()}", flush=True)
    backend = HFBackend("smollm2", batch_size=48, cache_dir=args.cache_dir)
    start = time.perf_counter()
    backend._load()
    print(f"model load {time.perf_counter() - start:.1f} s (dtype {backend.resolved()['dtype']})", flush=True)
    default_threads = torch.get_num_threads()
    for name in args.settings.split(","):
        threads, batch = SETTINGS[name]
        torch.set_num_threads(threads or default_threads)
        backend.batch_size = batch
        with tempfile.TemporaryDirectory() as tmp:
            cache = ResponseCache(Path(tmp) / "responses.sqlite")
            generator = CachedGenerator(backend, cache, DecodingConfig(max_new_tokens=12), batch_size=batch,
                                        progress=False)
            load_before = os.getloadavg()[0]
            began, cpu_began = time.perf_counter(), time.process_time()
            generator.generate(prompts)
            wall, cpu = time.perf_counter() - began, time.process_time() - cpu_began
            cache.close()
        s = generator.stats
        print(f"{name:10s} threads={torch.get_num_threads()} batch={batch}: {wall:6.1f} s, {s.generated} generations, "
              f"{s.new_tokens} new tokens, {s.new_tokens / wall:6.1f} tok/s, CPU {cpu:.1f} s, {s.batches} batches, "
              f"load {load_before:.2f} -> {os.getloadavg()[0]:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
