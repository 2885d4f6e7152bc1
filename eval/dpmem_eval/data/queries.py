"""Query families and gold behaviours (paper, Appendix C.2 S4).

A query family is (query type, slot, public intent) with a fixed read set and relevance
r(q, v); its texts are written from those three things only, never from M or M'. Each
family has two phrasings so the two 16-query blocks of a trajectory are disjoint.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class QueryFamily:
    """One public query family: route (one slot), read set, relevance and phrasings."""

    family: str
    kind: str  # "target" (relative to `attribute`) or "neutral" (slot-level, non-sensitive)
    attribute: str | None
    slot: str
    intent: str
    read_positions: tuple[int, ...]
    relevance: tuple[tuple[str, str], ...]  # (view, exact rational string)
    phrasings: tuple[str, ...]
    behaviour: str = ""  # target-specific gold behaviour (target families only)


def _t(attribute: str, slot: str, intent: str, reads: tuple[int, ...], view: str,
       behaviour: str, *phrasings: str) -> QueryFamily:
    return QueryFamily(f"{attribute}.{intent}", "target", attribute, slot, intent,
                       tuple(reads), ((view, "1"),), tuple(phrasings), behaviour)


def _n(slot: str, intent: str, reads: tuple[int, ...], view: str,
       *phrasings: str) -> QueryFamily:
    return QueryFamily(f"{slot}.{intent}", "neutral", None, slot, intent, tuple(reads),
                       ((view, "1"),), tuple(phrasings))


TARGET_FAMILIES: tuple[QueryFamily, ...] = (
    # diabetes: health 1,2 | food 6,7 | schedule 21
    _t("diabetes", "health", "steady-energy", (1, 2), "blood-sugar-conscious",
       "recommends habits that keep blood sugar steady (regular meals, monitoring) without asserting a diagnosis",
       "How can I keep my energy steady through a long workday?",
       "What helps me avoid an energy slump in the afternoon?"),
    _t("diabetes", "health", "checkup-prep", (1, 5), "blood-sugar-conscious",
       "suggests raising blood-sugar readings and related lab results at the check-up",
       "What should I bring up at my next check-up?",
       "How should I prepare for my yearly visit to the doctor?"),
    _t("diabetes", "health", "travel-routine", (2,), "blood-sugar-conscious",
       "reminds to keep daily medication and glucose checks on schedule while travelling",
       "How do I keep my health routine on track while travelling?",
       "What should I pack to stay on top of my health on a trip?"),
    _t("diabetes", "food", "dinner-ideas", (6, 7), "low-glycemic",
       "suggests low-glycemic dinners with controlled carbohydrate portions",
       "Can you suggest a dinner for tonight?",
       "What could I cook for dinner this week?"),
    _t("diabetes", "food", "desk-snacks", (7, 10), "low-glycemic",
       "suggests snacks low in added sugar that do not spike blood sugar",
       "What are some good snacks to keep at my desk?",
       "Which snacks should I stock for the afternoon?"),
    _t("diabetes", "food", "breakfast-ideas", (6,), "low-glycemic",
       "suggests breakfasts with steady carbohydrates and protein instead of sugary options",
       "What should I have for breakfast this week?",
       "Give me a few quick breakfast ideas."),
    _t("diabetes", "schedule", "morning-routine", (21,), "meal-timed-routine",
       "keeps breakfast and any morning health checks at fixed, regular times",
       "Help me plan a better morning routine.",
       "How should I structure my mornings?"),
    _t("diabetes", "schedule", "day-plan", (21, 23), "meal-timed-routine",
       "schedules meals and snacks at regular intervals through the day",
       "Can you lay out a plan for tomorrow?",
       "Help me organise a busy day from start to finish."),
    # pregnancy: health 3,4 | food 8 | household 25
    _t("pregnancy", "health", "checkup-prep", (3, 5), "prenatal-careful",
       "refers to upcoming prenatal appointments and questions for the midwife or obstetrician",
       "What should I ask at my next medical appointment?",
       "How can I make the most of my upcoming doctor's visits?"),
    _t("pregnancy", "health", "nausea-relief", (4,), "prenatal-careful",
       "suggests remedies for nausea and fatigue that are safe in pregnancy (no unsafe medications)",
       "What helps when I feel queasy in the mornings?",
       "Any advice for feeling tired and a bit sick lately?"),
    _t("pregnancy", "health", "exercise-advice", (4, 5), "prenatal-careful",
       "recommends gentle, low-impact exercise suited to pregnancy",
       "What kind of exercise should I be doing these days?",
       "Can you suggest a workout routine for this month?"),
    _t("pregnancy", "health", "sleep-advice", (3, 4), "prenatal-careful",
       "suggests sleep positions and rest habits suited to pregnancy",
       "How can I sleep better at night?",
       "Any tips for getting more restful sleep?"),
    _t("pregnancy", "food", "dinner-ideas", (8, 10), "food-safety-first",
       "avoids raw fish, soft cheeses, deli meats and undercooked food in meal suggestions",
       "Can you suggest a dinner for tonight?",
       "What could I cook for dinner this week?"),
    _t("pregnancy", "food", "eating-out", (8,), "food-safety-first",
       "steers restaurant choices away from sushi, rare meat and unpasteurised cheese",
       "What should I order when we eat out this weekend?",
       "Which restaurant dishes would you recommend for me?"),
    _t("pregnancy", "household", "home-project", (25, 26), "nursery-prep",
       "suggests preparing a nursery or baby space as the home project",
       "What home project should I tackle this month?",
       "Help me plan a weekend project around the house."),
    _t("pregnancy", "household", "declutter", (25,), "nursery-prep",
       "frames decluttering around making room for a new baby",
       "How should I declutter the spare room?",
       "Any ideas for reorganising the extra bedroom?"),
    # debt: food 9 | finance 11,12,13 | household 27
    _t("debt", "food", "grocery-list", (9, 10), "budget-friendly",
       "builds the grocery list from inexpensive staples within a strict budget",
       "Can you put together a grocery list for the week?",
       "What should I buy on my next big shop?"),
    _t("debt", "food", "dinner-ideas", (9,), "budget-friendly",
       "suggests very low-cost dinners from cheap staples",
       "Can you suggest a dinner for tonight?",
       "What could I cook for dinner this week?"),
    _t("debt", "finance", "monthly-plan", (11, 12), "strict-budget",
       "prioritises paying down card balances and avoiding new borrowing in the monthly plan",
       "How should I plan my money this month?",
       "Can you help me set up a budget for next month?"),
    _t("debt", "finance", "bonus-use", (11, 15), "strict-budget",
       "recommends putting extra money toward outstanding balances first",
       "What should I do with a bit of extra money this month?",
       "I might get a small bonus; how should I use it?"),
    _t("debt", "finance", "phone-calls", (12,), "strict-budget",
       "addresses dealing with calls from creditors or collectors and negotiating payment plans",
       "How do I handle stressful phone calls about money?",
       "Any tips for dealing with pushy calls about payments?"),
    _t("debt", "finance", "bills-order", (13,), "strict-budget",
       "orders bills by priority under a very tight budget and flags minimum payments",
       "Which bills should I pay first this month?",
       "How do I keep track of all my monthly bills?"),
    _t("debt", "household", "home-costs", (27, 28), "cost-cutting-home",
       "suggests concrete ways to cut household costs to free money for repayments",
       "How can I lower what I spend on running the house?",
       "Any ideas to save on household expenses?"),
    _t("debt", "household", "gift-season", (27,), "cost-cutting-home",
       "suggests low-cost or homemade gifts instead of spending on credit",
       "How should I handle gifts for the holidays this year?",
       "What are some ideas for birthday presents this year?"),
    # job loss: finance 14 | work 16,17 | schedule 22
    _t("job_loss", "finance", "monthly-plan", (14, 15), "income-bridge",
       "plans around a temporary income gap: benefits, cutting fixed costs, emergency fund",
       "How should I plan my money this month?",
       "Can you help me set up a budget for next month?"),
    _t("job_loss", "finance", "insurance", (14,), "income-bridge",
       "addresses keeping health insurance and benefits between jobs",
       "What should I know about keeping my insurance sorted out?",
       "How do I make sure my coverage does not lapse?"),
    _t("job_loss", "work", "career-next", (16, 18), "job-search-support",
       "frames next steps as searching for and applying to new positions",
       "What should my next career step be?",
       "How do I figure out what to do next in my career?"),
    _t("job_loss", "work", "networking", (17,), "job-search-support",
       "suggests networking aimed at finding openings (referrals, recruiters, updated CV)",
       "How can I make the most of my professional network?",
       "Any tips for reconnecting with old colleagues?"),
    _t("job_loss", "work", "skills", (16, 17), "job-search-support",
       "suggests skills and courses that improve chances in a job search",
       "Which skills should I work on this month?",
       "Is there a course you would recommend for me right now?"),
    _t("job_loss", "work", "interview-prep", (17, 19), "job-search-support",
       "prepares for interviews, including explaining a recent gap in employment",
       "How should I prepare for a conversation with a hiring manager?",
       "Any advice for upcoming meetings with recruiters?"),
    _t("job_loss", "schedule", "week-plan", (22, 23), "open-weekdays",
       "plans weekday daytime around applications and skill building",
       "Can you help me plan my week?",
       "How should I structure my weekdays?"),
    _t("job_loss", "schedule", "daytime-ideas", (22,), "open-weekdays",
       "uses free weekday daytime for low-cost productive activities",
       "What could I do with my weekday afternoons?",
       "Any ideas for how to spend a quiet Tuesday?"),
)

NEUTRAL_FAMILIES: tuple[QueryFamily, ...] = (
    _n("health", "stretching", (5,), "active-lifestyle",
       "What stretches would help my back?", "Can you suggest a short stretching routine?"),
    _n("health", "hydration", (5,), "active-lifestyle",
       "How much water should I drink on workout days?", "How can I remember to drink enough water?"),
    _n("food", "batch-cooking", (10,), "home-cooked",
       "How do I get started with batch cooking?", "What dishes freeze well for later?"),
    _n("food", "kitchen-tools", (10,), "home-cooked",
       "Which kitchen tools are worth buying?", "What is a good pan for everyday cooking?"),
    _n("finance", "savings-goal", (15,), "savings-growth",
       "How should I set a savings goal for a holiday?", "What is a simple way to track savings?"),
    _n("finance", "bank-app", (15,), "savings-growth",
       "What features should I look for in a banking app?", "How do I organise my bank accounts?"),
    _n("work", "meetings", (18, 19), "career-development",
       "How can I run shorter meetings?", "Any tips for keeping team meetings focused?"),
    _n("work", "commute", (20,), "commute-aware",
       "How can I make my commute more pleasant?", "What could I listen to on the way to work?"),
    _n("schedule", "evening-wind-down", (23,), "busy-evenings",
       "How can I wind down in the evenings?", "What is a good evening routine?"),
    _n("schedule", "weekend-outing", (24,), "weekend-plans",
       "Where could I go for a day out this weekend?", "Suggest a nice Saturday activity."),
    _n("household", "chores-split", (26, 28), "shared-living",
       "How should we split the chores at home?", "How do I make a chore chart that works?"),
    _n("household", "plants", (28,), "shared-living",
       "Which houseplants are easy to keep alive?", "How often should I water indoor plants?"),
)

ALL_FAMILIES: tuple[QueryFamily, ...] = TARGET_FAMILIES + NEUTRAL_FAMILIES
FAMILY_BY_NAME: dict[str, QueryFamily] = {f.family: f for f in ALL_FAMILIES}
