"""Escaping for every language edgedeploy generates: the one place model-supplied text is made safe.

Names in a model (tensors, nodes, the graph, the file name) are untrusted: they may hold quotes,
newlines, comment terminators, trigraphs, shell or template syntax, control characters and any
Unicode. Everything that puts such text into a generated file or onto the terminal goes through
one of these functions; tests/hostile/test_escaping.py checks each with hypothesis.

    C / C++ string literal      c_string (with quotes), c_string_body (inside quotes)
    C, C++, CMake, CSV comment  comment_text
    C / CMake identifier        identifier
    Python string literal       python_string
    JSON inside a C literal     json_c_string
    Markdown                    markdown_code (inline code), markdown_cell (table cell)
    HTML                        html_text
    terminal                    terminal_safe (no control characters reach the user's terminal)
"""

from __future__ import annotations

import json


def c_string_body(text: str) -> str:
    """`text` as the inside of a C/C++ string literal: printable ASCII kept, every other byte octal-escaped.

    Octal, not hex: a hex escape swallows the hex digits that follow it, an octal one stops
    after three. `?` is escaped so that no trigraph (`??/` is a backslash) can form, and the
    UTF-8 bytes of non-ASCII text are kept exactly.
    """
    out = []
    for byte in str(text).encode("utf-8", "surrogatepass"):
        ch = chr(byte)
        if ch in '"\\?':
            out.append("\\" + ch)
        elif 0x20 <= byte < 0x7F:
            out.append(ch)
        else:
            out.append(f"\\{byte:03o}")
    return "".join(out)


def c_string(text: str) -> str:
    """A complete C/C++ string literal (quotes included) for any text."""
    return '"' + c_string_body(text) + '"'


def json_c_string(value) -> str:
    """A JSON document as a C string literal (ASCII JSON, then C-escaped)."""
    return c_string(json.dumps(value, ensure_ascii=True, sort_keys=True, separators=(",", ":")))


_COMMENT_SAFE = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _-.,:;=+()[]<>#@%&|^~!$'/")


def comment_text(text: str) -> str:
    """Text safe inside a C, C++, CMake, Makefile or CSV comment line: no newline, no `*/`, no `\\`, no trigraph, ASCII only.

    Everything outside a small safe set is shown as `\\xNN` per UTF-8 byte; `*` and `?` are
    outside it, so neither `*/` nor `??` can form.
    """
    out = []
    for ch in str(text):
        if ch in _COMMENT_SAFE:
            out.append(ch)
        else:
            out.append("".join(f"\\x{b:02x}" for b in ch.encode("utf-8", "surrogatepass")))
    return "".join(out)


def identifier(text: str, prefix: str = "m") -> str:
    """A C / CMake identifier: ASCII letters, digits and underscores, not starting with a digit, at most 48 characters."""
    cleaned = "".join(c if (c.isascii() and (c.isalnum() or c == "_")) else "_" for c in str(text))
    cleaned = cleaned.strip("_") or prefix
    if cleaned[0].isdigit():
        cleaned = f"{prefix}_{cleaned}"
    return cleaned[:48]


def python_string(text: str) -> str:
    """A Python string literal (quotes included) for any text: ASCII only, on one line."""
    return ascii(str(text))


def markdown_code(text: str) -> str:
    """An inline Markdown code span showing the text JSON-escaped (ASCII, no backticks, no line breaks)."""
    return "`" + json.dumps(str(text), ensure_ascii=True).replace("`", "\\u0060") + "`"


_MARKDOWN_SPECIAL = "\\|`*_<>[]()#!~"


def markdown_cell(text) -> str:
    """A value as Markdown table-cell text: special characters backslash-escaped, on one line, no control characters."""
    out = []
    for ch in terminal_safe(str(text)):
        out.append("\\" + ch if ch in _MARKDOWN_SPECIAL else ch)
    return "".join(out)


def html_text(text) -> str:
    """A value as HTML text or attribute content."""
    import html  # only the HTML report needs it (html.entities comes with it: 1 ms)

    return html.escape(terminal_safe(str(text)), quote=True)


# Line separators and the bidirectional formatting characters (embeddings, overrides, isolates,
# marks) that reorder what a terminal shows ("trojan source").
BIDI_AND_SEPARATORS = "\u2028\u2029\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"


def terminal_safe(text: str) -> str:
    """Text for a terminal line: C0 and C1 control characters (escape sequences, carriage returns, newlines) shown as `\\xNN`.

    A model name or a device's output with ESC sequences could otherwise rewrite what the user
    sees; tabs are kept.
    """
    text = str(text)
    if text.isprintable() and "\x1b" not in text:
        return text
    out = []
    for ch in text:
        code = ord(ch)
        if ch == "\t" or not (code < 0x20 or 0x7F <= code < 0xA0 or ch in BIDI_AND_SEPARATORS):
            out.append(ch)
        else:
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
    return "".join(out)


def terminal_text(text: str) -> str:
    """Several lines for the terminal: each line terminal-safe, the line breaks kept."""
    return "\n".join(terminal_safe(line) for line in str(text).split("\n"))
