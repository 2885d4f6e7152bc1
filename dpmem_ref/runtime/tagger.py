"""The tagger: memory text -> the scorer's evidence tags, inside the trusted boundary.

Every tag a slot's vocabulary names (its views' `compatible` and `specific` tags) gets an
exact score in [0, 1]: 1 when a declared keyword rule matches the text, else the quantised
MiniLM cosine similarity between the text and the tag's description (when an encoder is
configured), else 0. A tag is present iff its score >= the declared threshold. The scorer
(u = 0.4 r + 0.4 c + 0.2 s) reads only which tags are present, and its Eq. 6 bound
Delta = 3/5 is proved over *every* tag set a position can hold (one changed position can
carry any tags), so the tagger's choices cannot break it: `dpmem check` still proves Delta.

The tagger sees memory text and is part of the trusted side: its output (tags) goes into
the store only, never to the application, the router, the LLM channel or a log.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from fractions import Fraction

import attrs

from dpmem_ref.core.errors import InputError
from dpmem_ref.interface import Interface
from dpmem_ref.runtime.similarity import Embedder, keyword_pattern, matches


def slot_tags(interface: Interface, slot: str) -> frozenset[str]:
    """Every tag the slot's vocabulary reads (empty for a slot without one)."""
    vocabulary = interface.vocabulary_or_none(slot)
    if vocabulary is None:
        return frozenset()
    return frozenset().union(*(view.compatible | view.specific for view in vocabulary.views))


@attrs.frozen
class Tagger:
    """Keyword rules (tag -> patterns) and an optional embedder, with a threshold in [0, 1]."""

    rules: Mapping[str, tuple[re.Pattern[str], ...]] = attrs.field(factory=dict, repr=False)
    descriptions: Mapping[str, str] = attrs.field(factory=dict, repr=False)
    threshold: Fraction = Fraction(3, 5)
    embedder: Embedder | None = attrs.field(default=None, repr=False)

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.threshold, Fraction) or not 0 < self.threshold <= 1:
            # The number as written in the agent file ("3/2"), not its repr; a non-Fraction by its type.
            found = str(self.threshold) if isinstance(self.threshold, Fraction) else type(self.threshold).__name__
            raise InputError("tagger.threshold", "an exact rational in (0, 1]", found)

    @classmethod
    def from_spec(cls, spec: Mapping[str, object], known: frozenset[str], embedder: Embedder | None) -> Tagger:
        """[tagger] of the agent file: rules = {tag = [keywords]}, threshold, descriptions."""
        from dpmem_ref.core.rational import unit_interval_fraction

        rules: dict[str, tuple[re.Pattern[str], ...]] = {}
        raw_rules = spec.get("rules", {})
        if not isinstance(raw_rules, Mapping):
            raise InputError("tagger.rules", "a table tag -> [keywords]", type(raw_rules).__name__)
        for tag, keywords in raw_rules.items():
            if tag not in known:
                raise InputError(f"tagger.rules.{tag}", "a tag some view of the interface reads", "an unknown tag")
            if not isinstance(keywords, list) or not keywords:
                raise InputError(f"tagger.rules.{tag}", "a non-empty list of keywords", type(keywords).__name__)
            rules[tag] = tuple(keyword_pattern(k, f"tagger.rules.{tag}[{i}]") for i, k in enumerate(keywords))
        descriptions = {tag: tag.replace("-", " ") for tag in known}
        raw_descriptions = spec.get("descriptions", {})
        if not isinstance(raw_descriptions, Mapping):
            raise InputError("tagger.descriptions", "a table tag -> text", type(raw_descriptions).__name__)
        for tag, text in raw_descriptions.items():
            if tag not in known or not isinstance(text, str) or not text:
                raise InputError(f"tagger.descriptions.{tag}", "a known tag with a non-empty text", tag)
            descriptions[tag] = text
        threshold = unit_interval_fraction(spec.get("threshold", "3/5"), "tagger.threshold")
        return cls(rules=rules, descriptions=descriptions, threshold=threshold, embedder=embedder)

    def scores(self, text: str, tags: frozenset[str]) -> dict[str, Fraction]:
        """The exact score in [0, 1] of each tag in `tags` for `text`."""
        ordered = sorted(tags)
        out = {tag: Fraction(1) if matches(self.rules.get(tag, ()), text) else Fraction(0) for tag in ordered}
        if self.embedder is not None and ordered:
            similar = self.embedder.similarities(text, [self.descriptions.get(t, t) for t in ordered])
            out = {tag: max(out[tag], s) for tag, s in zip(ordered, similar, strict=True)}
        return out

    def tag(self, text: str, tags: frozenset[str]) -> frozenset[str]:
        """The tags present in `text`, among the slot's `tags` (score >= threshold)."""
        return frozenset(tag for tag, score in self.scores(text, tags).items() if score >= self.threshold)
