"""The chain's evidence format, written out by hand: a ledger written by this version must
verify under the next, so every event body and the MAC over it are fixed bytes. Each body
below is the canonical JSON (sorted keys, no spaces, ASCII; amounts as exact "p/q") the chain records, and each MAC
is recomputed here from the documented message layout
HMAC-SHA256(key, "dpmem-chain-v1|seq|kind|previous|body") with hmac itself, not with the
chain's code. A change to any of them is a format change (a new domain tag, a migration).
Also the key rules at their edges: 16..4096 bytes, from either variable, never both."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from fractions import Fraction
from pathlib import Path

import pytest

from dpmem_ref.core.errors import InputError
from dpmem_ref.ledger import chain
from dpmem_ref.ledger.contract import LedgerStoreError
from dpmem_ref.ledger.facts import SessionKey, SlotRelease

SECRET = b"0123456789abcdef0123456789abcdef"
KEY = chain.ChainKey(secret=SECRET, keyed=True)
SESSION = SessionKey("alice", "chat-1")
ROW = SlotRelease(
    seq=7,
    release_id="r7",
    turn_id="t3",
    index=1,
    slot="food",
    view="low-glycemic",
    admitted=True,
    charge_set=frozenset({"diabetes", "debt"}),
    epsilon=Fraction(2, 3),
)


def _mac(seq: int, kind: str, previous: str, body: str) -> str:
    message = b"|".join((b"dpmem-chain-v1", str(seq).encode(), kind.encode(), previous.encode(), body.encode()))
    return hmac.new(SECRET, message, hashlib.sha256).hexdigest()


def test_key_id_and_the_mac_follow_the_documented_layout() -> None:
    assert KEY.key_id == hmac.new(SECRET, b"dpmem key id", hashlib.sha256).hexdigest()[:16]
    assert chain.unkeyed().key_id == "unkeyed"
    development = chain.key_from_environment({chain.ENV_DEV_KEY: "1"})
    assert development == chain.ChainKey(secret=chain.UNKEYED, keyed=False) and development.keyed is False
    assert KEY.mac(5, "charge", "ab" * 32, '{"x":1}') == _mac(5, "charge", "ab" * 32, '{"x":1}')
    assert KEY.mac(5, "charge", "ab" * 32, '{"x":1}') != KEY.mac(6, "charge", "ab" * 32, '{"x":1}')
    assert repr(KEY) == f"ChainKey(key_id={KEY.key_id!r})" and SECRET.decode() not in repr(KEY)


def test_event_bodies_are_fixed_bytes() -> None:
    assert chain.genesis_body(KEY, "dpmem-ledger-3", "0" * 32) == (
        f'{{"database_id":"{"0" * 32}","key_id":"{KEY.key_id}","schema":"dpmem-ledger-3"}}'
    )
    assert chain.bind_body("fp") == '{"fingerprint":"fp"}'
    assert chain.open_body(SESSION, {"debt": Fraction(4), "diabetes": Fraction(2)}) == (
        '{"caps":{"debt":"4/1","diabetes":"2/1"},"interaction":"chat-1","user":"alice"}'
    )
    release = (
        '{"admitted":true,"charge_set":["debt","diabetes"],"epsilon":"2/3","index":1,"release_id":"r7",'
        '"seq":7,"slot":"food","turn_id":"t3","view":"low-glycemic"}'
    )
    assert chain.charge_body(SESSION, ROW, {"diabetes": Fraction(2, 3)}) == (
        f'{{"interaction":"chat-1","ledgers":{{"diabetes":"2/3"}},"release":{release},"user":"alice"}}'
    )
    assert chain.charge_body(
        SESSION, ROW, {"diabetes": Fraction(2, 3)}, [(SessionKey("alice", "all"), {"debt": Fraction(1)})]
    ) == (
        f'{{"interaction":"chat-1","ledgers":{{"diabetes":"2/3"}},"release":{release},'
        '"scopes":[{"interaction":"all","ledgers":{"debt":"1/1"},"user":"alice"}],"user":"alice"}'
    )
    assert chain.rebind_body(
        None, "fp2", {"b": "2", "a": "1"}, [(SESSION, {"debt": Fraction(1, 2)}, {"debt": Fraction(4)})]
    ) == (
        '{"expected":null,"fingerprint":"fp2","meta":{"a":"1","b":"2"},'
        '"sessions":[{"caps":{"debt":"4/1"},"interaction":"chat-1","ledgers":{"debt":"1/2"},"user":"alice"}]}'
    )
    digest = hashlib.sha256(b"record").hexdigest()
    assert chain.record_digest("record") == digest
    assert chain.turn_body(SESSION, 9, "t3", "record") == (
        f'{{"interaction":"chat-1","record_sha256":"{digest}","seq":9,"turn_id":"t3","user":"alice"}}'
    )
    assert chain.reanchor_body("3:aa", chain.HighWater(9, "bb")) == '{"previous":"3:aa","to_mac":"bb","to_seq":9}'
    assert chain.rollback_body(9, "bb", 4, "cc") == '{"from_mac":"bb","from_seq":9,"to_mac":"cc","to_seq":4}'


def test_database_identity_reads_the_genesis_or_falls_back_to_its_mac() -> None:
    body = chain.genesis_body(KEY, "s", "0123456789abcdef" * 2)
    assert chain.database_identity(body, "f" * 64) == "0123456789abcdef" * 2
    for broken in ('{"database_id":"XYZ"}', "not json", "[1]", '{"database_id":"' + "0" * 31 + '"}'):
        assert chain.database_identity(broken, "e" * 64) == "genesis-" + "e" * 32


def test_a_new_genesis_carries_a_fresh_128_bit_identity_that_reads_back_as_itself() -> None:
    """32 lowercase hex digits, the only form `database_identity` takes from a genesis (any
    other falls back to the genesis MAC, shared by every pre-identity ledger of one key)."""
    bodies = [chain.genesis_body(KEY, "s") for _ in range(2)]
    found = [json.loads(body)["database_id"] for body in bodies]
    assert all(re.fullmatch("[0-9a-f]{32}", database_id) for database_id in found) and found[0] != found[1]
    assert [chain.database_identity(body, "f" * 64) for body in bodies] == found


def test_the_identity_of_a_chains_rows_is_its_genesis_id_or_the_genesis_mac() -> None:
    """A genesis written before identities existed (no `database_id`): its MAC stands in."""
    body = chain.genesis_body(KEY, "s", "0123456789abcdef" * 2)
    assert chain.rows_identity([(1, "genesis", body, "f" * 64), (2, "bind", "{}", "a" * 64)]) == "0123456789abcdef" * 2
    legacy = f'{{"key_id":"{KEY.key_id}","schema":"2"}}'
    assert chain.rows_identity([(1, "genesis", legacy, "e" * 64)]) == "genesis-" + "e" * 32
    assert chain.rows_identity([]) is None and chain.rows_identity([(1, "genesis", None, "e" * 64)]) is None


def test_a_genesis_that_is_unreadable_or_names_another_key_is_refused_in_one_line() -> None:
    for unreadable in ("not json", "[1]"):
        with pytest.raises(LedgerStoreError) as refused:
            chain.check_genesis("l.db", KEY, unreadable)
        assert str(refused.value) == "ledger database l.db: unreadable chain genesis"
    # An edited genesis shows at most 16 characters of the key id it names.
    with pytest.raises(LedgerStoreError) as other:
        chain.check_genesis("l.db", KEY, '{"key_id":"' + "0123456789abcdefXYZ" * 3 + '"}')
    assert str(other.value) == (
        "ledger database l.db: chained with key id 0123456789abcdef, but the configured key "
        f"(DPMEM_LEDGER_KEY / DPMEM_LEDGER_KEY_FILE) has key id {KEY.key_id}"
    )
    chain.check_genesis("l.db", KEY, chain.genesis_body(KEY, "2"))  # its own key: accepted


@pytest.mark.parametrize(("size", "ok"), [(15, False), (16, True), (4096, True), (4097, False)])
def test_key_length_edges(size: int, ok: bool, tmp_path: Path) -> None:
    secret = "k" * size
    file = tmp_path / "key"
    file.write_text(secret + "\n")
    for environ in ({chain.ENV_KEY: secret}, {chain.ENV_KEY_FILE: str(file)}):
        if ok:
            assert chain.key_from_environment(environ).secret == secret.encode()
        else:
            with pytest.raises(InputError) as refused:
                chain.key_from_environment(environ)
            where = next(iter(environ))
            assert str(refused.value) == f"{where}: expected a secret of 16..4096 bytes, found '{size} bytes'"


def test_both_key_variables_are_refused() -> None:
    with pytest.raises(InputError) as refused:
        chain.key_from_environment({chain.ENV_KEY: "k" * 32, chain.ENV_KEY_FILE: "/nonexistent"})
    assert str(refused.value) == (
        f"{chain.ENV_KEY}: expected either {chain.ENV_KEY} or {chain.ENV_KEY_FILE}, not both, found 'both set'"
    )
    assert "k" * 32 not in str(refused.value)  # the secret is never echoed


def test_a_key_file_is_named_as_one_in_every_refusal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each refusal of DPMEM_LEDGER_KEY_FILE says what it wanted (a key file) and where: a missing
    path, a folder, a file past the 4,096-byte secret and its line end, an empty file."""
    monkeypatch.chdir(tmp_path)  # short paths: the line shows at most 60 characters of what it found
    Path("folder").mkdir()
    Path("long").write_bytes(b"k" * 4097 + b"\r\n")  # one byte past the read limit
    Path("empty").write_bytes(b"")
    expected = {
        "missing": "expected a readable key file, found 'missing (No such file or directory)'",
        "folder": "expected a regular key file, found 'a directory: folder'",
        "long": "expected a key file of at most 4098 bytes, found '4099 bytes: long'",
        "empty": "expected a secret of 16..4096 bytes, found '0 bytes'",
    }
    for name, message in expected.items():
        with pytest.raises(InputError) as refused:
            chain.key_from_environment({chain.ENV_KEY_FILE: name})
        assert str(refused.value) == f"{chain.ENV_KEY_FILE}: {message}"


