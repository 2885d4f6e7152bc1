"""Stages of a run: select pairs, build conditioning, generate, audit, judge, report.

Each stage writes its result under the results directory so a later stage can be rerun
alone (`dpmem-eval audit|judge|report --out DIR`):

    transcripts-<model>.jsonl   one line per (method, pair, side, seed) transcript
    traces.jsonl                kernel charge traces of the DP-MemView variants (Table 4)
    audit.json                  auditor metrics per model, method, track and prefix length
    judge.json                  U, tRec, Unsup per model, method and track
    table2.*, table3.*, table4.*, plots/*.png, run.json
"""

from __future__ import annotations

import gzip
import json
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpmem_eval.pipeline import kernel_runs as K
from dpmem_eval.pipeline import methods as M
from dpmem_eval.pipeline.config import RunConfig
from dpmem_ref.channel.prompt import TurnConditioning, build_messages, window

if TYPE_CHECKING:
    from dpmem_eval.pipeline.auditor import Encoder
    from dpmem_eval.pipeline.generation import CachedGenerator
    from dpmem_eval.pipeline.judge import Judge

SPLITS = ("train", "validation", "test")


def model_slug(model: str) -> str:
    return "".join(c if c.isalnum() or c in "-." else "_" for c in model.split("/")[-1])


# --- data ----------------------------------------------------------------------------------


def load_pairs(config: RunConfig, with_origin: bool = False) -> Any:
    """The selected PairedMem pairs and transfer pairs for this configuration, in a fixed
    order: per attribute and split, the first n by pair id (pair-level split of the data).
    with_origin: (pairs, corpora), corpora = "full" | "excerpt" | None (no transfer built, or
    a --data-dir whose datacard does not say)."""
    from dpmem_eval.data import build_dataset, load_dataset

    if config.data_dir:
        dataset = load_dataset(config.data_dir)
    else:
        dataset = build_dataset(seed=config.data_seed, corpora_dir=config.corpora_dir,
                                transfer=bool(config.transfer_pairs is None or config.transfer_pairs > 0))
    corpora = dict(dataset.transfer_stats).get("corpora")
    wanted = {"train": config.train_pairs, "validation": config.validation_pairs, "test": config.test_pairs,
              "transfer": config.transfer_pairs}
    pools = {"train": dataset.split("train"), "validation": dataset.split("validation"), "test": dataset.split("test"),
             "transfer": tuple(dataset.transfer)}
    chosen = []
    for split, pool in pools.items():
        limit = wanted[split]
        if limit == 0:
            continue
        by_attribute: dict[str, list[Any]] = {}
        for pair in sorted(pool, key=lambda p: p.pair_id):
            by_attribute.setdefault(pair.attribute, []).append(pair)
        for attribute in sorted(by_attribute):
            chosen.extend(by_attribute[attribute] if limit is None else by_attribute[attribute][:limit])
    return (chosen, corpora) if with_origin else chosen


def split_of(pair: Any) -> str:
    return "transfer" if pair.track == "transfer" else pair.split


# --- conditioning --------------------------------------------------------------------------


@dataclass
class Transcript:
    method: str
    pair_id: str
    attribute: str
    split: str
    side: str
    seed: int
    conditioning: tuple[TurnConditioning, ...]
    responses: list[str] = field(default_factory=list)
    ledger_target: float = 0.0
    reconstructed_target: float = 0.0
    controls: tuple[Any, ...] = ()

    def key(self) -> tuple[str, str, str, int]:
        return (self.method, self.pair_id, self.side, self.seed)

    def to_json(self, model: str) -> dict[str, Any]:
        return {"model": model, "method": self.method, "pair_id": self.pair_id, "attribute": self.attribute,
                "split": self.split, "side": self.side, "seed": self.seed,
                "queries": [c.query for c in self.conditioning], "kind": [c.kind for c in self.conditioning],
                "conditioning": [list(c.lines) for c in self.conditioning], "responses": self.responses,
                "ledger_target": self.ledger_target, "reconstructed_target": self.reconstructed_target,
                "controls": [_jsonable(c) for c in self.controls]}


