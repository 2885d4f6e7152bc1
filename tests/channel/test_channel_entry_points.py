"""Generators and encoders reach the kernel by entry point, never by the eval package's name:
a third party's registration is found, the prompt it receives is the kernel's Eq. 2 prompt, and
a name nobody registered is one line naming what is registered."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from dpmem_ref.channel import DecodingConfig, Messages, make_channel, make_encoder
from dpmem_ref.channel.prompt import SYSTEM_INSTRUCTION
from dpmem_ref.channel.registry import BACKEND_GROUP, ENCODER_GROUP, make_backend, registered
from dpmem_ref.core.errors import InputError


class ToyBackend:
    """A generator that answers with the system message it was given, and keeps every batch."""

    seen: list[Messages] = []

    def __init__(self, ref: str) -> None:
        self.model_id = ref

    def generate(self, batch: Sequence[Messages], decoding: DecodingConfig) -> list[tuple[str, int]]:
        ToyBackend.seen.extend(batch)
        return [(f" {self.model_id}: {messages[0]['content'].splitlines()[-1]} ", 1) for messages in batch]


def toy_encoder(ref: str) -> str:
    return f"encoder {ref}"


@pytest.fixture
def toy_distribution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A distribution on sys.path registering `toy` in both groups (what a plugin's pyproject does)."""
    info = tmp_path / "toy_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-plugin\nVersion: 0.1\n")
    module = __name__
    (info / "entry_points.txt").write_text(
        f"[{BACKEND_GROUP}]\ntoy = {module}:ToyBackend\n\n[{ENCODER_GROUP}]\ntoy = {module}:toy_encoder\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    ToyBackend.seen.clear()
    yield


def test_a_registered_backend_is_built_by_name_and_gets_the_kernel_prompt(toy_distribution: None) -> None:
    backend = make_backend("toy", "tiny")
    assert isinstance(backend, ToyBackend) and backend.model_id == "tiny"
    from dpmem_ref.channel import BackendChannel

    channel = BackendChannel(backend, seed=3)
    answer = channel.respond("what now?", (("food", "Favour low-GI meals"),), (("earlier?", None, "yes"),))
    assert answer == "tiny: - Favour low-GI meals"
    (messages,) = ToyBackend.seen
    assert messages[0]["content"].startswith(SYSTEM_INSTRUCTION)
    assert messages[1:] == [
        {"role": "user", "content": "earlier?"},
        {"role": "assistant", "content": "yes"},
        {"role": "user", "content": "what now?"},
    ]
    assert channel.decoding == DecodingConfig(max_new_tokens=96, temperature=0.0, seed=3)


def test_a_registered_encoder_is_built_by_name(toy_distribution: None) -> None:
    assert make_encoder("toy") == "encoder toy"


@pytest.mark.parametrize("group", [BACKEND_GROUP, ENCODER_GROUP])
def test_an_unregistered_name_is_one_line_naming_what_is_registered(group: str, toy_distribution: None) -> None:
    with pytest.raises(InputError) as raised:
        registered(group, "nobody-registered-this", "--llm")
    message = str(raised.value)
    assert "\n" not in message and "nobody-registered-this" in message and "toy" in message


def test_the_eval_package_registers_the_defaults() -> None:
    """dpmem-eval's pyproject registers `hf`, `vllm` and `minilm`; the names resolve to its factories."""
    pytest.importorskip("dpmem_eval")
    assert registered(BACKEND_GROUP, "hf", "--llm").__module__ == "dpmem_eval.pipeline.backends"
    assert registered(BACKEND_GROUP, "vllm", "--llm").__module__ == "dpmem_eval.pipeline.backends"
    assert registered(ENCODER_GROUP, "minilm", "encoder").__module__ == "dpmem_eval.pipeline.auditor"


def test_the_kernel_channel_floor_needs_no_eval_for_echo_or_openai() -> None:
    """Building the stand-in and the OpenAI-compatible channel imports no eval module."""
    import subprocess

    code = (
        "import sys\nfrom dpmem_ref.channel import make_channel\n"
        "make_channel('echo'); make_channel('openai:http://127.0.0.1:9/v1#m')\n"
        "print(sorted(m for m in sys.modules if m.startswith('dpmem_eval')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "[]"
    assert make_channel("echo").respond("q", (("s", "A"),), ()) == "A"
