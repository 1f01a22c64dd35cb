"""Claude Code hook handlers: what gitmem does on each event, given the event's JSON payload.

Each handler returns the JSON object to print (Claude Code's hook output schema) or None to print nothing.
:mod:`gitmem.hookmain` is the process entry point around them: it reads stdin, calls :func:`dispatch`, and turns
every failure into exit 0 plus one line on stderr. Events and what they do:

- ``session-start``: the user's directives for the project, the project summary, the recall block and a pointer
  to ``gitmem search`` as ``additionalContext``; once per project per session, again after ``compact``/``clear``.
- ``user-prompt-submit``: standing instructions become pending directives of the session; corrections are appended
  to ``local/candidates.jsonl``.
- ``pre-tool-use`` / ``post-tool-use``: one observation line per call, hot paths.
- ``pre-compact``: a ``systemMessage`` with the high-priority directives.
- ``stop`` / ``session-end``: the session's pending directives become one commit with a ``Gitmem-Session`` trailer.

Directives are memories with the tag ``directive`` (type ``feedback``, category ``constraint`` or ``preference``,
importance 5 for high priority and 4 for normal) under the project's memory folder, with an id derived from the
project and the normalised instruction, so the same instruction is stored once.

The per-tool-call path imports only the standard library, :mod:`gitmem.observe` and :mod:`gitmem.redact`; the
configuration, the store and recall load only for the events that need them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitmem import observe
from gitmem.errors import GitmemError, RepoNotFoundError

if TYPE_CHECKING:
    from gitmem.api import Repository
    from gitmem.config import Config
    from gitmem.documents import Memory
    from gitmem.recall import RecallResult

#: command-line event name → Claude Code's ``hook_event_name``
EVENTS: dict[str, str] = {
    "session-start": "SessionStart",
    "user-prompt-submit": "UserPromptSubmit",
    "pre-tool-use": "PreToolUse",
    "post-tool-use": "PostToolUse",
    "pre-compact": "PreCompact",
    "stop": "Stop",
    "session-end": "SessionEnd",
}
_BY_CLAUDE_NAME = {v.lower(): k for k, v in EVENTS.items()}
#: characters of the project summary injected at session start
SUMMARY_CHARS = 650
#: recall blocks kept in ``local/recall-cache.json``
RECALL_CACHE_SIZE = 50
DIRECTIVE_TAG = "directive"
_FILE_KEYS = ("file_path", "notebook_path", "path")
_SETTING_KEYS = re.compile(rb"(?m)^\s*(?:[\w.\"']*\.)?[\"']?(repo|project|extra_patterns)[\"']?\s*=")


class HookInputError(GitmemError):
    """The hook's input (event name or JSON payload) is unusable."""


def event_name(name: str) -> str | None:
    """``session-start``, ``SessionStart`` or ``session_start`` → ``session-start``; None for unknown events."""
    key = name.strip().replace("_", "-").lower()
    if key in EVENTS:
        return key
    return _BY_CLAUDE_NAME.get(key.replace("-", ""))


