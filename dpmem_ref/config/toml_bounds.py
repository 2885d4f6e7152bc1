"""TOML read with bounded work: a linear pre-scan, then the standard parser.

`tomllib` does work quadratic in the number of dotted parts of one key or table header
(each prefix of the key is looked up again): a 200 KB file whose header has 100,000
dotted parts parses for over a minute. Its nesting is bounded only by Python's stack. So
before any parsing, `prescan` walks the text once, in linear time, with a tokenizer that
knows TOML's strings and comments (a `[`, `=` or `.` inside a string or comment is not
structure), and refuses the first thing past a documented limit (dpmem_ref.core.limits):

- MAX_TOML_DEPTH: nesting of arrays and inline tables;
- MAX_TOML_KEYS: keys (key/value pairs and table headers) in the file;
- MAX_KEY_PARTS: dotted parts of one key or table header;
- MAX_HEADER_CHARS: characters of one table header, or of one key up to its `=`.

The file size is bounded before this (`read_bounded`). Within these limits the parser's
work is linear in the file; a file the pre-scan passes but that is not valid TOML is
refused by the parser itself. Errors are one line, name the file and the line, and
quote nothing from the file.
"""

from __future__ import annotations

import re
import tomllib
from typing import Any

from dpmem_ref.core.errors import InputError
from dpmem_ref.core.limits import MAX_HEADER_CHARS, MAX_KEY_PARTS, MAX_TOML_DEPTH, MAX_TOML_KEYS

# One token per match; every other character (bare keys, numbers, spaces) is skipped by
# the regex engine. Atomic groups: a string that never closes fails in linear time (no
# backtracking into the group). Not possessive repeats of an alternation: an early Python 3.11
# (3.11.2; 3.11.7 does not) matches those wrongly (a multi-line string holding `"b""` and an escaped quote was
# missed, and its brackets counted as structure).
_TOKEN = re.compile(
    r'"""(?>(?:[^"\\]+|\\[\s\S]|"(?!""))*)"{3,5}'  # multi-line basic string
    r"|'''(?>(?:[^']+|'(?!''))*)'{3,5}"  # multi-line literal string
    r'|"(?>(?:[^"\\\n]+|\\.)*)"'  # basic string
    r"|'(?>[^'\n]*)'"  # literal string
    r"|#(?>[^\n]*)"  # comment
    r"|[\[\]{}=.,\n]"  # structure
    r"|[\"']"  # a quote that opens no complete string: invalid TOML
)

_KEY, _VALUE, _HEADER, _AFTER_HEADER = range(4)


def _refuse(where: str, line: int, what: str) -> InputError:
    return InputError(where, "TOML within the documented limits (docs/config-format.md, Limits)", f"{what} at line {line}")


def prescan(text: str, where: str) -> None:
    """Refuse, before parsing, a TOML text past a limit of the module doc (InputError)."""
    line = 1
    mode = _KEY
    stack: list[str] = []  # "[" for an array, "{" for an inline table
    keys = 0
    parts = 1
    start = 0  # where the current key or header began
    header_open = -1
    for match in _TOKEN.finditer(text):
        token = match.group()
        kind = token[0]
        position = match.start()
        if kind == "\n":
            line += 1
            if not stack:
                mode, parts, start = _KEY, 1, position + 1
        elif kind in "\"'":
            if len(token) == 1:
                return  # an unterminated string: the parser refuses the file here
            line += token.count("\n")
        elif kind == "#":
            continue
        elif kind == ".":
            if mode in (_KEY, _HEADER):
                parts += 1
                if parts > MAX_KEY_PARTS:
                    raise _refuse(where, line, f"a key of more than {MAX_KEY_PARTS} dotted parts")
        elif kind == "=":
            if mode == _KEY:
                if position - start > MAX_HEADER_CHARS:
                    raise _refuse(where, line, f"a key longer than {MAX_HEADER_CHARS} characters")
                keys += 1
                if keys > MAX_TOML_KEYS:
                    raise _refuse(where, line, f"more than {MAX_TOML_KEYS} keys")
                mode = _VALUE
        elif kind == "[":
            if mode == _KEY and not stack:
                mode, parts, start, header_open = _HEADER, 1, position, position
            elif mode == _HEADER and position == header_open + 1:
                continue  # the second bracket of an array-of-tables header [[...]]
            else:
                stack.append("[")
                if len(stack) > MAX_TOML_DEPTH:
                    raise _refuse(where, line, f"arrays or inline tables nested more than {MAX_TOML_DEPTH} deep")
                mode = _VALUE
        elif kind == "{":
            stack.append("{")
            if len(stack) > MAX_TOML_DEPTH:
                raise _refuse(where, line, f"arrays or inline tables nested more than {MAX_TOML_DEPTH} deep")
            mode, parts, start = _KEY, 1, position + 1
        elif kind == "]":
            if mode == _HEADER:
                if position - start > MAX_HEADER_CHARS:
                    raise _refuse(where, line, f"a table header longer than {MAX_HEADER_CHARS} characters")
                keys += 1
                if keys > MAX_TOML_KEYS:
                    raise _refuse(where, line, f"more than {MAX_TOML_KEYS} keys")
                mode = _AFTER_HEADER
            elif stack and stack[-1] == "[":
                stack.pop()
                mode = _VALUE
        elif kind == "}":
            if stack and stack[-1] == "{":
                stack.pop()
            mode = _VALUE
        elif kind == ",":
            if stack and stack[-1] == "{":
                mode, parts, start = _KEY, 1, position + 1
            else:
                mode = _VALUE
        if mode == _HEADER and position - start > MAX_HEADER_CHARS:
            raise _refuse(where, line, f"a table header longer than {MAX_HEADER_CHARS} characters")


def load_toml(raw: bytes, where: str) -> dict[str, Any]:
    """Decode (strict UTF-8), pre-scan and parse a TOML file's bytes; InputError naming
    `where` (the file) otherwise. The bytes are already bounded (`read_bounded`)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(where, "UTF-8 text", "undecodable bytes") from None
    prescan(text, where)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise InputError(where, "valid TOML", str(error)) from None
    except (ValueError, RecursionError):  # integers past 4300 digits; nesting is bounded above
        raise InputError(where, "TOML within the parser's limits", "an oversized number or nesting") from None