def _jsonable(value: Any) -> Any:
    if isinstance(value, Fraction):
        return float(value)
    if isinstance(value, (tuple, list)):
        return [_jsonable(v) for v in value]
    return value


def build_transcripts(config: RunConfig, pairs: Sequence[Any], methods: Sequence[M.MethodSpec],
                      policy: M.PublicPolicy) -> list[Transcript]:
    """Per method, pair, side (and EM seed for stochastic methods): the conditioning of
    every turn, from the kernel (DP-MemView variants) or the baseline rule (Table 8)."""
    out = []
    for method in methods:
        seeds = config.seeds if method.stochastic else (config.seeds[0],)
        for pair in pairs:
            for side in M.SIDES:
                for seed in seeds:
                    if method.kind == "dp":
                        trace = K.kernel_trace(method, pair, side, seed, policy, config.horizon)
                        conditioning = K.dp_conditioning(pair, trace)
                        controls = tuple(t.control for t in trace.turns)
                        ledger = float(trace.final_ledger)
                        recon = math.inf if trace.selector_violates == "C3" else float(trace.final_reconstructed)
                    else:
                        conditioning = M.baseline_conditioning(method, pair, side, policy, config.horizon)
                        controls, ledger, recon = (), 0.0, 0.0
                    out.append(Transcript(method.key, pair.pair_id, pair.attribute, split_of(pair), side, seed,
                                          conditioning, ledger_target=ledger, reconstructed_target=recon,
                                          controls=controls))
    return out


def generate_transcripts(transcripts: Sequence[Transcript], generator: CachedGenerator, config: RunConfig,
                         postprocess: dict[str, Any] | None = None) -> None:
    """Turn-synchronous generation: at turn t every transcript's prompt is (q_t, its
    conditioning at t, its own ordinary prefix tau_<t); all prompts of a turn are batched
    together, deduplicated and cached (generation.CachedGenerator)."""
    postprocess = postprocess or {}
    active = [t for t in transcripts if t.conditioning]
    for turn in range(config.horizon):
        batch = [t for t in active if turn < len(t.conditioning)]
        prompts = []
        for t in batch:
            prefix = tuple((c.query, r) for c, r in zip(t.conditioning[:turn], t.responses[:turn], strict=True))
            prompts.append(build_messages(t.conditioning[turn], window(prefix, config.history_turns)))
        replies = generator.generate(prompts, description=f"turn {turn + 1}/{config.horizon}")
        for t, reply in zip(batch, replies, strict=True):
            fix = postprocess.get(t.method)
            t.responses.append(fix(reply) if fix else reply)


