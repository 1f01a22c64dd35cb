"""Where a Claude Code hook runs: the memory repository and settings found cheaply, the session, the local log
and detached helper processes. Shared by :mod:`gitmem.agents.claude.handlers` (the handlers) and
:mod:`gitmem.agents.claude.inputs` (what a session start injects).

The context keeps its folders as strings (``repo_dir``, ``local_dir``, ``cwd``, ``home``): a prompt's hook names
its files with ``os.path`` and never imports :mod:`pathlib` (which loads ``re``, ``fnmatch``, ``urllib.parse`` and
``ipaddress``: ~18 ms of CPU). ``repo`` and ``local`` give the same folders as Paths for the rest of gitmem."""

from __future__ import annotations

import os

from gitmem.agents.claude import toolcall
from gitmem.errors import GitmemError, RepoNotFoundError
from gitmem.files.places import REPO_CONFIG_NAME, is_memory_repo, user_config_file
from gitmem.store import local as observe

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs every tool call's hook process
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path
    from typing import Any

    from gitmem.api import Repository
    from gitmem.config import Config, StrPath
    from gitmem.search.index import IndexedRepo


class HookInputError(GitmemError):
    """The hook's input (event name or JSON payload) is unusable."""


class Context:
    """Where a hook runs: the memory repository, settings, session and working directory.

    The full configuration is read only when a handler needs it, or when cheap checks cannot rule out a
    ``.memrepo`` file or a user/repository setting that changes the repository, project or redaction."""

    def __init__(self, *, env: Mapping[str, str], home: StrPath, cwd: StrPath, repo_option: StrPath | None = None,
                 session_id: str = "") -> None:
        self.env = env
        #: the home and working folders, as strings
        self.home = os.fspath(home)
        self.cwd = os.fspath(cwd)
        self.repo_option = os.fspath(repo_option) if repo_option is not None else None
        self.session_id = session_id
        self._config: Config | None = None
        self._repository: Repository | None = None
        self._indexed: IndexedRepo | None = None
        self._project: str | None = None
        #: the directive and conflict files of the memory repository, once listed (gitmem.agents.claude.inputs)
        self.special_files: list[Path] | None = None
        #: whether the repository was found without reading a setting (then the settings' snapshot may serve)
        self.fast = False
        #: the memory repository's folder, as a string
        self.repo_dir, self.extra_patterns, self.project_override = self._settings()

    def _settings(self) -> tuple[str, tuple[str, ...], str]:
        fast = toolcall.fast_repo(self.env, self.home, self.cwd, self.repo_option)  # found without reading TOML
        if fast is not None:
            self.fast = True
            return fast, (), ""
        config = self.config
        return config.repo_dir, tuple(config.redaction.extra_patterns), config.project

    @property
    def repo(self) -> Path:
        """The memory repository's folder."""
        from pathlib import Path

        return Path(self.repo_dir)

    @property
    def local_dir(self) -> str:
        """``<repo>/local``, as a string."""
        return os.path.join(self.repo_dir, "local")

    @property
    def local(self) -> Path:
        """``<repo>/local``."""
        return observe.local_dir(self.repo)

    @property
    def in_a_project(self) -> bool:
        """Whether the working folder may be a project's (neither home nor the file system's root): the one
        whose recall is worth warming or whose project is worth scanning."""
        return self.cwd != os.path.normpath(self.home) and os.path.dirname(self.cwd) != self.cwd

    @property
    def in_a_code_repository(self) -> bool:
        """Whether the working folder is inside a git work tree (a ``.git`` folder or file above it): the only
        kind of folder whose project is scanned (a plain folder's listing is no project's, and it was committed)."""
        where = self.cwd
        while True:
            if os.path.exists(os.path.join(where, ".git")):
                return True
            parent = os.path.dirname(where)
            if parent == where:
                return False
            where = parent

    def user_config_file(self) -> str:
        return user_config_file(self.env, self.home)

    def settings_fingerprint(self) -> str:
        """The contents of every settings file that applies here (user config, ``gitmem.toml``, ``.memrepo``)."""
        from gitmem.config import find_memrepo

        parts = []
        memrepo = None if self.fast else find_memrepo(self.cwd)  # the fast path found none already
        for path in (self.user_config_file(), os.path.join(self.repo_dir, "gitmem.toml"), memrepo):
            try:
                with open(path or os.devnull, "rb") as fh:
                    parts.append(fh.read().decode("utf-8", "replace"))
            except OSError:
                parts.append("")
        return "\0".join(parts)

    @property
    def config(self) -> Config:
        if self._config is None:
            from gitmem.config import SNAPSHOT_NAME, discover, discover_cached
            from gitmem.files.places import derived_dir, user_cache_home

            if self.fast and self.exists:  # no .memrepo, no setting naming the repository: the snapshot serves
                folder = derived_dir(self.repo_dir, user_cache_home(self.env, self.home))
                self._config = discover_cached(env=self.env, cwd=self.cwd, home=self.home, repo=self.repo_option,
                                               snapshot=os.path.join(folder, SNAPSHOT_NAME))
            else:
                self._config = discover(env=self.env, cwd=self.cwd, home=self.home, repo=self.repo_option)
        return self._config

    @property
    def exists(self) -> bool:
        """Whether ``repo_dir`` is a gitmem memory repository (``.git`` and ``gitmem.toml``: two stats). Nothing
        is written into a folder that is not one (its local state, caches or log), not even a git repository: a
        code project's, say, where observations could be committed."""
        return is_memory_repo(self.repo_dir)

    def require_repo(self) -> None:
        """Raise :class:`~gitmem.errors.RepoNotFoundError` unless :attr:`exists` (every event asks before it writes
        anything: :func:`gitmem.agents.claude.handlers.dispatch`)."""
        if self.exists:
            return
        if os.path.isdir(os.path.join(self.repo_dir, ".git")):  # the message gitmem.store.base.StoredRepo gives
            raise RepoNotFoundError(
                f"{self.repo_dir} is a git repository but not a gitmem memory repository "
                f"(no {REPO_CONFIG_NAME})",
                "point --repo or GITMEM_REPO at your memory repository (gitmem init makes one in an empty folder)")
        raise RepoNotFoundError.at(self.repo_dir)

    @property
    def repository(self) -> Repository:
        if self._repository is None:
            from gitmem.api import Repository

            self.require_repo()
            self._repository = Repository(self.config, lock_timeout=2.0)
        return self._repository

    @property
    def indexed(self) -> IndexedRepo:
        """The memory repository as its search index reads it: the full one when a handler has opened it, else
        a :class:`~gitmem.store.base.StoredRepo`, which spares the prompt hook the memory API's imports."""
        if self._repository is not None:
            return self._repository
        if self._indexed is None:
            from gitmem.store.base import StoredRepo

            self.require_repo()
            self._indexed = StoredRepo(self.config, lock_timeout=2.0)
        return self._indexed

    @property
    def project(self) -> str:
        """The project id for the working directory (cached per directory in the derived folder, ``.cache/``)."""
        if self._project is None:
            if self.project_override:
                self._project = self.project_override
            else:
                cached = observe.cached_project(self.config.derived_dir, self.cwd)
                if cached is None:
                    from pathlib import Path

                    from gitmem.projects.identity import code_context

                    cached = code_context(Path(self.cwd)).project
                    observe.remember_project(self.config.derived_dir, self.cwd, cached)
                self._project = cached
        return self._project


