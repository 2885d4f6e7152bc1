"""The fixed public policy of PairedMem (paper, Appendix C.2 S1 and S4).

Everything in this module is *public* and store-independent: the 28-position layout in six
slots, the protected groups I_a (a base grouping plus one overlap variant per attribute),
the per-slot view vocabularies with their generic views (C1), the query families with their
read sets and relevance r(q, v), and the lexicons used by validation (S3). Routes are a
function of the query family alone: one slot per turn, as in the paper's evaluation.
"""

from __future__ import annotations

from dataclasses import dataclass

ATTRIBUTES: tuple[str, ...] = ("debt", "diabetes", "job_loss", "pregnancy")
"""Protected attributes, sorted; the paper's type-2 diabetes, pregnancy, severe unsecured
debt and recent involuntary job loss."""

ATTRIBUTE_LABELS: dict[str, str] = {
    "diabetes": "type-2 diabetes",
    "pregnancy": "pregnancy",
    "debt": "severe unsecured debt",
    "job_loss": "recent involuntary job loss",
}

SLOTS: tuple[str, ...] = ("health", "food", "finance", "work", "schedule", "household")
"""Six slots. The sixth, `household`, holds home-life memories (living arrangement, home
projects, household spending, chores): pregnancy (preparing a nursery) and debt (cutting
household costs) leave evidence there that fits none of the other five slots, and it gives
every attribute a same-domain distractor slot with non-sensitive content."""


@dataclass(frozen=True)
class Position:
    """One memory position of the fixed scaffold (S1): its 1-based index, slot and role."""

    index: int
    slot: str
    role: str
    base_group: str | None


POSITIONS: tuple[Position, ...] = (
    Position(1, "health", "condition-care", "diabetes"),
    Position(2, "health", "medication", "diabetes"),
    Position(3, "health", "appointments", "pregnancy"),
    Position(4, "health", "symptoms", "pregnancy"),
    Position(5, "health", "fitness", None),
    Position(6, "food", "meal-planning", "diabetes"),
    Position(7, "food", "snacks", "diabetes"),
    Position(8, "food", "food-avoidance", "pregnancy"),
    Position(9, "food", "grocery-shopping", "debt"),
    Position(10, "food", "cooking", None),
    Position(11, "finance", "card-balance", "debt"),
    Position(12, "finance", "repayments", "debt"),
    Position(13, "finance", "monthly-bills", "debt"),
    Position(14, "finance", "income", "job_loss"),
    Position(15, "finance", "savings", None),
    Position(16, "work", "employment-status", "job_loss"),
    Position(17, "work", "job-search", "job_loss"),
    Position(18, "work", "role", None),
    Position(19, "work", "colleagues", None),
    Position(20, "work", "commute", None),
    Position(21, "schedule", "mornings", "diabetes"),
    Position(22, "schedule", "weekdays", "job_loss"),
    Position(23, "schedule", "evenings", None),
    Position(24, "schedule", "weekends", None),
    Position(25, "household", "home-projects", "pregnancy"),
    Position(26, "household", "living-situation", None),
    Position(27, "household", "household-spending", "debt"),
    Position(28, "household", "chores", None),
)
N_POSITIONS = len(POSITIONS)
LAYOUT: tuple[str, ...] = tuple(p.slot for p in POSITIONS)
"""positions[i-1] = slot of position i; the `positions` array of the interface TOML."""

BASE_GROUPS: dict[str, tuple[int, ...]] = {
    a: tuple(p.index for p in POSITIONS if p.base_group == a) for a in ATTRIBUTES
}
"""Base (disjoint) protected groups I_a: diabetes 5, pregnancy 4, debt 5, job loss 4."""

OVERLAP_PARTNER: dict[str, tuple[str, int]] = {
    "diabetes": ("debt", 9),  # cheap groceries chosen for low sugar content
    "pregnancy": ("diabetes", 7),  # snacks: avoiding sugar and unsafe foods
    "debt": ("job_loss", 14),  # income: benefits barely cover card payments
    "job_loss": ("pregnancy", 25),  # home project: nursery set up on free weekdays
}
"""Overlap variant (S1, 25% of specifications): the target's group also contains one position
of the partner's base group; that position carries evidence of both attributes in M and only
the partner's (non-target) evidence in M'."""


