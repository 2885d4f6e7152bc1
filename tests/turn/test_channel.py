"""The template channel (dpmem_ref.turn.channel): it restates its conditioning, the released
views' texts (not their names)."""

from __future__ import annotations

from dpmem_ref import (
    SeededRandomSource,
    TemplateChannel,
    View,
    Vocabulary,
    run_interaction,
)
from tests.kernel_fixtures import (
    interface_reading_1,
    make_store,
)


def test_template_channel_restates_its_conditioning():
    channel = TemplateChannel()
    assert channel.respond("dinner?", (("g", "cheap"), ("h", "quick")), ()) == (
        "Answer to 'dinner?' following [g: cheap; h: quick]"
    )
    assert channel.respond("dinner?", (), ()) == "Answer to 'dinner?' following [no memory conditioning]"


def test_the_channel_sees_view_texts_not_names():
    import attrs

    vocabularies = (
        Vocabulary("g", (View("g.gen", "generic advice"), View("g.v1", "cheap dinners")), "g.gen"),
        Vocabulary("h", (View("h.gen"), View("h.v1")), "h.gen"),
    )
    interface = attrs.evolve(interface_reading_1(), vocabularies=vocabularies)
    state = run_interaction(interface, ["q"], make_store(), SeededRandomSource(0), channel=TemplateChannel())
    view = state.history[0].views[0][1]
    expected = {"g.gen": "generic advice", "g.v1": "cheap dinners"}[view]
    assert state.history[0].response == f"Answer to 'q' following [g: {expected}]"