def write_transcripts(path: Path, model: str, transcripts: Sequence[Transcript]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        for t in transcripts:
            handle.write(json.dumps(t.to_json(model), ensure_ascii=False) + "\n")


def read_transcripts(path: Path) -> list[dict[str, Any]]:
    """Rows of a `.jsonl` file, or of its gzip-compressed sibling `<name>.jsonl.gz` when the
    plain file is absent (committed result directories keep the large files compressed)."""
    path = Path(path)
    packed = path.with_name(path.name + ".gz")
    use_packed = not path.exists() and packed.exists()
    with (gzip.open(packed, "rt", encoding="utf-8") if use_packed else open(path, encoding="utf-8")) as handle:
        return [json.loads(line) for line in handle if line.strip()]


# --- audit ---------------------------------------------------------------------------------


def identical_sides(rows: Sequence[dict[str, Any]]) -> bool:
    """True when every pair's M and M' transcripts received identical conditioning (the
    paper's dagger: chance-level distinguishability by construction)."""
    seen: dict[tuple[str, int], dict[str, Any]] = {}
    for row in rows:
        seen.setdefault((row["pair_id"], row["seed"]), {})[row["side"]] = row["conditioning"]
    return all(len(v) == 2 and v["M"] == v["M'"] for v in seen.values())


def audit_model(rows: Sequence[dict[str, Any]], encoder: Encoder, config: RunConfig, attributes: Sequence[str]) -> dict[str, Any]:
    """Embedding auditor per method; the score-channel diagnostic from exposed controls."""
    from dpmem_eval.pipeline.auditor import Sample, audit, control_features, prefix_features

    by_method: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_method.setdefault(row["method"], []).append(row)
    texts = [r for row in rows for r in row["responses"]]
    encoder.encode(texts)  # one batched pass; memoised per text
    results: dict[str, Any] = {}
    for method, group in by_method.items():
        samples = []
        for row in group:
            if row["responses"]:
                features = prefix_features(encoder.encode(row["responses"]))
            else:  # the score-channel diagnostic releases controls, not responses
                features = control_features([[c[0] if isinstance(c, list) and c and c[0] is not None else 0.0]
                                             for c in row["controls"]])
            samples.append(Sample(row["pair_id"], row["attribute"], row["split"], row["side"], row["seed"], features))
        horizon = min(len(s.features) for s in samples)
        samples = [Sample(s.pair_id, s.attribute, s.split, s.side, s.seed, s.features[:horizon]) for s in samples]
        result = audit(samples, attributes, horizon, seed=config.seed, n_boot=config.n_boot,
                       identical_sides=identical_sides(group) if group[0]["responses"] else False)
        results[method] = {
            "by_prefix": result.by_prefix,
            "ci": {k: {m: list(v) for m, v in d.items()} for k, d in result.ci.items()},
            "identical_sides": result.identical_sides,
            "n_test_pairs": len(result.scored.get("test", [])),
            "n_transfer_pairs": len(result.scored.get("transfer", [])),
        }
    return results


# --- judge ---------------------------------------------------------------------------------


def judge_model(rows: Sequence[dict[str, Any]], pairs_by_id: dict[str, Any], judge: Judge, n_boot: int = 1000) -> dict[str, Any]:
    """U, tRec, Unsup per method and track (test pairs and transfer pairs), seeds averaged
    within a pair side before averaging over pairs (C.5); beside each mean, the per-pair
    values (`per_pair`, sorted by pair id) and a 95% percentile bootstrap CI over pairs
    (`ci`, `n_boot` resamples of the pairs, seed 0). Turn i is judged on the gold record of
    the query asked then: the pair's i-th query, or `row["query_ids"][i]` when the row names
    them (a trajectory that asks queries again, `dpmem-eval long-horizon`)."""
    import numpy as np

    from dpmem_eval.pipeline.judge import JudgeItem

    chosen = [r for r in rows if r["split"] in ("test", "transfer") and r["responses"]]
    items = []
    for row in chosen:
        pair = pairs_by_id[row["pair_id"]]
        gold = {g.query_id: g for g in pair.gold}
        asked = row.get("query_ids") or [q.query_id for q in pair.queries[: len(row["responses"])]]
        behaviours: list[tuple[int, str]] = []
        for index, query_id in enumerate(asked):
            record = gold.get(query_id)
            if record is None:
                continue
            listed = record.target_required if row["side"] == "M" else record.unsupported_target_specific
            behaviours.extend((index, text) for text in listed)
        items.append(JudgeItem(tuple(zip(row["queries"], row["responses"], strict=True)), tuple(behaviours)))
    judgements = judge.judge(items) if items else []
    acc: dict[tuple[str, str], dict[str, dict[str, list[float]]]] = {}
    for row, verdict in zip(chosen, judgements, strict=True):
        track = "transfer" if row["split"] == "transfer" else "pairedmem"
        per_pair = acc.setdefault((row["method"], track), {}).setdefault(row["pair_id"], {"U": [], "tRec": [], "Unsup": []})
        per_pair["U"].append(verdict.utility)
        if verdict.behaviours:
            key = "tRec" if row["side"] == "M" else "Unsup"
            per_pair[key].append(float(np.mean(verdict.behaviours)))
    out: dict[str, Any] = {}
    for (method, track), by_pair in acc.items():
        means: dict[str, Any] = {}
        cis: dict[str, list[float]] = {}
        values_by_key: dict[str, dict[str, float]] = {}
        for key in ("U", "tRec", "Unsup"):
            values = {pid: float(np.mean(v[key])) for pid, v in sorted(by_pair.items()) if v[key]}
            means[key] = float(np.mean(list(values.values()))) if values else float("nan")
            cis[key] = bootstrap_mean_ci(list(values.values()), n_boot)
            values_by_key[key] = values
        out.setdefault(method, {})[track] = {**means, "n_pairs": len(by_pair), "ci": cis, "per_pair": values_by_key}
    return out


def bootstrap_mean_ci(values: Sequence[float], n_boot: int = 1000, seed: int = 0) -> list[float]:
    """95% percentile bootstrap CI of the mean over `values` (pairs); [nan, nan] when empty."""
    import numpy as np

    if not values:
        return [float("nan"), float("nan")]
    data = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, len(data), size=(max(n_boot, 1), len(data)))].mean(axis=1)
    return [float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))]


