"""An OpenAI-compatible /chat/completions endpoint (vLLM, llama.cpp server, a hosted API) as a
`Backend`, over httpx (imported when this backend is chosen; extra `agent`)."""

from __future__ import annotations

from collections.abc import Sequence

from dpmem_ref.channel.protocol import DecodingConfig, Messages
from dpmem_ref.core.errors import InputError


class OpenAIBackend:
    """POST {url}/chat/completions for each message list of a batch."""

    def __init__(self, url: str, model: str, timeout_s: float = 120.0) -> None:
        try:
            import httpx
        except ImportError:
            raise InputError("--llm", "httpx for openai: (pip install 'dpmem-ref[agent]')", "no module httpx") from None
        self.model_id = model
        self.url = url.rstrip("/") + "/chat/completions"
        self._httpx = httpx
        self._client = httpx.Client(timeout=timeout_s)

    def generate(self, batch: Sequence[Messages], decoding: DecodingConfig) -> list[tuple[str, int]]:
        out = []
        for messages in batch:
            body = {
                "model": self.model_id,
                "messages": messages,
                "max_tokens": decoding.max_new_tokens,
                "temperature": decoding.temperature,
                "top_p": decoding.top_p,
                "seed": decoding.seed,
            }
            try:
                response = self._client.post(self.url, json=body)
            except self._httpx.HTTPError as error:
                raise InputError("--llm", "a reachable OpenAI-compatible endpoint", type(error).__name__) from None
            if response.status_code != 200:
                raise InputError("--llm", "an OpenAI-compatible endpoint answering 200", response.status_code)
            try:
                data = response.json()
                text = str(data["choices"][0]["message"]["content"] or "")
                tokens = int((data.get("usage") or {}).get("completion_tokens") or len(text.split()))
            except (ValueError, KeyError, IndexError, TypeError, AttributeError):
                raise InputError("--llm", "an OpenAI chat completion (choices[0].message.content)", "another answer") from None
            out.append((text, tokens))
        return out

    def close(self) -> None:
        self._client.close()