class Context:
    """Where a hook runs: the memory repository, settings, session and working directory.

    The full configuration is read only when a handler needs it, or when cheap checks cannot rule out a
    ``.memrepo`` file or a user/repository setting that changes the repository, project or redaction."""

    def __init__(self, *, env: Mapping[str, str], home: Path, cwd: Path, repo_option: Path | None = None,
                 session_id: str = "") -> None:
        self.env = env
        self.home = home
        self.cwd = cwd
        self.repo_option = repo_option
        self.session_id = session_id
        self._config: Config | None = None
        self._repository: Repository | None = None
        self._project: str | None = None
        self.repo, self.extra_patterns, self.project_override = self._settings()

    def _settings(self) -> tuple[Path, tuple[str, ...], str]:
        fast = self._fast_repo()
        if fast is not None:
            return fast, (), ""
        config = self.config
        return config.repo, tuple(config.redaction.extra_patterns), config.project

    def _fast_repo(self) -> Path | None:
        """The repository path when it can be found without parsing any TOML, else None."""
        if self.repo_option is not None:
            repo = self.repo_option.expanduser().resolve()
        elif self.env.get("GITMEM_REPO"):
            repo = Path(self.env["GITMEM_REPO"]).expanduser().resolve()
        else:
            repo = self.home / ".gitmem"
        if any((d / ".memrepo").is_file() for d in (self.cwd, *self.cwd.parents)):
            return None
        for settings in (self.user_config_file(), repo / "gitmem.toml"):
            try:
                if _SETTING_KEYS.search(settings.read_bytes()):
                    return None
            except FileNotFoundError:
                continue
            except OSError:
                return None
        return repo

    def user_config_file(self) -> Path:
        config_home = self.env.get("XDG_CONFIG_HOME")
        if self.env.get("GITMEM_CONFIG"):
            return Path(self.env["GITMEM_CONFIG"]).expanduser()
        return (Path(config_home) if config_home else self.home / ".config") / "gitmem" / "config.toml"

    def settings_fingerprint(self) -> str:
        """The contents of every settings file that applies here (user config, ``gitmem.toml``, ``.memrepo``)."""
        memrepo = next((d / ".memrepo" for d in (self.cwd, *self.cwd.parents) if (d / ".memrepo").is_file()), None)
        parts = []
        for path in (self.user_config_file(), self.repo / "gitmem.toml", memrepo):
            try:
                parts.append(path.read_bytes().decode("utf-8", "replace") if path is not None else "")
            except OSError:
                parts.append("")
        return "\0".join(parts)

    @property
    def config(self) -> Config:
        if self._config is None:
            from gitmem.config import discover

            self._config = discover(env=self.env, cwd=self.cwd, home=self.home, repo=self.repo_option)
        return self._config

    @property
    def exists(self) -> bool:
        return (self.repo / ".git").is_dir()

    def require_repo(self) -> None:
        if not self.exists:
            raise RepoNotFoundError(f"no memory repository at {self.repo}", f"create it with: gitmem init {self.repo}")

    @property
    def local(self) -> Path:
        return observe.local_dir(self.repo)

    @property
    def repository(self) -> Repository:
        if self._repository is None:
            from gitmem.api import Repository

            self.require_repo()
            self._repository = Repository(self.config, lock_timeout=2.0)
        return self._repository

    @property
    def project(self) -> str:
        """The project id for the working directory (cached per directory in ``local/``)."""
        if self._project is None:
            if self.project_override:
                self._project = self.project_override
            else:
                key = str(self.cwd)
                cached = observe.cached_project(self.local, key)
                if cached is None:
                    from gitmem.codebase import code_context

                    cached = code_context(self.cwd).project
                    observe.remember_project(self.local, key, cached)
                self._project = cached
        return self._project


# -- helpers ---------------------------------------------------------------------------------------------
def directive_id(project: str, key: str) -> str:
    """The memory id of a directive: the same instruction in the same project always gets the same id."""
    import hashlib

    return "directive-" + hashlib.sha1(f"{project}\n{key}".encode()).hexdigest()[:12]


def _priority(memory: Memory) -> str:
    return "high" if memory.importance >= 5 else "normal"


def _settled(mtime_ns: int, seen_ns: int) -> bool:
    """Whether what was read at ``seen_ns`` from a file or folder last changed at ``mtime_ns`` can be trusted
    while the mtime stays the same: a change in the same timestamp tick would not move the mtime. File systems
    with sub-second timestamps tick in milliseconds; whole-second ones (FAT, HFS+, ext3) need two seconds."""
    window = 2_000_000_000 if mtime_ns % 1_000_000_000 == 0 else 50_000_000
    return seen_ns - mtime_ns > window


def _is_special(name: str) -> bool:
    return name.endswith(".md") and (name.startswith("directive-") or "-conflict-" in name)


def special_memory_files(ctx: Context, wanted: Callable[[str], bool]) -> list[Path]:
    """Directive and conflict files (``memories/<folder>/directive-*.md``, ``*-conflict-*.md``) whose name
    passes ``wanted``.

    Listing a folder of 10k memories costs ~20 ms, twice per session start; so each folder's special names
    are kept in ``.cache/hook-files.json`` with the folder's mtime (which changes whenever a file is added,
    removed or renamed in it) and listed again only when that moved. A listing taken too soon after the
    folder's mtime is not trusted (:func:`_settled`), so a change in the same clock tick cannot hide."""
    import os
    import time

    cache_file = ctx.repo / ".cache" / "hook-files.json"
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
        if isinstance(hit, list) and len(hit) == 3 and hit[0] == mtime and _settled(mtime, hit[1]):
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
    return sorted(ctx.repo / "memories" / folder / name
                  for folder, (_m, _t, names) in folders.items() for name in names if wanted(name))