def pairwise_audit(rows: Sequence[dict[str, Any]], generator: CachedGenerator, seed: int = 0) -> dict[str, Any]:
    """Pairwise LLM auditor on test pairs: accuracy of naming the M transcript (0.5 = chance)."""
    import random

    from dpmem_eval.data.scaffold import ATTRIBUTE_LABELS
    from dpmem_eval.pipeline.judge import pairwise_prompt, parse_choice

    groups: dict[tuple[str, str, int], dict[str, dict[str, Any]]] = {}
    for row in rows:
        if row["split"] == "test" and row["responses"]:
            groups.setdefault((row["method"], row["pair_id"], row["seed"]), {})[row["side"]] = row
    jobs, truth, methods = [], [], []
    for (method, pair_id, s), sides in sorted(groups.items()):
        if len(sides) != 2:
            continue
        m_first = random.Random(f"{seed}:{method}:{pair_id}:{s}").random() < 0.5
        a, b = (sides["M"], sides["M'"]) if m_first else (sides["M'"], sides["M"])
        label = ATTRIBUTE_LABELS.get(sides["M"]["attribute"], sides["M"]["attribute"])
        jobs.append(pairwise_prompt(label, list(zip(a["queries"], a["responses"], strict=True)), list(zip(b["queries"], b["responses"], strict=True))))
        truth.append("A" if m_first else "B")
        methods.append(method)
    replies = generator.generate(jobs, description="pairwise auditor") if jobs else []
    out: dict[str, dict[str, float]] = {}
    for method, answer, reply in zip(methods, truth, replies, strict=True):
        entry = out.setdefault(method, {"correct": 0.0, "n": 0.0, "unparsed": 0.0})
        choice = parse_choice(reply)
        entry["n"] += 1
        entry["correct"] += 1.0 if choice == answer else (0.5 if choice is None else 0.0)
        entry["unparsed"] += 1.0 if choice is None else 0.0
    return {m: {"accuracy": v["correct"] / v["n"], "n": v["n"], "unparsed": v["unparsed"]} for m, v in out.items()}


def pairwise_stage(out: Path, config: RunConfig, cache: Any, timings: dict[str, float]) -> None:
    """The pairwise LLM auditor after every response model is unloaded: one engine for all
    response models' transcripts (or each model judging its own without pairwise_model)."""
    from dpmem_eval.pipeline.backends import DecodingConfig, backend_options, make_backend
    from dpmem_eval.pipeline.batching import close_backend
    from dpmem_eval.pipeline.generation import CachedGenerator

    start = time.perf_counter()
    auditors = {m: config.pairwise_model or m for m in config.models}
    results: dict[str, Any] = {}
    for auditor in dict.fromkeys(auditors.values()):
        backend = make_backend(config.backend, auditor, batch_size=config.batch_size, cache_dir=config.cache_dir,
                               **backend_options(config))
        generator = CachedGenerator(backend, cache, DecodingConfig(max_new_tokens=4, seed=config.seed),
                                    batch_size=config.batch_size, progress=config.progress, token_budget=config.token_budget)
        try:
            for model in (m for m, a in auditors.items() if a == auditor):
                rows = read_transcripts(out / f"transcripts-{model_slug(model)}.jsonl")
                results[model] = pairwise_audit(rows, generator, config.seed)
        finally:
            close_backend(backend)
    from dpmem_eval.readers import write_atomic

    write_atomic(out / "pairwise.json", json.dumps({"auditor": config.pairwise_model or "each response model",
                                                     "results": results}, indent=1))
    timings["pairwise_s"] = round(time.perf_counter() - start, 2)


def timer() -> float:
    return time.perf_counter()
