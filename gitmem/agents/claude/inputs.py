"""What a session start injects, and the caches that keep it fast: the user's directives (from the
``directive-*`` memory files, their texts cached by mtime), the project summary, hot paths, a note about
conflicted memories, and the recall block, cached per repository state and prepared in the background by
:func:`warm_recall` after gitmem's own commits."""

from __future__ import annotations

import os
import time

from gitmem.agents.claude.context import Context, log, spawn_detached
from gitmem.briefing.directives import DIRECTIVE_TAG, directive_id, priority
from gitmem.errors import GitmemError
from gitmem.files.atomic import settled
from gitmem.store import hotpaths, usage
from gitmem.store import local as observe
from gitmem.text.counted import counted

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs every tool call's hook process
if TYPE_CHECKING:  # nor pathlib: the prompt hook imports this module (through the handlers) and uses none of it
    from collections.abc import Callable, Iterable
    from pathlib import Path
    from typing import Any

    from gitmem.recall import RecallResult

#: characters of the project summary injected at session start
SUMMARY_CHARS = 650
#: the session-start blocks' cache, in the repository's derived folder (``.cache/``): derived from the repository,
#: so kept where a user who cannot write the repository still can
RECALL_CACHE = "recall-cache.json"
#: recall blocks kept in :data:`RECALL_CACHE`
RECALL_CACHE_SIZE = 50


def _is_special(name: str) -> bool:
    return name.endswith(".md") and (name.startswith("directive-") or "-conflict-" in name)


def special_memory_files(ctx: Context, wanted: Callable[[str], bool]) -> list[Path]:
    """Directive and conflict files (``memories/<folder>/directive-*.md``, ``*-conflict-*.md``) whose name
    passes ``wanted``; listed once per hook process (:func:`_special_files`)."""
    if ctx.special_files is None:
        ctx.special_files = _special_files(ctx)
    return [path for path in ctx.special_files if wanted(path.name)]


def _special_files(ctx: Context) -> list[Path]:
    """Listing a folder of 10k memories costs ~20 ms; so each folder's special names are kept in
    ``hook-files.json`` of the derived folder (``.cache/``) with the folder's mtime (which changes whenever a file
    is added, removed or renamed in it) and listed again only when that moved. A listing taken too soon after the
    folder's mtime is not trusted (:func:`gitmem.files.atomic.settled`), so a change in the same clock tick cannot
    hide."""
    import time

    cache_file = os.path.join(ctx.config.derived_dir, "hook-files.json")
    cached = observe.read_json(cache_file).get("folders", {})
    folders: dict[str, list[Any]] = {}
    dirty = False
    try:
        entries = [e for e in os.scandir(ctx.repo / "memories") if e.is_dir()]
    except OSError:
        return []
    for entry in entries:
        try:
            mtime = entry.stat().st_mtime_ns
        except OSError:
            continue
        hit = cached.get(entry.name)
        if isinstance(hit, list) and len(hit) == 3 and hit[0] == mtime and settled(mtime, hit[1]):
            folders[entry.name] = hit
            continue
        try:
            names = sorted(filter(_is_special, os.listdir(entry.path)))  # listdir: names only, no DirEntry objects
        except OSError:
            continue
        folders[entry.name] = [mtime, time.time_ns(), names]
        dirty = True
    if dirty or set(cached) != set(folders):
        try:
            observe.write_json(cache_file, {"folders": folders})
        except OSError as exc:  # a cache that cannot be written only costs time
            log(ctx, f"file listing cache not written: {exc}")
    return sorted(ctx.repo / "memories" / folder / name for folder, (_m, _t, names) in folders.items()
                  for name in names)