def stored_directives(ctx: Context, project: str) -> list[tuple[str, str, str]]:
    """(id, priority, text) of the committed, active directives of ``project`` and the global ones.

    Only files named ``directive-*.md`` in the two folders are read (not every memory), so this stays fast in
    a repository of 10k memories; a directive made by hand needs such an id (``--id directive-...``) and the tag.
    What each file says is kept in ``.cache/hook-files.json`` by its mtime and size, so a session start parses
    (and imports the YAML parser for) only the directive files that changed."""
    import time

    ctx.require_repo()
    files = special_memory_files(ctx, lambda name: name.startswith("directive-"))
    if not files:
        return []
    from gitmem.documents import project_dir

    cache_file = ctx.repo / ".cache" / "hook-directives.json"
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
        if not (isinstance(entry, list) and len(entry) == 8 and entry[:2] == [info.st_mtime_ns, info.st_size]
                and _settled(info.st_mtime_ns, entry[2])):
            entry = [info.st_mtime_ns, info.st_size, time.time_ns(), *_directive_of(ctx, path, rel)]
        seen[rel] = entry
        memory_id, owner, priority, text, active = entry[3:]
        if active and owner in (project, ""):
            found.append((memory_id, priority, text))
    kept = {k: v for k, v in cached.items() if k not in seen and (ctx.repo / k).is_file()}
    if {**kept, **seen} != cached:
        try:
            observe.write_json(cache_file, {**kept, **seen})
        except OSError as exc:  # a cache that cannot be written only costs time
            log(ctx, f"directive cache not written: {exc}")
    return found


def _directive_of(ctx: Context, path: Path, rel: str) -> list[Any]:
    """[id, project, priority, text, active] of a directive file (active False when it is not one)."""
    from gitmem import documents as docs

    try:
        memory = docs.loads(path.read_text("utf-8"), rel)
    except (GitmemError, OSError, UnicodeDecodeError) as exc:
        log(ctx, f"skipped {path.name}: {exc}")
        return ["", "", "normal", "", False]
    active = DIRECTIVE_TAG in memory.tags and not memory.deprecated
    return [memory.id, memory.project, _priority(memory), memory.text, active]


def directives_for(ctx: Context, project: str) -> list[tuple[str, str]]:
    """(priority, text) of the project's and the global directives, committed and pending, high first."""
    seen: set[str] = set()
    found: list[tuple[str, str]] = []
    for memory_id, priority, text in stored_directives(ctx, project):
        seen.add(memory_id)
        found.append((priority, text))
    for session in observe.all_sessions(ctx.local).values():
        for item in session.get("pending", []):
            if not isinstance(item, dict) or item.get("project") != project:
                continue
            memory_id = directive_id(project, str(item.get("key", "")))
            if memory_id not in seen:
                seen.add(memory_id)
                found.append((str(item.get("priority", "normal")), str(item.get("text", ""))))
    found.sort(key=lambda pair: pair[0] != "high")
    return found


def render_directives(directives: list[tuple[str, str]]) -> str:
    if not directives:
        return ""
    lines = ["## Standing instructions from the user (follow them)"]
    lines += [f"- {'[high] ' if priority == 'high' else ''}{' '.join(text.split())}" for priority, text in directives]
    return "\n".join(lines) + "\n"


def project_summary(ctx: Context, project: str) -> str:
    """The summary of ``projects/<project>.md`` (at most 650 characters). When that file is missing or older than
    24 hours, a detached ``gitmem project scan`` (bounded to 20 s) writes it for the next session (not for a
    session in the home or root directory)."""
    from gitmem import projects

    if ctx.env.get("GITMEM_PROJECT_SCAN", "1") != "0" and ctx.cwd not in (ctx.home, Path(ctx.cwd.anchor)) and \
            projects.needs_scan(ctx.repo, project) and projects.claim_scan(ctx.repo, project):
        spawn_detached(ctx, ["project", "scan", "--cwd", str(ctx.cwd), "--project", project, "--timeout", "20"])
    text = projects.project_summary(ctx.repo, project, SUMMARY_CHARS)
    return f"## Project memory ({project})\n{text}\n" if text else ""


