"""`dpmem-eval data build | show | export-interface`: PairedMem and the transfer track (paper, Appendix C.1-C.3)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from dpmem_eval.cli.errors import fail
from dpmem_ref.core.exits import EXIT_OK

if TYPE_CHECKING:
    from dpmem_eval.cli.program import Subcommands


def add_data_parser(subparsers: Subcommands) -> None:
    data = subparsers.add_parser("data", help="build or inspect PairedMem and the transfer track")
    sub = data.add_subparsers(dest="data_command", required=True)
    build = sub.add_parser("build", help="generate all data files from a seed",
                           epilog="example: dpmem-eval data build --seed 0 --out data/pairedmem")
    build.add_argument("--seed", type=int, default=0)
    build.add_argument("--out", default="data/pairedmem", help="output directory (default: data/pairedmem)")
    build.add_argument("--corpora", default=None,
                       help="public corpora directory (default: $DPMEM_CORPORA, else ../shared/data/corpora "
                            "when present, else the excerpt shipped with dpmem-eval)")
    build.set_defaults(handler=run_build)
    show = sub.add_parser("show", help="print one pair side by side with its differences highlighted",
                          epilog="example: dpmem-eval data show pm-diabetes-000 --data data/pairedmem")
    show.add_argument("pair_id")
    show.add_argument("--data", default="data/pairedmem", help="directory written by `data build`")
    show.add_argument("--plain", action="store_true", help="plain text markers even if rich is installed")
    show.set_defaults(handler=run_show)
    export = sub.add_parser("export-interface", help="write the evaluation configuration (examples/evaluation.toml)",
                            epilog="example: dpmem-eval data export-interface --out examples/evaluation.toml")
    export.add_argument("--out", default="-", help="file to write (default: standard output)")
    export.set_defaults(handler=run_export_interface)


def run_export_interface(args: argparse.Namespace) -> int:
    from dpmem_eval.data.interface import evaluation_interface_toml
    from dpmem_eval.readers import display, write_atomic

    text = evaluation_interface_toml()
    if args.out == "-":
        sys.stdout.write(text)
        return EXIT_OK
    try:
        write_atomic(Path(args.out), text)
    except OSError as exc:
        return fail(f"cannot write {display(args.out)}: {exc.strerror or type(exc).__name__}")
    print(f"wrote {display(args.out)}")
    return EXIT_OK


def run_build(args: argparse.Namespace) -> int:
    from dpmem_eval.data import build_dataset, write_dataset
    from dpmem_eval.data.export import datacard
    from dpmem_eval.errors import UserError

    start = time.perf_counter()
    try:
        dataset = build_dataset(args.seed, args.corpora)
    except UserError as exc:  # a missing or unreadable corpus file (CorpusError), a bad data file
        return fail(str(exc))
    try:
        paths = write_dataset(dataset, Path(args.out))
    except OSError as exc:
        return fail(f"cannot write to {args.out}: {exc.strerror}")
    seconds = time.perf_counter() - start
    card = datacard(list(dataset.pairedmem + dataset.transfer), args.seed, dict(dataset.transfer_stats))
    pm, tr = card["pairedmem"], card["transfer"]
    print(f"PairedMem: {pm['specifications']} specifications {pm['per_attribute']}, "
          f"overlapping {pm['overlapping']} ({pm['overlapping_fraction']})")
    print(f"S3 validation: {pm['validation']['passed']} passed, {pm['validation']['failed']} failed")
    print(f"selected {pm['selected']} {pm['selected_per_attribute']}, overlapping {pm['selected_overlapping']}, "
          f"reserves {pm['reserves']}, splits {pm['selected_per_split']}")
    if tr.get("corpora") == "excerpt":
        print("transfer: built from the corpus excerpt shipped with dpmem-eval (full corpora not given; "
              "see dpmem_eval/data/corpus_excerpt/EXCERPT.md)")
    print(f"transfer: {tr['pairs']} pairs from {tr['histories']} histories, validation "
          f"{tr['validation']['passed']} passed / {tr['validation']['failed']} failed; "
          f"target text {tr['target_positions_text']}, evidence pools {tr['evidence_pool_sizes']}")
    for path in paths:
        print(f"wrote {path}")
    print(f"built in {seconds:.1f} s")
    return EXIT_OK


def run_show(args: argparse.Namespace) -> int:
    from dpmem_eval.data import load_dataset
    from dpmem_eval.data.scaffold import LAYOUT

    try:
        pair = load_dataset(args.data).pair(args.pair_id)
    except (FileNotFoundError, ValueError) as exc:
        return fail(str(exc))
    except KeyError as exc:
        return fail(str(exc.args[0]))
    header = (f"{pair.pair_id}  track={pair.track}  attribute={pair.attribute}  split={pair.split}  "
              f"template={pair.template_id}  overlap={pair.overlap_partner or '-'}  "
              f"I_target={list(pair.target_positions)}  S3={'pass' if not pair.validation else 'FAIL'}")
    rows = []
    for i in range(1, len(LAYOUT) + 1):
        a, b = pair.item("M", i), pair.item("M'", i)
        rows.append((i, LAYOUT[i - 1], i in pair.target_positions, a, b, a != b))
    use_rich = not args.plain
    if use_rich:
        try:
            from rich.console import Console
            from rich.table import Table
        except ImportError:
            use_rich = False
    if use_rich:
        table = Table(title=header, show_lines=False)
        for column in ("pos", "slot", "M", "M'"):
            table.add_column(column, overflow="fold")
        for i, slot, in_group, a, b, differs in rows:
            style = "bold red" if differs else ("yellow" if in_group else "")
            table.add_row(f"{i}{'*' if in_group else ''}", slot, f"{a.text} [{', '.join(a.tags)}]",
                          f"{b.text} [{', '.join(b.tags)}]" if differs else "(same)", style=style)
        Console().print(table)
    else:
        print(header)
        for i, slot, in_group, a, b, differs in rows:
            mark = ">>" if differs else "  "
            print(f"{mark} {i:2d}{'*' if in_group else ' '} {slot:9s} M : {a.text} [{', '.join(a.tags)}]")
            if differs:
                print(f"{mark}              M': {b.text} [{', '.join(b.tags)}]")
        print("legend: * position in I_target; >> M and M' differ")
    for failure in pair.validation:
        print(f"S3 failure: {failure}")
    print(f"queries: {len(pair.queries)} ({sum(q.kind == 'target' for q in pair.queries)} target)")
    return EXIT_OK
