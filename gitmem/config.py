"""Configuration: where the memory repository is and how gitmem behaves.

Settings come from four layers, later ones winning:

1. built-in defaults (the values in ``.memrepo.example``),
2. ``gitmem.toml`` in the memory repository (travels with the memories: weights, budgets, TTLs),
3. the user config file (``~/.config/gitmem/config.toml``; machine-specific: repo path, model, author),
4. a ``.memrepo`` file found by walking up from the working directory (per code project).

The repository path itself is chosen by ``--repo`` > ``GITMEM_REPO`` > ``.memrepo`` > user config > ``~/.gitmem``.

Only entry points (the CLI, the hooks, :func:`gitmem.open`) call :func:`discover`, which reads the environment
and the working directory; the library itself only ever receives a finished :class:`Config`.
"""

from __future__ import annotations

import os

from gitmem.errors import ConfigError
from gitmem.files.places import CACHE, derived_dir, user_cache_home, user_config_file
from gitmem.files.places import REPO_CONFIG_NAME as REPO_CONFIG_NAME
from gitmem.text.records import Record, replace

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the hooks read the configuration on every prompt
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path
    from typing import Any

    #: a path as ``os`` takes it (the hooks carry strings, the library Paths)
    StrPath = str | os.PathLike[str]

#: every ``GITMEM_*`` environment variable gitmem reads, with what it does: the one table (``docs/config.md``
#: is generated from it, ``tests/test_config.py`` fails when the code names a flag that is not here). Only entry
#: points read the environment: the CLI, the hook process (which hands its environment to the handlers as
#: ``Context.env``), :func:`gitmem.open`, and the post-commit shell script.
ENV_FLAGS: dict[str, str] = {
    "GITMEM_REPO": "the memory repository (after `--repo`, before `.memrepo`, the user config and `~/.gitmem`)",
    "GITMEM_CONFIG": "the user config file (default: `$XDG_CONFIG_HOME/gitmem/config.toml`)",
    "GITMEM_HOOK_DEADLINE": "seconds after which a hook process exits 0 by itself (default: each event's own, "
                            "`docs/hooks.md`; `0` turns the deadline off)",
    "GITMEM_LEARN": "`0`: session end does not start the detached session learner",
    "GITMEM_WARM": "`0`: no warm-up of the next session's recall block (after a session or a commit)",
    "GITMEM_PROJECT_SCAN": "`0`: session start does not scan the project when its memory is stale",
    "GITMEM_SERVER_TIMEOUT": "seconds a hook waits for a running `gitmem serve` to answer (default 2)",
    "GITMEM_TOKEN": "bearer token of `gitmem serve` (the server requires it, the hooks send it)",
    "GITMEM_NO_EXTRACT": "set: the post-commit and post-rewrite hooks do nothing",
    "GITMEM_BIN": "the `gitmem` the git hooks run (default: the one that installed it)",
    "GITMEM_TEST_CRASH": "`step[:n]`: the process exits at the n-th pass of a write step (crash tests only)",
}


def env_table() -> str:
    """:data:`ENV_FLAGS` as the Markdown table of ``docs/config.md``."""
    rows = [f"| `{name}` | {meaning} |" for name, meaning in ENV_FLAGS.items()]
    return "\n".join(["| variable | what it does |", "|---|---|", *rows]) + "\n"


MEMREPO_NAME = ".memrepo"


class RankingConfig(Record):
    """Weights of ``score = w_sim·similarity + w_imp·importance/5 + w_rec·exp(−decay_lambda·days)``."""

    w_sim: float = 0.5
    w_imp: float = 0.3
    w_rec: float = 0.2
    decay_lambda: float = 0.02


class RecallConfig(Record):
    """Token budgets of the context block injected into a session."""

    budget: int = 2000
    max_budget: int = 3000
    min_budget: int = 500
    top_k: int = 5
    dynamic_budget: bool = False
    prompt_budget: int = 600
    """tokens a prompt's recall may add (``UserPromptSubmit``)"""
    prompt_vectors: bool = False
    """let the embedding model join the prompt's search (slower: the model loads in every prompt's hook)"""


class SyncConfig(Record):
    """How ``gitmem sync`` publishes: ``direct`` pushes to the main branch, ``review`` to a branch for a PR."""

    mode: str = "direct"
    auto: bool = False
    timeout: float = 10.0
    branch: str = "main"


