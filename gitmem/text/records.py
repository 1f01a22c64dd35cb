"""Frozen records without :mod:`dataclasses`, for the modules a hook process loads.

Importing :mod:`dataclasses` loads :mod:`inspect` (with ``ast``, ``dis``, ``tokenize``), and each ``@dataclass``
builds its methods from generated source: together tens of milliseconds of a hook process that starts for every
prompt. A :class:`Record` subclass declares its fields as a dataclass does (annotated names in the class body,
defaults assigned to them, or a :func:`field` with a default factory and metadata); records compare, hash and
print like frozen dataclasses, take keyword arguments (type checkers see them as dataclasses, through
``dataclass_transform``), and :func:`replace` copies one with changes, :func:`fields` lists the fields with their
defaults and metadata, :func:`asdict` gives a dict. A plain default is shared by every record that does not set the
field, so plain defaults are immutable values (a ``default_factory`` makes a fresh value for each record).
A field named in :attr:`Record.UNCOMPARED` is taken and kept but is not part of the record's value (like a
dataclass ``field(compare=False, repr=False)``). Records have no ``__slots__``: a value computed on first use is a
:func:`functools.cached_property`, which stores it on the instance without going through the frozen ``__setattr__``.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs every hook process
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any, ClassVar, TypeVar, dataclass_transform

    _R = TypeVar("_R", bound="Record")
else:
    def dataclass_transform(**_options: object) -> object:
        return lambda cls: cls


class _Missing:
    """The type of :data:`MISSING`."""

    def __repr__(self) -> str:
        return "MISSING"


#: the ``default`` of a field that has none (like :data:`dataclasses.MISSING`)
MISSING: Any = _Missing()


class Field:
    """One field of a record, as :func:`fields` lists it (the attributes callers of ``dataclasses.Field`` use)."""

    __slots__ = ("compare", "default", "default_factory", "metadata", "name", "repr", "type")

    def __init__(self, default: Any, default_factory: Callable[[], Any] | None, metadata: Mapping[str, Any] | None,
                 compare: bool, repr: bool) -> None:  # `repr`: dataclasses' name for it
        self.name = ""
        #: the annotation, as written in the class body (a string: the modules use postponed annotations)
        self.type: Any = ""
        self.default = default
        self.default_factory = default_factory
        self.metadata: Mapping[str, Any] = metadata or {}
        self.compare = compare
        self.repr = repr

    def __repr__(self) -> str:
        return f"Field(name={self.name!r}, type={self.type!r}, default={self.default!r})"


def field(*, default: Any = MISSING, default_factory: Callable[[], Any] | None = None,
          metadata: Mapping[str, Any] | None = None, compare: bool = True,
          repr: bool = True) -> Any:  # `repr`: dataclasses' name for it
    """A field's declaration in a :class:`Record` body, for what a plain default cannot say (like
    :func:`dataclasses.field`): a ``default_factory`` called for each new record, ``metadata`` read back through
    :func:`fields`, ``compare=False`` for a field that is not part of the value (still shown unless ``repr=False``)."""
    if default is not MISSING and default_factory is not None:
        raise ValueError("a field takes a default or a default_factory, not both")
    return Field(default, default_factory, metadata, compare, repr)


@dataclass_transform(frozen_default=True, kw_only_default=True, field_specifiers=(field,))
class Record:
    """A frozen record; its fields are the annotated names of the subclass's body, in order (:attr:`FIELDS`)."""

    #: the names of the fields, in the order of the class body
    FIELDS: ClassVar[tuple[str, ...]] = ()
    #: fields that are not part of the value: not compared, hashed nor shown (set in the subclass's body)
    UNCOMPARED: ClassVar[frozenset[str]] = frozenset()
    #: the fields that make the record's value (compared and hashed), in order
    _VALUE: ClassVar[tuple[str, ...]] = ()
    #: the fields its repr shows, in order
    _SHOWN: ClassVar[tuple[str, ...]] = ()
    #: each field's declaration, in order
    _FIELDS: ClassVar[tuple[Field, ...]] = ()
    #: the plain defaults, and the default factories, by field name
    _DEFAULTS: ClassVar[dict[str, Any]] = {}
    _FACTORIES: ClassVar[dict[str, Callable[[], Any]]] = {}
    #: the field names, as a set
    _NAMES: ClassVar[frozenset[str]] = frozenset()

    def __init_subclass__(cls) -> None:
        # the class body's own annotations, in order (not inspect.get_annotations: importing inspect is what
        # this class spares)
        annotations: dict[str, Any] = cls.__dict__.get("__annotations__", {})  # noqa: RUF063
        cls.FIELDS = tuple(annotations)
        cls._NAMES = frozenset(cls.FIELDS)
        declared: list[Field] = []
        for name in cls.FIELDS:
            spec = cls.__dict__.get(name, MISSING)
            if isinstance(spec, Field):
                if spec.default is MISSING:
                    delattr(cls, name)  # a required field or a factory's: no class attribute stands for a value
                else:
                    setattr(cls, name, spec.default)
            else:
                default = getattr(cls, name, MISSING)  # a plain default, possibly inherited
                spec = Field(default, None, None, True, True)
            if name in cls.UNCOMPARED:
                spec.compare = spec.repr = False
            spec.name, spec.type = name, annotations[name]
            declared.append(spec)
        cls._FIELDS = tuple(declared)
        cls._VALUE = tuple(f.name for f in declared if f.compare)
        cls._SHOWN = tuple(f.name for f in declared if f.repr)
        cls._DEFAULTS = {f.name: f.default for f in declared if f.default is not MISSING}
        cls._FACTORIES = {f.name: f.default_factory for f in declared if f.default_factory is not None}

    def __init__(self, **values: Any) -> None:
        # dict operations rather than a loop over the fields: a search builds records by the thousand
        cls = type(self)
        data = {**cls._DEFAULTS, **values}
        if data.keys() != cls._NAMES:
            for name, make in cls._FACTORIES.items():
                if name not in data:
                    data[name] = make()
            if data.keys() != cls._NAMES:
                missing = [name for name in cls.FIELDS if name not in data]
                if missing:
                    raise TypeError(f"{cls.__name__}() needs the field {missing[0]!r}")
                unknown = [name for name in values if name not in cls._NAMES]
                raise TypeError(f"{cls.__name__}() has no field {', '.join(map(repr, unknown))}")
        self.__dict__.update(data)  # reading __dict__ does not go through the frozen __setattr__

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen: make a changed copy with replace()")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen: make a changed copy with replace()")

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        mine, theirs = self.__dict__, other.__dict__
        for name in self._VALUE:
            a, b = mine[name], theirs[name]
            if a is not b and not a == b:  # identity first, as a dataclass's tuple comparison does
                return False
        return True

    def __hash__(self) -> int:
        values = self.__dict__
        return hash(tuple([values[name] for name in self._VALUE]))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{n}={getattr(self, n)!r}' for n in self._SHOWN)})"


def replace(record: _R, **changes: Any) -> _R:
    """A copy of ``record`` with ``changes`` (like :func:`dataclasses.replace`)."""
    return type(record)(**{**{name: getattr(record, name) for name in record.FIELDS}, **changes})


def fields(record: Record | type[Record]) -> tuple[Field, ...]:
    """The fields of a record or record class, in declaration order, with their defaults and metadata (like
    :func:`dataclasses.fields`)."""
    return record._FIELDS


def asdict(record: Record) -> dict[str, Any]:
    """The record's fields as a dict (like :func:`dataclasses.asdict`): records inside it become dicts too, and
    lists, tuples and dicts are copied, so changing the result does not change the record."""
    return {name: _plain(getattr(record, name)) for name in record.FIELDS}


def _plain(value: Any) -> Any:
    if isinstance(value, Record):
        return asdict(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value)
    if isinstance(value, dict):
        return {_plain(k): _plain(v) for k, v in value.items()}
    return value
