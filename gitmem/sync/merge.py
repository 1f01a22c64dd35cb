"""Three-way merge of memory documents (pure functions: text in, text out).

``gitmem sync`` calls :func:`merge_file` for every file both sides changed since their common ancestor.

Memory files are merged field by field, each field three-way (a side that left a field as it was in the base
takes the other side's change):

- ``tags``: set merge (a tag either side added is kept; a tag one side removed stays removed if the other side
  did not touch it); with no common ancestor, the union;
- ``importance``: the higher one when both sides changed it;
- ``updated``: the newer one, ``created``: the older one;
- ``deprecated``: kept when either side deprecated, with that side's ``deprecated_reason``/``superseded_by``
  (so "deprecate on one machine, edit on the other" gives a deprecated memory with the edit in it); when both
  deprecated it for different reasons, both reasons, the newer first (``"reason B; reason A"``);
- ``conflicted``: kept when either side is conflicted;
- other scalars (``type``, ``category``, ``scope``+``project``, ``source``, ``expires``, unknown keys): when both
  sides changed them differently, the side with the newer ``updated`` wins (ties broken by content, so the result
  does not depend on which machine merges);
- text fields (the body ``text``, ``why``, ``how``, ``name``, ``description``): line by line with ``merge3``.

A memory one side moved to another folder (``gitmem move``: its file deleted at one path and added at another) is
paired by its id with the other side's change of it (:func:`memory_identity`, :func:`merge_moved`, called by
:mod:`gitmem.git.branches`): the versions merge as above, into one file where the merged ``project`` puts it. Path by
path, the other side's edit (or ``forget``) of the old path won over the delete and the memory was left twice. When
both sides moved it to different places, the newer move wins and the merge reports the other. The sides are
compared redacted (:func:`gitmem.git.branches.redaction`): a version that differs only by a secret the other side
no longer holds (``purge-secrets`` on one machine) is the same version.

When a text field truly conflicts, nothing is dropped and the repository stays parseable: the memory keeps the
winning side's text, gets ``conflicted: true`` and ``conflict_with: [<version id>]``, and the other side's
version is written next to it as a *sibling memory* with id ``<id>-conflict-<6 hex>``, ``conflicted: true`` and
``conflict_of: <id>``. Both are ordinary memory files (readable by ``gitmem show``, found by search) until
``gitmem resolve`` settles them. Wiki pages, instincts and project pages have merges of their own
(:mod:`gitmem.sync.wikimerge`, :mod:`gitmem.learn.instinctmerge`, :mod:`gitmem.projects.pagemerge`); any other
file that both sides changed on the same lines keeps the larger version and the other beside it
(:mod:`gitmem.sync.sidecars`). See ``docs/sync.md``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from gitmem.errors import DocumentError
from gitmem.store import document as docs
from gitmem.store.document import Memory
from gitmem.text.counted import counted
from gitmem.text.records import replace
from gitmem.text.threeway import three_way

T = TypeVar("T")

CONFLICT_WITH = "conflict_with"
CONFLICT_OF = "conflict_of"
#: the fields of each merge rule, from their declaration (``Memory``'s field metadata)
TEXT_FIELDS = docs.field_names(merge="text")
_SCALARS = docs.field_names(merge="newer")
#: the rules :func:`merge_memories` implements; a field whose rule is not here fails the tests
RULES = frozenset({"identity", "text", "newer", "placement", "max", "set", "oldest", "newest", "either",
                   "deprecation", "extra"})
_MEMORY_PREFIX = docs.MEMORIES_DIR + "/"


@dataclass(frozen=True)
class MergeResult:
    """The merged memory, sibling versions that keep the losing side of a text conflict, conflicting fields."""

    memory: Memory
    versions: tuple[Memory, ...] = ()
    conflicts: tuple[str, ...] = ()


@dataclass
class FileMerge:
    """What a file-level merge writes: path → content (None deletes), and the conflicts it met."""

    changes: dict[str, bytes | None] = field(default_factory=dict)
    conflicts: list[str] = field(default_factory=list)
    #: ids of memories left with ``conflicted: true``
    conflicted_ids: list[str] = field(default_factory=list)


# -- text -----------------------------------------------------------------------------------------------
def merge_text(base: str | None, ours: str, theirs: str) -> str | None:
    """Line-by-line three-way merge; None when both sides changed the same lines differently."""
    if ours == theirs:
        return ours
    if base is not None:
        if ours == base:
            return theirs
        if theirs == base:
            return ours
    return merge_lines(base, ours, theirs, lambda _base, _ours, _theirs: None)


def merge_lines(base: str | None, ours: str, theirs: str,
                resolve: Callable[[list[str], list[str], list[str]], list[str] | None]) -> str | None:
    """Line-by-line three-way merge (``merge3``); each region both sides changed differently goes to
    ``resolve(base lines, our lines, their lines)``, which gives its lines, or None to give the merge up (then None)."""
    try:
        from merge3 import Merge3
    except ImportError:  # without merge3 every two-sided edit is a conflict: both versions are still kept
        return None

    b_lines = base.split("\n") if base else []
    a_lines = ours.split("\n")
    t_lines = theirs.split("\n")
    out: list[str] = []
    for region in Merge3(b_lines, a_lines, t_lines).merge_regions():
        kind = region[0]
        if kind == "unchanged":
            out.extend(b_lines[region[1]:region[2]])
        elif kind in ("same", "a"):
            out.extend(a_lines[region[1]:region[2]])
        elif kind == "b":
            out.extend(t_lines[region[1]:region[2]])
        else:
            z1, z2, a1, a2, t1, t2 = (int(v) for v in region[1:7])  # "conflict" regions carry all three ranges
            lines = resolve(b_lines[z1:z2], a_lines[a1:a2], t_lines[t1:t2])
            if lines is None:
                return None
            out.extend(lines)
    return "\n".join(out)


# -- fields ---------------------------------------------------------------------------------------------
def _sort_key(memory: Memory) -> tuple[Any, str]:
    return (memory.updated, docs.dumps(memory))


def _merge_set(name: str, base: Memory | None, ours: Memory, theirs: Memory, winner: Memory) -> tuple[str, ...]:
    o: tuple[str, ...] = getattr(ours, name)
    t: tuple[str, ...] = getattr(theirs, name)
    b: tuple[str, ...] = getattr(base, name) if base is not None else ()
    if o == t:
        return o
    if base is not None:
        if o == b:
            return t
        if t == b:
            return o
    base_set = set(b) if base is not None else set()
    keep: set[str] = set()
    for tag in set(o) | set(t) | base_set:
        in_o, in_t, in_b = tag in o, tag in t, tag in base_set
        if in_o == in_t:
            if in_o:
                keep.add(tag)
        elif (in_o != in_b) if in_o else (in_t != in_b):  # the side that has it added it
            keep.add(tag)
    ordered = [item for item in getattr(winner, name) if item in keep]
    ordered += sorted(item for item in keep if item not in ordered)
    return tuple(ordered[: docs.MAX_TAGS])


def _merge_extra(base: Memory | None, ours: Memory, theirs: Memory, winner: Memory) -> dict[str, Any]:
    result: dict[str, Any] = {}
    keys = list(dict.fromkeys([*ours.extra, *theirs.extra]))
    missing = object()
    for key in keys:
        if key in (CONFLICT_WITH, CONFLICT_OF):
            continue
        b = base.extra.get(key, missing) if base is not None else missing
        o, t = ours.extra.get(key, missing), theirs.extra.get(key, missing)
        won: object = winner.extra.get(key, missing)

        def take_winner(_o: object, _t: object, won: object = won) -> object:
            return won

        value = three_way(b, base is not None, o, t, take_winner)
        if value is not missing:
            result[key] = value
    of = {m.extra.get(CONFLICT_OF) for m in (ours, theirs) if m.extra.get(CONFLICT_OF)}
    if of:
        result[CONFLICT_OF] = sorted(str(v) for v in of)[0]
    return result


def _conflict_ids(memory: Memory) -> list[str]:
    value = memory.extra.get(CONFLICT_WITH) or []
    return [str(v) for v in (value if isinstance(value, list) else [value])]


def version_id(memory_id: str, loser: Memory) -> str:
    """The id of the sibling memory that keeps ``loser``'s version of ``memory_id``."""
    digest = hashlib.sha1(docs.dumps(loser).encode()).hexdigest()[:6]
    return f"{memory_id[:180]}-conflict-{digest}"


