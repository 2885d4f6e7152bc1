"""Long horizons with the response LLM: tRec, Unsup and the response-level AUC at T = 16..128.

The kernel part (`horizon.measure`) releases each turn's views; here every turn becomes the
prompt the response LLM receives in the CPU preset of `dpmem-eval run` (the query and the
released view texts, `history_turns = 0`: no earlier turns in the prompt), generated with the
same model, decoding and cache (`generation.CachedGenerator`), so a turn already answered by a
cpu-preset run is a cache hit. Then, exactly as `dpmem-eval run` does at T = 16:

- tRec (on M) and Unsup (on M'): the run's judge (by default the checklist judge of the
  committed cpu run, calibrated on that run's RawReadSet train and validation transcripts;
  every table names it and says it is not the paper's judge) on each turn's gold behaviours (the pair's gold record of the query
  asked at that turn, so a query asked eight times is judged eight times), averaged over a
  transcript, over the seeds of a pair side, then over the test pairs (C.5), with a 95%
  percentile bootstrap CI over pairs;
- response AUC: the pipeline's auditor (`auditor.audit`, logistic regression on the train
  pairs' responses, calibrated on validation, macro-AUC on test) fitted on the mean embedding
  of all T responses of a transcript (its last prefix feature).

GenericOnly (the generic view of the query's slot at every turn, Table 8) is the floor tRec
decays toward without reuse: it is generated and judged the same way, once (deterministic).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dpmem_ref.channel.prompt import TurnConditioning, build_messages

Group = tuple[str, bool, int]  # (method key, reuse, T)
GENERIC_ONLY = "generic_only"


@dataclass(frozen=True)
class LongTranscript:
    """One side of one pair under one setting: the query asked and the views released at every turn."""

    group: Group
    pair_id: str
    attribute: str
    split: str
    side: str
    seed: int
    names: tuple[str, ...]  # query id per turn
    conditioning: tuple[TurnConditioning, ...]


def view_conditioning(pair: Any, interface: Any, names: Sequence[str],
                      views: Sequence[tuple[tuple[str, str], ...]]) -> tuple[TurnConditioning, ...]:
    """DP-MemView's prompt inputs: the query text and the released views' public texts only."""
    text = {q.query_id: q.text for q in pair.queries}
    return tuple(
        TurnConditioning(text[name], "views", tuple(interface.vocabulary(slot).view(view).text for slot, view in turn))
        for name, turn in zip(names, views, strict=True)
    )


def generic_conditioning(pair: Any, policy: Any, side: str, names: Sequence[str]) -> tuple[TurnConditioning, ...]:
    """GenericOnly at every turn of the trajectory: the baseline's own conditioning
    (`methods.baseline_conditioning`) over the queries asked, in order."""
    from dpmem_eval.pipeline import methods as M

    by_id = {q.query_id: q for q in pair.queries}
    (generic,) = [m for m in M.MAIN_METHODS if m.key == GENERIC_ONLY]
    return M.baseline_conditioning(generic, pair, side, policy, len(names), asked=[by_id[n] for n in names])


def respond(transcripts: Sequence[LongTranscript], run: Any) -> tuple[list[list[str]], dict[str, Any]]:
    """Every turn's response from the run's first response model (one batched, deduplicated,
    cached pass: the prompts carry no history, so turn order does not matter)."""
    from dpmem_eval.pipeline.batching import close_backend
    from dpmem_eval.pipeline.cache import ResponseCache
    from dpmem_eval.pipeline.generation import response_generator
    from dpmem_eval.pipeline.stages import cache_root

    if run.history_turns != 0:
        raise ValueError("the long-horizon study generates each turn without history (history_turns = 0)")
    model = run.models[0]
    cache = ResponseCache(cache_root(run.cache_dir) / "responses.sqlite")
    generator = response_generator(run, model, cache)
    start = time.perf_counter()
    try:
        prompts = [build_messages(c, ()) for t in transcripts for c in t.conditioning]
        replies = generator.generate(prompts, description="long-horizon turns")
    finally:
        close_backend(generator.backend)
        cache.close()
    out, at = [], 0
    for t in transcripts:
        out.append(replies[at:at + len(t.conditioning)])
        at += len(t.conditioning)
    stats = {"model": model, "backend": run.backend, **generator.stats.as_dict(),
             "wall_s": round(time.perf_counter() - start, 2)}
    return out, stats


def calibration_rows(run: Any, directory: Path) -> list[dict[str, Any]]:
    """The transcripts the checklist judge is calibrated on: RawReadSet's train and validation
    transcripts of a `dpmem-eval run` with the same response model (the committed cpu run), so
    the long-horizon table is judged exactly as that run's Table 2."""
    from dpmem_eval.pipeline.errors import UserError
    from dpmem_eval.pipeline.runner import model_slug, read_transcripts

    path = directory / f"transcripts-{model_slug(run.models[0])}.jsonl"
    if not path.exists() and not path.with_name(path.name + ".gz").exists():
        raise UserError(f"--calibrate-from {directory}: no {path.name}(.gz) (the checklist judge is calibrated on a "
                        "`dpmem-eval run` of the same response model)")
    return read_transcripts(path)


