"""The auditor's engine behind `dpmem check` and `dpmem audit` (DESIGN.md, "Command line"; the
commands themselves are parsed in `dpmem_ref.cli.audit`).

- `check`: the static contract (C1-C6) with Eq. (6) proved (`dpmem_ref.audit.check`);
- `audit`: the verdict for two stores (`adjacency`: kappa and its cover; `verdict`: the
  exact worst case, certificate and witness);
- `render`: text and JSON output; `sensitivity` (Eq. 6 proved) and `cover` (kappa, Eq. 8) beside them.

Import from the defining modules: this package's `__init__` stays empty so that importing one
of them (the face imports `cover`) does not load the whole auditor.

Exit codes (`dpmem audit`): 0 the bound holds and the contract C1-C6 holds; 1 the bound is
broken or not certified, or a contract violation (`dpmem check` would report it) leaves the
bound unguaranteed beyond the audited horizon; 2 malformed input; 3 no guarantee applies
(the stores differ outside every protected group, kappa = inf). `dpmem check`: 0 ok, 1
violations, 2 malformed input.

May import: every floor up to `schemas/`.
"""
