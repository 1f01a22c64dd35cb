"""``gitmem wiki edit``: a page edited by hand, and the page a sync left conflicted settled there."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.helpers import assert_clean, git, run_cli

CONFLICT = "## Conflicting version (kept by sync)"


def _editor(tmp_path: Path, name: str, code: str) -> dict[str, str]:
    """An $EDITOR that runs ``code`` on the draft's text ``s`` (``p`` is its path)."""
    script = tmp_path / f"{name}.py"
    script.write_text(f"import sys\np = sys.argv[1]\ns = open(p, encoding='utf-8').read()\n{code}\n"
                      "open(p, 'w', encoding='utf-8').write(s)\n")
    return {"EDITOR": f"{sys.executable} {script}"}


def _machines(tmp_path: Path) -> tuple[list[str], list[str]]:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    a, b = tmp_path / "a", tmp_path / "b"
    assert run_cli("init", str(a), "--remote", str(remote)).code == 0
    ra = ["--repo", str(a)]
    added = run_cli(*ra, "wiki", "add", "--title", "Deploy", "--project", "shop",
                    "Deploys run from CI.\nThe window is Tuesday.\nRollbacks use the previous tag.")
    assert added.code == 0, added.err
    assert run_cli(*ra, "sync").code == 0
    assert run_cli("init", str(b), "--remote", str(remote)).code == 0
    return ra, ["--repo", str(b)]


def test_a_conflicted_page_is_listed_by_status_and_settled_by_wiki_edit(tmp_path: Path) -> None:
    ra, rb = _machines(tmp_path)
    # the same line changed on both machines, by hand
    tuesday = "s = s.replace('The window is Tuesday.', 'The window is {}.')"
    assert run_cli(*ra, "wiki", "edit", "deploy", "--project", "shop",
                   env=_editor(tmp_path, "a", tuesday.format("Wednesday"))).code == 0
    assert run_cli(*rb, "wiki", "edit", "deploy", "--project", "shop",
                   env=_editor(tmp_path, "b", tuesday.format("Thursday"))).code == 0
    assert run_cli(*ra, "sync").code == 0
    synced = run_cli(*rb, "sync")
    assert synced.code == 0 and "gitmem wiki edit PAGE" in synced.out, synced.out
    page = json.loads(run_cli(*rb, "wiki", "read", "deploy", "--project", "shop", "--json").out)
    assert page["conflicted"] and CONFLICT in page["body"]
    assert "Wednesday" in page["body"] and "Thursday" in page["body"]
    status = run_cli(*rb, "status")
    assert "1 conflicted wiki page" in status.out and "deploy --project shop" in status.out
    assert "no conflicts" not in status.out
    listed = json.loads(run_cli(*rb, "status", "--json").out)["conflicted_pages"]
    assert listed == [{"project": "shop", "page": "deploy", "title": "Deploy"}]
    lint = json.loads(run_cli(*rb, "wiki", "lint", "--project", "shop", "--json").out)
    assert any(f["kind"] == "conflicted" and "gitmem wiki edit deploy" in f["detail"] for f in lint)

    # settled: the section goes, Thursday stays, and the flag follows the body without being touched
    settle = ("i = s.index('\\n" + CONFLICT + "')\nj = s.index('Rollbacks')\n"
              "s = s[:i] + '\\n' + s[j:]\ns = s.replace('Wednesday', 'Thursday')")
    edited = run_cli(*rb, "wiki", "edit", "deploy", "--project", "shop", env=_editor(tmp_path, "settle", settle))
    assert edited.code == 0 and edited.out.strip() == "saved deploy" and "still conflicted" not in edited.err
    page = json.loads(run_cli(*rb, "wiki", "read", "deploy", "--project", "shop", "--json").out)
    assert not page["conflicted"] and CONFLICT not in page["body"]
    assert page["body"].count("Thursday") == 1 and "Wednesday" not in page["body"]
    assert "Rollbacks use the previous tag." in page["body"]
    assert "no conflicts" in run_cli(*rb, "status").out
    assert git(Path(rb[1]), "log", "-1", "--format=%s").strip() == "wiki: edit Deploy"
    assert_clean(Path(rb[1]))
    # the other machine takes the settled page: a side that settled stays settled
    assert run_cli(*rb, "sync").code == 0 and run_cli(*ra, "sync").code == 0
    page = json.loads(run_cli(*ra, "wiki", "read", "deploy", "--project", "shop", "--json").out)
    assert not page["conflicted"] and CONFLICT not in page["body"]


def test_a_page_still_holding_the_conflict_stays_flagged(tmp_path: Path) -> None:
    ra, rb = _machines(tmp_path)
    line = "s = s.replace('Deploys run from CI.', 'Deploys run from {}.')"
    run_cli(*ra, "wiki", "edit", "deploy", "--project", "shop", env=_editor(tmp_path, "a", line.format("GitLab")))
    run_cli(*rb, "wiki", "edit", "deploy", "--project", "shop", env=_editor(tmp_path, "b", line.format("Jenkins")))
    run_cli(*ra, "sync")
    run_cli(*rb, "sync")
    # the flag taken out by hand, the section left in: still conflicted, and told so
    edited = run_cli(*rb, "wiki", "edit", "deploy", "--project", "shop",
                     env=_editor(tmp_path, "flag", "s = s.replace('conflicted: true\\n', '')"))
    assert edited.code == 0 and "still conflicted" in edited.err
    assert json.loads(run_cli(*rb, "wiki", "read", "deploy", "--project", "shop", "--json").out)["conflicted"]


