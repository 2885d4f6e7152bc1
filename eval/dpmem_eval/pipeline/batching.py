"""Batches by a token budget, and freeing a model between stages.

A left-padded batch of b prompts whose longest has P tokens holds b x (P + max_new) tokens
of KV cache and prefill activations, so batches are cut by that product (prompts sorted
longest first, so the first prompt of a batch is its longest), not by a fixed count; the
count cap (`batch_size`) still applies. The budget comes from the run configuration
(`token_budget`) or from the backend's memory plan (free device memory after the weights,
gpu/memory_plan.py).
"""

from __future__ import annotations

import gc
from collections.abc import Sequence
from typing import Any


def token_budget_batches(lengths: Sequence[int], max_new_tokens: int, token_budget: int | None,
                         max_batch: int) -> list[list[int]]:
    """Consecutive index groups of `lengths` (prompt tokens, longest first): each group has at
    most `max_batch` prompts and count x (its longest prompt + max_new_tokens) <= token_budget
    (a prompt over the budget on its own forms a group of one). None: count cap only."""
    if max_batch < 1:
        raise ValueError(f"max_batch: expected a positive integer, found {max_batch}")
    groups: list[list[int]] = []
    current: list[int] = []
    longest = 0
    for index, length in enumerate(lengths):
        widest = max(longest, length)
        fits = token_budget is None or (len(current) + 1) * (widest + max_new_tokens) <= token_budget
        if current and (len(current) >= max_batch or not fits):
            groups.append(current)
            current, widest = [], length
        current.append(index)
        longest = widest
    if current:
        groups.append(current)
    return groups


def free_accelerator_memory() -> None:
    """Collect garbage and return cached CUDA blocks to the driver (no-op without CUDA)."""
    gc.collect()
    try:
        import torch
    except ImportError:  # echo-only installs
        return
    if torch.cuda.is_available():
        torch.cuda.synchronize()
        torch.cuda.empty_cache()


def close_backend(backend: Any) -> None:
    """Unload a backend's model (between stages: never two models resident at once)."""
    close = getattr(backend, "close", None)
    if close is not None:
        close()


def oom_errors() -> tuple[type[BaseException], ...]:
    """The exception types of running out of accelerator memory (only these are retried)."""
    try:
        import torch
    except ImportError:
        return ()
    found = getattr(torch, "OutOfMemoryError", None) or getattr(torch.cuda, "OutOfMemoryError", None)
    return (found,) if found is not None else ()
