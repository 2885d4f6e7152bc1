from dpmem_eval.cli import main

raise SystemExit(main())
