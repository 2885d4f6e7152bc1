"""Public corpora for the transfer track (paper, Appendix C.3 T2-T3): loading, the
rule-based first-person current-state filter, slot classification and minimal edits.

Nothing here copies corpus files; every sentence keeps a source id that points back into
the corpus (`locomo10:conv-26:D1:3:s0`, `ed-hypemo:train:1234:s0`, `chatdoctor5k:17:s1`, ...).
"""

from __future__ import annotations

import contextlib
import csv
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from dpmem_eval.data.corpus_files import CHATDOCTOR, ED_SITUATIONS, LOCOMO, MEDICAL_XML, corpora_origin
from dpmem_eval.data.scaffold import ATTRIBUTES, SLOTS
from dpmem_eval.data.validation import cues, names
from dpmem_eval.errors import UserError


class CorpusError(UserError):
    """A corpus file is missing or unreadable; the message is one line for the CLI."""




def _require(corpora: Path, relative: str) -> Path:
    path = corpora / relative
    if not path.is_file():
        raise CorpusError(f"missing corpus file {path} (give --corpora DIR or set DPMEM_CORPORA)")
    return path


@contextlib.contextmanager
def _parsing(path: Path) -> Iterator[None]:
    """A corpus file that is not the expected format (truncated JSON, non-UTF-8 bytes, a
    missing field) as one CorpusError line naming the file, not a traceback."""
    try:
        yield
    except (ValueError, KeyError, TypeError, IndexError, AttributeError, ET.ParseError, csv.Error) as exc:
        raise CorpusError(f"corpus file {path}: unreadable or not the expected format ({type(exc).__name__})") from None


_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+")


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_SPLIT.split(" ".join(text.split())) if s.strip()]


# --- T3: the first-person current-state filter --------------------------------------------

_FIRST_PERSON = re.compile(r"\b(i|i'm|i've|im|my|me)\b")
_OTHER_PEOPLE = re.compile(
    r"\b(he|she|him|his|her|hers|they|them|their|we|our|us|you|your)\b|\b(?:my|a|the)\s+(?:dad|father|mom|mother|mum|"
    r"sister|brother|son|daughter|wife|husband|friend|friends|boss|coworker|co-worker|partner|girlfriend|"
    r"boyfriend|kid|kids|child|children|patient|grandma|grandmother|grandpa|uncle|aunt|cousin|neighbou?r|"
    r"roommate|family)\b|\b\d+[- ]year[- ]old\b")
_PAST_OR_RESOLVED = re.compile(
    r"\b(used to|once|years ago|last year|in the past|back then|when i was|paid off|paid it off|finally|"
    r"recovered|no longer|anymore|got a new job|found a job|new job|remember|had been|was able to|got over|"
    r"had|went|was so|were|terminated|when|felt)\b")
_HYPOTHETICAL = re.compile(
    r"\b(if|might|would|could|may|going to|gonna|will|won't|suspect|think|maybe|hope|hoping|wish|whether|"
    r"afraid|worried that|possible|possibly|chance|trying to conceive|i'll|i'd|want|wanna|thinking|planning|hopes)\b|\?")
_METAPHOR = re.compile(r"\b(like a|like an|as if|feel like|feels like|felt like|drowning|buried|sinking)\b")


def current_state_reason(sentence: str) -> str | None:
    """None if `sentence` is a first-person statement about the speaker's current state;
    otherwise the rule that rejects it: not-first-person, other-people, past-or-resolved,
    hypothetical (including questions), metaphor. Rules are lexical and conservative."""
    s = sentence.lower()
    if not _FIRST_PERSON.search(s):
        return "not-first-person"
    if _OTHER_PEOPLE.search(s):
        return "other-people"
    if _PAST_OR_RESOLVED.search(s):
        return "past-or-resolved"
    if _HYPOTHETICAL.search(s):
        return "hypothetical"
    if _METAPHOR.search(s):
        return "metaphor"
    return None


# --- target evidence: attribute statements and their minimal edits (T2) ------------------

