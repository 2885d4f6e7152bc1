"""The LLM channel floor: Eq. 2 and nothing else.

K_LLM(y_t | q_t, v_t, tau_<t) (Eq. 2) receives the application's query, the released view
texts and the ordinary transcript prefix; this floor fixes that signature and everything
that turns it into a model call:

- `protocol`: `LLMChannel` (what the turn loop calls), `Backend` (a batch text generator) and
  `DecodingConfig`;
- `prompt`: the one prompt builder (`build_messages`): what the response model sees;
- `standin`: the dependency-free stand-in channels (`TemplateChannel`, `EchoChannel`);
- `backend`: `BackendChannel`, any `Backend` as an `LLMChannel` through the prompt builder;
- `openai_compat`: `OpenAIBackend`, an OpenAI-compatible chat endpoint (vLLM, llama.cpp) over httpx;
- `registry`: `make_channel("echo|smollm2|hf:ID|openai:URL#MODEL")` and `make_encoder`; other
  generators and encoders register by entry point (groups `dpmem.backends`, `dpmem.encoders`):
  dpmem-eval registers its Hugging Face and vLLM backends and its sentence encoder there, so the
  kernel never names the eval package.

May import: `core/` only (and httpx, lazily, for the OpenAI-compatible backend).
"""

from dpmem_ref.channel.backend import BackendChannel
from dpmem_ref.channel.prompt import TurnConditioning, build_messages, window
from dpmem_ref.channel.protocol import Backend, DecodingConfig, LLMChannel, Messages
from dpmem_ref.channel.registry import make_channel, make_encoder
from dpmem_ref.channel.standin import EchoChannel, TemplateChannel

__all__ = [
    "Backend",
    "BackendChannel",
    "DecodingConfig",
    "EchoChannel",
    "LLMChannel",
    "Messages",
    "TemplateChannel",
    "TurnConditioning",
    "build_messages",
    "make_channel",
    "make_encoder",
    "window",
]
