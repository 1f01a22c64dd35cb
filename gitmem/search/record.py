"""The base of the small read-only records a search makes (a hit, its score parts, a period, an order).

They are plain classes with ``__slots__``, not dataclasses: a prompt hook is a new process for every prompt, and
each dataclass costs it about a millisecond at import, when its generated methods are compiled. A record sets
its attributes once (:meth:`Record._set`) and is compared, hashed and shown by the values of its ``_FIELDS``.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: a search does not import typing (~3 ms a process)
if TYPE_CHECKING:
    from typing import Any


class Record:
    """Read-only once made; equal when of the same class with equal ``_FIELDS``."""

    __slots__ = ()
    #: the attributes that make the record's value (compared, hashed and shown), in order
    _FIELDS: tuple[str, ...] = ()

    def _set(self, **values: Any) -> None:
        for name, value in values.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only: cannot set {name!r}")

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self._FIELDS)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={value!r}" for name, value in zip(self._FIELDS, self._values(), strict=True))
        return f"{type(self).__name__}({shown})"
