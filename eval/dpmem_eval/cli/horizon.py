"""`dpmem-eval long-horizon`: the kernel-only long-horizon study (`dpmem_eval.pipeline.horizon`)."""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from dpmem_eval.cli.errors import fail
from dpmem_ref.core.exits import EXIT_OK

if TYPE_CHECKING:
    from dpmem_eval.cli.program import Subcommands


def command_long_horizon(args: argparse.Namespace) -> int:
    from dpmem_eval.pipeline.horizon import PRESETS, measure, plot, table
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
    out.mkdir(parents=True, exist_ok=True)
    git = git_commit()
    rows = measure(config)
    command = "dpmem-eval " + " ".join(getattr(args, "argv", ["long-horizon"]))
    document = {"config": config.__dict__, "command": command, "git": git, "versions": package_versions(), "rows": rows}
    (out / "long_horizon.json").write_text(json.dumps(document, indent=2, default=str) + "\n")
    note = (f"Kernel-only long-horizon run (no LLM), preset {config.preset}, commit {git['commit']}"
            f"{' (dirty tree)' if git['dirty'] else ''}.\nCommand: `{command}`.\n"
            "tRec, Unsup and the response-level AUC need generation and the judge (`dpmem-eval run`): not run here.\n\n")
    (out / "long_horizon.md").write_text(note + table(rows) + "\n")
    plot(rows, out / "long_horizon.png")
    print(f"long-horizon: wrote {out}/long_horizon.json, .md, .png")
    return EXIT_OK


def add_horizon_parser(sub: Subcommands) -> None:
    from dpmem_eval.pipeline import horizon

    parser = sub.add_parser("long-horizon", help="personalisation over T = 16..128 turns, with and without reuse (kernel only)",
                            description=horizon.__doc__.split("\n\n", 1)[0] if horizon.__doc__ else None)
    parser.add_argument("--preset", choices=sorted(horizon.PRESETS), default="long-cpu")
    parser.add_argument("--horizons", default=None, help="comma-separated T values (default: the preset's)")
    parser.add_argument("--out", default=None, help="output directory (default runs/<preset>)")
    parser.set_defaults(handler=command_long_horizon)