def _constant(value: T) -> Callable[[Any, Any], T]:
    return lambda _o, _t: value


def _both_reasons(newer: str, older: str) -> str:
    """Two reasons for deprecating one memory, the newer first, as one sentence; one that already says the other is
    not repeated."""
    if older in newer:
        return newer
    if newer in older:
        return older
    return f"{newer.rstrip(' .;')}; {older}"


def merge_memories(base: Memory | None, ours: Memory, theirs: Memory) -> MergeResult:
    """Merge two versions of one memory against their common ancestor (None when both added it)."""
    if docs.dumps(ours) == docs.dumps(theirs):
        return MergeResult(ours)
    winner, loser = (ours, theirs) if _sort_key(ours) >= _sort_key(theirs) else (theirs, ours)
    has_base = base is not None

    def pick(name: str, resolve: Callable[[Any, Any], Any] | None = None) -> Any:
        b = getattr(base, name) if base is not None else None
        return three_way(b, has_base, getattr(ours, name), getattr(theirs, name),
                          resolve or (lambda _o, _t: getattr(winner, name)))

    values: dict[str, Any] = {name: pick(name) for name in _SCALARS}
    values.update({name: pick(name, max) for name in docs.field_names(merge="max")})
    values.update({name: max(getattr(ours, name), getattr(theirs, name)) for name in docs.field_names(merge="newest")})
    values.update({name: min(getattr(ours, name), getattr(theirs, name)) for name in docs.field_names(merge="oldest")})
    values.update({name: _merge_set(name, base, ours, theirs, winner) for name in docs.field_names(merge="set")})
    placement = docs.field_names(merge="placement")  # scope and project move together

    def place(memory: Memory) -> tuple[Any, ...]:
        return tuple(getattr(memory, name) for name in placement)

    values.update(zip(placement, three_way(place(base) if base is not None else None, has_base, place(ours),
                                            place(theirs), lambda _o, _t: place(winner)), strict=True))
    values.update({name: pick(name, lambda o, t: o or t) for name in docs.field_names(merge="either")})
    # the reason and the successor follow the side that deprecated the memory; when both did, for reasons of their
    # own, the memory keeps both reasons (the newer first): each machine's user said why, and one would be lost
    deprecating = next((m for m in (winner, loser) if m.deprecated), None) if values["deprecated"] else None
    both_reasons = _both_reasons(winner.deprecated_reason, loser.deprecated_reason)
    for name in docs.field_names(merge="deprecation"):
        own: str = getattr(deprecating, name) if deprecating is not None else ""
        resolve = _constant(both_reasons if name == "deprecated_reason" and winner.deprecated and loser.deprecated
                            else own)
        values[name] = (pick(name, resolve) or own) if deprecating is not None else ""

    conflicts: list[str] = []
    for name in TEXT_FIELDS:
        merged = merge_text(getattr(base, name) if base is not None else None, getattr(ours, name),
                            getattr(theirs, name))
        if merged is not None and name == "text" and (
            not merged.strip() or len(merged.encode("utf-8", "surrogatepass")) > docs.MAX_TEXT_BYTES
        ):
            merged = None
        if merged is None:
            conflicts.append(name)
            merged = getattr(winner, name)
        values[name] = merged

    extra = _merge_extra(base, ours, theirs, winner)
    versions: list[Memory] = []
    siblings = sorted(three_way(
        _conflict_ids(base) if base is not None else None, has_base, _conflict_ids(ours), _conflict_ids(theirs),
        lambda o, t: sorted({*o, *t})))
    conflicted = bool(values.pop("conflicted"))  # and true when this merge meets a conflict of its own
    if conflicts:
        sibling_id = version_id(ours.id, loser)
        sibling_extra = {k: v for k, v in loser.extra.items() if k != CONFLICT_WITH}
        sibling_extra[CONFLICT_OF] = ours.id
        versions.append(replace(loser, id=sibling_id, conflicted=True, scope=values["scope"],
                                project=values["project"], extra=sibling_extra))
        siblings = sorted({*siblings, sibling_id})
        conflicted = True
    if siblings:
        extra[CONFLICT_WITH] = siblings
    merged_memory = replace(ours, **values, conflicted=conflicted, extra=extra)
    try:
        merged_memory = docs.loads(docs.dumps(merged_memory), merged_memory.path)
    except DocumentError:  # a merged value broke validation: keep the winner whole, the loser as a version
        if conflicts:
            raise
        sibling_id = version_id(ours.id, loser)
        sibling = replace(loser, id=sibling_id, conflicted=True,
                          extra={**{k: v for k, v in loser.extra.items() if k != CONFLICT_WITH},
                                 CONFLICT_OF: ours.id})
        kept = replace(winner, conflicted=True,
                       extra={**winner.extra, CONFLICT_WITH: sorted({*_conflict_ids(winner), sibling_id})})
        return MergeResult(kept, (sibling,), ("all",))
    return MergeResult(merged_memory, tuple(versions), tuple(conflicts))


