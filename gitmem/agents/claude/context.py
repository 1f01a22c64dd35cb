"""Where a Claude Code hook runs: the memory repository and settings found cheaply, the session, the local log
and detached helper processes. Shared by :mod:`gitmem.agents.claude.handlers` (the handlers) and
:mod:`gitmem.briefing.inputs` (what a session start injects)."""

from __future__ import annotations

from pathlib import Path

from gitmem.agents.claude import toolcall
from gitmem.errors import GitmemError, RepoNotFoundError
from gitmem.store import local as observe

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs every tool call's hook process
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from gitmem.api import Repository
    from gitmem.config import Config
    from gitmem.search.index import IndexedRepo



class HookInputError(GitmemError):
    """The hook's input (event name or JSON payload) is unusable."""


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
        self._indexed: IndexedRepo | None = None
        self._project: str | None = None
        #: the directive and conflict files of the memory repository, once listed (gitmem.briefing.inputs)
        self.special_files: list[Path] | None = None
        #: whether the repository was found without reading a setting (then the settings' snapshot may serve)
        self.fast = False
        self.repo, self.extra_patterns, self.project_override = self._settings()

    def _settings(self) -> tuple[Path, tuple[str, ...], str]:
        fast = self._fast_repo()
        if fast is not None:
            self.fast = True
            return fast, (), ""
        config = self.config
        return config.repo, tuple(config.redaction.extra_patterns), config.project

    def _fast_repo(self) -> Path | None:
        """The repository path when it can be found without parsing any TOML, else None."""
        option = str(self.repo_option) if self.repo_option is not None else None
        repo = toolcall.fast_repo(self.env, str(self.home), str(self.cwd), option)
        return Path(repo) if repo is not None else None

    def user_config_file(self) -> Path:
        return Path(toolcall.user_config_file(self.env, str(self.home)))

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
            from gitmem.config import SNAPSHOT_FILE, discover, discover_cached

            if self.fast and self.exists:  # no .memrepo, no setting naming the repository: the snapshot serves
                self._config = discover_cached(env=self.env, cwd=self.cwd, home=self.home, repo=self.repo_option,
                                               snapshot=self.repo / SNAPSHOT_FILE)
            else:
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
        """The project id for the working directory (cached per directory in ``local/``)."""
        if self._project is None:
            if self.project_override:
                self._project = self.project_override
            else:
                key = str(self.cwd)
                cached = observe.cached_project(self.local, key)
                if cached is None:
                    from gitmem.projects.identity import code_context

                    cached = code_context(self.cwd).project
                    observe.remember_project(self.local, key, cached)
                self._project = cached
        return self._project


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


def make_context(payload: Mapping[str, Any], *, env: Mapping[str, str], home: Path, cwd: Path,
                 repo_option: Path | None = None) -> Context:
    """The context for a payload: its ``cwd`` (else the process's) and ``session_id``."""
    return Context(env=env, home=home, cwd=Path(toolcall.working_directory(payload, str(cwd))),
                   repo_option=repo_option, session_id=toolcall.session_id(payload.get("session_id")))


def recent_errors(repo: Path, limit: int = 5) -> list[str]:
    """The last ``limit`` lines of ``local/gitmem.log`` that start an entry (for ``doctor``-style reports)."""
    try:
        lines = (repo / "local" / "gitmem.log").read_text("utf-8", "replace").splitlines()
    except OSError:
        return []
    # lines that start an entry; a write recovered from a killed process is not an error
    return [line for line in lines if line[:4].isdigit() and " recovered: " not in line][-limit:]
