"""LLM realizer hook (paper, Appendix C.2 S2): rewrites wording only.

The template realizer is the default. `llm_rewrite_pair` takes any object with a
`generate(prompts: list[str]) -> list[str]` method (the pipeline's generation backend) and
rewrites the *text* of each memory item; tags, positions, groups, queries and gold are kept
from the specification, so structure never comes from the LLM. An item shared by M and M'
is rewritten once and used on both sides, so "equal outside I_a" still holds by
construction. The rewritten pair is re-validated (S3); a failing rewrite is reported in
`validation`, never silently accepted.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Protocol

from dpmem_eval.data.records import MemoryItem, PairRecord, Store
from dpmem_eval.data.validation import validate_pair

REWRITE_PROMPT = (
    "Rewrite the following first-person memory sentence in different, natural wording. "
    "Keep every fact, keep it in the first person, do not add facts, and answer with the "
    "sentence only.\n\nSentence: {text}"
)


class Generator(Protocol):
    def generate(self, prompts: list[str]) -> list[str]: ...


def llm_rewrite_pair(pair: PairRecord, generator: Generator) -> PairRecord:
    """`pair` with every item's text rewritten by `generator` (one batched call)."""
    texts = sorted({item.text for item in pair.store_m + pair.store_m_prime})
    outputs = generator.generate([REWRITE_PROMPT.format(text=t) for t in texts])
    if len(outputs) != len(texts):
        raise ValueError(f"generator returned {len(outputs)} outputs for {len(texts)} prompts")
    rewritten = {t: " ".join(o.split()) or t for t, o in zip(texts, outputs, strict=True)}

    def side(store: Store) -> Store:
        return tuple(MemoryItem(i.tags, rewritten[i.text], f"{i.source}+llm-rewrite") for i in store)

    out = replace(pair, store_m=side(pair.store_m), store_m_prime=side(pair.store_m_prime))
    return replace(out, validation=validate_pair(out))