def stored_directives(ctx: Context, project: str) -> list[tuple[str, str, str]]:
    """(id, priority, text) of the committed, active directives of ``project`` and the global ones.

    Only files named ``directive-*.md`` in the two folders are read (not every memory), so this stays fast in
    a repository of 10k memories; a directive made by hand needs such an id (``--id directive-...``) and the tag.
    What each file says is kept in ``hook-directives.json`` of the derived folder (``.cache/``) by its mtime and
    size, so a session start parses (and imports the YAML parser for) only the directive files that changed."""
    ctx.require_repo()
    files = special_memory_files(ctx, lambda name: name.startswith("directive-"))
    if not files:
        return []
    from gitmem.store.document import project_dir

    cache_file = os.path.join(ctx.config.derived_dir, "hook-directives.json")
    cached = observe.read_json(cache_file)
    seen: dict[str, list[Any]] = {}
    found: list[tuple[str, str, str]] = []
    folders = {project_dir(project), project_dir("")}
    for path in files:
        if path.parent.name not in folders:
            continue
        rel = path.relative_to(ctx.repo).as_posix()
        try:
            info = path.stat()
        except OSError:
            continue
        entry = cached.get(rel)
        # trusted when mtime and size match and it was read well after that mtime (no same-tick rewrite hides)
        if not (isinstance(entry, list) and len(entry) == 9 and entry[:2] == [info.st_mtime_ns, info.st_size]
                and settled(info.st_mtime_ns, entry[2]) and isinstance(entry[8], int | float)):
            entry = [info.st_mtime_ns, info.st_size, time.time_ns(), *_directive_of(ctx, path, rel)]
        seen[rel] = entry
        memory_id, owner, priority, text, active, ends = entry[3:]
        # the expiry is checked at every start, not when the file was read: the file does not change when it passes
        if active and owner in (project, "") and not 0 < ends <= time.time():
            found.append((memory_id, priority, text))
    kept = {k: v for k, v in cached.items() if k not in seen and (ctx.repo / k).is_file()}
    if {**kept, **seen} != cached:
        try:
            observe.write_json(cache_file, {**kept, **seen})
        except OSError as exc:  # a cache that cannot be written only costs time
            log(ctx, f"directive cache not written: {exc}")
    return found


def _directive_of(ctx: Context, path: Path, rel: str) -> list[Any]:
    """[id, project, priority, text, active, expires] of a directive file (active False when it is not one;
    expires: its ``expires`` in seconds, 0 for never)."""
    from gitmem.store import document as docs

    try:
        memory = docs.loads(path.read_text("utf-8"), rel)
    except (GitmemError, OSError, UnicodeDecodeError) as exc:
        log(ctx, f"skipped {path.name}: {exc}")
        return ["", "", "normal", "", False, 0]
    active = DIRECTIVE_TAG in memory.tags and not memory.deprecated
    ends = memory.expires.timestamp() if memory.expires is not None else 0
    return [memory.id, memory.project, priority(memory), memory.text, active, ends]


def pending_directives(ctx: Context, project: str) -> list[tuple[str, str, str]]:
    """(memory id, priority, text) of the directives stated in sessions but not committed yet."""
    found: list[tuple[str, str, str]] = []
    seen: set[str] = set()
    for session in observe.all_sessions(ctx.local_dir).values():
        for item in session.get("pending", []):
            if not isinstance(item, dict) or item.get("project") != project:
                continue
            memory_id = directive_id(project, str(item.get("key", "")))
            if memory_id not in seen:
                seen.add(memory_id)
                found.append((memory_id, str(item.get("priority", "normal")), str(item.get("text", ""))))
    return found


def directives_for(ctx: Context, project: str) -> list[tuple[str, str]]:
    """(priority, text) of the project's and the global directives, committed and pending, high first."""
    stored = stored_directives(ctx, project)
    ids = {memory_id for memory_id, _, _ in stored}
    found = [(priority, text) for memory_id, priority, text in
             stored + [d for d in pending_directives(ctx, project) if d[0] not in ids]]
    found.sort(key=lambda pair: pair[0] != "high")
    return found