# -- files ----------------------------------------------------------------------------------------------
def is_memory_path(path: str) -> bool:
    return path.startswith(_MEMORY_PREFIX) and path.endswith(".md") and path.count("/") == 2


def _parse(path: str, data: bytes | None) -> Memory | None:
    if data is None:
        return None
    try:
        return docs.loads(data.decode("utf-8"), path)
    except (UnicodeDecodeError, DocumentError):
        return None


def _write(result: FileMerge, merged: MergeResult) -> None:
    """Add a merged memory, its sibling versions and its conflicts to ``result``."""
    result.changes[merged.memory.path] = docs.dumps(merged.memory).encode()
    for version in merged.versions:
        result.changes[version.path] = docs.dumps(version).encode()
    if merged.conflicts:
        result.conflicts.append(f"{merged.memory.id}: {', '.join(merged.conflicts)} changed on both sides")
    if merged.memory.conflicted:
        result.conflicted_ids.append(merged.memory.id)


def memory_identity(path: str, data: bytes) -> str | None:
    """The id of the memory a file holds (None for any other file, or one that does not parse): what pairs a
    memory's file that one side deleted at one path with the one it added at another (``gitmem move``)."""
    if not is_memory_path(path):
        return None
    memory = _parse(path, data)
    return memory.id if memory is not None else None


