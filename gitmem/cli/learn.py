"""CLI commands of the learning loop: ``instincts``, ``evolve``, ``capture``, ``gc``, ``compact``, ``digest``,
``memory-index`` and the hidden ``learn-session`` run detached at session end."""

from __future__ import annotations

import json
import os
import re
import signal
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import click

from gitmem.cli.app import State, cli, emit_json, json_option, pass_state
from gitmem.cli.wiki import warn_skipped
from gitmem.errors import DocumentError, GitmemError, ValidationError
from gitmem.text.counted import counted


@cli.group()
def instincts() -> None:
    """Behaviour rules learned from the observed tool calls."""


@instincts.command("list")
@click.option("--all", "show_all", is_flag=True, help="Include deprecated instincts.")
@json_option
@pass_state
def instincts_list(state: State, show_all: bool, as_json: bool) -> None:
    """Instincts, most confident first."""
    from gitmem.learn.instincts import list_instincts

    repo = state.open()
    unreadable: list[DocumentError] = []
    items = list_instincts(repo.path, deprecated=show_all, warnings=unreadable)
    warn_skipped(unreadable)
    if as_json:
        emit_json([i.to_dict() for i in items])
        return
    if not items and not unreadable:
        click.echo("no instincts yet (they are learned from observed sessions: gitmem instincts learn)")
    for item in items:
        flag = " [deprecated]" if item.deprecated else ""
        click.echo(f"{item.confidence:.2f}  {item.id}  ({item.domain}, evidence {item.evidence_count}, "
                   f"{counted(item.sessions, 'session')}){flag}")


@instincts.command("show")
@click.argument("instinct_id")
@json_option
@pass_state
def instincts_show(state: State, instinct_id: str, as_json: bool) -> None:
    """One instinct with its confidence history from git."""
    from gitmem.learn.instincts import get_instinct, history

    repo = state.open()
    item = get_instinct(repo.path, instinct_id)
    rows = history(repo, item)
    if as_json:
        emit_json({**item.to_dict(), "history": rows})
        return
    click.echo(f"{item.id}  ({item.domain}, {item.scope}{' ' + item.project if item.project else ''})")
    click.echo(f"  when:       {item.trigger}")
    click.echo(f"  do:         {item.action}")
    gone = f" (deprecated: {item.deprecated_reason})" if item.deprecated else ""
    click.echo(f"  confidence: {item.confidence:.2f}{gone}")
    click.echo(f"  evidence:   {counted(item.evidence_count, 'observation')} in {counted(item.sessions, 'session')}, "
               f"first {item.observed_at:%Y-%m-%d}, last {item.last_seen:%Y-%m-%d}")
    click.echo("  history:")
    for row in rows:
        conf = f"{row['confidence']:.2f}" if "confidence" in row else "  - "
        click.echo(f"    {row['time'][:16]}  {conf}  {row['sha'][:8]}  {row['subject']}")


@instincts.command("reject")
@click.argument("instinct_id", metavar="ID")
@click.option("--reason", required=True, help="Why the rule is wrong.")
@pass_state
def instincts_reject(state: State, instinct_id: str, reason: str) -> None:
    """Deprecate a wrong instinct for good (one commit): new evidence does not revive it; evolve drops its rule."""
    from gitmem.learn.instincts import reject

    gone = reject(state.open(), instinct_id, reason)
    click.echo(f"rejected {gone.id}; run gitmem evolve to drop its rule from the rules file")


@instincts.command("learn")
@click.option("--session", "sessions", multiple=True, help="Only this session (repeatable).")
@click.option("--decay-days", type=click.FloatRange(0), default=None,
              help="Days unobserved before an instinct loses 0.05 (default 14; 0 = no decay).")
@click.option("--min-idle", type=click.FloatRange(0), default=10.0, show_default=True,
              help="Minutes without calls before a session that has not ended is learned from.")