def render_hot_paths(ctx: Context, project: str, limit: int = 8) -> str:
    """The files most used in this project lately (relative to the cwd when inside it), as one line."""
    paths = observe.hot_paths(ctx.local, project, str(ctx.cwd), limit=limit)
    if not paths:
        return ""
    shown = []
    for path in paths:
        try:
            shown.append(Path(path).relative_to(ctx.cwd).as_posix())
        except ValueError:
            shown.append(path)
    return "Files used most in this project lately: " + ", ".join(shown) + "\n"


def recent_errors(repo: Path, limit: int = 5) -> list[str]:
    """The last ``limit`` lines of ``local/gitmem.log`` that start an entry (for ``doctor``-style reports)."""
    try:
        lines = (repo / "local" / "gitmem.log").read_text("utf-8", "replace").splitlines()
    except OSError:
        return []
    return [line for line in lines if line[:4].isdigit()][-limit:]


def fallback_block(ctx: Context, project: str) -> str:
    """Recall without the search index: the project's and the global memories by importance, then recency."""
    from gitmem.documents import bullet

    repo = ctx.repository
    settings = ctx.config.recall
    memories = [m for m in repo.list(project=project) + repo.list(project="") if DIRECTIVE_TAG not in m.tags]
    memories.sort(key=lambda m: (m.importance, m.updated), reverse=True)
    lines: list[str] = []
    size = 0
    for memory in memories[: settings.top_k]:
        line = bullet(memory)
        if size + len(line) > settings.budget * 4:  # about four characters a token
            break
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

    memory_head = _git_head(ctx.repo / ".git")
    code_git = next((d / ".git" for d in (ctx.cwd, *ctx.cwd.parents) if (d / ".git").exists()), None)
    code_head = _git_head(code_git) if code_git is not None and code_git.is_dir() else ("none" if code_git is None
                                                                                          else "")
    if not memory_head or not code_head:
        return ""
    # the block depends on the code repository, not on where in it the session starts
    place = str(code_git.parent) if code_git is not None else str(ctx.cwd)
    parts = (memory_head, code_head, place, project, ctx.settings_fingerprint())
    return hashlib.sha1("\n".join(parts).encode("utf-8")).hexdigest()


#: the longest a session start waits for an automatic pull, whatever sync.timeout says
AUTO_PULL_LIMIT = 3.0


def auto_pull(ctx: Context) -> str:
    """With ``sync.auto``, pull (fetch + merge, no push) within a few seconds; a note when it failed."""
    if not ctx.config.sync.auto:
        return ""
    from gitmem.sync import auto_sync

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
    return (f"gitmem: {len(versions)} memories have conflicting versions after a sync ({shown}); "
            "see gitmem status, settle with gitmem resolve ID\n")


def recall_block(ctx: Context, project: str) -> tuple[str, str]:
    """(block, search query) from recall, or from :func:`fallback_block` when recall cannot run.

    A block is cached in ``local/recall-cache.json`` under :func:`recall_cache_key`, so a session that starts
    while neither repository moved gets it without loading the index or the embedding model; the memories in a
    served block still count as used. :func:`warm_recall` fills the cache in the background after gitmem's own
    commits, so the next session start usually finds its block ready."""
    key = recall_cache_key(ctx, project)
    if key:
        hit = observe.read_json(ctx.local / "recall-cache.json").get(key)
        if isinstance(hit, dict) and isinstance(hit.get("text"), str):
            ids = [str(i) for i in hit.get("ids", []) if isinstance(i, str)]
            if ids:
                observe.bump_usage(ctx.repo, ids)
            if hit.get("day") != observe.now_iso()[:10]:
                spawn_warm(ctx)  # recency moved a day: recompute for the next session
            return hit["text"], str(hit.get("query", ""))
    try:
        result = ctx.repository.recall(cwd=ctx.cwd)
    except Exception as exc:  # the index may be missing, rebuilding or broken: degrade, never fail the session
        log(ctx, f"recall failed, using the plain list: {type(exc).__name__}: {exc}")
        return fallback_block(ctx, project), ""
    if key:
        _store_block(ctx, key, result)
    return result.text, result.query


def _store_block(ctx: Context, key: str, result: RecallResult) -> None:
    def store(data: dict[str, Any]) -> None:
        data.pop(key, None)
        data[key] = {"text": result.text, "query": result.query, "ids": [h.id for h in result.hits],
                     "day": observe.now_iso()[:10]}
        for old in list(data)[: max(0, len(data) - RECALL_CACHE_SIZE)]:
            del data[old]

    try:
        observe.update_json(ctx.local / "recall-cache.json", store, timeout=1.0)
    except Exception as exc:  # a cache that cannot be written only costs time
        log(ctx, f"recall cache not written: {type(exc).__name__}: {exc}")