def merge_moved(paths: tuple[str, str, str], base: bytes, ours: bytes, theirs: bytes) -> FileMerge | None:
    """Merge a memory that one side or both moved to another folder (``gitmem move``, or a change of its project)
    while the other changed it: ``paths`` are where the base, our and their versions are. The versions merge as a
    memory both sides changed, and the result is one file, where the merged project puts it; the other paths are
    deleted. When both sides moved it to different places the newer version's place wins (like any field both
    changed) and the other is reported. None when the three are not readable versions of one memory: the caller
    then merges path by path, which keeps both files."""
    base_path, our_path, their_path = paths
    b, o, t = _parse(base_path, base), _parse(our_path, ours), _parse(their_path, theirs)
    if b is None or o is None or t is None or not b.id == o.id == t.id:
        return None
    merged = merge_memories(b, o, t)
    result = FileMerge(changes=dict.fromkeys(paths))
    _write(result, merged)
    if base_path not in (our_path, their_path) and our_path != their_path:
        places = sorted(_place(m) for m in (o, t))
        result.conflicts.append(f"{merged.memory.id}: moved to {places[0]} on one side and to {places[1]} on the "
                                f"other; kept in {_place(merged.memory)}, the newer version's place "
                                "(gitmem move changes it)")
    return result


def _place(memory: Memory) -> str:
    return f"project {memory.project}" if memory.project else "global"


