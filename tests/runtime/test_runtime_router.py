"""The free-text router and one source of truth for the auditor.

- keyword rules route, the threshold holds, no match releases the generic view of every
  slot, reads no memory and charges nothing;
- the decision exactly: the best score wins (a keyword hit scores 1, else the encoder's
  similarity), ties go to more keyword hits then the earlier catalogue query, a score equal to
  the threshold routes, an encoder answering for another number of queries and a query that is
  no text are refused;
- the router is public (C4): its decision is a function of the query text and history
  only, the same for any memory;
- the exact auditor audits the very Interface object the runtime serves, and its worst
  case over the catalogue bounds the exact loss of the transcript the router produced.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path

import attrs
import mpmath
import pytest

from dpmem_ref.analysis import replay_transcript, worst_case_loss
from dpmem_ref.audit.check import check_interface
from dpmem_ref.config.load import load_interface_file
from dpmem_ref.core.errors import InputError
from dpmem_ref.core.policy import EMPTY_ITEM
from dpmem_ref.core.transcript import TurnRecord
from dpmem_ref.runtime.router import FreeTextRouter, Route
from dpmem_ref.runtime.similarity import keyword_pattern
from tests.runtime_fixtures import ROOT, FixedEncoder, as_fractions, copy_example, open_runtime

FREE_TEXT = [
    "What should I cook for dinner tonight?",
    "Any advice before my doctor check-up?",
    "Budget tips please",
    "Plan my weeknight evenings",
    "What is the capital of France?",
    "Any cheap meal idea?",
]


def test_keywords_threshold_and_no_match(tmp_path: Path) -> None:
    agent, memory = copy_example(tmp_path)
    runtime = open_runtime(agent, memory, "memory:")
    router = runtime.router
    assert router.route("What should I cook for DINNER?") == Route("affordable-dinner", Fraction(1))
    zero = (Fraction(0), 0)
    # A keyword hit scores exactly 1 whatever the number of hits (which only breaks ties).
    assert router.scores("an affordable dinner meal") == {
        "affordable-dinner": (Fraction(1), 2),
        "checkup-reminder": zero,
        "budget-review": zero,
        "weeknight-plan": zero,
    }
    assert router.route("my doctor appointment").query == "checkup-reminder"
    assert router.route("What is the capital of France?").query is None
    assert router.route("dinnerware shopping").query is None  # whole words only
    before = as_fractions(runtime.remaining("alice", "recipes"))
    turn = runtime.turn("alice", "recipes", "i", "What is the capital of France?")
    generic = {v.slot: v.generic for v in runtime.interface.vocabularies}
    assert turn.route is None and dict(turn.views) == generic and turn.control is None
    assert as_fractions(turn.remaining) == before  # no charge
    scoped, _ = runtime._scope("alice", "recipes")  # noqa: SLF001
    assert scoped.load().releases == ()  # nothing drawn, nothing recorded
    runtime.close()


def test_router_reads_public_inputs_only(tmp_path: Path) -> None:
    agent, memory = copy_example(tmp_path)
    full = open_runtime(agent, memory, "memory:")
    empty = open_runtime(agent, None, "memory:")
    assert FreeTextRouter.reads == ("query_text", "history") and not FreeTextRouter.reads_private
    for text in FREE_TEXT:
        assert full.router.route(text) == empty.router.route(text)  # memory cannot move it
        assert full.turn("alice", "recipes", "i", text).route == empty.turn("alice", "recipes", "i", text).route


@attrs.frozen
class _HistoryRecordingRouter(FreeTextRouter):
    """The keyword router, recording the queries of the history each routing is given."""

    given: list[tuple[str, tuple[str, ...]]] = attrs.field(factory=list)

    def route(self, text: str, history: tuple[TurnRecord, ...] = ()) -> Route:
        self.given.append((text, tuple(record.query for record in history)))
        return super().route(text, history)


def test_the_router_is_given_the_released_history_of_its_scope_only(tmp_path: Path) -> None:
    """What a router may read (C4): the query text and the scope's released history, the
    charged turns of this (user, app) scope in order (their catalogue queries, never the free
    text), nothing of another application's."""
    agent, memory = copy_example(tmp_path)
    runtime = open_runtime(agent, memory, "memory:")
    keywords = runtime.router
    runtime.router = recording = _HistoryRecordingRouter(
        **{field.name: getattr(keywords, field.name) for field in attrs.fields(FreeTextRouter)}
    )
    dinner, budget, joke = FREE_TEXT[0], FREE_TEXT[2], FREE_TEXT[4]
    for app, text in (
        ("recipes", dinner),
        ("recipes", joke),
        ("finance", budget),
        ("recipes", budget),
        ("recipes", dinner),
    ):
        runtime.turn("alice", app, "i", text)
    assert recording.given == [  # the history holds the catalogue queries the turns were routed to
        (dinner, ()),
        (joke, ("affordable-dinner",)),  # a no-match turn releases generic views only: not recorded
        (budget, ()),  # finance's scope: its own history
        (budget, ("affordable-dinner",)),
        (dinner, ("affordable-dinner", "budget-review")),
    ]
    runtime.close()