def score(transcripts: Sequence[LongTranscript], responses: Sequence[list[str]], pairs_by_id: dict[str, Any],
          run: Any, attributes: Sequence[str],
          calibration: Sequence[dict[str, Any]] = ()) -> tuple[dict[Group, dict[str, Any]], str]:
    """Per group: tRec and Unsup on the test pairs (with bootstrap CIs: `runner.judge_model`,
    each turn on the gold of the query asked then) and the response AUC. A judge that is
    calibrated (the checklist judge) is fitted on `calibration` first."""
    from dpmem_eval.pipeline import auditor
    from dpmem_eval.pipeline.auditor import Encoder
    from dpmem_eval.pipeline.cache import ResponseCache
    from dpmem_eval.pipeline.runner import judge_model
    from dpmem_eval.pipeline.stages import cache_root, load_encoder, make_judge

    encoder = load_encoder(Encoder, run)
    cache = ResponseCache(cache_root(run.cache_dir) / "responses.sqlite")
    judge = make_judge(run.judge, encoder, run, cache)
    if hasattr(judge, "calibrate"):  # on the calibration run's own pairs (the cpu preset's, transfer included)
        from dataclasses import replace

        from dpmem_eval.pipeline.stages import pairs_by_id as run_pairs

        judge.calibrate(calibration, run_pairs(replace(run, transfer_pairs=0)))
    encoder.encode(sorted({r for rs in responses for r in rs}))  # one batched pass; memoised per text
    groups: dict[Group, list[int]] = {}
    for i, t in enumerate(transcripts):
        groups.setdefault(t.group, []).append(i)
    label_of = {group: f"{group[0]}|{group[1]}|{group[2]}" for group in groups}
    rows = [{"method": label_of[t.group], "pair_id": t.pair_id, "split": t.split, "side": t.side,
             "queries": [c.query for c in t.conditioning], "query_ids": list(t.names), "responses": responses[i]}
            for i, t in enumerate(transcripts) if t.split == "test"]
    try:
        judged = judge_model(rows, pairs_by_id, judge, n_boot=run.n_boot)
    finally:
        label = judge.label
        judge.close()
        cache.close()
    results: dict[Group, dict[str, Any]] = {}
    for group, members in groups.items():
        track = judged[label_of[group]]["pairedmem"]
        metrics: dict[str, Any] = {key: track[key] for key in ("tRec", "Unsup")}
        metrics.update({f"{key}_ci": track["ci"][key] for key in ("tRec", "Unsup")})
        samples = [
            auditor.Sample(transcripts[i].pair_id, transcripts[i].attribute, transcripts[i].split, transcripts[i].side,
                           transcripts[i].seed, auditor.prefix_features(encoder.encode(responses[i]))[-1:])
            for i in members
        ]
        test = auditor.audit(samples, attributes, 1, seed=0, n_boot=200).at("test")
        metrics.update(response_auc=test["auc"], response_auc_lo=test.get("auc_lo"), response_auc_hi=test.get("auc_hi"))
        results[group] = metrics
        print(f"long-horizon: {group[0]} reuse={group[1]} T={group[2]}: tRec {metrics['tRec']:.3f}, "
              f"Unsup {metrics['Unsup']:.3f}, response AUC {test['auc']:.3f}", flush=True)
    return results, label
