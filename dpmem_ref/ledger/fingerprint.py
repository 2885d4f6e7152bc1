"""The canonical interface fingerprint a ledger database is bound to.

Two interface files with equal caps but different groups I_a (or read sets, charge
declarations, budget rules, ...) would otherwise share one ledger and charge each other's
reads against the wrong exact count: Theorem 1's bound B_a holds only for the interface
whose charges the ledger records. The fingerprint is sha256 over a canonical JSON text of
everything that decides a charge or its amount:

- the layout (positions -> slots) and every attribute's group I_a and cap B_a (Eq. 3);
- every route: query name -> ordered slots, each with its read set R and its declared
  charge set (None means Gamma*(R), Eq. 4);
- the budget rule and its parameters (online K, or the preallocated plan C_a) and the
  policy-fixed eps of uncharged reads;
- the cap rule and the router's declared dependencies (C4);
- per slot: the vocabulary's view names and generic view (C1) and the scorer's declared
  sensitivity Delta (Eq. 6), which scales the mechanism eps spends.

Fractions are written "p/q", sets sorted, keys sorted: equal interfaces give equal text.
Memory contents never enter it (a store is not part of the interface).

View order within a slot. The exponential mechanism's release distribution
gives each view a probability that depends on its own score only (Eq. 7), and the scorers
score each view by name, so reordering a slot's views changes neither a distribution nor a
charge; only the seeded sampler's map from random draws to views reads the order (which
view a given seed yields: reproducibility, not privacy). With the EM selector the views
are therefore listed sorted. A selector that is not the EM keeps the declared order: the
argmax selector (the C3-breaking CappedArgmax ablation) breaks ties by first index.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from fractions import Fraction
from typing import Any, cast

import attrs

from dpmem_ref.interface import Interface

FINGERPRINT_VERSION = 2  # 2: view order canonical under the EM


def _canonical(value: object) -> Any:
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, Fraction):
        return f"{value.numerator}/{value.denominator}"
    if isinstance(value, frozenset | set):
        return sorted((_canonical(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
    if isinstance(value, tuple | list):
        return [_canonical(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if attrs.has(type(value)):
        declared = attrs.fields(cast("type[attrs.AttrsInstance]", type(value)))
        fields = {f.name: getattr(value, f.name) for f in declared if f.init and f.alias == f.name}
        return {"type": type(value).__name__, **{k: _canonical(v) for k, v in fields.items()}}
    return {"type": type(value).__name__}  # a part without declared fields: its kind decides


def interface_description(interface: Interface) -> dict[str, Any]:
    """The charge-deciding parts of `interface`, as canonical JSON data."""
    policy = interface.policy
    order_free = bool(interface.selector.exponential_mechanism)  # see the module docstring
    return {
        "version": FINGERPRINT_VERSION,
        "positions": list(policy.layout.position_slots),
        "attributes": [
            {"name": a.name, "group": sorted(a.group), "cap": _canonical(a.cap)}
            for a in sorted(policy.attributes, key=lambda a: a.name)
        ],
        "routes": [
            {
                "query": query.name,
                "reads": [
                    {
                        "slot": read.slot,
                        "positions": sorted(read.positions),
                        "charge": None if read.charge is None else sorted(read.charge),
                    }
                    for read in query.reads
                ],
            }
            for query in sorted(interface.queries, key=lambda q: q.name)
        ],
        "budget": _canonical(interface.budget),
        "uncharged_epsilon": _canonical(interface.uncharged_epsilon),
        "cap_rule": _canonical(interface.cap_rule),
        "router": _canonical(interface.router),
        "slots": [
            {
                "slot": vocabulary.slot,
                "views": sorted(vocabulary.names) if order_free else list(vocabulary.names),
                "generic": vocabulary.generic,
                "sensitivity": _canonical(interface.scorer.sensitivity(vocabulary)),
            }
            for vocabulary in sorted(interface.vocabularies, key=lambda v: v.slot)
        ],
    }


def interface_fingerprint(interface: Interface) -> str:
    """sha256 (64 hex digits) of the canonical description of `interface`."""
    text = json.dumps(interface_description(interface), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
