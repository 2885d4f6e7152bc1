"""`dpmem-eval long-horizon`: the kernel-only long-horizon study (`dpmem_eval.pipeline.horizon`)."""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpmem_eval.cli.errors import fail
from dpmem_eval.pipeline.errors import UserError
from dpmem_ref.core.exits import EXIT_OK

if TYPE_CHECKING:
    from dpmem_eval.cli.program import Subcommands


def command_long_horizon(args: argparse.Namespace) -> int:
    from dpmem_eval.pipeline.horizon import PRESETS, measure
    from dpmem_eval.pipeline.horizon_report import plot, table
    from dpmem_eval.pipeline.provenance import git_commit, package_versions

    config = PRESETS[args.preset]
    if args.horizons:
        try:
            horizons = tuple(int(h) for h in args.horizons.split(","))
        except ValueError:
            horizons = ()
        if not horizons or any(not 1 <= h <= 1024 for h in horizons):
            return fail(f"--horizons: expected comma-separated integers in 1..1024, found {args.horizons!r}")
        config = replace(config, horizons=horizons)
    out = Path(args.out or f"runs/{config.preset}")
    git = git_commit()
    llm = None
    if not args.kernel_only:
        from dpmem_eval.pipeline.config import PRESETS as RUN_PRESETS

        llm = replace(RUN_PRESETS["cpu"], backend=args.backend, cache_dir=args.cache_dir, judge=args.judge, progress=True)
    calibration: list[dict[str, Any]] = []
    if llm is not None and llm.judge == "checklist":
        from dpmem_eval.pipeline.horizon_llm import calibration_rows

        try:
            calibration = calibration_rows(llm, Path(args.calibrate_from))
        except UserError as exc:  # before anything is written
            return fail(str(exc))
    rows = measure(config, llm=llm, calibration=calibration)
    out.mkdir(parents=True, exist_ok=True)
    command = "dpmem-eval " + " ".join(getattr(args, "argv", ["long-horizon"]))
    document = {"config": config.__dict__, "command": command, "git": git, "versions": package_versions(),
                "llm": None if llm is None else {k: getattr(llm, k) for k in ("models", "backend", "max_new_tokens",
                                                                             "temperature", "history_turns", "encoder", "judge")},
                "rows": rows}
    (out / "long_horizon.json").write_text(json.dumps(document, indent=2, default=str) + "\n")
    head = (f"Long-horizon run, preset {config.preset}, commit {git['commit']}{' (dirty tree)' if git['dirty'] else ''}."
            f"\nCommand: `{command}`.\n")
    if llm is None:
        head += "Kernel only (--kernel-only): tRec, Unsup and the response-level AUC need generation and the judge.\n\n"
    else:
        judge = rows[0].get("judge", llm.judge)
        stats = rows[0].get("generation", {})
        head += (f"Responses: {llm.models[0]} ({llm.backend}), {llm.max_new_tokens} new tokens, no history in the prompt "
                 f"(the cpu preset of `dpmem-eval run`); {stats.get('requested', 0)} turns, {stats.get('generated', 0)} "
                 f"generated, the rest from the response cache. Judge: {judge}. Auditor encoder: {llm.encoder}. "
                 "tRec and Unsup: test pairs, 95% bootstrap CI over pairs.\n\n")
    note = head
    (out / "long_horizon.md").write_text(note + table(rows) + "\n")
    plot(rows, out / "long_horizon.png")
    print(f"long-horizon: wrote {out}/long_horizon.json, .md, .png")
    return EXIT_OK


def add_horizon_parser(sub: Subcommands) -> None:
    from dpmem_eval.pipeline import horizon

    parser = sub.add_parser("long-horizon", help="personalisation over T = 16..128 turns, with and without reuse",
                            description=horizon.__doc__.split("\n\n", 1)[0] if horizon.__doc__ else None)
    parser.add_argument("--preset", choices=sorted(horizon.PRESETS), default="long-cpu")
    parser.add_argument("--horizons", default=None, help="comma-separated T values (default: the preset's)")
    parser.add_argument("--out", default=None, help="output directory (default runs/<preset>)")
    parser.add_argument("--kernel-only", action="store_true",
                        help="no generation: kernel metrics only (tRec, Unsup and the response AUC not run)")
    parser.add_argument("--backend", choices=("hf", "echo"), default="hf",
                        help="response backend (echo: the deterministic test backend, no model)")
    parser.add_argument("--judge", choices=("checklist", "proxy"), default="checklist",
                        help="tRec/Unsup judge (checklist: calibrated as the committed cpu run's, see --calibrate-from)")
    parser.add_argument("--calibrate-from", default="results/cpu",
                        help="a `dpmem-eval run` directory whose RawReadSet transcripts calibrate the checklist judge")
    parser.add_argument("--cache-dir", default=None, help="models and response cache (default: the run's, DPMEM_EVAL_CACHE)")
    parser.set_defaults(handler=command_long_horizon)