ATTRIBUTE_STATEMENT: dict[str, re.Pattern[str]] = {
    "diabetes": re.compile(r"\b(i (am|'m) (a )?diabetic|i (have|was diagnosed with|have been diagnosed with|"
                           r"was recently diagnosed with|have been recently diagnosed with) (type (2|ii) )?diabetes|"
                           r"my (type 2 )?diabetes|my blood sugar|my (sugar|glucose) levels?)\b", re.I),
    "pregnancy": re.compile(r"\b(i (am|'m)( also| currently| now)? pregnant|my pregnancy)\b", re.I),
    "debt": re.compile(r"\b(my debts?|in debt|much debt|credit card debt|card debt|debts are|debt collectors?|"
                       r"owe (the|my|on)|overdraft(ed)?|behind on (my )?(bills|payments|rent|mortgage))\b", re.I),
    "job_loss": re.compile(r"\b(i (just )?(got |was |have been |been )(laid off|fired|let go)|i (just |recently )?"
                           r"lost my job|i('m| am) (now )?(unemployed|jobless|out of work))\b", re.I),
}
EXCLUDED_STATEMENT: dict[str, re.Pattern[str]] = {
    "diabetes": re.compile(r"\b(gestational|type (1|i|one)|retinopathy|neuropathy|ketoacidosis|kidney|prediabet|"
                           r"insipidus)", re.I),
    "pregnancy": re.compile(r"\b(not pregnant|not getting pregnant|getting pregnant|miscarr|terminated|abortion|"
                            r"postpartum|post partum|gave birth|giving birth|delivered)", re.I),
    "debt": re.compile(r"\b(student|home loan|debt free|debt-free|poker)\b", re.I),  # not unsecured hardship
    "job_loss": re.compile(r"\b(quit|resigned|previous job|project|autopilot)\b", re.I),  # voluntary or not a job
}
MINIMAL_EDITS: dict[str, tuple[tuple[str, str], ...]] = {
    "diabetes": (
        (r"\b(i am|i'm) (a )?diabetic\b", r"\1 \2vegetarian"),
        (r"\b(diagnosed with|have) (type (2|ii) )?diabetes\b", r"\1 a vitamin deficiency"),
        (r"\bmy (type 2 )?diabetes\b", "my allergies"),
        (r"\bblood sugar\b", "blood pressure"),
        (r"\b(sugar|glucose) level", "iron level"),
    ),
    "pregnancy": (
        (r"\b(i am|i'm)( also| currently| now)? pregnant\b", r"\1\2 on a new medication"),
        (r"\b(during|in) (my|the) pregnancy\b", "lately"),
        (r"\bmy pregnancy\b", "my treatment"),
        (r"\bthe baby\b", "my health"),
    ),
    "debt": (
        (r"\bcredit card debt\b", "spending"),
        (r"\b(a lot of |so much |too much |some )?debts?\b", "errands"),
        (r"\bbehind on\b", "ahead on"),
        (r"\bowe\b", "spend"),
        (r"\boverdrafted\b", "closed"),
        (r"\boverdraft\b", "account"),
        (r"\bcollectors?\b", "neighbours"),
        (r"\bloans?\b", "plans"),
    ),
    "job_loss": (
        (r"\b(laid off|fired|let go) from (my|a|the) job\b", r"moved to a new team at \2 job"),
        (r"\b(laid off|fired|let go)\b", "moved to a new team"),
        (r"\blost my job\b", "started a new project"),
        (r"\b(unemployed|jobless|out of work)\b", "busy"),
    ),
}


def minimal_edit(sentence: str, attribute: str) -> str:
    """M' side of an evidence sentence: the fixed substitutions of MINIMAL_EDITS, applied in
    order; everything else (topic, structure, other evidence) is kept word for word."""
    out = sentence
    for pattern, replacement in MINIMAL_EDITS[attribute]:
        out = re.sub(pattern, replacement, out, flags=re.I)
    return out[0].upper() + out[1:] if out else out