def merge_file(path: str, base: bytes | None, ours: bytes | None, theirs: bytes | None) -> FileMerge:
    """Merge one path changed on both sides. Deleting on one side and editing on the other keeps the edit."""
    result = FileMerge()
    if ours == theirs:
        result.changes[path] = ours
        return result
    if base is not None and ours == base:
        result.changes[path] = theirs
        return result
    if base is not None and theirs == base:
        result.changes[path] = ours
        return result
    if ours is None or theirs is None:  # deleted on one side, edited on the other: keep the edit
        result.changes[path] = ours if ours is not None else theirs
        return result
    if is_memory_path(path):
        o, t = _parse(path, ours), _parse(path, theirs)
        if o is not None and t is not None and o.id == t.id:
            merged = merge_memories(_parse(path, base), o, t)
            if merged.memory.path != path:
                result.changes[path] = None
            _write(result, merged)
            return result
    from gitmem.store.wikipage import is_wiki_path  # wiki pages merge field by field too (gitmem.sync.wikimerge)

    if is_wiki_path(path):
        from gitmem.sync.wikimerge import merge_page_file

        page = merge_page_file(path, base, ours, theirs)
        if page is not None:
            result.changes[path], note = page
            result.conflicts.extend([note] if note else [])
            return result
    # instincts add up what each machine's learner saw since the common version (gitmem.learn.instinctmerge)
    from gitmem.learn.instinctmerge import merge_instinct_file

    instinct = merge_instinct_file(path, base, ours, theirs)
    if instinct is not None:
        result.changes[path] = instinct
        return result
    # project pages merge section by section, like the learner that writes them (gitmem.projects.pagemerge): two
    # sessions in one project both add notes at the top of Notes, which a line merge always calls a conflict
    from gitmem.projects.pagemerge import merge_page_file as merge_project_page

    project_page = merge_project_page(path, base, ours, theirs)
    if project_page is not None:
        result.changes[path] = project_page
        return result
    try:
        text = merge_text(base.decode("utf-8") if base is not None else None, ours.decode("utf-8"),
                          theirs.decode("utf-8"))
    except UnicodeDecodeError:
        text = None
    if text is not None:
        result.changes[path] = text.encode("utf-8")
        return result
    # A true conflict in a file that is not a readable memory or page: the larger content stays, the other is kept
    # beside it (name chosen so it is never read as a memory; gitmem.sync.sidecars lists it for status and doctor).
    from gitmem.sync.sidecars import sidecar_path

    keep, other = (ours, theirs) if (len(ours), ours) >= (len(theirs), theirs) else (theirs, ours)
    side = sidecar_path(path, other)
    result.changes[path] = keep
    result.changes[side] = other
    result.conflicts.append(f"{path}: both sides changed it; the other version is in {side}")
    return result


# -- resolving ------------------------------------------------------------------------------------------
def conflicts(memories: Iterable[Memory]) -> list[tuple[Memory, list[Memory]]]:
    """Conflicted memories with their sibling versions, by id (what ``gitmem status`` and the session-start
    note list). A version whose memory is gone is listed on its own."""
    by_id = {m.id: m for m in memories}
    found: list[tuple[Memory, list[Memory]]] = []
    for memory in by_id.values():
        owner = memory.extra.get(CONFLICT_OF)
        if memory.conflicted and not owner:
            found.append((memory, [by_id[v] for v in _conflict_ids(memory) if v in by_id]))
        elif memory.conflicted and owner not in by_id:
            found.append((memory, []))
    return sorted(found, key=lambda item: item[0].id)


def conflict_note(memories: Iterable[Memory]) -> str:
    """One line for the session-start context when memories are conflicted, else ""."""
    found = conflicts(memories)
    if not found:
        return ""
    ids = ", ".join(m.id for m, _v in found[:5]) + (" ..." if len(found) > 5 else "")
    return (f"gitmem: {counted(len(found), 'memory')} with conflicting versions after a sync ({ids}); "
            "see gitmem status, settle with gitmem resolve ID")


def resolve(main: Memory, versions: list[Memory], take: Memory | None = None, text: str | None = None) -> Memory:
    """The memory with its conflict settled: ``take``'s text fields (one of ``versions``, or ``main``), or
    ``text`` as the new body; ``conflicted`` and the conflict bookkeeping are cleared."""
    chosen = take or main
    extra = {k: v for k, v in main.extra.items() if k not in (CONFLICT_WITH, CONFLICT_OF)}
    resolved = replace(main, **{name: getattr(chosen, name) for name in TEXT_FIELDS}, conflicted=False,
                       extra=extra, tags=_union(main.tags, *(v.tags for v in versions)))
    if text is not None:
        body, why, how = docs.split_body(docs.check_text(text))
        resolved = replace(resolved, text=body, why=why or resolved.why, how=how or resolved.how)
    return resolved


def _union(*groups: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(t for g in groups for t in g))[: docs.MAX_TAGS]