def test_wiki_edit_refuses_a_broken_page_and_keeps_the_draft(tmp_path: Path) -> None:
    d = tmp_path / "mem"
    run_cli("init", str(d))
    r = ["--repo", str(d)]
    run_cli(*r, "wiki", "add", "--title", "Deploy", "--project", "shop", "Deploys run from CI.")
    head = git(d, "rev-parse", "HEAD")
    broken = run_cli(*r, "wiki", "edit", "deploy", "--project", "shop",
                     env=_editor(tmp_path, "bad", "s = s.replace('category: reference', 'category: gossip')"))
    assert broken.code != 0 and "gossip" in broken.err and "Traceback" not in broken.err
    assert git(d, "rev-parse", "HEAD") == head
    draft = broken.err.split("--draft ")[1].split(")")[0].strip()
    fixed = run_cli(*r, "wiki", "edit", "deploy", "--project", "shop", "--draft", draft,
                    env=_editor(tmp_path, "fix", "s = s.replace('category: gossip', 'category: decision')\n"
                                "s = s.replace('from CI.', 'from CI with key sk-ant-api03-' + 'A' * 40 + '.')"))
    assert fixed.code == 0, fixed.err
    assert not Path(draft).exists()
    page = json.loads(run_cli(*r, "wiki", "read", "deploy", "--project", "shop", "--json").out)
    assert page["category"] == "decision" and "sk-ant-api03" not in page["body"] and "REDACTED" in page["body"]
    assert "sk-ant-api03" not in git(d, "log", "-p")
    assert "## decision" in (d / "wiki" / "shop" / "index.md").read_text()  # the index follows the category
    # nothing changed, nothing committed; the generated pages are not edited by hand
    unchanged = run_cli(*r, "wiki", "edit", "deploy", "--project", "shop", env=_editor(tmp_path, "noop", "pass"))
    assert unchanged.code == 0 and unchanged.out.strip() == "no changes"
    index = run_cli(*r, "wiki", "edit", "index", "--project", "shop", env=_editor(tmp_path, "ix", "s += 'x'"))
    assert index.code != 0 and "generated" in index.err
    assert_clean(d)


def test_a_secret_typed_into_an_edited_pages_tags_is_redacted_and_the_page_reads(tmp_path: Path) -> None:
    """Tags, sources and fields gitmem does not know are redacted as written (tags before they are lower-cased);
    before, ``wiki edit`` committed a page its own redaction had broken, then failed reading it back."""
    d = tmp_path / "mem"
    run_cli("init", str(d))
    r = ["--repo", str(d)]
    run_cli(*r, "wiki", "add", "--title", "Ed page", "--project", "shop", "body", "--tags", "ops")
    key = "AKIA" + "IOSFODNN7EXAMPLE"
    slack = "xoxb-123456789012-1234567890123-" + "EditTagAbCdEfGhIjKlMn"
    edited = run_cli(*r, "wiki", "edit", "ed-page", "--project", "shop", env=_editor(
        tmp_path, "tag", f"s = s.replace('- ops', '- ops\\n- {slack}\\n- {key}').replace('---\\n', "
                         f"'---\\nowner_token: {slack}\\n', 1)"))
    assert edited.code == 0, edited.err
    page = json.loads(run_cli(*r, "wiki", "read", "ed-page", "--project", "shop", "--json").out)
    assert page["tags"] == ["ops", "[REDACTED:slack-token]", "[REDACTED:aws-access-key]"]
    history = git(d, "log", "-p", "--all")
    assert slack[5:] not in history and key[4:] not in history and key[4:].lower() not in history
    assert "wiki: edit" in git(d, "log", "-1", "--format=%s")


def test_an_edit_that_lost_the_frontmatter_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    """Memory edit refuses a draft without frontmatter; wiki edit took it, reset the title to the page name, dropped
    the tags and reset ``created``, and exited 0."""
    d = tmp_path / "mem"
    run_cli("init", str(d))
    r = ["--repo", str(d)]
    run_cli(*r, "wiki", "add", "--title", "Deploy Runbook", "--project", "shop", "Deploys run from CI.",
            "--tags", "ops")
    head = git(d, "rev-parse", "HEAD")
    cut = run_cli(*r, "wiki", "edit", "deploy-runbook", "--project", "shop",
                  env=_editor(tmp_path, "cut", "s = s.split('---', 2)[2].lstrip()"))
    assert cut.code != 0 and "no frontmatter" in cut.err and "Traceback" not in cut.err
    assert git(d, "rev-parse", "HEAD") == head
    page = json.loads(run_cli(*r, "wiki", "read", "deploy-runbook", "--project", "shop", "--json").out)
    assert (page["title"], page["tags"]) == ("Deploy Runbook", ["ops"])
