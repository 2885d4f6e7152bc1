"""`python -m dpmem_ref.cli`: the `dpmem` program."""

from dpmem_ref.cli.dpmem import main

if __name__ == "__main__":
    raise SystemExit(main())
