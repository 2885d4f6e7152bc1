"""dpmem-eval: the DP-MemView evaluation pipeline (PairedMem, transfer track, Tables 2-4).

Imports the kernel `dpmem_ref` for every mechanism part; never re-implements it.
"""

__version__ = "0.1.0"