@json_option
@pass_state
def instincts_learn(state: State, sessions: tuple[str, ...], decay_days: float | None, min_idle: float,
                    as_json: bool) -> None:
    """Learn from the observed sessions not learned from yet, then decay what was not seen."""
    from gitmem.learn.instincts import learn
    from gitmem.learn.modelreview import load_settings

    repo = state.open()
    result = learn(repo, sessions=sessions or None, source="cli", min_idle=min_idle * 60,
                   decay_days=load_settings(repo.path).decay_days if decay_days is None else decay_days)
    _report(result, f"learned from {counted(len(result.sessions), 'session')}; "
                    f"{counted(len(result.changes), 'change')}", as_json)


def _print_lines(result: Any, as_json: bool) -> None:
    """Print a result that describes itself: its JSON, or its ``lines()``."""
    if as_json:
        emit_json(result.to_dict())
        return
    for line in result.lines():
        click.echo(line)


def _report(result: Any, headline: str, as_json: bool) -> None:
    """Print a learning result: its JSON, or a headline and one line per instinct change."""
    if as_json:
        emit_json(result.to_dict())
        return
    click.echo(headline)
    for change in result.changes:
        click.echo(f"  {change.line()}")


@instincts.command("analyze")
@click.option("--session", required=True, help="The session to analyse.")
@json_option
@pass_state
def instincts_analyze(state: State, session: str, as_json: bool) -> None:
    """Semantic analysis of one session by the command in local/learning.toml (off until configured)."""
    from gitmem.learn.modelreview import analyze

    repo = state.open()
    result = analyze(repo, session, source="cli")
    _report(result, f"{result.status}: {result.message}", as_json)


@instincts.command("export")
@click.option("--min-confidence", type=click.FloatRange(0, 1), default=0.0, show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="Write to FILE.")
@pass_state
def instincts_export(state: State, min_confidence: float, output: Path | None) -> None:
    """Instincts as JSONL to share: no project ids, code paths or session content."""
    from gitmem.learn.instincts import export_records

    repo = state.open()
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in export_records(repo.path,
                                                                                   min_confidence=min_confidence))
    if output:
        output.write_text(text, "utf-8")
    else:
        click.echo(text, nl=False)


@cli.command()
@click.option("--rules-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Copy the rules file here (default ~/.claude/rules when ~/.claude exists).")
@click.option("--no-install", is_flag=True, help="Do not copy the rules file for Claude Code.")
@click.option("--dry-run", is_flag=True, help="Show what would change; commit nothing.")
@json_option
@pass_state
def evolve(state: State, rules_dir: Path | None, no_install: bool, dry_run: bool, as_json: bool) -> None:
    """Regenerate evolved/<domain>.md and rules/auto-evolved.md from the confident instincts (one commit)."""
    from gitmem.learn.evolve import evolve as run
    from gitmem.learn.evolve import install_rules

    repo = state.open()
    result = run(repo, dry_run=dry_run)
    installed = None
    if not dry_run and not no_install:
        target = rules_dir or (Path.home() / ".claude" / "rules" if (Path.home() / ".claude").is_dir() else None)
        if target is not None:
            installed = install_rules(repo.path, target)
    if as_json:
        emit_json({**result.to_dict(), "installed": str(installed) if installed else None})
        return
    if not result.changes:
        click.echo(f"nothing changed ({counted(len(result.rules), 'rule')})")
    else:
        click.echo(f"{'would change' if dry_run else 'committed ' + result.commit[:8]}: "
                   f"{counted(len(result.rules), 'rule')}")
        for line in result.changes:
            click.echo(f"  {line}")
    if installed:
        click.echo(f"rules copied to {installed}")


@cli.command()
@click.option("--transcript", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="A Claude Code transcript (JSONL).")
@click.option("--session", default="", help="Session id (source_ref of the memories).")
@click.option("--project", default=None,
              help="Project id of the memories (default: the code project around the working directory).")