def warm_recall(ctx: Context) -> bool:
    """Compute the session-start recall block for ``ctx.cwd`` and cache it, without counting a use: brings the
    search index and the embeddings up to date on the way. Run detached (``gitmem warm``) after gitmem's own
    commits, so the next session start in that directory finds its block ready. False when there is no key."""
    ctx.require_repo()
    key = recall_cache_key(ctx, ctx.project)
    if not key:
        return False
    _store_block(ctx, key, ctx.repository.recall(cwd=ctx.cwd, record_usage=False))
    directives_for(ctx, ctx.project)  # primes the directive and file-listing caches the session start reads
    return True


#: seconds a detached warm-up may run before it ends itself
WARM_TIMEOUT = 60


def spawn_warm(ctx: Context) -> None:
    """Start :func:`warm_recall` detached for this session's directory (``GITMEM_WARM=0`` turns it off)."""
    if ctx.env.get("GITMEM_WARM", "1") != "0" and ctx.cwd not in (ctx.home, Path(ctx.cwd.anchor)):
        spawn_detached(ctx, ["warm", "--cwd", str(ctx.cwd), "--timeout", str(WARM_TIMEOUT)])


def log(ctx: Context, message: str) -> None:
    """Append one line to the local log (best effort)."""
    path = log_path(ctx.repo if ctx.exists else None, ctx.env, ctx.home)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as fh:
            fh.write(f"{observe.now_iso()} hook: {message}\n")
    except OSError:
        pass


def log_path(repo: Path | None, env: Mapping[str, str], home: Path) -> Path:
    """``<repo>/local/gitmem.log``, or ``$XDG_STATE_HOME/gitmem/gitmem.log`` without a repository."""
    if repo is not None:
        return repo / "local" / "gitmem.log"
    state = Path(env.get("XDG_STATE_HOME") or home / ".local" / "state")
    return state / "gitmem" / "gitmem.log"


def _context_output(event: str, text: str) -> dict[str, Any]:
    return {"hookSpecificOutput": {"hookEventName": EVENTS[event], "additionalContext": text}}


# -- handlers --------------------------------------------------------------------------------------------
def session_start(ctx: Context, payload: dict[str, Any]) -> dict[str, Any] | None:
    ctx.require_repo()
    source = str(payload.get("source") or "startup")
    project = ctx.project
    session = observe.get_session(ctx.local, ctx.session_id) if ctx.session_id else {}
    if project in session.get("injected", []) and source not in ("compact", "clear"):
        return None
    pulled = auto_pull(ctx) if source == "startup" else ""
    parts = [render_directives(directives_for(ctx, project)), project_summary(ctx, project),
             render_hot_paths(ctx, project), conflict_note(ctx), pulled]
    block, query = recall_block(ctx, project)
    parts.append(block)
    query = query or project
    parts.append(f'Search more memories with: gitmem search "{query[:80]}" (memory repo {ctx.repo}; '
                 f"project {project})\n")
    text = "\n".join(p for p in parts if p)
    if ctx.session_id:
        def mark(entry: dict[str, Any]) -> None:
            injected = [p for p in entry.get("injected", []) if p != project]
            entry.update(injected=[*injected, project], project=project, cwd=str(ctx.cwd), source=source,
                         started=entry.get("started") or observe.now_iso())

        observe.update_session(ctx.local, ctx.session_id, mark)
    return _context_output("session-start", text)


