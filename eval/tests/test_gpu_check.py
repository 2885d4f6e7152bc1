"""scripts/gpu_check.sh in tiny mode (no CUDA here): the same code path as on a GPU (random-
weight models of the three paper architectures built from config dicts, HFBackend,
CachedGenerator batching by token budget, unload) with tiny configs on the CPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_gpu_check_tiny_mode_end_to_end(tmp_path):
    out = tmp_path / "gpu_check.json"
    env = dict(os.environ, PYTHON=sys.executable)
    result = subprocess.run([str(ROOT / "scripts" / "gpu_check.sh"), "--tiny", "--out", str(out)], capture_output=True,
                            text=True, env=env, timeout=240)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "weights are RANDOM" in result.stderr
    report = json.loads(out.read_text())
    assert report["mode"] == "tiny-cpu" and report["random_weights"] is True
    classes = [a["class"] for a in report["architectures"]]
    assert classes == ["Qwen2ForCausalLM", "LlamaForCausalLM", "Gemma2ForCausalLM"]
    for arch in report["architectures"]:
        assert arch["dtype"] == "bfloat16"
        assert arch["released_after_close"] is True
        assert [t["turn"] for t in arch["turns"]] == [1, 8, 16]
        for turn in arch["turns"]:
            assert turn["generated"] == report["batch"]
            assert turn["new_tokens"] == report["batch"] * report["max_new_tokens"]  # EOS disabled: full length
            assert turn["tokens_per_second"] > 0
        assert arch["turns"][-1]["batches"] > arch["turns"][0]["batches"]  # the token budget splits long prompts
        assert arch["turns"][-1]["prompt_tokens"] > arch["turns"][0]["prompt_tokens"]
        assert arch["projected_table2_generation_hours_hf"] > 0
    assert report["roofline_projection_hours_one_h200"]["total"] > 0