@click.option("--no-candidates", is_flag=True, help="Do not turn pending corrections into memories.")
@click.option("--dry-run", is_flag=True, help="Show what would be captured; commit nothing.")
@json_option
@pass_state
def capture(state: State, transcript: Path | None, session: str, project: str | None, no_candidates: bool,
            dry_run: bool, as_json: bool) -> None:
    """Capture decisions, preferences, constraints and corrections as memories (rules; dedup; supersede)."""
    from gitmem.learn.capture import capture as run
    from gitmem.learn.capture import looks_like_transcript

    if transcript is not None and not looks_like_transcript(transcript):
        raise ValidationError(f"{transcript} is not a Claude Code transcript: none of its first lines is a JSON record",
                              "pass the session's .jsonl file (under ~/.claude/projects/)")
    repo = state.open()
    result = run(repo, transcript=transcript, session=session,
                 project=state.project_here() if project is None else project,
                 candidates=not no_candidates, dry_run=dry_run)
    _print_lines(result, as_json)


#: the longest period a --since accepts (a datetime cannot go back much further than year 1)
MAX_DAYS = 36_500


def _days(value: str) -> timedelta:
    match = re.fullmatch(r"\s*(\d+)\s*([mhdw]?)\s*", value)
    if not match or not int(match.group(1)):
        raise ValidationError(f"not a duration: {value!r}", "use e.g. 30m, 24h, 7d or 2w")
    amount = int(match.group(1))
    unit = match.group(2) or "d"
    span = {"m": timedelta(minutes=amount), "h": timedelta(hours=amount), "d": timedelta(days=amount),
            "w": timedelta(weeks=amount)}[unit] if amount <= MAX_DAYS * 24 * 60 else timedelta(days=MAX_DAYS + 1)
    if span > timedelta(days=MAX_DAYS):
        raise ValidationError(f"{value.strip()!r} is too far back", f"use at most {MAX_DAYS}d (100 years)")
    return span


@cli.command()
@click.option("--dry-run", is_flag=True, help="List what would be deprecated; commit nothing.")
@json_option
@pass_state
def gc(state: State, dry_run: bool, as_json: bool) -> None:
    """Deprecate expired memories and unused low-importance ones (one commit)."""
    from gitmem.store.lifecycle import gc as run

    repo = state.open()
    result = run(repo, dry_run=dry_run)
    _print_lines(result, as_json)


@cli.command()
@click.option("--min-size", type=click.IntRange(2), default=None, help="Cluster tags with more memories than this "
              "(default 10).")
@click.option("--dry-run", is_flag=True, help="Show the clusters; commit nothing.")
@json_option
@pass_state
def compact(state: State, min_size: int | None, dry_run: bool, as_json: bool) -> None:
    """Replace big clusters of memories (a tag with > 10, a category over the token threshold) by a summary."""
    from gitmem.store.lifecycle import TAG_LIMIT
    from gitmem.store.lifecycle import compact as run

    repo = state.open()
    result = run(repo, tag_limit=min_size or TAG_LIMIT, dry_run=dry_run)
    _print_lines(result, as_json)


@cli.command()
@click.option("--since", default="7d", show_default=True, help="How far back: 30m, 24h, 7d, 2w.")
@json_option
@pass_state
def digest(state: State, since: str, as_json: bool) -> None:
    """What was added, changed, deprecated and learned, from the git history."""
    from gitmem.store.lifecycle import digest as run

    repo = state.open()
    result = run(repo, since=_days(since))
    if as_json:
        emit_json(result)
        return
    click.echo(result["text"])


@cli.command("memory-index")
@click.option("--max-lines", type=click.IntRange(10), default=None, help="Line limit (default 160).")
@json_option
@pass_state
def memory_index(state: State, max_lines: int | None, as_json: bool) -> None:
    """Regenerate MEMORY.md, the listing of active memories (≤ 160 lines, trimmed by priority)."""
    from gitmem.store.lifecycle import MEMORY_MD_LINES, write_memory_md

    repo = state.open()
    sha, lines = write_memory_md(repo, max_lines=max_lines or MEMORY_MD_LINES)
    if as_json:
        emit_json({"commit": sha, "lines": lines})
        return
    click.echo(f"MEMORY.md: {lines} lines{', committed ' + sha[:8] if sha else ', unchanged'}")