def groups_for(target: str, overlapping: bool) -> dict[str, tuple[int, ...]]:
    """Protected groups of a specification: the base groups, plus the shared position in the
    target's group when the specification overlaps."""
    groups = {a: BASE_GROUPS[a] for a in ATTRIBUTES}
    if overlapping:
        _, shared = OVERLAP_PARTNER[target]
        groups[target] = tuple(sorted(set(groups[target]) | {shared}))
    return groups


UNION_GROUPS: dict[str, tuple[int, ...]] = {
    a: tuple(sorted(set(BASE_GROUPS[a]) | {OVERLAP_PARTNER[a][1]})) for a in ATTRIBUTES
}
"""The evaluation-configuration policy: every specification's groups are subsets of these,
so charging by UNION_GROUPS is complete (C2) for every pair (over-charging is allowed)."""

# --- Views (C1) --------------------------------------------------------------------------


@dataclass(frozen=True)
class View:
    """A public view: how to answer, never a user fact. c = 1 if a read item carries one of
    `compatible`; s = fraction of `specific` present among read items (Appendix C.5)."""

    name: str
    text: str
    compatible: tuple[str, ...] = ()
    specific: tuple[str, ...] = ()


VIEWS: dict[str, tuple[View, ...]] = {
    "health": (
        View("health-generic", "Give general, widely applicable health information."),
        View("blood-sugar-conscious", "Favour blood-sugar-conscious advice without naming any diagnosis.",
             ("blood-sugar", "medication"), ("blood-sugar", "medication")),
        View("prenatal-careful", "Favour cautious advice suited to early-parenthood health care, without naming any condition.",
             ("prenatal", "nausea"), ("prenatal", "nausea")),
        View("active-lifestyle", "Build on an existing exercise habit.", ("exercise",), ("exercise",)),
    ),
    "food": (
        View("balanced-meals", "Suggest balanced, everyday meals."),
        View("low-glycemic", "Prefer low-glycemic meals with steady carbohydrates.",
             ("blood-sugar", "carb-counting", "sugar-avoidance"), ("carb-counting", "sugar-avoidance")),
        View("food-safety-first", "Avoid raw fish, soft cheeses and undercooked food; prefer gentle, plain options.",
             ("food-safety", "nausea"), ("food-safety",)),
        View("budget-friendly", "Prefer low-cost meals built from inexpensive staples.",
             ("tight-budget",), ("tight-budget",)),
        View("home-cooked", "Favour simple recipes cooked at home.", ("home-cooking",), ("home-cooking",)),
    ),
    "finance": (
        View("finance-generic", "Give general, widely applicable money tips."),
        View("strict-budget", "Keep suggestions within a strict spending budget and prioritise repayments.",
             ("tight-budget", "debt-repayment"), ("debt-repayment", "creditor-calls", "tight-budget")),
        View("income-bridge", "Assume income is temporarily interrupted; favour low fixed costs.",
             ("income-gap",), ("income-gap",)),
        View("savings-growth", "Build on an existing savings habit.", ("savings",), ("savings",)),
    ),
    "work": (
        View("work-generic", "Give general, widely applicable work advice."),
        View("job-search-support", "Frame advice around looking for a new position.",
             ("job-search", "income-gap"), ("job-search", "income-gap")),
        View("career-development", "Frame advice around growing in the current role.",
             ("career", "team"), ("career",)),
        View("commute-aware", "Account for a regular commute.", ("commute",), ("commute",)),
    ),
    "schedule": (
        View("schedule-generic", "Assume an ordinary weekday schedule."),
        View("meal-timed-routine", "Keep meals and snacks at regular, fixed times.", ("meal-timing",), ("meal-timing",)),
        View("open-weekdays", "Assume weekday daytime hours are free.", ("free-weekdays",), ("free-weekdays",)),
        View("busy-evenings", "Assume evenings are busy; favour quick options.", ("busy-evenings",), ("busy-evenings",)),
        View("weekend-plans", "Build on regular weekend outings.", ("weekend-outings",), ("weekend-outings",)),
    ),
    "household": (
        View("household-generic", "Give general, widely applicable household advice."),
        View("nursery-prep", "Favour home preparations for a new family member.", ("nursery",), ("nursery",)),
        View("cost-cutting-home", "Favour ways to cut household costs.", ("tight-budget",), ("tight-budget",)),
        View("shared-living", "Account for a shared home and divided chores.", ("shared-home", "chores"), ("shared-home", "chores")),
    ),
}
GENERIC_VIEW: dict[str, str] = {slot: views[0].name for slot, views in VIEWS.items()}

