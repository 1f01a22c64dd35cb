"""CLI commands for review mode: ``propose`` (push local changes to a review branch and open the pull request)
and ``review`` (a Markdown summary of memory changes for its description)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from gitmem.cli import State, cli, emit_json, json_option, pass_state
from gitmem.cli_sync import _refresh_index, _sync_json
from gitmem.errors import GitmemError, ValidationError


def pull_request_url(remote: str, base: str, branch: str) -> str:
    """Where to open a pull (merge) request for ``branch`` on GitHub or GitLab, else ""."""
    from gitmem.codebase import normalise_remote

    host_path = normalise_remote(remote)
    if "/" not in host_path:
        return ""
    host, path = host_path.split("/", 1)
    if "github" in host:
        return f"https://{host}/{path}/compare/{base}...{branch}?expand=1"
    if "gitlab" in host:
        return (f"https://{host}/{path}/-/merge_requests/new?merge_request[source_branch]={branch}"
                f"&merge_request[target_branch]={base}")
    return ""


def _print_pr_hint(remote: str, base: str, branch: str) -> None:
    url = pull_request_url(remote, base, branch)
    if url:
        click.echo(f"open the pull request: {url}", err=True)


@cli.command("propose")
@click.option("--branch", "target", help="Branch to push to (default: gitmem/<machine>/<date>).")
@click.option("--timeout", type=click.FloatRange(0.1), help="Give up on the network after this many seconds.")
@click.option("--no-gh", is_flag=True, help="Do not open the pull request with the gh CLI.")
@json_option
@pass_state
def propose_command(state: State, target: str | None, timeout: float | None, no_gh: bool, as_json: bool) -> None:
    """Review mode: pull the main branch, push local changes to a review branch, print where to open the PR."""
    from gitmem.sync import sync

    repo = state.open()
    config = repo.config
    base = config.sync.branch
    summary = review_markdown(repo, f"refs/remotes/origin/{base}", "HEAD") if _has_tracking(repo, base) else ""
    result = sync(repo.git, author=repo.git.author(config.author), branch=base, mode="review", timeout=timeout,
                  review_target=target or "")
    if result.changed:
        _refresh_index(repo)
    url = pull_request_url(repo.git.remote_url(), base, result.branch) if result.pushed else ""
    opened = ""
    if result.pushed and not no_gh:
        opened = _open_with_gh(repo.path, base, result.branch, summary)
    if as_json:
        emit_json({**_sync_json(result), "pull_request_url": url, "opened": opened})
        return
    if not result.pushed:
        click.echo("nothing to propose: the remote branch already has every local change")
        return
    click.echo(f"pushed local changes to {result.branch} on {result.remote}")
    if opened:
        click.echo(f"opened {opened}")
    elif url:
        click.echo(f"open the pull request: {url}")


def _has_tracking(repo: Any, branch: str) -> bool:
    from gitmem.remote import remote_branches

    return branch in remote_branches(repo.git, branch)


def _open_with_gh(path: Path, base: str, branch: str, body: str) -> str:
    """Open the pull request with the gh CLI when it is installed and logged in; its URL, or ""."""
    import shutil
    import subprocess

    gh = shutil.which("gh")
    if not gh:
        return ""
    try:
        proc = subprocess.run([gh, "pr", "create", "--base", base, "--head", branch, "--title",
                               f"gitmem: memory changes from {branch}", "--body", body or "Memory changes."],
                              cwd=path, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return proc.stdout.strip().splitlines()[-1] if proc.returncode == 0 and proc.stdout.strip() else ""


def _parse_any(path: str, data: bytes | None) -> Any:
    """A memory, or the frontmatter dict of another document (instincts), or None."""
    if data is None:
        return None
    from gitmem import documents as docs
    from gitmem.errors import DocumentError
    from gitmem.merge import is_memory_path

    text = data.decode("utf-8", "replace")
    if is_memory_path(path):
        try:
            return docs.loads(text, path)
        except DocumentError:
            return None
    import frontmatter

    try:
        return dict(frontmatter.loads(text).metadata)
    except Exception:
        return None


def review_markdown(repo: Any, base: str, head: str) -> str:
    """A Markdown summary of the memory changes in ``base..head`` for a pull-request description."""
    from gitmem import documents as docs
    from gitmem.gitstore import parse_trailers
    from gitmem.remote import changes_between, commits_between

    changes = changes_between(repo.git, base, head)
    commits = commits_between(repo.git, base, head)
    origin: dict[str, list[str]] = {}
    for _sha, message in commits:
        trailers = parse_trailers(message)
        for mid in trailers.get("Gitmem-Id", []):
            for source in trailers.get("Gitmem-Source", []):
                if source not in origin.setdefault(mid, []):
                    origin[mid].append(source)
    sections: dict[str, list[str]] = {k: [] for k in ("Added", "Changed", "Deprecated", "Superseded", "Restored",
                                                      "Removed", "Conflicts", "Instincts", "Wiki", "Other files")}

    def where(memory: docs.Memory) -> str:
        sources = origin.get(memory.id) or [f"{memory.source}:{memory.source_ref}" if memory.source_ref
                                            else memory.source]
        return "from " + ", ".join(f"`{s}`" for s in sources)

    def label(memory: docs.Memory) -> str:
        scope = f", project `{memory.project}`" if memory.project else ""
        return f"**{memory.title}** (`{memory.id}`; {memory.category}, importance {memory.importance}{scope})"

    for path, (old_data, new_data) in sorted(changes.items()):
        old, new = _parse_any(path, old_data), _parse_any(path, new_data)
        if isinstance(new, docs.Memory) or isinstance(old, docs.Memory):
            if not isinstance(old, docs.Memory):
                assert isinstance(new, docs.Memory)
                section = "Conflicts" if new.extra.get("conflict_of") else "Added"
                sections[section].append(f"- {label(new)}: {new.text.splitlines()[0][:200]} — {where(new)}")
            elif not isinstance(new, docs.Memory):
                sections["Removed"].append(f"- {label(old)} — {where(old)}")
            elif new.deprecated and not old.deprecated:
                key = "Superseded" if new.superseded_by else "Deprecated"
                extra = f" by `{new.superseded_by}`" if new.superseded_by else ""
                sections[key].append(f"- {label(new)}{extra}: {new.deprecated_reason} — {where(new)}")
            elif old.deprecated and not new.deprecated:
                sections["Restored"].append(f"- {label(new)} — {where(new)}")
            else:
                sections["Changed"].append(f"- {label(new)}: {_what_changed(old, new)} — {where(new)}")
        elif path.startswith("instincts/") and isinstance(new, dict):
            before = old.get("confidence") if isinstance(old, dict) else None
            after = new.get("confidence")
            move = f"confidence {before} → {after}" if before is not None else f"new, confidence {after}"
            sections["Instincts"].append(f"- `{new.get('id', path)}` ({new.get('trigger', '')}): {move}")
        elif path.startswith("wiki/"):
            from gitmem.wiki.page import wiki_change

            sections["Wiki"].append(wiki_change(path, old_data, new_data))
        else:
            sections["Other files"].append(f"- `{path}` {'removed' if new_data is None else 'changed'}")
    counts = ", ".join(f"{len(v)} {k.lower()}" for k, v in sections.items() if v)
    lines = [f"## Memory changes ({len(commits)} commits)", "", counts or "no memory changes", ""]
    for name, items in sections.items():
        if items:
            lines += [f"### {name}", "", *items, ""]
    return "\n".join(lines).rstrip() + "\n"


def _what_changed(old: Any, new: Any) -> str:
    parts: list[str] = []
    if old.text != new.text:
        parts.append("text edited")
    for name in ("category", "type", "importance", "scope", "project", "why", "how"):
        if getattr(old, name) != getattr(new, name):
            parts.append(f"{name} {getattr(old, name) or '∅'} → {getattr(new, name) or '∅'}")
    added = [t for t in new.tags if t not in old.tags]
    removed = [t for t in old.tags if t not in new.tags]
    if added or removed:
        parts.append("tags " + " ".join([*(f"+{t}" for t in added), *(f"−{t}" for t in removed)]))
    if new.conflicted and not old.conflicted:
        parts.append("conflicted (both versions kept)")
    if old.conflicted and not new.conflicted:
        parts.append("conflict resolved")
    return "; ".join(parts) or "metadata updated"


@cli.command("review")
@click.argument("rev_range", metavar="[BASE..HEAD]", required=False)
@pass_state
def review_command(state: State, rev_range: str | None) -> None:
    """Markdown summary of memory changes (default: what the remote branch does not have yet)."""
    repo = state.open()
    branch = repo.config.sync.branch
    if rev_range:
        base, sep, head = rev_range.partition("..")
        if not sep:
            raise ValidationError(f"{rev_range!r} is not a range", "use BASE..HEAD, e.g. origin/main..HEAD")
        head = head or "HEAD"
    else:
        if not _has_tracking(repo, branch):
            raise GitmemError(f"no remote branch origin/{branch} to compare with",
                              "run gitmem sync, or give BASE..HEAD")
        base, head = f"refs/remotes/origin/{branch}", "HEAD"
    click.echo(review_markdown(repo, base, head), nl=False)
