"""CLI commands for review mode: ``propose`` (push local changes to a review branch and open the pull request)
and ``review`` (a Markdown summary of memory changes for its description)."""

from __future__ import annotations

from pathlib import Path

import click

from gitmem.cli.app import State, cli, emit_json, json_option, pass_state
from gitmem.cli.sync import NETWORK_TIMEOUT, _refresh_index, _sync_json
from gitmem.errors import ValidationError
from gitmem.sync.review import has_tracking, pending_review, review_markdown


def pull_request_url(remote: str, base: str, branch: str) -> str:
    """Where to open a pull (merge) request for ``branch`` on GitHub or GitLab, else ""."""
    from gitmem.projects.identity import normalise_remote

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
@click.option("--timeout", type=click.FloatRange(0.1), default=NETWORK_TIMEOUT, show_default=True,
              help="Give up on a network step (fetch, push) after this many seconds.")
@click.option("--no-gh", is_flag=True, help="Do not open the pull request with the gh CLI.")
@json_option
@pass_state
def propose_command(state: State, target: str | None, timeout: float | None, no_gh: bool, as_json: bool) -> None:
    """Review mode: pull the main branch, push local changes to a review branch, print where to open the PR."""
    from gitmem.sync.round import sync

    repo = state.open()
    config = repo.config
    base = config.sync.branch
    summary = review_markdown(repo, f"refs/remotes/origin/{base}", "HEAD") if has_tracking(repo, base) else ""
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


@cli.command("review")
@click.argument("rev_range", metavar="[BASE..HEAD]", required=False)
@pass_state
def review_command(state: State, rev_range: str | None) -> None:
    """Markdown summary of memory changes (default: what the remote branch does not have yet)."""
    repo = state.open()
    if rev_range:
        base, sep, head = rev_range.partition("..")
        if not sep:
            raise ValidationError(f"{rev_range!r} is not a range", "use BASE..HEAD, e.g. origin/main..HEAD")
        head = head or "HEAD"
        click.echo(review_markdown(repo, base, head), nl=False)
    else:
        click.echo(pending_review(repo).markdown(), nl=False)
