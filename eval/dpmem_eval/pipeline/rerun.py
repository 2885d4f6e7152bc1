"""`dpmem-eval audit | judge | report --out DIR`: rerun one stage of an earlier run from its
saved results (transcripts, traces, audit.json, judge.json), then rebuild the tables."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def _stage_handler(stage: str):
    def handler(args: argparse.Namespace) -> int:
        try:
            from dpmem_eval.pipeline.commands import UserError, _pairs_by_id, stage_audit, stage_judge, stage_report
            from dpmem_eval.pipeline.readers import check_config, read_run, read_stage_inputs
            from dpmem_eval.readers import write_atomic

            if not args.out:
                raise UserError("--out DIR is required (the results directory of an earlier run)")
            out = Path(args.out)
            run_file = read_run(out)
            run, config = run_file.data, run_file.config
            from dataclasses import replace

            updates = {}
            if getattr(args, "encoder", None):
                updates["encoder"] = args.encoder
            if getattr(args, "judge", None):
                updates["judge"] = args.judge
            if args.cache_dir:
                updates["cache_dir"] = args.cache_dir
            if args.progress is not None:
                updates["progress"] = args.progress
            if args.seed is not None:
                updates["seed"] = args.seed
            config = check_config(replace(config, **updates).validate())
            inputs = read_stage_inputs(out, config, stage)
            pairs_by_id = _pairs_by_id(config) if stage == "judge" else {}
            timings = dict(run.get("timings", {}))
            if stage == "audit":
                stage_audit(out, config, timings, inputs)
                inputs.pop("audit", None)
            elif stage == "judge":
                _, run["judge"] = stage_judge(out, config, pairs_by_id, timings, inputs)
                inputs.pop("judge", None)
            stage_report(out, config, timings, inputs)
            run["config"] = config.as_dict()
            run["timings"] = timings
            write_atomic(out / "run.json", json.dumps(run, indent=1, default=str))
            print(f"{stage}: updated {out}", file=sys.stderr)
            return 0
        except Exception as exc:
            from dpmem_eval.pipeline.commands import _fail, _input_errors, _is_data_error

            if isinstance(exc, _input_errors()) or _is_data_error(exc):
                return _fail(str(exc))
            raise
    return handler


handle_audit = _stage_handler("audit")
handle_judge = _stage_handler("judge")
handle_report = _stage_handler("report")