def user_prompt_submit(ctx: Context, payload: dict[str, Any]) -> dict[str, Any] | None:
    from gitmem.directives import detect_correction, detect_directives

    prompt = payload.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        return None
    directives = detect_directives(prompt)
    correction = detect_correction(prompt)
    if not directives and correction is None:
        return None
    ctx.require_repo()
    project = ctx.project
    if directives:
        items = [{"text": observe.summarise(d.text, 400, ctx.extra_patterns), "priority": d.priority,
                  "category": d.category, "key": d.key, "project": project, "time": observe.now_iso()}
                 for d in directives]

        def add(entry: dict[str, Any]) -> None:
            pending = [p for p in entry.get("pending", []) if isinstance(p, dict)]
            keys = {(p.get("project"), p.get("key")) for p in pending}
            for item in items:
                if (item["project"], item["key"]) not in keys:
                    pending.append(item)
                else:  # restated: keep the higher priority
                    for p in pending:
                        if (p.get("project"), p.get("key")) == (item["project"], item["key"]) and \
                                item["priority"] == "high":
                            p["priority"] = "high"
            entry["pending"] = pending

        observe.update_session(ctx.local, ctx.session_id or "unknown", add)
    if correction is not None:
        observe.append_line(ctx.local / "candidates.jsonl", {
            "kind": "correction", "session": ctx.session_id, "time": observe.now_iso(), "project": project,
            "cwd": str(ctx.cwd), "text": observe.summarise(correction, 500, ctx.extra_patterns),
        })
    return None


def _observe(ctx: Context, payload: dict[str, Any], phase: str) -> None:
    ctx.require_repo()
    tool_input = payload.get("tool_input")
    record: dict[str, Any] = {
        "session": ctx.session_id, "time": observe.now_iso(), "phase": phase, "tool": str(payload.get("tool_name", "")),
        "input": observe.summarise(tool_input, observe.SUMMARY_CHARS, ctx.extra_patterns),
    }
    if phase == "post":
        record["output"] = observe.summarise(payload.get("tool_response"), observe.SUMMARY_CHARS, ctx.extra_patterns)
    record.update(cwd=str(ctx.cwd), project=ctx.project)
    for key in ("tool_use_id", "agent_id"):
        if payload.get(key):
            record[key] = str(payload[key])
    observe.append_observation(ctx.local, record)
    if phase == "post" and isinstance(tool_input, dict):
        path = next((tool_input[k] for k in _FILE_KEYS if isinstance(tool_input.get(k), str)), None)
        if path:
            observe.touch_hot_path(ctx.local, ctx.project, path)


def pre_tool_use(ctx: Context, payload: dict[str, Any]) -> dict[str, Any] | None:
    _observe(ctx, payload, "pre")
    return None


def post_tool_use(ctx: Context, payload: dict[str, Any]) -> dict[str, Any] | None:
    _observe(ctx, payload, "post")
    return None


def pre_compact(ctx: Context, payload: dict[str, Any]) -> dict[str, Any] | None:
    ctx.require_repo()
    project = ctx.project
    if ctx.session_id:
        def mark(entry: dict[str, Any]) -> None:
            entry["compacted"] = [*entry.get("compacted", []), observe.now_iso()][-20:]
            entry["injected"] = []  # the context is about to go: the next SessionStart injects again

        observe.update_session(ctx.local, ctx.session_id, mark)
    high = [(p, t) for p, t in directives_for(ctx, project) if p == "high"]
    if not high:
        return None
    lines = "\n".join(f"- {' '.join(text.split())}" for _, text in high)
    return {"systemMessage": f"gitmem: standing instructions for {project} (kept across compaction):\n{lines}"}


def commit_session(ctx: Context) -> str:
    """Commit the session's pending directives as one commit; returns its SHA ("" when there was nothing)."""
    from dataclasses import replace

    from gitmem import documents as docs

    ctx.require_repo()
    session = observe.get_session(ctx.local, ctx.session_id)
    pending = [p for p in session.get("pending", []) if isinstance(p, dict) and p.get("text")]
    if not pending:
        return ""
    memories = []
    for item in pending:
        project = str(item.get("project", ""))
        priority = str(item.get("priority", "normal"))
        memories.append(docs.make_memory(
            str(item["text"]), id=directive_id(project, str(item.get("key", ""))), type="feedback",
            category=str(item.get("category", "constraint")), importance=5 if priority == "high" else 4,
            tags=[DIRECTIVE_TAG], project=project, source="hook", source_ref=ctx.session_id,
            description=f"directive ({priority} priority) stated by the user",
        ))

    def keep_stronger(old: docs.Memory, new: docs.Memory) -> docs.Memory | None:
        if not old.deprecated and old.importance >= new.importance:
            return None  # already known at this priority: no new commit
        return replace(new, created=old.created)

    count = len(memories)
    sha, _written = ctx.repository.commit_batch(
        memories, subject=f"session: {count} directive{'s' if count != 1 else ''} from the user", op="extract",
        source=f"hook:{ctx.session_id}", trailers={"Gitmem-Session": ctx.session_id},
        body="\n".join(f"- {' '.join(str(p['text']).split())[:100]}" for p in pending), merge=keep_stronger,
    )
    done = {(p.get("project"), p.get("key")) for p in pending}

    def clear(entry: dict[str, Any]) -> None:
        entry["pending"] = [p for p in entry.get("pending", [])
                            if isinstance(p, dict) and (p.get("project"), p.get("key")) not in done]
        if sha:
            entry["commits"] = [*entry.get("commits", []), sha][-20:]

    observe.update_session(ctx.local, ctx.session_id, clear)
    return sha