def project_summary(ctx: Context, project: str, avoid: Iterable[str] = ()) -> str:
    """The summary of ``projects/<project>.md`` (at most 650 characters) without the lines that name a word in
    ``avoid`` (what a correction or rule of the Essentials says not to use: the summary is a guess from files,
    the rule is the user's word). When that file is missing or older than 24 hours, a detached ``gitmem project
    scan`` (bounded to 20 s) writes it for the next session (not for a session in the home or root directory, nor
    in a folder that is neither in a git work tree nor holds a project's manifest: a plain folder's listing is no
    project's)."""
    from gitmem.briefing.conflicts import names_any
    from gitmem.projects import memory as projects
    from gitmem.projects.markers import is_project_folder

    if ctx.env.get("GITMEM_PROJECT_SCAN", "1") != "0" and ctx.in_a_project and \
            (ctx.in_a_code_repository or is_project_folder(ctx.cwd)) and \
            projects.needs_scan(ctx.repo, project) and projects.claim_scan(ctx.repo, project):
        warm = ["--warm"] if ctx.env.get("GITMEM_WARM", "1") != "0" else []  # the next start finds its block ready
        spawn_detached(ctx, ["project", "scan", "--cwd", ctx.cwd, "--project", project, "--timeout", "20", *warm])
    text = projects.project_summary(ctx.repo, project, SUMMARY_CHARS)
    terms = list(avoid)
    lines = [line for line in text.splitlines() if not names_any(line, terms)]
    return f"## Project memory ({project})\n" + "\n".join(lines) + "\n" if any(lines) else ""


def render_hot_paths(ctx: Context, project: str, limit: int = 8) -> str:
    """The files most used in this project lately (relative to the cwd when inside it), as one line."""
    from pathlib import Path

    paths = hotpaths.hot_paths(ctx.local_dir, project, ctx.cwd, limit=limit)
    if not paths:
        return ""
    shown = []
    for path in paths:
        try:
            shown.append(Path(path).relative_to(ctx.cwd).as_posix())
        except ValueError:
            shown.append(path)
    return "Files used most in this project lately: " + ", ".join(shown) + "\n"


def _recall_paths(ctx: Context, project: str) -> list[str]:
    return hotpaths.hot_paths(ctx.local_dir, project, ctx.cwd, limit=5)


def fallback_block(ctx: Context, project: str) -> str:
    """Recall without the search index: the project's and the global memories by importance, then recency."""
    from gitmem.store.document import bullet

    repo = ctx.repository
    settings = ctx.config.recall
    now = time.time()
    memories = [m for m in repo.list(project=project) + repo.list(project="") if DIRECTIVE_TAG not in m.tags
                and (m.expires is None or m.expires.timestamp() > now)]  # recall stops using it at expires
    memories.sort(key=lambda m: (m.importance, m.updated), reverse=True)
    lines: list[str] = []
    size = 0
    for memory in memories[: settings.top_k]:
        line = bullet(memory)
        if size + len(line) > settings.budget * 4:  # about four characters a token; a shorter one may still fit
            continue
        lines.append(line)
        size += len(line)
    return f"## Memories from gitmem ({project})\n" + "\n".join(lines) + "\n" if lines else ""


def _git_head(git_dir: Path) -> str:
    """``ref@sha`` (or the detached SHA) of a repository, read from its files; "" when unreadable."""
    try:
        head = (git_dir / "HEAD").read_text("utf-8").strip()
        if not head.startswith("ref: "):
            return head
        ref = head[5:].strip()
        loose = git_dir / ref
        if loose.is_file():
            return f"{ref}@{loose.read_text('utf-8').strip()}"
        packed = git_dir / "packed-refs"
        if packed.is_file():
            for line in packed.read_text("utf-8").splitlines():
                if line.endswith(" " + ref):
                    return f"{ref}@{line.split()[0]}"
        return f"{ref}@"
    except OSError:
        return ""


def recall_cache_key(ctx: Context, project: str) -> str:
    """What the recall block depends on: both repositories' HEADs, the cwd, the project and the settings files
    ("" when a HEAD cannot be read, which switches the cache off). The date is not part of it: recency moves
    scores a little from one day to the next, so a block from an earlier day is still served, and refreshed in
    the background for the next session."""
    import hashlib
    from pathlib import Path

    memory_head = _git_head(ctx.repo / ".git")
    cwd = Path(ctx.cwd)
    code_git = next((d / ".git" for d in (cwd, *cwd.parents) if (d / ".git").exists()), None)
    code_head = _git_head(code_git) if code_git is not None and code_git.is_dir() else ("none" if code_git is None
                                                                                          else "")
    if not memory_head or not code_head:
        return ""
    # the block depends on the code repository, not on where in it the session starts
    place = str(code_git.parent) if code_git is not None else ctx.cwd
    parts = (memory_head, code_head, place, project, ctx.settings_fingerprint())
    return hashlib.sha1("\n".join(parts).encode("utf-8")).hexdigest()