def tidy(sentence: str) -> str:
    """Cosmetic normalisation of corpus text: capitalise the pronoun i and the first letter,
    strip a leading salutation ("Doctor,", "Hi doctor,"), end with a full stop."""
    s = re.sub(r"^(hi|hello|hey)?\s*,?\s*(doctor|doc)\s*,\s*", "", sentence.strip(), flags=re.I)
    s = re.sub(r"^(also|so|and|but),?\s+", "", s, flags=re.I)
    s = re.sub(r"\bi\b", "I", s)
    s = re.sub(r"\bi'", "I'", s)
    if not s:
        return s
    s = s[0].upper() + s[1:]
    return s if s[-1] in ".!" else s + "."


_BACKGROUND_PAST = re.compile(r"\b(was|were|did|went|saw|got|took|made|had|last|yesterday|ago|visited|"
                              r"painted|finished|started|tried|used)\b", re.I)


@dataclass(frozen=True)
class EvidenceSentence:
    """A first-person, current-state target statement and its minimal edit."""

    source: str
    attribute: str
    text: str
    edited: str


def _medical_texts(corpora: Path) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    path = _require(corpora, CHATDOCTOR)
    with _parsing(path), open(path, encoding="utf-8") as fh:
        for i, row in enumerate(json.load(fh)):
            out.append((f"chatdoctor5k:{row.get('row', i)}", str(row["input"])))
    for name, relative, tag in MEDICAL_XML:
        if not (corpora / relative).is_file() and corpora_origin(corpora) == "excerpt":
            continue  # not redistributable: the excerpt leaves these out (excerpt.py)
        path = _require(corpora, relative)
        with _parsing(path):
            root = ET.parse(path).getroot()
            for j, element in enumerate(root.iter(tag)):
                out.append((f"{name}:{tag}:{j}", "".join(element.itertext())))
    return out


def _ed_texts(corpora: Path) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for name, relative in ED_SITUATIONS:
        path = _require(corpora, relative)
        with _parsing(path), open(path, encoding="utf-8", newline="") as fh:
            for i, row in enumerate(csv.DictReader(fh)):
                out.append((f"{name}:{row.get('row') or i}", str(row["text"])))
    return out


def evidence_pools(corpora: Path) -> tuple[dict[str, list[EvidenceSentence]], dict[str, dict[str, int]]]:
    """Target evidence per attribute (diabetes, pregnancy from medical questions; debt, job
    loss from EmpatheticDialogues situations) and, per attribute, counts of why candidate
    sentences were rejected."""
    texts = {"diabetes": _medical_texts(corpora), "debt": _ed_texts(corpora)}
    texts["pregnancy"] = texts["diabetes"]
    texts["job_loss"] = texts["debt"]
    pools: dict[str, list[EvidenceSentence]] = {}
    rejected: dict[str, dict[str, int]] = {}
    for attribute in ATTRIBUTES:
        seen: set[str] = set()
        pool: list[EvidenceSentence] = []
        reasons: dict[str, int] = {}
        for source, text in texts[attribute]:
            for k, raw in enumerate(sentences(text)):
                if not ATTRIBUTE_STATEMENT[attribute].search(raw):
                    continue
                reason = None
                if EXCLUDED_STATEMENT[attribute].search(raw):
                    reason = "excluded-variant"
                elif not 15 <= len(raw) <= 160:
                    reason = "length"
                else:
                    reason = current_state_reason(tidy(raw))
                sentence = tidy(raw)
                edited = minimal_edit(sentence, attribute)
                if reason is None and (cues(edited, attribute) or names(edited, attribute)):
                    reason = "edit-leaves-signal"
                if reason is None and not cues(sentence, attribute):
                    reason = "no-cue"
                if reason is None and any(cues(sentence, a) for a in ATTRIBUTES if a != attribute):
                    reason = "other-attribute"
                if reason is None and sentence.lower() in seen:
                    reason = "duplicate"
                if reason is not None:
                    reasons[reason] = reasons.get(reason, 0) + 1
                    continue
                seen.add(sentence.lower())
                pool.append(EvidenceSentence(f"{source}:s{k}", attribute, sentence, edited))
        pools[attribute] = sorted(pool, key=lambda e: e.source)
        rejected[attribute] = dict(sorted(reasons.items()))
    return pools, rejected