def test_no_key_at_all_is_refused_naming_both_variables_and_the_development_key() -> None:
    with pytest.raises(InputError) as refused:
        chain.key_from_environment({})
    assert str(refused.value) == (
        "DPMEM_LEDGER_KEY: expected a key for a durable ledger (DPMEM_LEDGER_KEY or DPMEM_LEDGER_KEY_FILE; "
        "DPMEM_LEDGER_DEV_KEY=1 runs on the public development key), found 'none set'"
    )


def test_a_key_is_its_exact_bytes_and_is_keyed(tmp_path: Path) -> None:
    """The variable's text encodes back to the bytes the environment held (a non-UTF-8 byte comes
    through os.environ as a lone surrogate); a key file loses only its line end (CR, LF), never
    spaces or other characters; both are keyed (no development-key notice), unlike the dev key."""
    raw_byte = chain.key_from_environment({chain.ENV_KEY: "k" * 20 + "\udcff"})
    assert raw_byte.secret == b"k" * 20 + b"\xff" and raw_byte.keyed is True
    file = tmp_path / "key"
    for content, secret in ((b"k" * 20 + b"  \n", b"k" * 20 + b"  "), (b"k" * 20 + b"X\r\n", b"k" * 20 + b"X")):
        file.write_bytes(content)
        from_file = chain.key_from_environment({chain.ENV_KEY_FILE: str(file)})
        assert from_file.secret == secret and from_file.keyed is True
    assert chain.dev_key_notice(raw_byte) is None and chain.dev_key_notice(from_file) is None
    dev = chain.key_from_environment({chain.ENV_DEV_KEY: "1"})
    assert dev.keyed is False and chain.dev_key_notice(dev) is not None


def test_a_canonical_body_is_sorted_compact_ascii_json_of_bounded_size() -> None:
    """What the chain MACs: keys sorted, no spaces, every non-ASCII character escaped (the text is
    the same bytes whatever the encoding that reads it); a body past the bound is refused."""
    assert chain.canonical({"b": "é\u2028", "a": [1, "x"]}) == '{"a":[1,"x"],"b":"\\u00e9\\u2028"}'
    at_most = chain.MAX_BODY_BYTES
    fits = {"x": "a" * (at_most - len('{"x":""}'))}
    assert len(chain.canonical(fits)) == at_most
    with pytest.raises(InputError) as refused:
        chain.canonical({"x": fits["x"] + "a"})
    assert str(refused.value) == f"chain event: expected at most {at_most} bytes, found {at_most + 1}"
