"""PairedMem and transfer-track data (work in progress)."""
