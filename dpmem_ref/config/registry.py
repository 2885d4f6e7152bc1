"""The registry of parts: ONE table per part kind, each row (name, factory, allowed keys).

Every place that picks a part by name goes through these tables: the interface-file loader
(`dpmem_ref.config.load`) and the evaluation's assembly of compared interfaces
(`dpmem_eval.pipeline.kernel_runs`). In the manner of attrs's validator factories:

- a row is (name, factory, keys): `factory` builds the part from keyword arguments, `keys` are
  the part's own keys in its table of an interface file, and `parse` reads exactly those keys
  (validated, each error naming its field) into the factory's keyword arguments;
- a table knows the field that names its parts (`budget.rule`, `scorer.kind`, ...), the keys
  every row shares (the naming key itself) and the default an absent name means;
- an unknown name raises `InputError` naming the field, listing every valid name, and
  showing what was found.

The texts of the lookup errors are the loader's earlier ones, byte for byte: two tables list
their names as `"a" or "b"` (budget rules, scorers), the others as `one of [sorted names]`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any, Generic, Literal, TypeVar

import attrs

from dpmem_ref.config.fields import table as read_table
from dpmem_ref.config.fields import unknown_keys
from dpmem_ref.core.errors import InputError
from dpmem_ref.core.rational import positive_fraction, to_fraction
from dpmem_ref.parts.broken import ArgmaxSelector, NoCap, RawEvidenceControl, TopScoreControl
from dpmem_ref.parts.budget import BudgetRule, OnlineBudget, PreallocatedBudget
from dpmem_ref.parts.caps import ProspectiveCap
from dpmem_ref.parts.controls import FallbackControl, NoControl
from dpmem_ref.parts.protocols import CapRule, ControlRule, Selector
from dpmem_ref.parts.scoring import LinearTagScorer, LinearWeights, Scorer
from dpmem_ref.parts.selectors import ExponentialMechanismSelector

P = TypeVar("P")


@attrs.frozen
class Context:
    """What a part's parser may check its keys against besides its own table: the policy's
    attribute names (a preallocated plan needs a count for each)."""

    attribute_names: tuple[str, ...] = ()


Parse = Callable[[Mapping[str, Any], str, Context], dict[str, Any]]


def no_keys(spec: Mapping[str, Any], field: str, context: Context) -> dict[str, Any]:
    """The parser of a part without keys of its own."""
    return {}


@attrs.frozen
class PartRow(Generic[P]):
    """One part: its name, its factory (keyword arguments -> the part), the keys of its own in
    an interface file, and the parser of those keys (-> the factory's keyword arguments)."""

    name: str
    factory: Callable[..., P]
    keys: frozenset[str] = frozenset()
    parse: Parse = no_keys

    def build(self, spec: Mapping[str, Any], field: str, context: Context = Context()) -> P:
        """The part from its table `spec` in an interface file (its keys parsed, not checked for
        strangers: the table does that, `PartTable.check_keys`)."""
        return self.factory(**self.parse(spec, field, context))


@attrs.frozen
class PartTable(Generic[P]):
    """The parts of one kind, by name."""

    kind: str  # "budget rule", in words
    field: str  # the field of an interface file that names the part, e.g. "budget.rule"
    rows: tuple[PartRow[P], ...]
    default: str | None = None  # what an absent name means; None: the name is required
    shared_keys: frozenset[str] = frozenset()  # keys of the part's table every row accepts
    listing: Literal["one of", "or"] = "one of"  # how the lookup error lists the valid names

    def __attrs_post_init__(self) -> None:
        names = [row.name for row in self.rows]
        if len(set(names)) != len(names):  # pragma: no cover - a programming error
            raise ValueError(f"{self.kind}: duplicate part names {names}")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(row.name for row in self.rows)

    @property
    def expected(self) -> str:
        """Every valid name, as the lookup error lists them."""
        if self.listing == "or":
            return " or ".join(f'"{name}"' for name in self.names)
        return f"one of {sorted(self.names)}"

    def row(self, name: object, field: str | None = None) -> PartRow[P]:
        """The row named `name`; else InputError naming `field` (default: the table's) and
        listing every valid name."""
        if isinstance(name, str):
            for row in self.rows:
                if row.name == name:
                    return row
        raise InputError(self.field if field is None else field, self.expected, name)

    def make(self, name: object, field: str | None = None, **arguments: Any) -> P:
        """The part named `name` from its factory's keyword arguments (callers that build
        interfaces in code, such as the evaluation, rather than from a file)."""
        return self.row(name, field).factory(**arguments)

    def all_keys(self) -> frozenset[str]:
        """The keys of the part's table that some row accepts."""
        return self.shared_keys.union(*(row.keys for row in self.rows))

    def check_keys(self, spec: Mapping[str, Any], row: PartRow[P], field: str) -> None:
        """Refuse a key of the part's table that neither the table nor `row` reads."""
        unknown_keys(spec, set(self.shared_keys | row.keys), field)


# --- budget rules ([budget], rule = ...) ------------------------------------------------------


def _online(spec: Mapping[str, Any], field: str, context: Context) -> dict[str, Any]:
    return {"K": spec.get("K")}  # validated by OnlineBudget


def _preallocated(spec: Mapping[str, Any], field: str, context: Context) -> dict[str, Any]:
    plan = read_table(spec.get("plan"), f"{field}.plan")
    names = context.attribute_names
    for name in plan:
        if name not in names:
            raise InputError(f"{field}.plan.{name}", f"an attribute among {list(names)}", name)
    missing = [a for a in names if a not in plan]
    if missing:
        raise InputError(f"{field}.plan", "a planned count C_a for every attribute", f"none for {missing}")
    return {"plan": plan}


BUDGET_RULES: PartTable[BudgetRule] = PartTable(
    kind="budget rule",
    field="budget.rule",
    rows=(
        PartRow("online", OnlineBudget, frozenset({"K"}), _online),
        PartRow("preallocated", PreallocatedBudget.from_mapping, frozenset({"plan"}), _preallocated),
    ),
    shared_keys=frozenset({"rule", "uncharged_epsilon", "period"}),
    listing="or",
)

# --- scorers ([scorer], kind = ...) -----------------------------------------------------------

LINEAR_DEFAULTS = (("r", Fraction(2, 5)), ("c", Fraction(2, 5)), ("s", Fraction(1, 5)))


def _linear(spec: Mapping[str, Any], field: str, context: Context) -> dict[str, Any]:
    weights_spec = read_table(spec.get("weights", {}), f"{field}.weights")
    unknown_keys(weights_spec, {"r", "c", "s"}, f"{field}.weights")
    parsed = {}
    for key, default in LINEAR_DEFAULTS:
        value = to_fraction(weights_spec.get(key, default), f"{field}.weights.{key}")
        if value < 0:
            raise InputError(f"{field}.weights.{key}", "a non-negative weight", weights_spec.get(key))
        parsed[key] = value
    weights = LinearWeights(relevance=parsed["r"], compatibility=parsed["c"], specificity=parsed["s"])
    sensitivity = positive_fraction(spec.get("sensitivity", "3/5"), f"{field}.sensitivity")
    return {"weights": weights, "declared_sensitivity": sensitivity}


SCORERS: PartTable[Scorer] = PartTable(
    kind="scorer",
    field="scorer.kind",
    rows=(PartRow("linear", LinearTagScorer, frozenset({"weights", "sensitivity"}), _linear),),
    default="linear",
    shared_keys=frozenset({"kind"}),
    listing="or",
)

# --- selectors, cap rules and controls ([deployment]) -----------------------------------------

SELECTORS: PartTable[Selector] = PartTable(
    kind="selector",
    field="deployment.selector",
    rows=(PartRow("em", ExponentialMechanismSelector), PartRow("argmax", ArgmaxSelector)),
    default="em",
)

CAP_RULES: PartTable[CapRule] = PartTable(
    kind="cap rule",
    field="deployment.enforce_cap",
    rows=(PartRow("prospective", ProspectiveCap), PartRow("none", NoCap)),
    default="prospective",
)
CAP_RULE_BY_ENFORCE: Mapping[bool, str] = {True: "prospective", False: "none"}
"""An interface file names its cap rule by a flag, `deployment.enforce_cap` (true or false)."""

CONTROLS: PartTable[ControlRule] = PartTable(
    kind="control",
    field="deployment.control",
    rows=(
        PartRow("fallback", FallbackControl),
        PartRow("none", NoControl),
        PartRow("raw-evidence", RawEvidenceControl),
        PartRow("top-score", TopScoreControl),
    ),
    default="fallback",
)

REGISTRY: tuple[PartTable[Any], ...] = (BUDGET_RULES, SCORERS, SELECTORS, CAP_RULES, CONTROLS)
"""Every table of parts, one per kind an interface names by a string or a flag."""
