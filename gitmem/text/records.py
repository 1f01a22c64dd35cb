"""Frozen records without :mod:`dataclasses`, for the modules a hook process loads.

Importing :mod:`dataclasses` loads :mod:`inspect` (with ``ast``, ``dis``, ``tokenize``), and each ``@dataclass``
builds its methods from generated source: together tens of milliseconds of a hook process that starts for every
prompt. A :class:`Record` subclass declares its fields as a dataclass does (annotated names in the class body,
defaults assigned to them); records compare, hash and print like frozen dataclasses, take keyword arguments
(type checkers see them as dataclasses, through ``dataclass_transform``), and :func:`replace` copies one with
changes. A default is shared by every record that does not set the field, so defaults are immutable values.
A field named in :attr:`Record.UNCOMPARED` is taken and kept but is not part of the record's value (like a
dataclass ``field(compare=False, repr=False)``). Records have no ``__slots__``: a value computed on first use is a
:func:`functools.cached_property`, which stores it on the instance without going through the frozen ``__setattr__``.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs every hook process
if TYPE_CHECKING:
    from typing import Any, ClassVar, TypeVar, dataclass_transform

    _R = TypeVar("_R", bound="Record")
else:
    def dataclass_transform(**_options: object) -> object:
        return lambda cls: cls


@dataclass_transform(frozen_default=True, kw_only_default=True)
class Record:
    """A frozen record; its fields are the annotated names of the subclass's body, in order (:attr:`FIELDS`)."""

    #: the names of the fields, in the order of the class body
    FIELDS: ClassVar[tuple[str, ...]] = ()
    #: fields that are not part of the value: not compared, hashed nor shown (set in the subclass's body)
    UNCOMPARED: ClassVar[frozenset[str]] = frozenset()
    #: the fields that make the record's value, in order
    _VALUE: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls) -> None:
        # the class body's own annotations, in order (not inspect.get_annotations: importing inspect is what
        # this class spares)
        cls.FIELDS = tuple(cls.__dict__.get("__annotations__", {}))  # noqa: RUF063
        cls._VALUE = tuple(name for name in cls.FIELDS if name not in cls.UNCOMPARED)

    def __init__(self, **values: Any) -> None:
        for name in self.FIELDS:
            if name in values:
                value = values.pop(name)
            elif hasattr(type(self), name):
                value = getattr(type(self), name)
            else:
                raise TypeError(f"{type(self).__name__}() needs the field {name!r}")
            object.__setattr__(self, name, value)
        if values:
            raise TypeError(f"{type(self).__name__}() has no field {', '.join(map(repr, values))}")

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen: make a changed copy with replace()")

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self._VALUE)

    def __hash__(self) -> int:
        return hash(tuple(getattr(self, name) for name in self._VALUE))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{n}={getattr(self, n)!r}' for n in self._VALUE)})"


def replace(record: _R, **changes: Any) -> _R:
    """A copy of ``record`` with ``changes`` (like :func:`dataclasses.replace`)."""
    return type(record)(**{**{name: getattr(record, name) for name in record.FIELDS}, **changes})
