"""`dpmem-eval run | preflight | audit | judge | report`: the benchmark pipeline's arguments and handlers.

    dpmem-eval run --preset smoke|cpu|paper [--models M1,M2] [--out DIR] [--config FILE]
    dpmem-eval audit  --out DIR [--encoder minilm|mpnet|PATH]     rerun the auditors
    dpmem-eval judge  --out DIR [--judge proxy|checklist|local:MODEL|openai:URL#MODEL]
    dpmem-eval report --out DIR                                    rebuild tables and plots

Configuration precedence: command line > --config TOML ([run] table) > preset. A flag whose
destination is a RunConfig field is read through that field's entry of
`dpmem_eval.pipeline.config.FIELDS`; the stages run in `dpmem_eval.pipeline.stages`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpmem_eval.cli.errors import fail, warn
from dpmem_eval.errors import UserError
from dpmem_ref.core.exits import EXIT_BAD_INPUT, EXIT_OK

if TYPE_CHECKING:
    from dpmem_eval.cli.program import Subcommands
    from dpmem_eval.pipeline.config import RunConfig

EPILOG = """examples:
  dpmem-eval run --preset smoke                      # writes runs/smoke/
  dpmem-eval run --preset cpu --out runs/cpu
  dpmem-eval run --preset paper --backend vllm --judge openai:http://127.0.0.1:8001/v1#Qwen2.5-72B-Instruct
  dpmem-eval report --out runs/smoke
"""


# --- arguments ------------------------------------------------------------------------------


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", help="results directory (run: default runs/<preset>; audit/judge/report: required)")
    p.add_argument("--cache-dir", dest="cache_dir", help="model and response cache (default ~/.cache/dpmem-eval)")
    p.add_argument("--seed", type=int, help="seeds python, numpy and torch (default 0)")
    p.add_argument("--no-progress", dest="progress", action="store_false", default=None, help="no progress bars")


def _add_engine_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tensor-parallel-size", dest="tensor_parallel_size", type=int, help="vLLM: GPUs per model (default 1)")
    p.add_argument("--device-map", dest="device_map", help="hf: auto | balanced | sequential | cpu | cuda | cuda:N (default auto on CUDA)")
    p.add_argument("--dtype", help="bfloat16 | float16 | float32 (default bfloat16 on CUDA, float32 on CPU)")
    p.add_argument("--token-budget", dest="token_budget", help="tokens per batch, prompt + new, padded (default: the memory plan)")
    p.add_argument("--dry-run", dest="dry_run", action="store_true", help="run the preflight only, generate nothing")


def add_pipeline_parsers(subparsers: Subcommands) -> None:
    run = subparsers.add_parser("run", help="run the benchmark end to end (Tables 2-4)", epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    run.add_argument("--preset", default="smoke", help="smoke | cpu | paper (default smoke)")
    run.add_argument("--config", help="TOML file with a [run] table overriding the preset")
    run.add_argument("--models", help="comma-separated response models (ids, local paths, or 'smollm2')")
    run.add_argument("--backend", help="hf | vllm | echo")
    run.add_argument("--encoder", help="auditor encoder: minilm | mpnet | a local sentence-transformers path")
    run.add_argument("--judge", help="proxy | checklist (CPU, calibrated on gold) | local:MODEL | openai:URL#MODEL")
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
    run.add_argument("--no-pairwise", dest="pairwise", action="store_false", help="skip the pairwise LLM auditor (paper preset)")
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
    audit.set_defaults(handler=_rerun_handler("audit"))

    judge = subparsers.add_parser("judge", help="rerun the utility judge on saved transcripts")
    judge.add_argument("--judge", help="proxy | checklist (CPU, calibrated on gold) | local:MODEL | openai:URL#MODEL")
    _add_common(judge)
    judge.set_defaults(handler=_rerun_handler("judge"))

    report = subparsers.add_parser("report", help="rebuild Tables 2-4 and plots from saved stage results")
    _add_common(report)
    report.set_defaults(handler=_rerun_handler("report"))


# --- handlers -------------------------------------------------------------------------------


def guarded(run: Callable[[], int]) -> int:
    """`run()`, with a user's error (pipeline.errors.input_errors) printed as one line, exit 2."""
    from dpmem_eval.pipeline.errors import input_errors
    from dpmem_eval.pipeline.models import set_thread_waiting

    set_thread_waiting()  # before anything imports torch
    try:
        return run()
    except Exception as exc:  # one line, no traceback, for the errors a user can fix
        if isinstance(exc, input_errors()):
            return fail(str(exc))
        raise


def _preflight(config: RunConfig, dry_run: bool) -> int | None:
    """Exit status 2 with one line per missing artefact; 0 after a clean dry run; None: go on."""
    from dpmem_eval.cli.errors import say
    from dpmem_eval.pipeline.preflight import cautions, check

    for line in cautions(config):
        warn(line)
    problems = check(config)
    for line in problems:  # the error form of every other bad input; a name may hold a newline
        fail(f"missing {line}")
    if problems:
        return EXIT_BAD_INPUT
    if dry_run:
        say(f"preflight: every artefact of preset {config.preset} (backend {config.backend}) is present")
        return EXIT_OK
    return None


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The flags given whose destination is a configuration field (all but --preset)."""
    from dpmem_eval.pipeline.config import FIELDS

    return {name: getattr(args, name) for name in FIELDS if getattr(args, name, None) is not None}


def handle_run(args: argparse.Namespace) -> int:
    return guarded(lambda: _run(args))


def handle_preflight(args: argparse.Namespace) -> int:
    args.dry_run = True
    return handle_run(args)


def _run(args: argparse.Namespace) -> int:
    from dpmem_eval.pipeline.config import resolve
    from dpmem_eval.pipeline.stages import run_stages

    config = resolve(args.preset, args.config, _overrides(args))
    status = _preflight(config, bool(getattr(args, "dry_run", False)))
    if status is not None:
        return status
    out = Path(args.out or f"runs/{config.preset}")  # results/ holds committed runs: never a default
    return run_stages(config, out, getattr(args, "argv", None))


def _rerun_handler(stage: str) -> Callable[[argparse.Namespace], int]:
    def handler(args: argparse.Namespace) -> int:
        def rerun() -> int:
            from dpmem_eval.pipeline.stages import rerun_stage

            if not args.out:
                raise UserError("--out DIR is required (the results directory of an earlier run)")
            updates: dict[str, Any] = {}
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
            return rerun_stage(stage, Path(args.out), updates)

        return guarded(rerun)
    return handler
