"""Core data of the kernel: transcript types, the interface record, exact ledgers and
number formatting. Policy, layout, store, views, scorers and budget rules live in the
sibling modules `dpmem_ref.policy`, `.views`, `.scoring` and `.budget`."""