class RedactionConfig(Record):
    """Secrets are always redacted; ``extra_patterns`` adds regular expressions of your own."""

    extra_patterns: tuple[str, ...] = ()


class EmbeddingConfig(Record):
    """Which embedding model to use: ``auto``, ``none``, a model name, or a directory/``.onnx`` ``path``."""

    model: str = "auto"
    path: str = ""
    dim: int = 0
    models_dir: str = ""


class LifecycleConfig(Record):
    """Time-to-live of raw memories by type (days, 0 = never expires) and garbage-collection thresholds."""

    ttl_user: int = 0
    ttl_feedback: int = 90
    ttl_project: int = 60
    ttl_reference: int = 90
    gc_unused_days: int = 90
    gc_max_importance: int = 2


class WikiConfig(Record):
    """The project wiki: session-log capture at session end, and the thresholds ``gitmem wiki lint`` uses."""

    auto_capture: bool = True
    stale_days: int = 30
    max_page_size: int = 10240


class Config(Record):
    """Everything gitmem needs to know; build it with :func:`discover` or :func:`load`.

    ``repo`` reads as a :class:`~pathlib.Path`, and may be given as a ``str``: it is kept as the string
    (:attr:`repo_dir`), which is what the hooks read, so a prompt's hook process, which builds its configuration
    from the settings' snapshot, never imports :mod:`pathlib` (with ``re``, ``fnmatch``, ``urllib.parse`` and
    ``ipaddress``: ~18 ms of CPU)."""

    repo: Path
    remote: str = ""
    project: str = ""
    author: str = ""
    recall: RecallConfig = RecallConfig()
    ranking: RankingConfig = RankingConfig()
    sync: SyncConfig = SyncConfig()
    redaction: RedactionConfig = RedactionConfig()
    embedding: EmbeddingConfig = EmbeddingConfig()
    lifecycle: LifecycleConfig = LifecycleConfig()
    wiki: WikiConfig = WikiConfig()
    #: where the derived state (search index, vectors) of a repository this user cannot write goes
    #: (:func:`~gitmem.files.places.derived_dir`); ``$XDG_CACHE_HOME/gitmem`` (``~/.cache/gitmem``) as the entry
    #: points see it, "" (the repository's own ``.cache``, always) for a configuration built from the repository alone
    cache_home: str = ""
    #: the files the values came from, for messages
    sources: tuple[str, ...] = ()
    #: keys of the repository's shared ``gitmem.toml`` this version does not know (a newer gitmem's settings, which
    #: a teammate's sync brings), ignored rather than refused; ``gitmem doctor`` and ``gitmem config`` name them
    ignored: tuple[str, ...] = ()

    if not TYPE_CHECKING:  # checkers see the fields' own signature
        def __init__(self, **values: Any) -> None:
            super().__init__(**values)
            self.__dict__["repo"] = os.fspath(self.__dict__["repo"])  # one form: equal settings compare equal

    def with_repo(self, repo: str | os.PathLike[str]) -> Config:
        return replace(self, repo=repo)

    @property
    def repo_dir(self) -> str:
        """The memory repository's folder as a string (read without :mod:`pathlib`)."""
        folder: str = self.__dict__["repo"]
        return folder

    @property
    def derived_dir(self) -> str:
        """The folder of the repository's derived state (search index, vectors, caches): its ``.cache``, or one of
        its own under :attr:`cache_home` when this user cannot write the repository
        (:func:`~gitmem.files.places.derived_dir`, asked anew each time: two ``access`` calls)."""
        return derived_dir(self.repo_dir, self.cache_home)


class _RepoField:
    """``Config.repo`` at run time: the record keeps the folder as a string in its ``__dict__`` and this reads it
    as a :class:`~pathlib.Path`, imported then; ``repo_dir`` reads the string. Not a default: the class
    attribute raises AttributeError, so a Config without ``repo`` is refused as before."""

    def __get__(self, record: Config | None, owner: type) -> Path:
        if record is None:
            raise AttributeError("repo")
        from pathlib import Path

        return Path(record.__dict__["repo"])

    def __set__(self, record: Config, value: StrPath) -> None:  # a data descriptor: reads never see __dict__
        raise AttributeError("Config is frozen: make a changed copy with replace()")


if not TYPE_CHECKING:  # checkers see the plain field declared above
    Config.repo = _RepoField()


