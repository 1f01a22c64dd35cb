"""``functools.cache`` and ``lru_cache`` for the redaction engine, without importing ``functools``.

``functools`` loads ``collections``, ``operator``, ``reprlib``, ``keyword`` and ``types`` (~3 ms of a tool call's
hook process, a tenth of starting Python), and a hook that finds no secret needs none of them. The type checker
reads ``functools``' signatures; the process runs :class:`Memo`."""

from __future__ import annotations

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs every tool call's hook process
if TYPE_CHECKING:
    from collections.abc import Callable
    from functools import cache, lru_cache
    from typing import Any

__all__ = ["Memo", "cache", "lru_cache"]


class CacheInfo:
    """What ``functools``' ``cache_info()`` answers."""

    __slots__ = ("currsize", "hits", "maxsize", "misses")

    def __init__(self, hits: int, misses: int, maxsize: int | None, currsize: int) -> None:
        self.hits, self.misses, self.maxsize, self.currsize = hits, misses, maxsize, currsize


class Memo:
    """``functools.cache`` / ``lru_cache`` (oldest entry dropped past ``maxsize``)."""

    __slots__ = ("function", "hits", "maxsize", "misses", "values")

    def __init__(self, function: Callable[..., Any], maxsize: int | None = None) -> None:
        self.function, self.maxsize = function, maxsize
        self.values: dict[tuple[Any, ...], Any] = {}
        self.hits = self.misses = 0

    def __call__(self, *args: Any) -> Any:
        try:
            value = self.values[args]
        except KeyError:
            self.misses += 1
            value = self.function(*args)
            if self.maxsize is not None and len(self.values) >= self.maxsize:
                del self.values[next(iter(self.values))]
            self.values[args] = value
            return value
        self.hits += 1
        return value

    def cache_info(self) -> CacheInfo:
        return CacheInfo(self.hits, self.misses, self.maxsize, len(self.values))


if not TYPE_CHECKING:  # the type checker reads functools' signatures; the process runs Memo
    def cache(function):
        return Memo(function)

    def lru_cache(maxsize):
        return lambda function: Memo(function, maxsize)