TARGET_VIEW: dict[tuple[str, str], str] = {
    ("diabetes", "health"): "blood-sugar-conscious",
    ("diabetes", "food"): "low-glycemic",
    ("diabetes", "schedule"): "meal-timed-routine",
    ("pregnancy", "health"): "prenatal-careful",
    ("pregnancy", "food"): "food-safety-first",
    ("pregnancy", "household"): "nursery-prep",
    ("debt", "food"): "budget-friendly",
    ("debt", "finance"): "strict-budget",
    ("debt", "household"): "cost-cutting-home",
    ("job_loss", "finance"): "income-bridge",
    ("job_loss", "work"): "job-search-support",
    ("job_loss", "schedule"): "open-weekdays",
}
"""The target-specific view of each (attribute, slot) a target-relevant query touches."""

ATTRIBUTE_SLOTS: dict[str, tuple[str, ...]] = {
    a: tuple(s for s in SLOTS if (a, s) in TARGET_VIEW) for a in ATTRIBUTES
}

# --- Lexicons (S3) ---------------------------------------------------------------------

NAMES_AND_SYNONYMS: dict[str, tuple[str, ...]] = {
    "diabetes": ("diabetes", "diabetic", "type 2", "type-2", "type ii", "t2d", "prediabetes",
                 "hyperglycemia", "hyperglycaemia"),
    "pregnancy": ("pregnant", "pregnancy", "expecting a baby", "expecting a child", "with child",
                  "trimester", "gestation", "conceive", "conceived"),
    "debt": ("debt", "debts", "indebted", "in the red", "arrears", "insolvent", "bankrupt"),
    "job_loss": ("laid off", "layoff", "lay-off", "fired", "unemployed", "unemployment",
                 "jobless", "lost my job", "out of work", "let go", "redundant", "redundancy"),
}
"""Attribute names and direct synonyms: never in a query, never in M' for the target."""

EVIDENCE_CUES: dict[str, tuple[str, ...]] = {
    "diabetes": NAMES_AND_SYNONYMS["diabetes"] + (
        "blood sugar", "glucose", "metformin", "insulin", "a1c", "carb", "sugar level",
        "sugar-free", "sugar spike", "sugary"),
    "pregnancy": NAMES_AND_SYNONYMS["pregnancy"] + (
        "prenatal", "midwife", "due date", "morning sickness", "ultrasound", "nursery", "baby",
        "obstetrician", "obstetric", "bump"),
    "debt": NAMES_AND_SYNONYMS["debt"] + (
        "credit card", "card balance", "minimum payment", "collector", "owe", "overdraft",
        "overdrafted", "payday loan", "repay", "repayment", "behind on my bills", "past-due", "loan"),
    "job_loss": NAMES_AND_SYNONYMS["job_loss"] + (
        "severance", "job application", "job search", "job hunt", "job listing", "résumé",
        "resume", "former employer", "old employer", "benefits office", "jobseeker",
        "my last day", "interviews for"),
}
"""Evidence cues: target text in M carries at least one; M' carries none for the target;
background and neutral text carries none for any attribute (S3)."""
