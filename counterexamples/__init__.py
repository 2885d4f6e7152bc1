"""Proposition 1 (Appendix B.5), the Table 4 ablations and a mutant zoo as executable
constructions, each evaluated by the kernel's exact engine (`dpmem_ref.analysis`).

`counterexamples.registry.all_constructions()` lists them; `python -m counterexamples`
prints the table (see docs/counterexamples.md).
"""
