"""The `dpmem-eval` pipeline: compared interfaces (Table 1/8), response generation, the
embedding and pairwise auditors, the utility judge, and Tables 2-4 (paper, Experiments and
Appendix C.4-C.5).

Every DP-MemView variant is assembled from `dpmem_ref` kernel parts (`methods.py`); the
pipeline never re-implements the exponential mechanism, the budget rules or the ledgers.
Heavy libraries (torch, transformers, sentence-transformers, scikit-learn, matplotlib) are
imported inside the functions that need them.
"""