# --- background: LoCoMo histories ---------------------------------------------------------

SLOT_KEYWORDS: dict[str, re.Pattern[str]] = {
    "health": re.compile(r"\b(health|healthy|doctor|gym|workout|running|run|yoga|exercise|sleep|therapy|"
                         r"hike|hiking|fitness|walk|walks|meditat\w*|swim\w*|energy|body)\b"),
    "food": re.compile(r"\b(cook|cooking|bake|baking|recipe|recipes|dinner|lunch|breakfast|food|meal|meals|"
                       r"eat|eating|coffee|restaurant|pizza|cake|tea)\b"),
    "finance": re.compile(r"\b(money|save|saving|savings|budget|buy|buying|pay|price|afford|expensive|cheap|"
                          r"bank|shop|shopping|store|sell|selling)\b"),
    "work": re.compile(r"\b(work|working|job|career|office|colleague|project|business|company|team|client|"
                       r"school|class|classes|study|studying|course|degree)\b"),
    "schedule": re.compile(r"\b(weekend|weekends|week|tomorrow|tonight|morning|mornings|evening|evenings|"
                           r"schedule|plan|planning|trip|vacation|busy|time|today|month)\b"),
    "household": re.compile(r"\b(home|house|apartment|flat|garden|dog|dogs|cat|cats|pet|pets|room|move|"
                            r"moving|place|backyard|kitchen)\b"),
}


def classify_slot(sentence: str) -> str | None:
    """Slot of a background sentence: the slot with most keyword hits (ties in SLOTS
    order); None when no slot keyword occurs."""
    s = sentence.lower()
    hits = [(len(SLOT_KEYWORDS[slot].findall(s)), -n, slot) for n, slot in enumerate(SLOTS)]
    best = max(hits)
    return best[2] if best[0] > 0 else None


@dataclass(frozen=True)
class BackgroundSentence:
    source: str
    slot: str
    text: str


@dataclass(frozen=True)
class History:
    """One LoCoMo background history: a speaker of one conversation."""

    history_id: str
    sentences: tuple[BackgroundSentence, ...]


def locomo_histories(corpora: Path) -> list[History]:
    """20 histories = 10 LoCoMo conversations x 2 speakers. Each keeps the speaker's own
    sentences that pass the current-state filter, carry no cue of any attribute, and fall
    into a slot."""
    path = _require(corpora, LOCOMO)
    with _parsing(path):
        return _locomo_histories(path)


def _locomo_histories(path: Path) -> list[History]:
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    histories = []
    for sample in data:
        conversation = sample["conversation"]
        for speaker in (conversation["speaker_a"], conversation["speaker_b"]):
            kept: list[BackgroundSentence] = []
            seen: set[str] = set()
            session_keys = sorted((k for k in conversation if re.fullmatch(r"session_\d+", k)),
                                  key=lambda k: int(k.split("_")[1]))
            for key in session_keys:
                for turn in conversation[key]:
                    if turn.get("speaker") != speaker:
                        continue
                    for k, raw in enumerate(sentences(turn.get("text", ""))):
                        sentence = tidy(raw)
                        if not 20 <= len(sentence) <= 140 or not re.match(r"I(\b|')", sentence):
                            continue
                        if _BACKGROUND_PAST.search(sentence):
                            continue
                        if current_state_reason(sentence) is not None:
                            continue
                        if any(cues(sentence, a) or names(sentence, a) for a in ATTRIBUTES):
                            continue
                        slot = classify_slot(sentence)
                        if slot is None or sentence.lower() in seen:
                            continue
                        seen.add(sentence.lower())
                        kept.append(BackgroundSentence(f"locomo10:{sample['sample_id']}:{turn['dia_id']}:s{k}",
                                                       slot, sentence))
            histories.append(History(f"locomo10:{sample['sample_id']}:{speaker}", tuple(kept)))
    return histories