_SECTIONS: dict[str, type[Record]] = {
    "recall": RecallConfig,
    "ranking": RankingConfig,
    "sync": SyncConfig,
    "redaction": RedactionConfig,
    "embedding": EmbeddingConfig,
    "lifecycle": LifecycleConfig,
    "wiki": WikiConfig,
}
_TOP_KEYS = ("repo", "remote", "project", "author")
_CHOICES: dict[tuple[str, str], tuple[str, ...]] = {("sync", "mode"): ("direct", "review")}
#: keys whose value must lie in a closed range (beyond not being negative): an importance is 1..5, so any other
#: gc_max_importance is a mistake that would pass unnoticed (9 acts as 5; gc_unused_days = 0 turns the rule off)
_RANGES: dict[tuple[str, str], tuple[int, int]] = {("lifecycle", "gc_max_importance"): (1, 5)}


def default_user_config_path(env: Mapping[str, str], home: Path) -> Path:
    """:func:`user_config_file` as a :class:`~pathlib.Path`."""
    from pathlib import Path

    return Path(user_config_file(env, home))


def find_memrepo(start: StrPath) -> Path | None:
    """The nearest ``.memrepo`` file in ``start`` or one of its parents."""
    from pathlib import Path

    start = Path(start).resolve()
    for directory in (start, *start.parents):
        candidate = directory / MEMREPO_NAME
        if candidate.is_file():
            return candidate
    return None


def read_toml(path: Path) -> dict[str, Any]:
    """Parse a TOML file, turning every failure into a :class:`ConfigError` that names the file."""
    import tomllib  # here: a hook process that reads the settings' snapshot never parses TOML

    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}", "fix the syntax or delete the file") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text", "save the file as UTF-8") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}", "check the path and its permissions") from None


def _check_value(path: Path, key: str, value: Any, default: Any) -> Any:
    expected = type(default)
    if expected is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if expected is tuple:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{path}: key '{key}' must be a list of strings", f"e.g. {key} = [\"...\"]")
        return tuple(value)
    if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
        shown = {str: "a string", int: "an integer", float: "a number", bool: "true or false"}[expected]
        raise ConfigError(
            f"{path}: key '{key}' must be {shown}, not {value!r}",
            f"the default is {default!r}",  # not .memrepo.example: a package install has no such file
        )
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
        raise ConfigError(f"{path}: key '{key}' must not be negative", f"the default is {default!r}")
    return value


def _apply(base: Config, data: Mapping[str, Any], path: Path, *, allow_repo: bool, shared: bool = False) -> Config:
    """Overlay one parsed file on ``base``, validating every key. In the ``shared`` file (the repository's
    ``gitmem.toml``, which syncs between machines) a key this version does not know is ignored and listed in
    :attr:`Config.ignored`: refused, one teammate's newer gitmem stopped every command on every machine, ``sync``
    (which would bring the fix) and ``doctor`` included."""
    top: dict[str, Any] = {}
    ignored: list[str] = []
    for key, value in data.items():
        if key in _SECTIONS:
            if not isinstance(value, dict):
                raise ConfigError(f"{path}: '{key}' must be a table", f"write it as [{key}]")
            section = getattr(base, key)
            allowed = {name: getattr(section, name) for name in section.FIELDS}
            changes: dict[str, Any] = {}
            for sub, subvalue in value.items():
                if sub not in allowed and shared:
                    ignored.append(f"{key}.{sub}")
                    continue
                if sub not in allowed:
                    raise ConfigError(
                        f"{path}: unknown key '{key}.{sub}'",
                        f"allowed keys in [{key}]: {', '.join(allowed)}",
                    )
                checked = _check_value(path, f"{key}.{sub}", subvalue, allowed[sub])
                choices = _CHOICES.get((key, sub))
                if choices and checked not in choices:
                    raise ConfigError(
                        f"{path}: '{key}.{sub}' is {checked!r}", f"use one of: {', '.join(choices)}"
                    )
                bounds = _RANGES.get((key, sub))
                if bounds and not bounds[0] <= checked <= bounds[1]:
                    raise ConfigError(
                        f"{path}: key '{key}.{sub}' must be from {bounds[0]} to {bounds[1]}, not {checked!r}",
                        f"the default is {allowed[sub]!r}",
                    )
                if (key, sub) == ("redaction", "extra_patterns"):
                    _check_patterns(path, checked)
                changes[sub] = checked
            top[key] = replace(section, **changes)
        elif key in _TOP_KEYS:
            if key == "repo" and not allow_repo:
                raise ConfigError(
                    f"{path}: 'repo' cannot be set inside the memory repository",
                    "set it in the user config file or a .memrepo file",
                )
            checked = _check_value(path, key, value, "")
            if key == "repo":
                if not checked:
                    continue
                from pathlib import Path

                repo_path = Path(checked).expanduser()
                top[key] = repo_path if repo_path.is_absolute() else (path.parent / repo_path).resolve()
            else:
                top[key] = checked
        elif key == "schema_version":
            continue
        elif shared:
            ignored.append(key)
        else:
            allowed_all = ", ".join((*_TOP_KEYS, *_SECTIONS))
            raise ConfigError(f"{path}: unknown key '{key}'", f"allowed: {allowed_all}")
    _check_ranking(top.get("ranking", base.ranking), path)
    if ignored:
        top["ignored"] = (*base.ignored, *(f"{path.name}: {key}" for key in ignored))
    return replace(base, sources=(*base.sources, str(path)), **top)


