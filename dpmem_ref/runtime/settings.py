"""The agent file (TOML): which interface to serve, and the runtime's public parts.

    interface = "interface.toml"        # a kernel interface file, relative to this one
    [scopes]
    user_caps = { diabetes = 3 }        # optional per-user caps U_a across applications (every attribute)
    [scopes.shares.recipes]             # with user_caps: each application's precommitted share
    diabetes = 2                        # B^app_a <= B_a, summing to at most U_a over applications
    [router]                            # free text -> catalogue query (public, C4)
    threshold = "1/2"
    encoder = "minilm"                  # optional nearest neighbour with the shipped MiniLM
    keywords = { affordable-dinner = ["dinner", "meal"] }
    examples = { affordable-dinner = ["what should I cook tonight"] }
    [tagger]                            # memory text -> evidence tags (trusted side)
    threshold = "3/5"
    encoder = "minilm"                  # optional
    rules = { blood-sugar = ["glucose", "metformin"] }
    descriptions = { blood-sugar = "blood sugar, glucose, diabetes care" }

Errors name the field (docs/agent.md, "The agent file").
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any

import attrs

from dpmem_ref.config.fields import table, unknown_keys
from dpmem_ref.config.load import InterfaceFile, load_interface_file
from dpmem_ref.core.errors import InputError
from dpmem_ref.core.limits import MAX_CONFIG_BYTES, read_bounded
from dpmem_ref.core.rational import positive_fraction
from dpmem_ref.core.validate import check_id


@attrs.frozen
class AgentFile:
    loaded: InterfaceFile
    router: Mapping[str, Any]
    tagger: Mapping[str, Any]
    user_caps: Mapping[str, Any] | None  # as written; checked when the runtime uses them
    path: str = ""
    shares: Mapping[str, Any] | None = None  # app -> {attribute: share}, as written


def load_agent_file(path: str | Path) -> AgentFile:
    raw = read_bounded(path, MAX_CONFIG_BYTES, "file", "TOML file")
    shown = Path(path)
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise InputError(f"file {shown}", "UTF-8 text", "undecodable bytes") from None
    except tomllib.TOMLDecodeError as error:
        raise InputError(f"file {shown}", "valid TOML", str(error)) from None
    except (ValueError, RecursionError):
        raise InputError("file", "TOML within the parser's limits", f"{shown}: an oversized number or nesting") from None
    unknown_keys(data, {"interface", "description", "scopes", "router", "tagger"}, "agent file")
    target = data.get("interface")
    if not isinstance(target, str) or not target:
        raise InputError("interface", "the path of a kernel interface file", type(target).__name__)
    loaded = load_interface_file(shown.parent / target)
    scopes = table(data.get("scopes", {}), "scopes")
    unknown_keys(scopes, {"user_caps", "shares"}, "scopes")
    router = table(data.get("router", {}), "router")
    unknown_keys(router, {"threshold", "encoder", "keywords", "examples"}, "router")
    tagger = table(data.get("tagger", {}), "tagger")
    unknown_keys(tagger, {"threshold", "encoder", "rules", "descriptions"}, "tagger")
    caps = scopes.get("user_caps")
    user_caps = None if caps is None else table(caps, "scopes.user_caps")
    raw_shares = scopes.get("shares")
    shares = None if raw_shares is None else table(raw_shares, "scopes.shares")
    return AgentFile(loaded=loaded, router=router, tagger=tagger, user_caps=user_caps, path=str(shown), shares=shares)


def check_user_caps(value: object, attributes: tuple[str, ...]) -> dict[str, Fraction]:
    """Per-user caps U_a > 0 for every attribute of the policy (the per-user scope)."""
    caps = table(value, "scopes.user_caps")
    unknown = sorted(set(caps) - set(attributes))
    missing = [a for a in attributes if a not in caps]
    if unknown or missing:
        raise InputError("scopes.user_caps", f"a cap for each of {list(attributes)}", f"unknown {unknown}, missing {missing}")
    return {a: positive_fraction(caps[a], f"scopes.user_caps.{a}") for a in attributes}


def check_shares(
    value: object,
    user_caps: Mapping[str, Fraction],
    caps: Mapping[str, Fraction],
) -> dict[str, dict[str, Fraction]]:
    """Each application's precommitted share B^app_a of the per-user cap U_a (docs/agent.md,
    "Budget scopes"): a public allocation, so an application's admissions read its own
    scope only (C6). Every share is positive, at most the interface's cap B_a, and for each
    attribute the shares of all applications sum to at most U_a (sequential composition
    over applications then gives the per-user bound)."""
    if value is None:
        raise InputError("scopes.shares", "a share of the per-user caps for each application (with user_caps)", "none")
    apps = table(value, "scopes.shares")
    if not apps:
        raise InputError("scopes.shares", "at least one application's share", "an empty table")
    attributes = tuple(caps)
    out: dict[str, dict[str, Fraction]] = {}
    for app, raw in apps.items():
        check_id(app, "scopes.shares")
        share = table(raw, f"scopes.shares.{app}")
        unknown = sorted(set(share) - set(attributes))
        missing = [a for a in attributes if a not in share]
        if unknown or missing:
            raise InputError(f"scopes.shares.{app}", f"a share for each of {list(attributes)}", f"unknown {unknown}, missing {missing}")
        out[app] = {a: positive_fraction(share[a], f"scopes.shares.{app}.{a}") for a in attributes}
        over = [a for a in attributes if out[app][a] > caps[a]]
        if over:
            raise InputError(f"scopes.shares.{app}", "shares at most the interface's caps B_a", f"above B_a for {over}")
    for a in attributes:
        total = sum((share[a] for share in out.values()), Fraction(0))
        if total > user_caps[a]:
            raise InputError(
                "scopes.shares", f"shares summing to at most the per-user cap U_a ({a}: {user_caps[a]})", f"{a}: {total}"
            )
    return out
