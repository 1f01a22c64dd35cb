"""JSON for the per-tool-call hook, without importing :mod:`json`.

``import json`` loads ``re`` (with ``enum``, ``functools`` and the regex compiler): about 20 ms, most of what a
tool call's hook process costs beyond starting Python. The standard library's own C accelerator (``_json``, the
scanner and encoder :mod:`json` itself uses) parses and writes the same text without them. Any case it cannot
serve (an interpreter without ``_json``, a value it refuses) goes to :mod:`json`, imported then; the tests check
both give the same results."""

from __future__ import annotations

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs every tool call's hook process
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

_WHITESPACE = " \t\n\r"
_CONSTANTS = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}


class _Context:
    """The attributes ``_json.make_scanner`` reads from a decoder (json.JSONDecoder's defaults)."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = _CONSTANTS.__getitem__


def _scanner() -> Any:
    try:
        import _json

        # typeshed names a scanner as the argument; any object with the attributes above is what C reads
        return _json.make_scanner(_Context())  # type: ignore[arg-type]
    except (ImportError, AttributeError, TypeError):
        return None


_SCAN = _scanner()


def loads(text: str) -> Any:
    """Like :func:`json.loads` for ``str`` input; raises ``ValueError`` (``json.JSONDecodeError`` is one) on bad
    JSON."""
    start = len(text) - len(text.lstrip(_WHITESPACE))
    if _SCAN is not None:
        try:
            value, end = _SCAN(text, start)
        except (StopIteration, ValueError, SystemError):
            # not JSON: json.loads below says where and why (the C scanner's first error in a process where
            # json.decoder was never imported comes out as a SystemError instead of a JSONDecodeError)
            pass
        else:
            if not text[end:].strip(_WHITESPACE):
                return value
    import json

    return json.loads(text)


def loads_input(data: bytes) -> Any:
    """The JSON value of input from another program (a hook's stdin): bytes that are not UTF-8 read as U+FFFD, and
    so does a lone UTF-16 surrogate (a ``\\ud83d`` escape whose pair was cut off, as a truncated emoji leaves it),
    which no UTF-8 file can hold. Raises ``ValueError`` on bad JSON, ``RecursionError`` on JSON nested too deeply."""
    value = loads(data.decode("utf-8", "replace") or "null")
    if b"\\u" in data:
        lowered = data.lower()  # once: the input may be megabytes
        if any(b"\\ud" + bytes([c]) in lowered for c in b"89abcdef"):  # a surrogate's escape
            value = _whole(value)
    return value


def _whole(value: Any) -> Any:
    if isinstance(value, str):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, dict):
        return {_whole(key): _whole(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_whole(item) for item in value]
    return value


def dumps(value: Any, *, default: Callable[[Any], Any] | None = None, sort_keys: bool = False) -> str:
    """Like ``json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=default,
    sort_keys=sort_keys)``."""
    try:
        import _json

        def refuse(o: Any) -> Any:
            raise TypeError(f"Object of type {type(o).__name__} is not JSON serializable")

        encode = _json.make_encoder({}, default or refuse, _json.encode_basestring, None, ":", ",", sort_keys,
                                    False, True)
        return "".join(encode(value, 0))
    except (ImportError, AttributeError, TypeError, ValueError, RecursionError):
        import json

        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=default, sort_keys=sort_keys)
