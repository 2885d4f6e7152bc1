"""Utility judging (Appendix C.5) and the pairwise LLM privacy auditor.

The judge sees one 16-turn (query, response) transcript and a rubric built from the fixed
gold behaviours of that pair *side*; it never sees the method name or the M/M' label.
It assigns 0-4 for relevance, correctness, actionability and personalization, and 0-4 for
each listed gold behaviour; all scores are divided by 4. U is the mean of the four
holistic scores; tRec is the mean behaviour score over target-required behaviours on M;
Unsup is the mean behaviour score over unsupported target-specific behaviours on M'.

Backends:
- `proxy` (CPU default): a deterministic stand-in that scores each behaviour by embedding
  similarity between response and behaviour description. It is NOT the paper's judge
  (Claude Sonnet 4.6) and every table produced with it says so.
- `local`: an instruct model through the generation interface (`generation.py`).
- `openai`: any OpenAI-compatible chat-completions endpoint given by URL (vLLM server,
  llama.cpp server, a hosted API); the key, if any, is read from DPMEM_JUDGE_API_KEY.
"""

from __future__ import annotations

import json
import os
import re
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

if TYPE_CHECKING:
    from dpmem_eval.pipeline.auditor import Encoder
    from dpmem_eval.pipeline.backends.base import DecodingConfig, Messages
    from dpmem_eval.pipeline.generation import CachedGenerator

HOLISTIC = ("relevance", "correctness", "actionability", "personalization")


@dataclass(frozen=True)
class JudgeItem:
    """One blinded judging request: the transcript and the side's behaviour checklist."""

    turns: tuple[tuple[str, str], ...]  # (query, response)
    behaviours: tuple[tuple[int, str], ...]  # (turn index, behaviour description)


@dataclass(frozen=True)
class Judgement:
    holistic: dict[str, float]  # normalised to [0, 1]
    behaviours: tuple[float, ...]  # normalised, aligned with JudgeItem.behaviours
    parse_ok: bool = True

    @property
    def utility(self) -> float:
        return float(np.mean([self.holistic[k] for k in HOLISTIC]))


RUBRIC = """You are grading an assistant's answers to a user. You do not know how the assistant was configured.
Score each criterion from 0 (absent/poor) to 4 (excellent):
- relevance: answers address the questions asked
- correctness: answers are accurate and safe
- actionability: answers give concrete, usable steps
- personalization: answers are tailored to the user rather than generic
Then score each listed behaviour from 0 (not shown) to 4 (clearly shown) in the answer to its turn.
Reply with JSON only: {"relevance": n, "correctness": n, "actionability": n, "personalization": n, "behaviours": [n, ...]}"""


def judge_prompt(item: JudgeItem) -> list[dict[str, str]]:
    lines = []
    for index, (query, response) in enumerate(item.turns, start=1):
        lines.append(f"Turn {index}\nUser: {query}\nAssistant: {response}")
    checklist = "\n".join(f"{n}. (turn {turn + 1}) {text}" for n, (turn, text) in enumerate(item.behaviours, start=1))
    user = "Transcript:\n" + "\n\n".join(lines) + "\n\nBehaviours to score:\n" + (checklist or "(none)")
    return [{"role": "system", "content": RUBRIC}, {"role": "user", "content": user}]


def parse_judgement(text: str, n_behaviours: int) -> Judgement:
    """Parse the judge's JSON; a malformed reply scores 0 everywhere and is flagged."""
    match = re.search(r"\{.*\}", text, re.DOTALL)
    try:
        # Any: the judge's JSON; a missing or malformed object fails below (caught: parse_ok=False).
        data: Any = json.loads(match.group(0)) if match else None
        holistic = {k: min(max(float(data[k]), 0.0), 4.0) / 4 for k in HOLISTIC}
        raw = list(data.get("behaviours", []))
        values = [min(max(float(v), 0.0), 4.0) / 4 for v in raw[:n_behaviours]]
        values += [0.0] * (n_behaviours - len(values))
        return Judgement(holistic, tuple(values), parse_ok=len(raw) >= n_behaviours)
    except (TypeError, ValueError, KeyError, AttributeError):
        return Judgement({k: 0.0 for k in HOLISTIC}, (0.0,) * n_behaviours, parse_ok=False)


class Judge(Protocol):
    """What the judge stage calls: ProxyJudge, ChecklistJudge and GeneratorJudge."""

    @property
    def label(self) -> str: ...

    def close(self) -> None: ...

    def judge(self, items: Sequence[JudgeItem]) -> list[Judgement]: ...