def test_auditor_audits_the_served_interface(tmp_path: Path) -> None:
    agent, memory = copy_example(tmp_path)
    runtime = open_runtime(agent, memory, "memory:", user_caps=False)
    served = runtime.interface
    assert served is runtime.agent.loaded.interface  # one object: loaded once, served, audited
    assert check_interface(served).ok  # the static check (C1-C6, Delta proved) of that object
    for text in FREE_TEXT * 2:
        runtime.turn("alice", "recipes", "i", text)
    scoped, _ = runtime._scope("alice", "recipes")  # noqa: SLF001
    history = scoped.load().history  # the transcript the router's choices produced
    assert {r.query for r in history} <= {q.name for q in served.queries}
    store = runtime.memory.store("alice")
    group = served.policy.attribute("diabetes").group
    neighbour = store.replace({p: EMPTY_ITEM for p in group})  # M ~_diabetes M'
    worst = worst_case_loss(served, store, neighbour, horizon=len(history))
    assert worst.holds(Fraction(2))
    served_a = replay_transcript(served, store, history)
    served_b = replay_transcript(served, neighbour, history)
    loss = abs(served_a.log_probability - served_b.log_probability)
    assert loss <= worst.worst.upper + mpmath.mpf("1e-30")  # covered by the catalogue worst case
    assert loss > 0  # the transcript does depend on memory (the check is not vacuous)


CATALOGUE = load_interface_file(ROOT / "examples" / "agent" / "interface.toml").interface
NAMES = ("affordable-dinner", "checkup-reminder", "budget-review", "weeknight-plan")  # catalogue order


def encoder_router(similar: Sequence[Fraction], threshold: str = "1/2") -> FreeTextRouter:
    spec = {"keywords": {"affordable-dinner": ["dinner"]}, "threshold": threshold}
    return FreeTextRouter.from_spec(spec, CATALOGUE, FixedEncoder(tuple(similar)))


def test_a_keyword_tie_goes_to_more_hits_then_to_the_earlier_catalogue_query(tmp_path: Path) -> None:
    agent, memory = copy_example(tmp_path)
    runtime = open_runtime(agent, memory, "memory:")
    router = runtime.router
    # One hit each: the earlier catalogue query wins, whichever the text names first.
    assert router.route("my budget before the doctor") == Route("checkup-reminder", Fraction(1))
    assert router.route("weeknight schedule or savings: budget bills") == Route("budget-review", Fraction(1))
    # More hits win over catalogue order at the same exact score 1.
    assert router.route("dinner after my doctor appointment") == Route("checkup-reminder", Fraction(1))
    runtime.close()


def test_the_best_encoder_similarity_routes_when_no_keyword_matches() -> None:
    router = encoder_router([Fraction(3, 10), Fraction(9, 10), Fraction(1, 2), Fraction(0)])
    assert router.scores("a question") == {
        "affordable-dinner": (Fraction(3, 10), 0),
        "checkup-reminder": (Fraction(9, 10), 0),
        "budget-review": (Fraction(1, 2), 0),
        "weeknight-plan": (Fraction(0), 0),
    }
    assert router.route("a question") == Route("checkup-reminder", Fraction(9, 10))
    # A keyword hit scores 1 over any similarity; a similarity above a hit's 0 counts as is.
    assert router.route("dinner, a question") == Route("affordable-dinner", Fraction(1))
    encoder = router.embedder
    assert isinstance(encoder, FixedEncoder)
    assert encoder.asked[0] == ("a question", [q.text for q in CATALOGUE.queries])  # no examples declared


