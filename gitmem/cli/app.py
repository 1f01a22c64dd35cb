"""The ``gitmem`` command: a thin layer that reads the environment, calls the library and prints.

Errors from the library (:class:`~gitmem.errors.GitmemError`) become one line on stderr and a non-zero exit in
one place, :class:`GitmemGroup`; anything unexpected is logged with its traceback and reported in one line too.
"""

from __future__ import annotations

import errno
import json
import os
import sys
import traceback
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click

from gitmem import __version__
from gitmem.errors import GitmemError, ValidationError

F = TypeVar("F", bound=Callable[..., Any])


def log_internal_error(repo: Path | None, exc: BaseException) -> Path | None:
    """Append the traceback of an unexpected error to the local log (the repository's, else the user's when the
    repository's cannot be written: the hooks' :func:`~gitmem.agents.claude.context.append_log`); returns the
    log's path, None when neither could be written."""
    from gitmem.agents.claude.context import append_log
    from gitmem.redact.engine import redact

    entry = (f"{datetime.now(UTC).isoformat()} gitmem {redact(' '.join(sys.argv[1:])).text[:200]}\n"
             + redact("".join(traceback.format_exception(exc))).text)
    usable = repo if repo is not None and (repo / ".git").is_dir() else None
    written = append_log(usable, os.environ, Path.home(), entry.rstrip("\n"))
    return Path(written) if written is not None else None


#: what a file system answers when this user may not read or write a file there, or it is mounted read-only
_NO_ACCESS = (errno.EACCES, errno.EPERM, errno.EROFS)


def fail(message: str, code: int = 1) -> NoReturn:
    """Say one line on stderr and exit. The line is redacted: errors may quote the input they refuse."""
    from gitmem.redact.engine import redact

    click.echo(f"gitmem: error: {redact(message).text}", err=True)
    sys.exit(code)


#: what a group given no subcommand raises (click 8.2 on; older versions print the help and exit 0 themselves)
_NO_SUBCOMMAND: Any = getattr(click.exceptions, "NoArgsIsHelpError", ())


class GitmemGroup(click.Group):
    """Turns every error into one line on stderr (never a traceback) with a meaningful exit code."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        kwargs["standalone_mode"] = False
        try:
            result = super().main(*args, **kwargs)
        except click.UsageError as exc:
            if isinstance(exc, _NO_SUBCOMMAND) and exc.ctx is not None:  # `gitmem`, `gitmem wiki`: the help, as -h
                click.echo(exc.ctx.get_help(), color=exc.ctx.color)
                sys.exit(0)
            where = exc.ctx.command_path if exc.ctx else "gitmem"
            if isinstance(exc, click.NoSuchOption) and exc.ctx is not None and any(
                    isinstance(p, click.Argument) for p in exc.ctx.command.params):
                # a text that starts with a dash ("-x is a flag…", a pasted "-----BEGIN…") reads as an option
                fail(f"{exc.format_message()} (a text that starts with '-' goes after '--', as in: {where} -- "
                     f"'{exc.option_name} …'; see: {where} --help)", 2)
            fail(f"{exc.format_message()} (see: {where} --help)", 2)
        except click.ClickException as exc:
            fail(exc.format_message(), exc.exit_code)
        except click.exceptions.Abort:
            fail("aborted", 1)
        sys.exit(result if isinstance(result, int) else 0)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except GitmemError as exc:
            fail(str(exc), exc.exit_code)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException, SystemExit):
            raise
        except KeyboardInterrupt:
            click.echo("gitmem: interrupted", err=True)
            sys.exit(130)
        except BrokenPipeError:
            sys.exit(0)
        except OSError as exc:
            if exc.errno not in _NO_ACCESS:
                _internal_error(ctx, exc)
            where = f" {exc.filename}" if exc.filename else ""
            fail(f"cannot use{where}: {exc.strerror or exc} (gitmem reads and writes the memory repository and its "
                 "own folders as you): check that folder's owner and permissions, or point --repo or GITMEM_REPO "
                 "at a repository you can write", 1)
        except Exception as exc:  # the last line of defence: log it, say one line
            _internal_error(ctx, exc)


def _internal_error(ctx: click.Context, exc: Exception) -> NoReturn:
    """Log an unexpected error with its traceback and say one line."""
    state = ctx.find_object(State)
    log = log_internal_error(state.repo_path if state else None, exc)
    fail(f"internal error: {type(exc).__name__}: {exc} "
         f"({f'details in {log}' if log is not None else 'no log could be written'})", 70)


class State:
    """What the global options resolved to; the config is built lazily so ``--help`` needs no repo."""

    def __init__(self, repo: str | None) -> None:
        self.repo_option = Path(repo) if repo else None
        self._config: Any = None

    @property
    def config(self) -> Any:
        if self._config is None:
            from gitmem.config import discover

            self._config = discover(env=dict(os.environ), cwd=Path.cwd(), home=Path.home(), repo=self.repo_option)
        return self._config

    @property
    def repo_path(self) -> Path | None:
        try:
            return Path(self.config.repo)
        except GitmemError:
            return self.repo_option

    def project_here(self) -> str:
        """The project a memory made here belongs to: the configured project, else the code project around the
        working directory ("" outside one, or in the memory repository)."""
        from gitmem.projects.identity import project_at

        return project_at(Path.cwd(), self.config.project, self.repo_path)

    def open(self) -> Any:
        """The memory repository; the default ``~/.gitmem`` is created on first use, any other must exist."""
        from gitmem.api import open_repository
        from gitmem.store.base import is_memory_repo
        from gitmem.store.layout import init_repo

        config = self.config
        default = Path.home() / ".gitmem"
        if not is_memory_repo(config.repo) and config.repo == default.resolve() and not config.repo.exists():
            init_repo(config.repo, author=config.author)
            click.echo(f"gitmem: created the memory repository at {config.repo}", err=True)
        repo = open_repository(config)
        repo.git.on_lock_wait = say_waiting  # the CLI's writes say why they wait; the hooks' stay silent
        return repo


def say_waiting(line: str) -> None:
    """One line on stderr while a write waits for another process's lock."""
    click.echo(f"gitmem: {line}", err=True)


pass_state = click.make_pass_decorator(State)


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def json_option(func: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")(func)


def read_text(text: str | None) -> str:
    """TEXT as given, or stdin when it is ``-`` or missing (a terminal on stdin is an error, not a wait)."""
    if text is not None and text != "-":
        return text
    if sys.stdin is None or (text is None and sys.stdin.isatty()):
        raise ValidationError("no text given", 'pass it as an argument or on stdin: gitmem remember "..."')
    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValidationError("the text on stdin is not UTF-8", "convert it to UTF-8 first") from None


def report_redaction(kinds: list[str]) -> None:
    """Say on stderr which kinds of secret were redacted before the commit."""
    if kinds:
        click.echo(f"gitmem: redacted secrets before committing: {', '.join(kinds)}", err=True)


@click.group(cls=GitmemGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--repo", metavar="PATH", help="Memory repository to use (default: GITMEM_REPO, .memrepo, "
              "user config, ~/.gitmem).")
@click.version_option(__version__, prog_name="gitmem")
@click.pass_context
def cli(ctx: click.Context, repo: str | None) -> None:
    """gitmem: git-native long-term memory for coding agents.

    Memories are Markdown files in a git repository; every change is a commit.
    """
    ctx.obj = State(repo)