def _check_patterns(path: Path, patterns: tuple[str, ...]) -> None:
    """Refuse, when the file is read, a pattern the linear-time engine cannot run (it would fail every write)."""
    from gitmem.redact.custom import PatternError, compile_pattern

    for pattern in patterns:
        try:
            compile_pattern(pattern)
        except PatternError as exc:
            raise ConfigError(f"{path}: {exc.message}", f"{exc.hint} in {path.name}") from None


def _check_ranking(ranking: RankingConfig, path: Path) -> None:
    if ranking.w_sim + ranking.w_imp + ranking.w_rec <= 0:
        raise ConfigError(f"{path}: ranking weights are all zero", "give at least one of w_sim, w_imp, w_rec a value")


def discover(
    *,
    env: Mapping[str, str],
    cwd: StrPath,
    home: StrPath,
    repo: StrPath | None = None,
) -> Config:
    """Build the configuration the way an entry point sees it (environment, working directory, home)."""
    from pathlib import Path

    home = Path(home)
    config = Config(repo=home / ".gitmem")
    user_file = default_user_config_path(env, home)
    # a missing file is no settings; anything else there (a folder, a dangling link) is read, and says why it fails
    user_data = read_toml(user_file) if user_file.exists() or user_file.is_symlink() else {}
    memrepo = find_memrepo(Path(cwd))
    memrepo_data = read_toml(memrepo) if memrepo else {}

    if user_data:
        config = _apply(config, user_data, user_file, allow_repo=True)
    if memrepo is not None:
        config = _apply(config, memrepo_data, memrepo, allow_repo=True)
    if env.get("GITMEM_REPO"):
        config = replace(config, repo=Path(env["GITMEM_REPO"]).expanduser().resolve())
    if repo is not None:
        config = replace(config, repo=Path(repo).expanduser().resolve())
    if not config.embedding.models_dir:
        data_home = Path(env["XDG_DATA_HOME"]) if env.get("XDG_DATA_HOME") else home / ".local" / "share"
        config = replace(config, embedding=replace(config.embedding, models_dir=str(data_home / "gitmem" / "models")))
    config = replace(config, cache_home=user_cache_home(env, home))
    return load_repo_settings(config, override_files=[(user_file, user_data), (memrepo, memrepo_data)])


#: the hooks' snapshot of the resolved settings, in the memory repository's derived folder (rebuilt when stale):
#: ``.cache/`` of a repository the user can write (:func:`~gitmem.files.places.derived_dir`)
SNAPSHOT_NAME = "hook-settings.json"
SNAPSHOT_FILE = f"{CACHE}/{SNAPSHOT_NAME}"


