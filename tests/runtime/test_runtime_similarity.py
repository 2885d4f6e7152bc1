"""Text similarity as exact rationals (`dpmem_ref.runtime.similarity`), without the model:

- `quantise` rounds to the nearest 1/QUANTUM and clamps to [0, 1];
- the encoder-backed embedder takes the cosine of the text's and each target's embedding,
  whatever their lengths (a zero embedding is similar to nothing), through any encoder
  registered under `dpmem.encoders`; the targets (the catalogue's texts) are encoded once;
- `make_embedder` builds it for "minilm" only (the shipped MiniLM, loaded lazily: building
  it reads no model), None for no encoder, and refuses any other name in one line;
- `keyword_pattern` takes a keyword or phrase of 1..200 characters, not blank, and matches it
  as whole words (any run of white space between them) of the lowered text `matches` counts.
- `AgentRuntime.open` builds one embedder for the encoder that [router] or [tagger] names,
  and hands it to the part that names it only (the other keeps its rules alone).

Here a registered stand-in encoder with fixed vectors gives exact expected cosines; the
real MiniLM's similarities are the slow test of `test_runtime_memory`."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from fractions import Fraction
from pathlib import Path

import pytest

import dpmem_ref.runtime.agent as agent_module
from dpmem_ref.channel.registry import ENCODER_GROUP
from dpmem_ref.core.errors import InputError
from dpmem_ref.runtime.router import Route
from dpmem_ref.runtime.similarity import QUANTUM, MiniLMEmbedder, keyword_pattern, make_embedder, matches, quantise
from tests.runtime_fixtures import copy_example, open_runtime

VECTORS = {
    "query": (3.0, 4.0, 0.0, 0.0),  # length 5
    "same direction": (6.0, 8.0, 0.0, 0.0),  # length 10: cosine 1
    "partly": (4.0, 0.0, 3.0, 0.0),  # cosine 12/25
    "opposite": (0.0, -5.0, 0.0, 0.0),  # cosine -4/5: clamped to 0
    "diagonal": (1.0, 1.0, 1.0, 1.0),  # cosine 7/10
    "nothing": (0.0, 0.0, 0.0, 0.0),  # a zero embedding: 0, not NaN
}
TARGETS = ["same direction", "partly", "opposite", "diagonal", "nothing"]


class StandInEncoder:
    """Fixed embeddings by text, keeping every batch it was asked to encode."""

    batches: list[list[str]] = []

    def __init__(self, ref: str) -> None:
        self.ref = ref

    def encode(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        StandInEncoder.batches.append(list(texts))
        return [VECTORS[text] for text in texts]


@pytest.fixture
def stand_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A distribution on sys.path registering the encoder `stand-in` (what a plugin's pyproject does)."""
    info = tmp_path / "stand_in_encoder-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: stand-in-encoder\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{ENCODER_GROUP}]\nstand-in = {__name__}:StandInEncoder\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    StandInEncoder.batches.clear()
    yield


def test_quantise_rounds_to_the_quantum_and_clamps() -> None:
    assert QUANTUM == 1000
    cases = {-0.5: 0, 0.0: 0, 0.0004: 0, 0.0006: Fraction(1, 1000), 0.1234: Fraction(123, 1000), 0.9996: 1, 1.7: 1}
    assert {value: quantise(value) for value in cases} == cases
    assert all(type(quantise(value)) is Fraction for value in cases)


def test_similarities_are_quantised_cosines_of_any_length(stand_in: None) -> None:
    embedder = MiniLMEmbedder("stand-in")
    expected = [Fraction(1), Fraction(12, 25), Fraction(0), Fraction(7, 10), Fraction(0)]
    assert embedder.similarities("query", TARGETS) == expected
    assert embedder.similarities("nothing", TARGETS) == [Fraction(0)] * len(TARGETS)
    assert embedder.similarities("partly", ["query"]) == [Fraction(12, 25)]
    # The catalogue's targets are encoded once per target list; every call encodes its text.
    assert StandInEncoder.batches == [TARGETS, ["query"], ["nothing"], ["query"], ["partly"]]


def test_make_embedder_builds_the_shipped_minilm_without_loading_it() -> None:
    pytest.importorskip("dpmem_eval")  # it registers `minilm` (pip install -e eval)
    assert make_embedder(None) is None
    assert isinstance(make_embedder("minilm"), MiniLMEmbedder)
    assert isinstance(MiniLMEmbedder(), MiniLMEmbedder)  # the default is the registered `minilm`


