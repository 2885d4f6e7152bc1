"""`python -m dpmem_eval.cli`: the `dpmem-eval` program (as `python -m dpmem_eval`)."""

from dpmem_eval.cli.program import main

if __name__ == "__main__":
    raise SystemExit(main())