#: what a log line of something that happens by design starts with, after its time (not an error for ``doctor``)
NOTE = "hook note:"


def log(ctx: Context, message: str, *, note: bool = False) -> None:
    """Append one line to the local log (best effort); ``note``: what happens by design (a warm-up to come), which
    ``gitmem doctor`` does not report as an error."""
    append_log(ctx.repo_dir if ctx.exists else None, ctx.env, ctx.home,
               f"{observe.now_iso()} {NOTE if note else 'hook:'} {message}")


def log_paths(repo: StrPath | None, env: Mapping[str, str], home: StrPath) -> tuple[str, ...]:
    """Where the hooks' log lines go, in order: the repository's log, then the user's (no repository, or one this
    user cannot write)."""
    user = log_path(None, env, home)
    return (log_path(repo, env, home), user) if repo is not None else (user,)


def append_log(repo: StrPath | None, env: Mapping[str, str], home: StrPath, line: str) -> str | None:
    """Append ``line`` to the first of :func:`log_paths` that can be written; that path, or None."""
    return next((path for path in log_paths(repo, env, home) if write_log(path, line)), None)


def write_log(path: str, line: str) -> bool:
    """Append ``line`` to the log file ``path``, making its folder; False when it cannot be written."""
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")
    except OSError:
        return False
    return True


def log_path(repo: StrPath | None, env: Mapping[str, str], home: StrPath) -> str:
    """``<repo>/local/gitmem.log``, or ``$XDG_STATE_HOME/gitmem/gitmem.log`` without a repository."""
    if repo is not None:
        return os.path.join(repo, "local", "gitmem.log")
    state = env.get("XDG_STATE_HOME") or os.path.join(home, ".local", "state")
    return os.path.join(state, "gitmem", "gitmem.log")


def spawn_detached(ctx: Context, args: list[str]) -> None:
    """Start ``gitmem --repo REPO ARGS...`` in its own session, output to the local log (the user's, for a
    repository this user cannot write), never waited for. Every command started this way bounds its own run time
    (``--timeout``). A start that fails is logged: what the hook gives the agent never depends on it."""
    import subprocess
    import sys

    command = [sys.executable, "-m", "gitmem", "--repo", ctx.repo_dir, *args]
    for path in log_paths(ctx.repo_dir, ctx.env, ctx.home):
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            log_file = open(path, "ab")  # noqa: SIM115 - closed below, once the child holds its own copy
        except OSError:
            continue
        break
    else:
        log_file = None
    try:
        subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=log_file if log_file is not None else subprocess.DEVNULL,
                         start_new_session=True, close_fds=True, cwd=ctx.repo_dir, env=dict(ctx.env))
    except OSError as exc:
        log(ctx, f"could not start gitmem {args[0]}: {type(exc).__name__}: {exc}")
    finally:
        if log_file is not None:
            log_file.close()


def make_context(payload: Mapping[str, Any], *, env: Mapping[str, str], home: StrPath, cwd: StrPath,
                 repo_option: StrPath | None = None) -> Context:
    """The context for a payload: its ``cwd`` (else the process's) and ``session_id``."""
    return Context(env=env, home=home, cwd=toolcall.working_directory(payload, os.fspath(cwd)),
                   repo_option=repo_option, session_id=toolcall.session_id(payload.get("session_id")))


def recent_errors(repo: StrPath, limit: int = 5) -> list[str]:
    """The last ``limit`` lines of ``local/gitmem.log`` that start an entry (for ``doctor``-style reports)."""
    try:
        with open(os.path.join(repo, "local", "gitmem.log"), encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return []
    # lines that start an entry; a write recovered from a killed process, or a note, is not an error
    return [line for line in lines if line[:4].isdigit() and " recovered: " not in line and f" {NOTE} " not in line
            ][-limit:]