def test_a_score_equal_to_the_threshold_routes() -> None:
    at_half = encoder_router([Fraction(1, 2), Fraction(1, 2) - Fraction(1, 1000), Fraction(0), Fraction(0)])
    assert at_half.route("a question") == Route("affordable-dinner", Fraction(1, 2))
    below = encoder_router([Fraction(1, 2) - Fraction(1, 1000), Fraction(0), Fraction(0), Fraction(0)])
    assert below.route("a question") == Route(None, Fraction(499, 1000))
    at_one = FreeTextRouter.from_spec({"keywords": {"budget-review": ["bills"]}, "threshold": "1"}, CATALOGUE, None)
    assert at_one.route("my bills") == Route("budget-review", Fraction(1))
    assert at_one.route("my savings") == Route(None, Fraction(0))


def test_an_encoder_that_answers_for_another_number_of_queries_is_refused() -> None:
    for similar in ([Fraction(1, 2)] * 3, [Fraction(1, 2)] * 5):
        router = encoder_router(similar)
        with pytest.raises(ValueError, match=r"^zip\(\) argument 2 is (shorter|longer) than argument 1$"):
            router.scores("a question")


@pytest.mark.parametrize(("text", "found"), [(None, "NoneType"), (7, "int"), (b"dinner", "bytes")])
def test_a_query_that_is_no_text_is_refused_naming_its_type(text: object, found: str) -> None:
    router = encoder_router([Fraction(0)] * 4)
    with pytest.raises(InputError) as refused:
        router.route(text)  # type: ignore[arg-type]
    assert str(refused.value) == f"query: expected text, found {found!r}"
    assert refused.value.field == "query"


def test_the_spec_builds_the_router_it_declares() -> None:
    """From [router]: the catalogue's queries in order, each keyword rule under its query, the
    target texts (a query's text then its examples, one space apart), the threshold (1/2 when
    absent) and the encoder given; an absent keywords or examples table declares none."""
    encoder = FixedEncoder((Fraction(0),) * 4)
    spec = {"examples": {"budget-review": ["my bills", "savings plan"]}, "threshold": "3/4"}
    router = FreeTextRouter.from_spec(spec, CATALOGUE, encoder)
    texts = {q.name: q.text for q in CATALOGUE.queries}
    assert router.names == NAMES
    assert router.keywords == {}
    assert router.targets == {**texts, "budget-review": texts["budget-review"] + " my bills savings plan"}
    assert router.threshold == Fraction(3, 4) and router.embedder is encoder
    keyworded = FreeTextRouter.from_spec({"keywords": {"weeknight-plan": ["weeknight", "evening"]}}, CATALOGUE, None)
    assert keyworded.threshold == Fraction(1, 2) and keyworded.targets == texts and keyworded.embedder is None
    assert keyworded.keywords == {
        "weeknight-plan": (keyword_pattern("weeknight", "rule"), keyword_pattern("evening", "rule"))
    }
    assert keyworded.route("an evening plan") == Route("weeknight-plan", Fraction(1))


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"keywords": ["dinner"]}, "router.keywords: expected a table query -> [texts], found 'list'"),
        ({"examples": "dinner"}, "router.examples: expected a table query -> [texts], found 'str'"),
        (
            {"keywords": {"lunch": ["noon"]}},
            f"router.keywords.lunch: expected a catalogue query among {list(NAMES)}, found 'lunch'",
        ),
        (
            {"examples": {"lunch": ["noon"]}},
            f"router.examples.lunch: expected a catalogue query among {list(NAMES)}, found 'lunch'",
        ),
        (
            {"keywords": {"budget-review": "bills"}},
            "router.keywords.budget-review: expected a list of non-empty strings, found 'str'",
        ),
        (
            {"examples": {"budget-review": [""]}},
            "router.examples.budget-review: expected a list of non-empty strings, found 'list'",
        ),
        (
            {"examples": {"budget-review": [7]}},
            "router.examples.budget-review: expected a list of non-empty strings, found 'list'",
        ),
        ({"threshold": "0"}, "router.threshold: expected a number in (0, 1] (0 would route every text), found '0'"),
        ({"threshold": "3/2"}, "router.threshold: expected a number in [0, 1], found '3/2'"),
        ({}, "router: expected keywords, an encoder, or both, found 'neither'"),
    ],
)
def test_a_bad_router_spec_is_refused_in_one_line_naming_its_field(spec: dict[str, object], message: str) -> None:
    with pytest.raises(InputError) as refused:
        FreeTextRouter.from_spec(spec, CATALOGUE, None)
    assert str(refused.value) == message
