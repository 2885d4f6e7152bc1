"""S3 pair validation in code (paper, Appendix C.2 S3; C.3 T3).

`validate_pair` returns the list of failures of one pair (empty = passed). Each failure is
`"<check>: <what was found>"`; the checks are:

- scaffold: both stores have the 28 positions; groups are 4-6 positions; I_target matches.
- outside-group: M and M' agree at every position outside I_target.
- target-missing: every position of I_target in M carries target tags and a target cue.
- target-left-in-m-prime: no item of M' carries a target tag, cue, name or synonym.
- target-outside-group: no position of M outside I_target carries target evidence
  (otherwise the grouping would be incomplete and the guarantee would not cover it).
- non-target-lost: at an overlapping position, the partner's evidence is in M and in M'.
- query-leak: no query names an attribute or a direct synonym (any attribute).
- trajectory: 32 queries, two disjoint 16-query blocks of 8 target / 4 neutral / 4
  distractor; target reads touch I_target, the others do not; one gold row per query.
"""

from __future__ import annotations

import re
from functools import cache

from dpmem_eval.data.records import PairRecord
from dpmem_eval.data.scaffold import (
    ATTRIBUTES,
    EVIDENCE_CUES,
    N_POSITIONS,
    NAMES_AND_SYNONYMS,
    OVERLAP_PARTNER,
)
from dpmem_eval.data.templates import EVIDENCE

TARGET_TAGS: dict[str, frozenset[str]] = {
    a: frozenset(t for (pos, attr), (tags, _) in EVIDENCE.items() if attr == a for t in tags)
    for a in ATTRIBUTES
}
"""Scorer tags that are evidence of each attribute (disjoint across attributes)."""


@cache
def _pattern(words: tuple[str, ...]) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
    return re.compile(r"(?<![\w])(?:" + alternatives + r")(?:s|es)?(?![\w])", re.IGNORECASE)


def find_terms(text: str, words: tuple[str, ...]) -> list[str]:
    """The words of `words` occurring in `text` (case-insensitive, whole words, plural ok)."""
    return [m.group(0) for m in _pattern(words).finditer(text)]


def cues(text: str, attribute: str) -> list[str]:
    """Evidence cues of `attribute` in `text`."""
    return find_terms(text, EVIDENCE_CUES[attribute])


def names(text: str, attribute: str) -> list[str]:
    """Names and direct synonyms of `attribute` in `text`."""
    return find_terms(text, NAMES_AND_SYNONYMS[attribute])


def validate_pair(pair: PairRecord, *, check_text_cues: bool = True) -> tuple[str, ...]:
    """Run every S3 check on `pair`; return the failures (empty tuple = passed).

    `check_text_cues=False` skips the requirement that every target position's *text* in M
    carries a cue word (used nowhere by default; kept for realizers with free wording)."""
    failures: list[str] = []
    target = pair.attribute
    groups = pair.group_map
    i_target = set(pair.target_positions)
    m, mp = pair.store_m, pair.store_m_prime

    # scaffold
    if len(m) != N_POSITIONS or len(mp) != N_POSITIONS:
        failures.append(f"scaffold: stores have {len(m)} and {len(mp)} positions, expected {N_POSITIONS}")
        return tuple(failures)
    for a, group in sorted(groups.items()):
        if not 4 <= len(group) <= 6 or not all(1 <= i <= N_POSITIONS for i in group):
            failures.append(f"scaffold: group of {a} is {list(group)}, expected 4-6 positions in 1..{N_POSITIONS}")
    if tuple(sorted(groups.get(target, ()))) != tuple(sorted(i_target)):
        failures.append(f"scaffold: target_positions {sorted(i_target)} differ from the group of {target}")

    # outside-group
    for i in range(1, N_POSITIONS + 1):
        if i not in i_target and m[i - 1] != mp[i - 1]:
            failures.append(f"outside-group: position {i} differs between M and M' outside I_{target}")

    # target-missing / target-outside-group
    for i in range(1, N_POSITIONS + 1):
        item = m[i - 1]
        has_tags = bool(TARGET_TAGS[target] & set(item.tags))
        has_cue = bool(cues(item.text, target))
        if i in i_target:
            if not has_tags:
                failures.append(f"target-missing: position {i} of M has no {target} tag")
            if check_text_cues and not has_cue:
                failures.append(f"target-missing: position {i} of M has no {target} cue in {item.text!r}")
        elif has_tags or has_cue:
            failures.append(f"target-outside-group: position {i} of M carries {target} evidence outside I_{target}")

    # target-left-in-m-prime
    for i in range(1, N_POSITIONS + 1):
        item = mp[i - 1]
        left_tags = sorted(TARGET_TAGS[target] & set(item.tags))
        left_words = cues(item.text, target) + names(item.text, target)
        if left_tags or left_words:
            failures.append(f"target-left-in-m-prime: position {i} of M' keeps {left_tags + left_words}")

    # non-target-lost
    if pair.overlap_partner is not None:
        partner, shared = OVERLAP_PARTNER[target]
        if partner != pair.overlap_partner or shared not in i_target or shared not in groups.get(partner, ()):
            failures.append(f"scaffold: overlap with {pair.overlap_partner} does not share position {shared}")
        else:
            for side, store in (("M", m), ("M'", mp)):
                item = store[shared - 1]
                if not TARGET_TAGS[partner] & set(item.tags) or not cues(item.text, partner):
                    failures.append(f"non-target-lost: {partner} evidence missing at shared position {shared} of {side}")

    # query-leak
    for q in pair.queries:
        for a in ATTRIBUTES:
            found = names(q.text, a)
            if found:
                failures.append(f"query-leak: query {q.query_id} names {a} ({found[0]!r})")

    failures.extend(_trajectory_failures(pair, i_target))
    return tuple(failures)


def _trajectory_failures(pair: PairRecord, i_target: set[int]) -> list[str]:
    failures: list[str] = []
    if len(pair.queries) != 32:
        failures.append(f"trajectory: {len(pair.queries)} queries, expected 32")
    texts = [q.text for q in pair.queries]
    if len(set(texts)) != len(texts):
        failures.append("trajectory: a query text repeats, so the blocks are not disjoint")
    for block in (1, 2):
        kinds = [q.kind for q in pair.queries if q.block == block]
        counts = tuple(kinds.count(k) for k in ("target", "neutral", "distractor"))
        if counts != (8, 4, 4):
            failures.append(f"trajectory: block {block} has target/neutral/distractor {counts}, expected (8, 4, 4)")
    for q in pair.queries:
        touches = bool(i_target & set(q.read_positions))
        if (q.kind == "target") != touches:
            failures.append(f"trajectory: {q.kind} query {q.query_id} reads {list(q.read_positions)}")
    gold_ids = sorted(g.query_id for g in pair.gold)
    if gold_ids != sorted(q.query_id for q in pair.queries):
        failures.append("trajectory: gold rows do not match the queries one to one")
    return failures