def discover_cached(*, env: Mapping[str, str], cwd: StrPath, home: StrPath, repo: StrPath | None = None,
                    snapshot: StrPath) -> Config:
    """:func:`discover`, served from the JSON file ``snapshot`` of the settings it resolved while the files they
    came from (the user config, the repository's ``gitmem.toml``) and the environment that chooses them are
    unchanged: a hook on every prompt then neither imports the TOML parser nor validates the files again. The
    snapshot is keyed by each file's mtime and size; a missing, damaged or stale one is rebuilt by the full loader,
    whose errors reach the caller as before. For a caller that ruled out a ``.memrepo`` file above ``cwd`` (the
    hooks' fast path, :func:`gitmem.agents.claude.toolcall.fast_repo`): such a file is not part of the key. Paths
    may be strings: served from the snapshot, nothing here imports :mod:`pathlib`."""
    import time

    from gitmem.files.atomic import atomic_write, settled
    from gitmem.text import quickjson

    files = [user_config_file(env, home)]
    key: list[Any] = [os.fspath(home), os.fspath(repo or ""), *(env.get(k, "") for k in _SNAPSHOT_ENV)]
    try:
        with open(snapshot, encoding="utf-8") as fh:
            data = quickjson.loads(fh.read())
        files.append(os.path.join(data["config"]["repo"], REPO_CONFIG_NAME))
        stats = [_stat(path) for path in files]
        if data["key"] == [*key, *files, *stats] and all(settled(s[0], data["seen"]) for s in stats if s):
            return from_dict(data["config"])
    except Exception:  # no snapshot, a damaged one, one of another version: the full loader below
        pass
    seen = time.time_ns()
    config = discover(env=env, cwd=cwd, home=home, repo=repo)
    files[1:] = [os.path.join(config.repo_dir, REPO_CONFIG_NAME)]
    record = {"key": [*key, *files, *(_stat(path) for path in files)], "seen": seen, "config": as_dict(config)}
    try:  # noqa: SIM105 - not contextlib: imported for this line alone
        atomic_write(snapshot, quickjson.dumps(record).encode("utf-8"))
    except OSError:
        pass  # a snapshot that cannot be written only costs the next hook the full loader
    return config


#: the environment variables that choose what :func:`discover` reads (the files they name are keyed by path too)
_SNAPSHOT_ENV = ("GITMEM_REPO", "GITMEM_CONFIG", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME")


def _stat(path: str) -> list[int] | None:
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None
    return [info.st_mtime_ns, info.st_size]


def load(repo: StrPath, *, overrides: Mapping[str, Any] | None = None) -> Config:
    """A configuration for ``repo`` from the repository's ``gitmem.toml`` alone (plus ``overrides``)."""
    from pathlib import Path

    config = load_repo_settings(Config(repo=Path(repo).expanduser().resolve()), override_files=[])
    if overrides:
        config = _apply(config, overrides, Path("<overrides>"), allow_repo=False)
    return config


def load_repo_settings(config: Config, override_files: list[tuple[Path | None, dict[str, Any]]]) -> Config:
    """Overlay ``gitmem.toml`` from the repository, then re-apply the more specific files on top of it."""
    repo_file = config.repo / REPO_CONFIG_NAME
    if not repo_file.is_file():
        return config
    merged = _apply(replace(config, sources=()), read_toml(repo_file), repo_file, allow_repo=False, shared=True)
    for path, data in override_files:
        if path is not None and data:
            merged = _apply(merged, {k: v for k, v in data.items() if k != "repo"}, path, allow_repo=True)
    return replace(merged, repo=config.repo, sources=(*config.sources, str(repo_file)))


def as_dict(config: Config) -> dict[str, Any]:
    """A JSON-friendly view of the configuration (for ``gitmem config --json``); :func:`from_dict` reads it back."""
    def plain(value: Any) -> Any:
        if isinstance(value, Record):
            return {name: plain(getattr(value, name)) for name in value.FIELDS}
        if isinstance(value, tuple):
            return [plain(v) for v in value]
        return os.fspath(value) if isinstance(value, os.PathLike) else value

    data: dict[str, Any] = plain(config)
    data["repo"] = config.repo_dir  # the folder as the configuration keeps it
    return data


def from_dict(data: Mapping[str, Any]) -> Config:
    """The configuration :func:`as_dict` gave; raises ``TypeError``, ``KeyError`` or ``ValueError`` on anything
    else (a record of another version, a damaged file)."""
    values: dict[str, Any] = {**data, "repo": str(data["repo"]), "sources": tuple(str(p) for p in data["sources"]),
                              "ignored": tuple(str(k) for k in data["ignored"])}
    for key, section in _SECTIONS.items():
        values[key] = section(**{name: tuple(value) if isinstance(getattr(section, name, None), tuple) else value
                                 for name, value in data[key].items()})
    return Config(**values)


def environment() -> dict[str, str]:
    """A snapshot of the process environment, for entry points only."""
    return dict(os.environ)
