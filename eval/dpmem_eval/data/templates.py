"""Template realizer texts (paper, Appendix C.2 S2).

Each content type has several first-person templates; `{name}` fields are filled from
FILLERS with the specification's seeded random source. Evidence templates are indexed
0..3 and the index is the pair's template id (used by the selection quotas). Tags are the
structural content the scorer reads; they come from the specification, never from wording.
"""

from __future__ import annotations

FILLERS: dict[str, tuple[str, ...]] = {
    "veg": ("broccoli", "spinach", "green beans", "courgettes", "peppers", "cauliflower", "kale"),
    "protein": ("chicken", "lentils", "tofu", "eggs", "chickpeas", "turkey", "beans"),
    "sport": ("swimming", "cycling", "yoga", "running", "tennis", "pilates", "hiking"),
    "day": ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday"),
    "weekend_day": ("Saturday", "Sunday"),
    "role": ("a graphic designer", "a lab technician", "a warehouse supervisor", "an accountant",
             "a customer-support lead", "a software tester", "a school librarian", "a paralegal"),
    "hobby": ("painting", "reading", "board games", "knitting", "photography", "the guitar", "chess"),
    "place": ("the lake", "the farmers' market", "the botanical garden", "the old town",
              "the coast", "the climbing gym", "the museum"),
    "transport": ("bus", "train", "bike", "tram"),
    "minutes": ("twenty", "thirty", "forty", "forty-five"),
    "housemate": ("my partner", "my sister", "two friends", "a roommate", "my cousin"),
    "chore": ("laundry", "vacuuming", "the dishes", "watering the plants", "taking out the bins"),
    "dish": ("a vegetable curry", "a stir-fry", "a big pot of soup", "a tray bake", "a pasta bake"),
    "goal": ("a trip abroad", "a new bike", "a weekend away", "a new laptop", "a concert"),
    "colleague": ("Sam", "Priya", "Marco", "Lena", "Tom", "Aisha", "Jonas"),
    "snack": ("an apple", "a handful of nuts", "some cheese", "a yoghurt", "carrot sticks"),
    "store": ("the discount supermarket", "the corner shop", "the big supermarket", "the market"),
}