@cli.command("learn-session", hidden=True)
@click.option("--session", default="")
@click.option("--transcript", type=click.Path(path_type=Path), default=None)
@click.option("--project", default="")
@click.option("--timeout", type=float, default=60.0)
@click.option("--warm-cwd", type=click.Path(path_type=Path, file_okay=False), default=None)
@pass_state
def learn_session(state: State, session: str, transcript: Path | None, project: str, timeout: float,
                  warm_cwd: Path | None) -> None:
    """Session-end work, run detached by the hook: instincts, capture, evolve, then (``--warm-cwd``) the recall
    block for the next session in that directory, within ``--timeout`` seconds."""
    import time

    from gitmem.learn.capture import capture as run_capture
    from gitmem.learn.evolve import evolve as run_evolve
    from gitmem.learn.evolve import install_rules
    from gitmem.learn.instincts import learn
    from gitmem.learn.modelreview import analyze, load_settings

    if timeout > 0 and hasattr(signal, "SIGALRM"):
        signal.signal(signal.SIGALRM, lambda *_: os._exit(0))  # bounded: never outlive the deadline
        signal.alarm(max(1, int(timeout)))
    started = time.monotonic()
    repo = state.open()
    settings = load_settings(repo.path)
    done: dict[str, Any] = {}
    try:  # what a busy repository kept the session's end (or an earlier one's) from committing; this run waits longer
        from gitmem.briefing.directives import commit_pending
        from gitmem.store.local import pending_sessions

        local = str(repo.path / "local")
        done["directives"] = commit_pending(repo, local, [*([session] if session else []), *pending_sessions(local)])
    except GitmemError as exc:
        done["directives"] = {"error": str(exc)}
        click.echo(f"gitmem: error: {exc}", err=True)  # this process's stderr goes to local/gitmem.log
    if session:
        try:
            done["instincts"] = learn(repo, sessions=[session], source=f"hook:{session}",
                                      decay_days=settings.decay_days).to_dict()
            left = timeout - (time.monotonic() - started) - 10 if timeout > 0 else settings.semantic_timeout
            if settings.enabled and left > 1:
                bounded = replace(settings, semantic_timeout=min(settings.semantic_timeout, left))
                done["semantic"] = analyze(repo, session, settings=bounded, source=f"hook:{session}").to_dict()
        except DocumentError as exc:  # an instinct file broken by hand: learning refused to write over it, and the
            # session's other work (project notes, captured memories, evolve) does not depend on it
            done["instincts"] = {"error": str(exc)}
            click.echo(f"gitmem: error: {exc}", err=True)  # this process's stderr goes to local/gitmem.log
    if session:  # notes for the project memory from the session's tool output (cheap, so before capture)
        from gitmem.projects.memory import learn_from_session

        done["project"] = learn_from_session(repo, session, project=project).to_dict()
    done["capture"] = run_capture(repo, transcript=transcript if transcript and transcript.is_file() else None,
                                  session=session, project=project).to_dict()
    done["evolve"] = run_evolve(repo, source=f"hook:{session}").to_dict()
    claude = Path.home() / ".claude"
    if claude.is_dir():
        installed = install_rules(repo.path, claude / "rules")
        done["installed"] = str(installed) if installed else None
    done["session"] = session
    local = repo.path / "local"
    local.mkdir(exist_ok=True)
    tmp = local / f".last-learn.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(done, ensure_ascii=False, default=str), "utf-8")
    tmp.replace(local / "last-learn.json")
    if warm_cwd is not None and warm_cwd.is_dir():
        from gitmem.cli.hooks import warm_directory

        warm_directory(state, warm_cwd, 0)  # the alarm set above still bounds the whole run
