"""`dpmem-eval run | preflight | audit | judge | report`: the benchmark pipeline's handlers.

    dpmem-eval run --preset smoke|cpu|paper [--models M1,M2] [--out DIR] [--config FILE]
    dpmem-eval audit  --out DIR [--encoder minilm|mpnet|PATH]     rerun the auditors
    dpmem-eval judge  --out DIR [--judge proxy|checklist|local:MODEL|openai:URL#MODEL]
    dpmem-eval report --out DIR                                    rebuild tables and plots

Configuration precedence: command line > --config TOML ([run] table) > preset. The arguments
are declared in arguments.py; the stages run in stages.py; this module turns arguments into
a configuration, runs the stages, and prints a user's error as one line with exit status 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpmem_eval.pipeline.errors import UserError, input_errors

if TYPE_CHECKING:
    from dpmem_eval.pipeline.config import RunConfig

RUN_FIELDS = ("methods", "models", "backend", "encoder", "judge", "horizon", "seeds", "caps", "ks", "max_new_tokens",
              "batch_size", "history_turns", "train_pairs", "validation_pairs", "test_pairs", "transfer_pairs", "data_dir",
              "corpora_dir", "pairwise", "cache_dir", "seed", "progress",
              "tensor_parallel_size", "device_map", "dtype", "token_budget")
"""The run configuration's fields the command line can set (the last four: the engine flags)."""


def fail(message: str) -> int:
    from dpmem_eval.readers import one_line

    print(f"dpmem-eval: error: {one_line(message)}", file=sys.stderr)
    return 2


def _guarded(run: Callable[[], int]) -> int:
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


def _overrides(args: argparse.Namespace, names: tuple[str, ...]) -> dict[str, Any]:
    return {n: getattr(args, n) for n in names if getattr(args, n, None) is not None}


def handle_run(args: argparse.Namespace) -> int:
    return _guarded(lambda: _run(args))


def handle_preflight(args: argparse.Namespace) -> int:
    args.dry_run = True
    return handle_run(args)


def _run(args: argparse.Namespace) -> int:
    from dpmem_eval.pipeline.config import resolve
    from dpmem_eval.pipeline.stages import run_stages

    config = resolve(args.preset, args.config, _overrides(args, RUN_FIELDS))
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

        return _guarded(rerun)
    return handler


handle_audit = _rerun_handler("audit")
handle_judge = _rerun_handler("judge")
handle_report = _rerun_handler("report")