def stop(ctx: Context, payload: dict[str, Any]) -> dict[str, Any] | None:
    if ctx.session_id and commit_session(ctx):
        spawn_warm(ctx)
    return None


def session_end(ctx: Context, payload: dict[str, Any]) -> dict[str, Any] | None:
    if ctx.session_id:
        committed = commit_session(ctx)
        observe.update_session(ctx.local, ctx.session_id,
                               lambda e: e.update(ended=observe.now_iso(), reason=str(payload.get("reason", ""))))
        if not spawn_learning(ctx, payload) and committed:
            spawn_warm(ctx)  # the learner warms after its own commits; without it, warm here
    if ctx.exists and ctx.config.sync.auto:
        spawn_detached(ctx, ["sync", "--timeout", str(ctx.config.sync.timeout)])
    return None


#: seconds the detached session-end learner may run before it ends itself
LEARN_TIMEOUT = 60


def spawn_learning(ctx: Context, payload: dict[str, Any]) -> bool:
    """Hand the session's learning (instincts, capture from the transcript, evolve) to a detached process that
    ends itself after :data:`LEARN_TIMEOUT` seconds; the hook never waits for it. ``GITMEM_LEARN=0`` turns it off.
    The learner then warms the recall block of the session's directory (unless ``GITMEM_WARM=0``)."""
    if ctx.env.get("GITMEM_LEARN", "1") == "0":
        return False
    args = ["learn-session", "--session", ctx.session_id, "--project", ctx.project, "--timeout", str(LEARN_TIMEOUT)]
    if ctx.env.get("GITMEM_WARM", "1") != "0" and ctx.cwd not in (ctx.home, Path(ctx.cwd.anchor)):
        args += ["--warm-cwd", str(ctx.cwd)]
    transcript = payload.get("transcript_path")
    if isinstance(transcript, str) and transcript:
        args += ["--transcript", transcript]
    spawn_detached(ctx, args)
    return True


def spawn_detached(ctx: Context, args: list[str]) -> None:
    """Start ``gitmem --repo REPO ARGS...`` in its own session, output to the local log, never waited for.
    Every command started this way bounds its own run time (``--timeout``)."""
    import subprocess
    import sys

    ctx.local.mkdir(parents=True, exist_ok=True)
    with (ctx.local / "gitmem.log").open("ab") as log_file:
        subprocess.Popen([sys.executable, "-m", "gitmem", "--repo", str(ctx.repo), *args],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log_file,
                         start_new_session=True, close_fds=True, cwd=str(ctx.repo), env=dict(ctx.env))


HANDLERS: dict[str, Callable[[Context, dict[str, Any]], dict[str, Any] | None]] = {
    "session-start": session_start,
    "user-prompt-submit": user_prompt_submit,
    "pre-tool-use": pre_tool_use,
    "post-tool-use": post_tool_use,
    "pre-compact": pre_compact,
    "stop": stop,
    "session-end": session_end,
}


def make_context(payload: Mapping[str, Any], *, env: Mapping[str, str], home: Path, cwd: Path,
                 repo_option: Path | None = None) -> Context:
    """The context for a payload: its ``cwd`` (else the process's) and ``session_id``."""
    where = payload.get("cwd")
    directory = Path(where) if isinstance(where, str) and where and Path(where).is_dir() else cwd
    session = payload.get("session_id")
    session_id = re.sub(r"[^\w.:-]", "_", str(session))[:100] if isinstance(session, str | int) else ""
    return Context(env=env, home=home, cwd=directory.resolve(), repo_option=repo_option, session_id=session_id)


def dispatch(event: str, ctx: Context, payload: dict[str, Any]) -> dict[str, Any] | None:
    """Run the handler of ``event`` (a key of :data:`EVENTS`)."""
    return HANDLERS[event](ctx, payload)