#: the longest a session start waits for an automatic pull, whatever sync.timeout says
AUTO_PULL_LIMIT = 3.0


def auto_pull(ctx: Context) -> str:
    """With ``sync.auto``, pull (fetch + merge, no push) within a few seconds; a note when it failed."""
    if not ctx.config.sync.auto:
        return ""
    from gitmem.sync.round import auto_sync

    result = auto_sync(ctx.repository, min(ctx.config.sync.timeout, AUTO_PULL_LIMIT), push_changes=False)
    if result is None:
        log(ctx, "automatic pull skipped or failed (no remote, offline or too slow)")
    return ""


def conflict_note(ctx: Context) -> str:
    """One line when a sync left memories with conflicting versions (their sibling files are named
    ``<id>-conflict-<hex>``, so a directory listing finds them without reading any memory)."""
    versions = [p.stem for p in special_memory_files(ctx, lambda name: "-conflict-" in name)]
    if not versions:
        return ""
    shown = ", ".join(v.split("-conflict-")[0] for v in versions[:5]) + (" ..." if len(versions) > 5 else "")
    return (f"gitmem: {counted(len(versions), 'memory')} with conflicting versions after a sync ({shown}); "
            "see gitmem status, settle with gitmem resolve ID\n")


class Block:
    """The session-start recall block as served (from the cache or computed): its text, the search query, the
    memory ids in it, how many memories it leaves out, the words its Essentials say not to use (summary lines
    naming them are dropped), ``(id, n)`` of the long memories it shows by their part ``n`` only, and ``until``:
    when the first memory it shows expires (seconds, 0 for never), after which a cached copy is not served. A
    plain class: this module loads on the per-tool-call path."""

    def __init__(self, text: str, query: str = "", ids: list[str] | None = None, more: int = 0,
                 avoid: list[str] | None = None, parts: list[tuple[str, int]] | None = None,
                 until: float = 0) -> None:
        self.text, self.query, self.ids, self.more, self.avoid = text, query, ids or [], more, avoid or []
        self.parts, self.until = parts or [], until

    def whole(self) -> list[str]:
        """The ids of the memories the block shows whole."""
        shown_in_part = {memory_id for memory_id, _n in self.parts}
        return [i for i in self.ids if i not in shown_in_part]


def recall_block(ctx: Context, project: str) -> Block:
    """The Essentials and Relevant block from recall, or :func:`fallback_block` when recall cannot run.

    A block is cached in ``.cache/recall-cache.json`` (:data:`RECALL_CACHE`) under :func:`recall_cache_key`, so a
    session that starts while neither repository moved gets it without loading the index or the embedding model;
    the memories in a served block still count as used. :func:`warm_recall` fills the cache in the background after
    gitmem's own commits, so the next session start usually finds its block ready."""
    key = recall_cache_key(ctx, project)
    if key:
        hit = observe.read_json(os.path.join(ctx.config.derived_dir, RECALL_CACHE)).get(key)
        # a block cached before blocks recorded their parts ("parts" missing) is computed again, and so is one
        # showing a memory whose expiry has passed since (the key does not change when a time passes)
        until = hit.get("until", 0) if isinstance(hit, dict) else 0
        expired = not isinstance(until, int | float) or 0 < until <= time.time()
        if isinstance(hit, dict) and isinstance(hit.get("text"), str) and "parts" in hit and not expired:
            ids = observe.read_ids(hit.get("ids"))
            if ids:
                usage.bump_usage(ctx.repo_dir, ids)
            if hit.get("day") != observe.now_iso()[:10]:
                spawn_warm(ctx)  # recency moved a day: recompute for the next session
            return Block(hit["text"], str(hit.get("query", "")), ids, int(hit.get("more", 0) or 0),
                         [str(a) for a in hit.get("avoid", []) if isinstance(a, str)],
                         observe.read_parts(hit.get("parts")), until)
    from gitmem.agents.claude.serverclient import ask_server  # here: a served block is the rare case

    paths = _recall_paths(ctx, project)
    served = ask_server(ctx, "/hook/session-block", {"cwd": ctx.cwd, "paths": paths})
    if served is not None:
        block = Block(str(served.get("text", "")), str(served.get("query", "")),
                      [str(i) for i in served.get("ids", [])], int(served.get("more", 0) or 0),
                      [str(a) for a in served.get("avoid", [])], observe.read_parts(served.get("parts")))
        pending = int(served.get("pending", 0) or 0)
    else:
        try:
            # the hook embeds the query only: memories without a vector yet (just pulled or written) are ranked by
            # BM25 here, and the detached warm-up embeds them and recomputes the cached block for the next session
            result = ctx.repository.recall(cwd=ctx.cwd, paths=paths, embed_missing=False)
        except Exception as exc:  # the index may be missing, rebuilding or broken: degrade, never fail the session
            log(ctx, f"recall failed, using the plain list: {type(exc).__name__}: {exc}")
            return Block(fallback_block(ctx, project))
        block, pending = block_of(result), result.vectors_missing
    if key:
        _store_block(ctx, key, block)
    if pending:  # after the store: the warm-up's block, with every vector, replaces this one
        log(ctx, f"{counted(pending, 'memory')} without a vector yet; the warm-up embeds them", note=True)
        spawn_warm(ctx)
    return block


