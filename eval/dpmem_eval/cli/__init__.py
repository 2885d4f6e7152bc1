"""The `dpmem-eval` command line: the only place in dpmem-eval that builds its parser, turns
arguments into a configuration and prints a user's error (exit codes: `dpmem_ref.core.exits`).

- `program`: the `dpmem-eval` parser (`build_parser`) and `main`;
- `errors`: the one error printer (`dpmem-eval: error: <line>`, exit status 2);
- `pipeline`: `run`, `preflight`, `audit`, `judge`, `report` (the benchmark pipeline);
- `data`: `data build`, `data show`, `data export-interface` (PairedMem and the transfer track);
- `horizon`: `long-horizon` (the kernel-only long-horizon study).

The console script `dpmem-eval` (eval/pyproject.toml) and `python -m dpmem_eval` are its
entry points. Heavy imports (torch, transformers, scikit-learn) are deferred into the
subcommand that needs them, so `dpmem-eval --help` and `dpmem-eval data ...` stay fast.
"""

from dpmem_eval.cli.program import main

__all__ = ["main"]