def test_make_embedder_refuses_any_other_encoder_in_one_line(stand_in: None) -> None:
    for name in ("stand-in", "MiniLM", "mpnet"):
        with pytest.raises(InputError) as refused:
            make_embedder(name)
        assert (
            str(refused.value)
            == f"encoder: expected \"minilm\" (the shipped all-MiniLM-L6-v2) or absent, found '{name}'"
        )


def test_a_keyword_matches_whole_words_of_the_text_in_any_case() -> None:
    pattern = keyword_pattern("Blood  Sugar", "router.keywords.q[0]")
    for text in ("blood sugar", "My BLOOD\tsugar is high", "(blood sugar)", "blood sugar-free"):
        assert matches([pattern], text) == 1, text
    for text in ("bloodsugar", "xblood sugar", "Myblood sugar", "2blood sugar", "blood sugars", "blood sugar2"):
        assert matches([pattern], text) == 0, text
    assert matches([pattern, keyword_pattern("high", "f"), keyword_pattern("low", "f")], "Blood sugar HIGH") == 2


def test_a_keyword_of_up_to_200_characters_is_accepted() -> None:
    longest = "a" * 200
    assert matches([keyword_pattern(longest, "tagger.rules.t[0]")], f"an {longest.upper()}!") == 1


@pytest.mark.parametrize(
    ("keyword", "found"),
    [("", "str"), (" \t\n", "str"), ("a" * 201, "str"), (3, "int"), (["glucose"], "list")],
    ids=["empty", "blank", "201 characters", "a number", "a list"],
)
def test_a_bad_keyword_is_refused_in_one_exact_line(keyword: object, found: str) -> None:
    with pytest.raises(InputError) as refused:
        keyword_pattern(keyword, "tagger.rules.blood-sugar[1]")  # type: ignore[arg-type]
    assert str(refused.value) == (
        f"tagger.rules.blood-sugar[1]: expected a keyword or phrase of 1..200 characters, found '{found}'"
    )


class EverythingSimilar:
    """An embedder that finds every target fully similar to any text: a part holding it routes
    every query and gives every memory item all of its slot's tags."""

    def similarities(self, text: str, targets: Sequence[str]) -> list[Fraction]:
        return [Fraction(1)] * len(targets)


# alice's example memory items, tagged by the tagger's rules alone, then with every tag of
# their slot (what the tagger holding EverythingSimilar finds).
RULE_TAGS = {
    "m1": ["blood-sugar", "medication"],
    "m2": ["exercise"],
    "m3": ["blood-sugar", "carb-counting"],
    "m4": ["tight-budget"],
    "m5": ["debt-repayment"],
    "m6": ["busy-evenings"],
}
SLOT_TAGS = {
    "m1": ["blood-sugar", "exercise", "medication"],
    "m2": ["blood-sugar", "exercise", "medication"],
    "m3": ["blood-sugar", "carb-counting", "debt-repayment", "tight-budget"],
    "m4": ["blood-sugar", "carb-counting", "debt-repayment", "tight-budget"],
    "m5": ["debt-repayment", "tight-budget"],
    "m6": ["busy-evenings"],
}
NO_KEYWORD = "What is the capital of France?"


@pytest.mark.parametrize(
    ("router_names_it", "tagger_names_it"),
    [(True, False), (False, True), (True, True), (False, False)],
    ids=["router", "tagger", "both", "neither"],
)
def test_open_hands_the_encoder_to_the_parts_that_name_it(
    router_names_it: bool, tagger_names_it: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One embedder, built for the encoder named (none when no part names one), and held by
    the router only when [router] names it, by the tagger only when [tagger] names it."""
    agent, memory = copy_example(tmp_path)
    text = agent.read_text()
    for section, names_it in (("[router]\n", router_names_it), ("[tagger]\n", tagger_names_it)):
        if names_it:
            assert section in text
            text = text.replace(section, f'{section}encoder = "minilm"\n', 1)
    agent.write_text(text)
    embedder = EverythingSimilar()
    asked: list[str | None] = []

    def build(ref: str | None) -> EverythingSimilar:  # the shipped MiniLM, never loaded here
        asked.append(ref)
        return embedder

    monkeypatch.setattr(agent_module, "make_embedder", build)
    runtime = open_runtime(agent, memory, "memory:")
    assert asked == (["minilm"] if router_names_it or tagger_names_it else [])
    assert runtime.router.embedder is (embedder if router_names_it else None)
    routed = Route("affordable-dinner", Fraction(1)) if router_names_it else Route(None, Fraction(0))
    assert runtime.router.route(NO_KEYWORD) == routed  # every query similar: the first in catalogue order
    tags = {entry.item_id: sorted(entry.tags) for entry in runtime.memory_items("alice")}
    assert tags == (SLOT_TAGS if tagger_names_it else RULE_TAGS)
    runtime.close()