def block_of(result: RecallResult) -> Block:
    """The session-start block of a recall result (``gitmem serve`` answers the hooks with the same)."""
    from gitmem.briefing.conflicts import negated_terms

    avoid = sorted({t for m in result.essentials for t in negated_terms(m.text)})
    ends = [m.expires.timestamp() for m in [*result.essentials, *(h.memory for h in result.hits)]
            if m.expires is not None]
    return Block(result.text, result.query, result.ids, result.more, avoid, result.given()[1], min(ends, default=0))


def _store_block(ctx: Context, key: str, block: Block) -> None:
    def store(data: dict[str, Any]) -> None:
        data.pop(key, None)
        data[key] = {"text": block.text, "query": block.query, "ids": block.ids, "more": block.more,
                     "avoid": block.avoid, "parts": [list(p) for p in block.parts], "day": observe.now_iso()[:10],
                     "until": block.until}
        for old in list(data)[: max(0, len(data) - RECALL_CACHE_SIZE)]:
            del data[old]

    try:
        observe.update_json(os.path.join(ctx.config.derived_dir, RECALL_CACHE), store, timeout=1.0)
    except Exception as exc:  # a cache that cannot be written only costs time
        log(ctx, f"recall cache not written: {type(exc).__name__}: {exc}")


def warm_recall(ctx: Context) -> bool:
    """Compute the session-start recall block for ``ctx.cwd`` and cache it, without counting a use: brings the
    search index and the embeddings up to date on the way, then embeds the wiki pages and writer notes that have
    no vector yet. Run detached (``gitmem warm``) after gitmem's own commits, so the next session start in that
    directory finds its block ready. False when there is no key."""
    ctx.require_repo()
    key = recall_cache_key(ctx, ctx.project)
    if not key:
        return False
    result = ctx.repository.recall(cwd=ctx.cwd, record_usage=False, paths=_recall_paths(ctx, ctx.project))
    _store_block(ctx, key, block_of(result))
    directives_for(ctx, ctx.project)  # primes the directive and file-listing caches the session start reads
    ctx.repository.embed_pages()  # wiki pages and writer notes: their searches embed only the query
    return True


#: seconds a detached warm-up may run before it ends itself
WARM_TIMEOUT = 60


def spawn_warm(ctx: Context) -> None:
    """Start :func:`warm_recall` detached for this session's directory (``GITMEM_WARM=0`` turns it off)."""
    if ctx.env.get("GITMEM_WARM", "1") != "0" and ctx.in_a_project:
        spawn_detached(ctx, ["warm", "--cwd", ctx.cwd, "--timeout", str(WARM_TIMEOUT)])