# (position, attribute) -> (tags, four templates). Index = template id.
EVIDENCE: dict[tuple[int, str], tuple[tuple[str, ...], tuple[str, ...]]] = {
    # diabetes
    (1, "diabetes"): (("blood-sugar",), (
        "I check my blood sugar every morning before I eat anything.",
        "My doctor told me to keep my glucose readings in a notebook, so I log them daily.",
        "I was diagnosed with type 2 diabetes last spring and I'm still learning to manage it.",
        "I keep a glucose meter in my bag and test after big meals.")),
    (2, "diabetes"): (("blood-sugar", "medication"), (
        "I take metformin with breakfast and dinner every day.",
        "I set a phone reminder so I never miss my metformin.",
        "My blood sugar medication has to be taken with food, so I plan around it.",
        "I refill my diabetes prescription at the pharmacy once a month.")),
    (6, "diabetes"): (("carb-counting",), (
        "I count the carbs in every meal and keep portions of {protein} and {veg} steady.",
        "I plan my meals around keeping carbs low, usually {protein} with {veg}.",
        "I weigh my rice and bread now so the carbs stay consistent.",
        "I've swapped white pasta for {veg} to keep my blood sugar stable.")),
    (7, "diabetes"): (("blood-sugar", "sugar-avoidance"), (
        "I avoid sugary snacks and reach for {snack} instead.",
        "I keep sugar-free snacks at my desk because sweets spike my blood sugar.",
        "I read labels for sugar content because of my glucose levels.",
        "I stopped drinking soda because of my glucose levels.")),
    (21, "diabetes"): (("meal-timing",), (
        "I eat breakfast at exactly seven so my blood sugar stays even.",
        "My mornings start with a glucose check and breakfast at a fixed time.",
        "I can't skip breakfast anymore because of my blood sugar, so I eat at the same time daily.",
        "I plan my mornings so my metformin and breakfast happen on schedule.")),
    (9, "diabetes"): (("blood-sugar", "sugar-avoidance"), (
        "I pick the sugar-free versions of everything when I shop.",
        "At the shop I only buy snacks that won't spike my blood sugar.",
        "I check the carb count on every label in the grocery aisle.",
        "I fill my basket with low-carb staples for my blood sugar.")),
    # pregnancy
    (3, "pregnancy"): (("prenatal",), (
        "I have my next prenatal appointment on {day}.",
        "My midwife wants to see me every four weeks for now.",
        "I'm pregnant and my first ultrasound is booked for next week.",
        "I keep a list of questions for my obstetrician's visits.")),
    (4, "pregnancy"): (("nausea",), (
        "I've had morning sickness most days this month.",
        "Since I found out I'm pregnant I get tired and queasy by noon.",
        "The nausea from the pregnancy makes it hard to eat breakfast.",
        "My midwife said the morning sickness should ease soon.")),
    (8, "pregnancy"): (("food-safety",), (
        "I'm avoiding sushi and soft cheeses because I'm pregnant.",
        "I skip deli meats and raw eggs until the baby arrives.",
        "My midwife gave me a list of foods to avoid, so no rare steak for now.",
        "I stopped eating runny eggs and brie for the pregnancy.")),
    (25, "pregnancy"): (("nursery",), (
        "I'm turning the spare room into a nursery.",
        "We're painting the small bedroom for the baby.",
        "I've started assembling a crib in the spare room before my due date.",
        "I'm sorting baby clothes into the new dresser in the nursery.")),
    (7, "pregnancy"): (("food-safety",), (
        "I choose snacks carefully now that I'm pregnant.",
        "I keep plain crackers around for the morning sickness.",
        "My midwife told me to snack little and often during the pregnancy.",
        "I avoid unpasteurised cheese snacks for the baby's sake.")),
    # debt
    (9, "debt"): (("tight-budget",), (
        "I buy only the cheapest own-brand groceries at {store} because every pound goes to my credit card.",
        "I shop with a strict list so I can keep up with my loan payments.",
        "I can't afford anything but basics at {store} while I pay off what I owe.",
        "I count every cent at the till because my card balance is so high.")),
    (11, "debt"): (("debt-repayment",), (
        "I owe more than twelve thousand on two credit cards.",
        "My credit card balance keeps growing even though I pay every month.",
        "I'm deep in debt on my store cards and a personal loan.",
        "I have several maxed-out credit cards I'm trying to repay.")),
    (12, "debt"): (("debt-repayment", "creditor-calls"), (
        "A collector calls me almost every week about a past-due account.",
        "I set up a repayment plan with the bank but I keep falling behind.",
        "I dread opening the post because of letters about what I owe.",
        "I've been negotiating with a collection agency over my overdue loan.")),
    (13, "debt"): (("tight-budget",), (
        "I can only make the minimum payment on my cards each month.",
        "I'm behind on my bills and juggle which ones to pay first.",
        "After the loan repayments there's almost nothing left for bills.",
        "I use an overdraft most months just to cover the basics.")),
    (27, "debt"): (("tight-budget",), (
        "I've cancelled every subscription at home to repay my credit cards faster.",
        "I keep the heating low to save money for my loan payments.",
        "I stopped buying anything for the flat until I repay what I owe.",
        "I sold some furniture to make this month's credit card payment.")),
    (14, "debt"): (("debt-repayment",), (
        "Most of what comes in goes straight to my credit card.",
        "Half my income disappears into loan repayments.",
        "I owe so much that my pay barely covers the card payments.",
        "Each month my money goes first to the collector.")),
    # job loss
    (14, "job_loss"): (("income-gap",), (
        "I'm living on severance pay until it runs out.",
        "I've applied for unemployment benefits since I was laid off.",
        "I have no salary coming in since I was let go.",
        "I'm stretching my severance and benefits to cover the rent.")),
    (16, "job_loss"): (("job-search", "income-gap"), (
        "I was laid off from my job last month when my team was cut.",
        "I was let go three weeks ago in a round of cuts.",
        "I lost my job recently when the company closed my department.",
        "I'm unemployed since my contract was ended without warning.")),
    (17, "job_loss"): (("job-search",), (
        "I send out five job applications every day.",
        "I'm updating my résumé and checking job listings each morning.",
        "I have interviews for two new positions next week.",
        "I meet a jobseeker advisor every {day} about my search.")),
    (22, "job_loss"): (("free-weekdays",), (
        "My weekdays are empty since I was laid off, so I spend them on job applications.",
        "I'm home every weekday now that I'm out of work.",
        "Without my job my weekdays are free until my job search picks up.",
        "I spend weekday mornings at the library on my job hunt.")),
    (25, "job_loss"): (("free-weekdays",), (
        "Since I was laid off I spend weekdays on projects around the house.",
        "Being out of work, I'm home every weekday fixing things up.",
        "I'm using the free time since I lost my job to redo the spare room.",
        "Since I was let go, I tackle home repairs on weekdays.")),
}

