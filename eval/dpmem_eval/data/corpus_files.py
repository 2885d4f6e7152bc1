"""Where the transfer track's corpora are: the file names inside a corpora directory, their
sources and licences, the excerpt shipped in the package, and which directory a run uses
(`--corpora DIR` > env DPMEM_CORPORA > ../shared/data/corpora > the excerpt). Imports nothing
of the package: corpora.py (loading, filters) and excerpt.py (the excerpt's writer) build on it."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]
DEFAULT_CORPORA = REPO_ROOT.parent / "shared" / "data" / "corpora"

LOCOMO = "locomo/locomo10.json"
CHATDOCTOR = "medical_qa/chatdoctor_genmedgpt5k/chatdoctor5k.json"
MEDICAL_XML = (
    ("mediqa-rqe-train", "medical_qa/mediqa2019/MEDIQA_Task2_RQE/MEDIQA2019-Task2-RQE-TrainingSet-AMIA2016.xml", "chq"),
    ("mediqa-rqe-valid", "medical_qa/mediqa2019/MEDIQA_Task2_RQE/MEDIQA2019-Task2-RQE-ValidationSet-AMIA2016.xml", "chq"),
    ("mediqa-rqe-test", "medical_qa/mediqa2019/MEDIQA_Task2_RQE/MEDIQA2019-Task2-RQE-TestSet-wLabels.xml", "chq"),
    ("mediqa-qa-train1", "medical_qa/mediqa2019/MEDIQA_Task3_QA/MEDIQA2019-Task3-QA-TrainingSet1-LiveQAMed.xml", "QuestionText"),
    ("mediqa-qa-train2", "medical_qa/mediqa2019/MEDIQA_Task3_QA/MEDIQA2019-Task3-QA-TrainingSet2-Alexa.xml", "QuestionText"),
    ("mediqa-qa-valid", "medical_qa/mediqa2019/MEDIQA_Task3_QA/MEDIQA2019-Task3-QA-ValidationSet.xml", "QuestionText"),
    ("mediqa-qa-test", "medical_qa/mediqa2019/MEDIQA_Task3_QA/MEDIQA2019-Task3-QA-TestSet-wLabels.xml", "QuestionText"),
    ("liveqa2017-test", "medical_qa/liveqa_trec2017/TestDataset/TREC-2017-LiveQA-Medical-Test.xml", "MESSAGE"),
)
ED_SITUATIONS = tuple(
    (f"ed-hypemo:{split}", f"empathetic_dialogues/hypemo_situations/{split}.csv")
    for split in ("train", "valid", "test")
)

SOURCES_AND_LICENCES = (
    ("LoCoMo (Maharana et al. 2024), locomo10.json", "background text", "CC BY-NC 4.0"),
    ("EmpatheticDialogues situations (Rashkin et al. 2019), via HypEmo", "debt and job-loss evidence", "CC BY-NC 4.0"),
    ("ChatDoctor GenMedGPT-5k (generated patient messages)", "diabetes and pregnancy evidence", "Apache-2.0 (repository licence)"),
    ("MEDIQA 2019 RQE/QA consumer questions; TREC 2017 LiveQA-Medical", "diabetes and pregnancy evidence",
     "research use (NLM; see corpus README) - stand-ins for Malikeh1375 all-processed"),
)

EXCERPT_DIR = Path(__file__).resolve().parent / "corpus_excerpt"
MARKER = "EXCERPT.md"
LICENCE_FILES = (
    "locomo/LICENSE.txt",
    "empathetic_dialogues/LICENSE_EmpatheticDialogues_CC-BY-NC-4.0.txt",
    "medical_qa/chatdoctor_genmedgpt5k/LICENSE_repo_Apache-2.0.txt",
)


def is_excerpt(corpora: Path) -> bool:
    """True for a directory written by `write_excerpt` (it may lack the unlicensed sources)."""
    return (corpora / MARKER).is_file()


def resolve_corpora(cli_value: str | None) -> Path:
    """Corpora directory: `--corpora DIR` > env DPMEM_CORPORA > ../shared/data/corpora when it
    exists > the excerpt shipped in the package (excerpt.py; outputs say which was used)."""
    if cli_value:
        return Path(cli_value)
    env = os.environ.get("DPMEM_CORPORA")
    if env:
        return Path(env)
    if (DEFAULT_CORPORA / LOCOMO).is_file():
        return DEFAULT_CORPORA
    return EXCERPT_DIR


def corpora_origin(corpora: Path) -> str:
    """"excerpt" for the shipped excerpt (or any directory marked as one), else "full"."""
    return "excerpt" if is_excerpt(corpora) else "full"
