"""`python -m dpmem_ref.cli`: the `dpmem` program."""

from dpmem_ref.cli.dpmem import main

raise SystemExit(main())
