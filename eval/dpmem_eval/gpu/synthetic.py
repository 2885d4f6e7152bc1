"""A word-level tokenizer and paper-shaped prompts for random-weight models.

No tokenizer of the paper's models can be downloaded on a lent GPU machine, so the check
builds one in memory over the model's whole vocabulary (word `w<i>` is token i, one token
a word), with a chat template. Prompts then have exactly the token counts of the paper
preset's prompt shapes (memory_plan.PromptShape): a system message, t-1 earlier (query,
response) turns, and the query of turn t.
"""

from __future__ import annotations

import random
from typing import Any

from dpmem_eval.gpu.memory_plan import PromptShape

SPECIALS = ("<pad>", "<unk>", "<eos>", "<|system|>", "<|user|>", "<|assistant|>", "<|end|>")
CHAT_TEMPLATE = ("{% for m in messages %}<|{{ m['role'] }}|> {{ m['content'] }} <|end|> {% endfor %}"
                 "{% if add_generation_prompt %}<|assistant|> {% endif %}")


def word_tokenizer(vocab_size: int) -> Any:
    """A fast tokenizer with `vocab_size` tokens: the specials, then words w7, w8, ..."""
    from tokenizers import Tokenizer, decoders
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import WhitespaceSplit
    from transformers import PreTrainedTokenizerFast

    vocab = {token: i for i, token in enumerate(SPECIALS)}
    vocab.update({f"w{i}": i for i in range(len(SPECIALS), vocab_size)})
    core = Tokenizer(WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = WhitespaceSplit()
    core.decoder = decoders.WordPiece(prefix="##", cleanup=False)
    tokenizer = PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]  # transformers leaves __init__ unannotated
        tokenizer_object=core, pad_token="<pad>", unk_token="<unk>", eos_token="<eos>",
        additional_special_tokens=list(SPECIALS[3:]))
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def _words(rng: random.Random, n: int, vocab_size: int) -> str:
    return " ".join(f"w{rng.randrange(len(SPECIALS), vocab_size)}" for _ in range(n))


def paper_shaped_prompts(shape: PromptShape, turn: int, count: int, vocab_size: int, seed: int = 0) -> list[list[dict[str, str]]]:
    """`count` distinct chat prompts of turn `turn` (1-based) with the full prefix, each
    exactly shape.response_prompt(turn) tokens once rendered (the system message absorbs
    the difference between this template's overhead and the shape's)."""
    rng = random.Random(f"{seed}:{turn}")
    messages_per_prompt = 2 * turn
    other_words = (turn - 1) * (shape.query + shape.max_new) + shape.query
    system_words = shape.response_prompt(turn) - (2 * messages_per_prompt + 1) - other_words
    out = []
    for _ in range(count):
        messages = [{"role": "system", "content": _words(rng, max(system_words, 1), vocab_size)}]
        for _earlier in range(turn - 1):
            messages.append({"role": "user", "content": _words(rng, shape.query, vocab_size)})
            messages.append({"role": "assistant", "content": _words(rng, shape.max_new, vocab_size)})
        messages.append({"role": "user", "content": _words(rng, shape.query, vocab_size)})
        out.append(messages)
    return out
