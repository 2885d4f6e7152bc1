"""The blinded utility judge (C.5): prompt, parsing, proxy scoring, OpenAI-compatible
endpoint (against a local HTTP server on 127.0.0.1, no network), and the pairwise auditor."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import numpy as np
import pytest

from conftest import make_pair
from dpmem_eval.pipeline.backends import DecodingConfig, EchoBackend
from dpmem_eval.pipeline.cache import ResponseCache
from dpmem_eval.pipeline.generation import CachedGenerator
from dpmem_eval.pipeline.judge import (
    HOLISTIC,
    GeneratorJudge,
    JudgeItem,
    OpenAIChatBackend,
    ProxyJudge,
    judge_prompt,
    pairwise_prompt,
    parse_choice,
    parse_judgement,
)
from dpmem_eval.pipeline.runner import judge_model, pairwise_audit

ITEM = JudgeItem(turns=(("Suggest a dinner.", "Try lentil soup with vegetables; it takes 20 minutes."),),
                 behaviours=((0, "suggests low-glycemic dinners"),))


def test_judge_prompt_is_blind_to_method_and_store():
    text = json.dumps(judge_prompt(ITEM))
    for forbidden in ("DP-MemView", "RawReadSet", "M'", "store", "memory"):
        assert forbidden not in text
    assert "suggests low-glycemic dinners" in text and "Suggest a dinner." in text


def test_parse_judgement_normalises_and_flags_bad_replies():
    ok = parse_judgement('Sure: {"relevance": 4, "correctness": 3, "actionability": 2, "personalization": 1, "behaviours": [4]}', 1)
    assert ok.parse_ok and ok.holistic == {"relevance": 1.0, "correctness": 0.75, "actionability": 0.5, "personalization": 0.25}
    assert ok.behaviours == (1.0,) and ok.utility == pytest.approx(0.625)
    bad = parse_judgement("no json here", 2)
    assert not bad.parse_ok and bad.behaviours == (0.0, 0.0) and bad.utility == 0.0


class BagOfWords:
    """A deterministic stand-in encoder: hashed bag of words."""

    name = "bag-of-words"

    def encode(self, texts):
        out = np.zeros((len(texts), 64))
        for i, text in enumerate(texts):
            for word in text.lower().replace(";", " ").replace(".", " ").split():
                out[i, hash(word) % 64] += 1.0
        return out


def test_proxy_judge_is_deterministic_and_labelled_as_a_proxy():
    judge = ProxyJudge(BagOfWords())
    a, b = judge.judge([ITEM]), judge.judge([ITEM])
    assert a == b
    assert set(a[0].holistic) == set(HOLISTIC) and all(0 <= v <= 1 for v in a[0].holistic.values())
    assert "NOT the paper's" in judge.label


def test_judge_model_computes_u_trec_unsup_per_track():
    pair = make_pair()
    rows = []
    for side, reply in (("M", "low-glycemic dinners with lentils"), ("M'", "pasta")):
        rows.append({"method": "x", "pair_id": pair.pair_id, "split": "test", "side": side, "seed": 0,
                     "queries": [q.text for q in pair.queries], "responses": [reply] * 4})
    out = judge_model(rows, {pair.pair_id: pair}, ProxyJudge(BagOfWords()))["x"]["pairedmem"]
    assert out["n_pairs"] == 1 and 0 <= out["U"] <= 1
    assert out["tRec"] >= out["Unsup"]


class _Handler(BaseHTTPRequestHandler):
    requests: list[dict] = []

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Handler.requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
        reply = {"choices": [{"message": {"content": '{"relevance": 4, "correctness": 4, "actionability": 3, '
                                                     '"personalization": 2, "behaviours": [3]}'}}],
                 "usage": {"completion_tokens": 20}}
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def test_openai_compatible_endpoint_judge(tmp_path, monkeypatch):
    server = HTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        monkeypatch.setenv("DPMEM_JUDGE_API_KEY", "secret")
        backend = OpenAIChatBackend(f"http://127.0.0.1:{server.server_port}/v1", "judge-model")
        judge = GeneratorJudge(CachedGenerator(backend, ResponseCache(tmp_path / "c.sqlite"),
                                               DecodingConfig(max_new_tokens=64), progress=False))
        verdict = judge.judge([ITEM])[0]
        assert verdict.parse_ok and verdict.holistic["actionability"] == 0.75 and verdict.behaviours == (0.75,)
        sent = _Handler.requests[-1]
        assert sent["path"] == "/v1/chat/completions" and sent["auth"] == "Bearer secret"
        assert sent["body"]["model"] == "judge-model" and sent["body"]["temperature"] == 0.0
        judge.judge([ITEM])  # cached: no second request
        assert len(_Handler.requests) == 1
    finally:
        server.shutdown()


def test_pairwise_auditor_prompt_and_accuracy(tmp_path):
    assert parse_choice("B.") == "B" and parse_choice("maybe") is None
    prompt = pairwise_prompt("type-2 diabetes", [("q", "a")], [("q", "b")])
    assert "Transcript A" in prompt[0]["content"] and "M'" not in prompt[0]["content"]

    class Knows(EchoBackend):
        def generate(self, batch, decoding):
            # Picks the transcript that mentions sugar: a perfect auditor on this fixture.
            return [("A" if m[0]["content"].split("Transcript B")[0].count("sugar") else "B", 1) for m in batch]

    rows = []
    for i in range(4):
        for side, reply in (("M", "watch sugar"), ("M'", "eat pasta")):
            rows.append({"method": "raw", "pair_id": f"p{i}", "attribute": "diabetes", "split": "test", "side": side,
                         "seed": 0, "queries": ["q"], "responses": [reply]})
    gen = CachedGenerator(Knows(), ResponseCache(tmp_path / "c.sqlite"), DecodingConfig(max_new_tokens=4), progress=False)
    out = pairwise_audit(rows, gen)
    assert out["raw"]["accuracy"] == 1.0 and out["raw"]["n"] == 4