# position -> (tags, templates): slot-compatible content without any attribute evidence.
NEUTRAL: dict[int, tuple[tuple[str, ...], tuple[str, ...]]] = {
    1: ((), ("I get my eyes tested every two years.", "I try to get eight hours of sleep.",
             "I take a vitamin D tablet in winter.")),
    2: ((), ("I take an antihistamine in spring for hay fever.", "I keep painkillers in the bathroom cabinet.",
             "I use a nasal spray when my allergies flare.")),
    3: ((), ("I have a dentist appointment on {day}.", "I see my physiotherapist once a month.",
             "My annual eye test is coming up soon.")),
    4: ((), ("I get the occasional tension headache after long screen days.", "My knee aches a little after {sport}.",
             "I sometimes feel stiff after a long drive.")),
    6: ((), ("I plan my meals on Sunday, usually {protein} with {veg}.", "I like cooking {dish} at the start of the week.",
             "I try to eat more {veg} these days.")),
    7: ((), ("I usually snack on {snack} in the afternoon.", "I keep {snack} in my bag for the commute.",
             "I like a cup of tea with {snack} around four.")),
    8: ((), ("I don't like very spicy food.", "I'm not a fan of mushrooms.", "I avoid coriander because it tastes like soap to me.")),
    9: ((), ("I do a big shop at {store} every {weekend_day}.", "I buy most of my groceries at {store}.",
             "I like browsing {store} for new ingredients.")),
    11: ((), ("I use one card for everyday purchases and clear it in full.", "I have a current account and a savings account at the same bank.",
              "I pay for most things by card.")),
    12: ((), ("I check my bank app once a week.", "I pay my phone bill by direct debit.",
              "I keep my receipts in a folder for the tax return.")),
    13: ((), ("My rent and utilities go out on the first of the month.", "I split the internet bill with {housemate}.",
              "I pay my council tax in ten instalments.")),
    14: ((), ("My salary arrives at the end of each month.", "I get paid every two weeks.",
              "I earn a bit extra from occasional freelance work.")),
    16: ((), ("I've worked at the same company for four years.", "I work full time from the office.",
              "I started a new project at work this month.")),
    17: ((), ("I'm taking an online course to learn spreadsheets better.", "I read industry news on my lunch break.",
              "I mentor a junior colleague at work.")),
    21: ((), ("I like a slow morning with coffee before work.", "I go for a short walk every morning.",
              "I listen to the radio while I get ready in the morning.")),
    22: ((), ("My weekdays are busy from nine to six.", "I work from home on {day}s.",
              "I have a standing team call every {day} morning.")),
    25: ((), ("I'm repainting the hallway this month.", "I'm building shelves in the spare room.",
              "I want to put up new curtains in the living room.")),
    27: ((), ("I recently bought a new vacuum cleaner.", "I keep a small toolbox for repairs at home.",
              "I like buying candles for the living room.")),
}

# Background (non-group) positions: identical in M and M'.
BACKGROUND: dict[int, tuple[tuple[str, ...], tuple[str, ...]]] = {
    5: (("exercise",), ("I go {sport} twice a week.", "I try to fit in {sport} every weekend.",
                        "I joined a {sport} club near my flat.")),
    10: (("home-cooking",), ("I enjoy cooking {dish} from scratch.", "I cook at home most nights.",
                             "I make {dish} whenever friends come over.")),
    15: (("savings",), ("I'm putting a little aside each month for {goal}.", "I have a savings pot for {goal}.",
                        "I set up an automatic transfer to save for {goal}.")),
    18: (("career",), ("I work as {role}.", "I've been {role} for a few years.", "In my current job I am {role}.")),
    19: (("team",), ("I get lunch with {colleague} from my team most days.", "{colleague} and I share a desk at work.",
                     "I run the weekly team quiz at work.")),
    20: (("commute",), ("My commute is {minutes} minutes by {transport}.", "I take the {transport} to work.",
                        "I read on the {transport} on the way in.")),
    23: (("busy-evenings",), ("My evenings are taken up with {hobby}.", "I have {hobby} club on {day} evenings.",
                              "I usually get home late and have little time in the evening.")),
    24: (("weekend-outings",), ("I like visiting {place} on weekends.", "Most {weekend_day}s I head to {place}.",
                                "I spend weekend mornings at {place}.")),
    26: (("shared-home",), ("I share a flat with {housemate}.", "I live with {housemate} in a two-bedroom flat.",
                            "{housemate} and I rent a small house together.")),
    28: (("chores",), ("I do {chore} every {weekend_day}.", "I'm in charge of {chore} at home.",
                       "I can't stand {chore}, but I do it anyway.")),
}