class ProxyJudge:
    """Deterministic embedding-similarity proxy (CPU default; NOT the paper's judge).

    behaviour score = round(4 * clip((cos(response, behaviour) - LOW) / (HIGH - LOW))) / 4
    relevance       = the same map of cos(query, response), averaged over turns
    correctness     = share of non-empty, non-refusal answers (rounded to quarters)
    actionability   = share of answers with a concrete suggestion marker
    personalization = share of answers over 12 words that name a concrete item
    Crude by design: it makes the pipeline runnable on a CPU; its numbers are not the
    paper's judge scores and every table says which judge produced it.
    """

    LOW = 0.15
    HIGH = 0.60
    name = "proxy-embedding-judge"

    REFUSAL = re.compile(r"\b(i'?m sorry|as an ai|i cannot|i can't|i am not able|i'm not able|not equipped)\b", re.I)
    ACTION = re.compile(r"(\b(try|consider|start|make|use|plan|set|keep|aim|choose|add|avoid|prepare|bring|schedule)\b|^\s*[-*\d])", re.I | re.M)
    CONCRETE = re.compile(r"(\d|\b(minutes?|hours?|morning|evening|budget|cost|price|meal|snack|salad|rice|beans|vegetables?|protein|walk|list)\b)", re.I)

    def __init__(self, encoder: Encoder) -> None:
        self.encoder = encoder

    @property
    def label(self) -> str:
        return f"{self.name} ({self.encoder.name}); NOT the paper's Claude Sonnet 4.6 judge"

    def close(self) -> None:
        """Nothing to unload besides the shared encoder (freed by its owner)."""

    def _scale(self, cos: np.ndarray) -> np.ndarray:
        return np.round(4 * np.clip((cos - self.LOW) / (self.HIGH - self.LOW), 0, 1)) / 4

    def judge(self, items: Sequence[JudgeItem]) -> list[Judgement]:
        texts = []
        for item in items:
            for q, r in item.turns:
                texts += [q, r]
            texts += [b for _, b in item.behaviours]
        vectors = self.encoder.encode(texts) if texts else np.zeros((0, 1))
        norms = np.linalg.norm(vectors, axis=1, keepdims=True) if len(vectors) else vectors
        unit = {t: v / (n if n else 1.0) for t, v, n in zip(texts, vectors, norms.reshape(-1) if len(vectors) else [], strict=True)}
        out = []
        for item in items:
            responses = [r for _, r in item.turns]
            rel = self._scale(np.array([float(unit[q] @ unit[r]) for q, r in item.turns]))
            correct = np.mean([1.0 if r.strip() and not self.REFUSAL.search(r) else 0.0 for r in responses])
            action = np.mean([1.0 if self.ACTION.search(r) else 0.0 for r in responses])
            personal = np.mean([1.0 if len(r.split()) > 12 and self.CONCRETE.search(r) else 0.0 for r in responses])
            holistic = {
                "relevance": float(np.mean(rel)),
                "correctness": float(np.round(4 * correct) / 4),
                "actionability": float(np.round(4 * action) / 4),
                "personalization": float(np.round(4 * personal) / 4),
            }
            behaviours = tuple(
                float(self._scale(np.array([float(unit[item.turns[turn][1]] @ unit[text])]))[0])
                for turn, text in item.behaviours
            )
            out.append(Judgement(holistic, behaviours))
        return out


class GeneratorJudge:
    """An instruct model through the cached generation interface (greedy decoding)."""

    name = "llm-judge"

    def __init__(self, generator: CachedGenerator) -> None:
        self.generator = generator

    @property
    def label(self) -> str:
        return f"llm-judge ({self.generator.backend.model_id})"

    def close(self) -> None:
        """Unload the judge model (a local judge must leave the GPU before the next stage)."""
        from dpmem_eval.pipeline.batching import close_backend

        close_backend(self.generator.backend)

    def judge(self, items: Sequence[JudgeItem]) -> list[Judgement]:
        replies = self.generator.generate([judge_prompt(i) for i in items], description="judging")
        return [parse_judgement(r, len(i.behaviours)) for r, i in zip(replies, items, strict=True)]


class OpenAIChatBackend:
    """A generation backend over an OpenAI-compatible /chat/completions endpoint (urllib)."""

    def __init__(self, base_url: str, model: str, timeout: float = 120.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.model_id = f"{model}@{self.base_url}"
        self.model = model
        self.timeout = timeout
        self.load_seconds = 0.0

    def _post(self, messages: list[dict[str, str]], max_tokens: int, temperature: float) -> tuple[str, int]:
        body = json.dumps({"model": self.model, "messages": messages, "max_tokens": max_tokens,
                           "temperature": temperature}).encode()
        headers = {"Content-Type": "application/json"}
        key = os.environ.get("DPMEM_JUDGE_API_KEY")
        if key:
            headers["Authorization"] = f"Bearer {key}"
        url = self.base_url + "/chat/completions"
        request = urllib.request.Request(url, data=body, headers=headers, method="POST")
        with urllib.request.urlopen(request, timeout=self.timeout) as response:
            data = json.loads(response.read().decode())
        text = data["choices"][0]["message"]["content"]
        tokens = int(data.get("usage", {}).get("completion_tokens", 0))
        return text, tokens

    def generate(self, batch: Sequence[Messages], decoding: DecodingConfig) -> list[tuple[str, int]]:
        return [self._post(m, decoding.max_new_tokens, decoding.temperature) for m in batch]


def pairwise_prompt(attribute_label: str, first: Sequence[tuple[str, str]], second: Sequence[tuple[str, str]]) -> list[dict[str, str]]:
    """The pairwise LLM auditor: two transcripts, which one came from the store with the signal."""
    def show(turns: Sequence[tuple[str, str]]) -> str:
        return "\n".join(f"User: {q}\nAssistant: {r}" for q, r in turns)
    user = (f"Two assistants answered the same questions. Exactly one of them had memory suggesting that the user "
            f"has {attribute_label}. Which transcript came from that assistant?\n\n"
            f"Transcript A:\n{show(first)}\n\nTranscript B:\n{show(second)}\n\nAnswer with a single letter, A or B.")
    return [{"role": "user", "content": user}]


def parse_choice(text: str) -> str | None:
    match = re.search(r"\b([AB])\b", text.strip().upper())
    return match.group(1) if match else None
