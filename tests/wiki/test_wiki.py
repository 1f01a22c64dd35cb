"""The project wiki: ingest and its merging, keyword search in English and Chinese, lint, path safety, concurrent
writers, the sync merge of pages, review, and what the session hooks do with the wiki."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from gitmem.errors import LockTimeoutError, ValidationError
from gitmem.store import document as docs
from gitmem.store import wikipage as wp
from gitmem.store.memories import MemoryRepo
from gitmem.sync.merge import merge_file
from gitmem.wiki.lifecycle import capture_session_log, overview
from gitmem.wiki.store import Wiki, index_entries
from tests.helpers import assert_clean, code_repo, context_of, git, hook, hook_env, payload, run_cli

PROJECT = "github.com-acme-shop"


def _sections(body: str) -> int:
    return sum(1 for line in body.splitlines() if line.startswith("## "))


def test_ingesting_the_same_title_twice_gives_one_page_with_two_sections(repo_path: Path) -> None:
    env = {"GITMEM_REPO": str(repo_path)}
    first = run_cli("wiki", "ingest", "--title", "Deploy pipeline", "--category", "architecture", "--tags", "ci",
                    "--project", "shop", "--json", "Builds run on every push.", env=env)
    assert first.code == 0, first.err
    data = json.loads(first.out)
    assert data["page"] == "deploy-pipeline" and data["path"] == "wiki/shop/deploy-pipeline.md"
    assert data["merged"] is False and len(data["commit"]) == 40
    second = run_cli("wiki", "ingest", "--title", "deploy  PIPELINE", "--project", "shop", "--json", "-",
                     stdin="Deploys go through staging first.", env=env)
    assert json.loads(second.out)["merged"] is True
    assert sorted(p.name for p in (repo_path / "wiki" / "shop").iterdir()) == ["deploy-pipeline.md", "index.md"]
    page = Wiki(open_store(repo_path), "shop").read("deploy-pipeline")
    assert _sections(page.body) == 2
    assert "Builds run on every push." in page.body and "staging first" in page.body
    assert page.category == "architecture" and page.tags == ("ci",)
    assert "wiki: update Deploy pipeline" in git(repo_path, "log", "-1", "--format=%s")
    log = json.loads(run_cli("wiki", "log", "deploy-pipeline", "--project", "shop", "--json", env=env).out)
    assert [e["op"] for e in log] == ["update", "ingest"]
    assert_clean(repo_path)


def open_store(path: Path) -> MemoryRepo:
    from gitmem.config import Config

    return MemoryRepo(Config(repo=path))


def test_ingest_dedups_links_redacts_and_indexes(repo: MemoryRepo) -> None:
    book = Wiki(repo, "shop")
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    result = book.ingest("Tokens", f"The CI token was {token}. See [[Deploy Pipeline]] and [[ci-setup|the CI]].")
    assert result.redacted == ("github-token",)
    page = book.read("tokens")
    assert token not in (repo.path / result.path).read_text() and page.links == ("deploy-pipeline", "ci-setup")
    again = book.ingest("Tokens", "See [[Deploy Pipeline]] and [[ci-setup|the CI]].")  # already there word for word
    assert again.commit == "" and again.merged
    index = (repo.path / "wiki" / "shop" / "index.md").read_text()
    assert "[[tokens]] Tokens" in index and "generated: true" in index


def test_a_chinese_query_finds_the_chinese_page_among_english_ones(repo: MemoryRepo) -> None:
    book = Wiki(repo, "shop")
    for i, topic in enumerate(["database migrations", "release checklist", "payment retries", "cache warming"]):
        book.add(f"Page {i} {topic}", f"Notes about {topic}: run the job nightly and watch the dashboard.")
    book.add("部署注意事项", "部署之前必须先运行数据库迁移，然后再重启服务。", category="convention")
    hits = book.query("数据库迁移")
    assert hits and hits[0].name == "部署注意事项"
    assert "数据库迁移" in hits[0].snippet and hits[0].score > 0
    english = book.query("payment retry")
    assert english[0].name == "page-2-payment-retries"
    assert book.query("nightly", category="convention") == []
    assert [h.name for h in book.query("部署", category="convention")] == ["部署注意事项"]
    book.ingest("Page 3 cache warming", "迁移缓存的时候要先清空。")  # a changed page is re-indexed
    assert "page-3-cache-warming" in [h.name for h in book.query("清空缓存")]


def test_query_cli_contract(repo_path: Path) -> None:
    env = {"GITMEM_REPO": str(repo_path)}
    run_cli("wiki", "add", "--title", "Ports", "--project", "shop", "The API listens on 8080.", env=env)
    out = run_cli("wiki", "query", "api port", "--project", "shop", "--json", env=env)
    hits = json.loads(out.out)
    assert [h["page"] for h in hits] == ["ports"]
    assert {"page", "title", "score", "snippet"} <= set(hits[0])


RUNBOOK = [
    ("Overview", "The payments service accepts card charges from the storefront and settles them with the acquiring "
     "bank once a day. It owns the ledger tables and exposes a small HTTP interface to the checkout pages. Every "
     "charge carries an idempotency key chosen by the storefront, so a charge sent twice is booked once."),
    ("Architecture", "A stateless Go process sits behind the load balancer, three replicas in each region. The ledger "
     "lives in Postgres with one primary and two streaming standbys; the outbox table feeds Kafka, and the "
     "notification worker reads the topic to send receipts by email."),
    ("Deployment", "Releases go out through the blue-green pipeline on Tuesdays and Thursdays. The canary takes five "
     "percent of traffic for twenty minutes, and the pipeline promotes it when the error budget holds. Schema "
     "changes ship one release ahead of the code that needs them."),
    ("Monitoring", "Dashboards show authorisation latency, the decline rate by card network and the depth of the "
     "outbox. An alert pages the on-call engineer when the decline rate doubles within ten minutes or the outbox "
     "stops draining for longer than five minutes."),
    ("Refund reconciliation", "Refunds that fail at the bank are retried by the reconciliation job at 02:30 UTC "
     "every night. After three failed nights the refund moves to the manual review queue in the finance tool, "
     "where an accountant settles it by hand and notes the reason."),
    ("Contacts", "The team's channel is #payments-core; escalations go to the engineering manager on duty. The "
     "acquiring bank's support desk answers within four hours on working days, and its account manager joins the "
     "quarterly review of chargebacks and fees."),
]


RUNBOOK_ZH = [
    ("概述", "支付服务接收商城的刷卡请求，每天与收单银行结算一次。"),
    ("架构", "无状态进程部署在负载均衡之后，每个区域三个副本。"),
    ("发布", "每周二和周四通过蓝绿流水线发布，金丝雀先承接百分之五的流量。"),
    ("监控", "仪表盘展示授权延迟和拒付率，异常时通知值班工程师。"),
    ("退款对账", "银行退款失败后，对账任务每晚两点半重试；连续三晚失败则转入人工审核队列。"),
    ("联系人", "团队频道是支付核心组，升级找值班经理。"),
]


def test_a_long_page_is_found_and_shown_by_the_section_that_answers(repo_path: Path) -> None:
    env = {"GITMEM_REPO": str(repo_path)}
    body = "\n\n".join(wp.section(text, heading) for heading, text in RUNBOOK)
    assert run_cli("wiki", "add", "--title", "Payments runbook", "--project", "shop", body, env=env).code == 0
    run_cli("wiki", "add", "--title", "Refund policy", "--project", "shop",
            "Customers may ask for a refund within thirty days of the purchase.", env=env)
    out = run_cli("wiki", "query", "when are failed refunds retried by the bank job?", "--project", "shop", "--json",
                  env=env)
    hits = json.loads(out.out)
    assert hits[0]["page"] == "payments-runbook" and hits[0]["section"] == "Refund reconciliation"
    assert "02:30 UTC" in hits[0]["snippet"] and "storefront" not in hits[0]["snippet"]
    assert hits[0]["snippet"].startswith("Refund reconciliation — ") and hits[0]["chunk"] >= 5
    assert [h["page"] for h in hits].count("payments-runbook") == 1  # one hit per page, however many chunks match
    # a Chinese page: the answer in its fifth section too
    zh = "\n\n".join(wp.section(text * 3, heading) for heading, text in RUNBOOK_ZH)
    Wiki(open_store(repo_path), "shop").add("支付手册", zh)
    hit = Wiki(open_store(repo_path), "shop").query("退款失败什么时候重试？")[0]
    assert hit.name == "支付手册" and hit.section == "退款对账" and "两点半重试" in hit.snippet


def test_an_edited_long_page_is_searched_by_its_new_sections_only(repo: MemoryRepo) -> None:
    book = Wiki(repo, "shop")
    body = "\n\n".join(wp.section(text, heading) for heading, text in RUNBOOK)
    book.add("Payments runbook", body)
    assert book.query("reconciliation job retried")[0].section == "Refund reconciliation"
    by_title = book.query("runbook")[0]  # a word of the title only: no section matched
    assert (by_title.section, by_title.chunk) == ("", 0) and by_title.snippet.startswith("Payments runbook.")
    edited = body.replace("Refunds that fail at the bank are retried by the reconciliation job at 02:30 UTC every "
                          "night.", "Failed refunds are now handled by the bank's own portal.")
    book.add("Card limits", "Cards are limited to ten charges a minute.")
    (book.dir / "payments-runbook.md").write_text(wp.dumps(replace(book.read("payments-runbook"), body=edited)))
    git(repo.path, "commit", "-qam", "edit the runbook by hand")
    hits = book.query("reconciliation job 02:30 retried")
    assert [h.name for h in hits] == ["payments-runbook"]  # the old chunks went with the old version
    assert "02:30" not in hits[0].snippet and "portal" in book.query("bank portal")[0].snippet


def test_an_index_of_the_previous_layout_is_rebuilt_on_the_next_query(repo_path: Path) -> None:
    import tantivy

    from gitmem.wiki.search import layout

    book = Wiki(open_store(repo_path), "shop")
    book.add("Payments runbook", "\n\n".join(wp.section(text, heading) for heading, text in RUNBOOK))
    assert book.query("refunds")
    cache = repo_path / ".cache" / "wiki" / "shop"
    for _ in range(40):  # the stamp is written once the folder's last change is older than a timestamp tick
        if (cache / "stamp").exists():
            break
        time.sleep(0.05)
        book.query("refunds")
    # what the previous layout (format 1: one document a page, no chunks) left behind: its schema, its state
    # listing the page as indexed, and its freshness stamp
    shutil.rmtree(cache / "tantivy")
    (cache / "tantivy").mkdir()
    old = tantivy.SchemaBuilder()
    for name in ("key", "category", "tag", "name", "tags", "body"):
        old.add_text_field(name, stored=name == "key")
    old.add_bytes_field("doc", stored=True, indexed=False)
    tantivy.Index(old.build(), path=str(cache / "tantivy"), reuse=False)
    state = json.loads((cache / "state.json").read_text())
    (cache / "state.json").write_text(json.dumps({**state, "format": 1}))
    (cache / "stamp").write_text((cache / "stamp").read_text().removeprefix(f"format:{layout()} "))
    out = run_cli("wiki", "query", "failed refunds retried", "--project", "shop", "--json",
                  env={"GITMEM_REPO": str(repo_path)})
    assert out.code == 0, out.err
    assert json.loads(out.out)[0]["section"] == "Refund reconciliation"
    assert json.loads((cache / "state.json").read_text())["format"] == layout()


def _plant(book: Wiki, name: str, title: str, body: str, conflicted: bool = False, **fields: object) -> None:
    page = replace(wp.make_page(name, title, body, **fields), conflicted=conflicted)  # type: ignore[arg-type]
    (book.dir).mkdir(parents=True, exist_ok=True)
    (book.dir / f"{name}.md").write_text(wp.dumps(page))


def test_lint_reports_each_planted_defect_exactly_once_and_fix_removes_nothing(repo: MemoryRepo) -> None:
    book = Wiki(repo, "shop")
    old = docs.utcnow() - timedelta(days=45)
    _plant(book, "hub", "Hub", "Start here: [[stale-page]], [[big]], [[unsure]], [[ci]], [[runbook]], [[hub]], "
           "[[synced]].")
    _plant(book, "lonely", "Lonely", "Nobody links here. Back to [[hub]].")                    # orphan
    _plant(book, "stale-page", "Stale", "Old news. [[hub]]", created=old, updated=old)           # stale
    _plant(book, "runbook", "Runbook", "Steps are in [[missing-page]].")                        # broken-link
    _plant(book, "big", "Big", "word " * 2500)                                                   # oversized
    _plant(book, "unsure", "Unsure", "Maybe true.", confidence="low")                           # low-confidence
    _plant(book, "synced", "Synced", f"Ours. [[hub]]\n\n## {wp.CONFLICT_HEADING}\n\nTheirs.", conflicted=True)
    _plant(book, "ci", "CI", "- **Test command**: `pytest -q`\n- Note: run it often")          # contradiction...
    _plant(book, "session-2026-11-30-abc", "Session", "Test command: `make test`\n\nNote: other",  # ...with this
           category="session-log")
    before = {p.name: p.read_bytes() for p in book.dir.glob("*.md")}
    findings = book.lint()
    got = sorted((f.kind, f.page) for f in findings)
    assert got == sorted([("orphan", "lonely"), ("stale", "stale-page"), ("broken-link", "runbook"),
                          ("oversized", "big"), ("low-confidence", "unsure"), ("contradiction", "ci"),
                          ("conflicted", "synced")])
    contradiction = next(f for f in findings if f.kind == "contradiction")
    assert "pytest -q" in contradiction.detail and "make test" in contradiction.detail

    env = {"GITMEM_REPO": str(repo.path)}
    git(repo.path, "add", "-A")
    git(repo.path, "commit", "-qm", "hand-written pages")
    fixed = run_cli("wiki", "lint", "--fix", "--project", "shop", "--json", env=env)
    assert fixed.code == 0
    assert sorted((f["kind"], f["page"]) for f in json.loads(fixed.out)) == got
    assert {p.name: p.read_bytes() for p in book.dir.glob("*.md") if p.name != "index.md"} == before
    index = (book.dir / "index.md").read_text()
    assert all(f"[[{name[:-3]}]]" in index for name in before)
    assert_clean(repo.path)
    clean = run_cli("wiki", "lint", "--project", "empty", "--json", env=env)
    assert clean.code == 0 and json.loads(clean.out) == []


BAD_NAMES = ["../escape", "a/b", "/etc/passwd", "..", "CON", "nul.md", "a\\b", "~root", "x\x00y"]


def test_path_traversal_through_the_cli_is_refused_with_one_line(repo_path: Path, tmp_path: Path) -> None:
    env = {"GITMEM_REPO": str(repo_path)}
    outside = sorted(p.name for p in tmp_path.iterdir())
    head = git(repo_path, "rev-parse", "HEAD")
    for args in (["wiki", "add", "--title", "ok", "--project", "../../escape", "text"],
                 ["wiki", "read", "../../etc/passwd", "--project", "shop"],
                 ["wiki", "delete", "CON", "--reason", "x", "--project", "shop"]):
        result = run_cli(*args, env=env)
        assert result.code != 0 and "error:" in result.err and "Traceback" not in result.err
        assert len(result.err.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == outside
    assert git(repo_path, "rev-parse", "HEAD") == head


def test_every_wiki_name_refuses_traversal_and_writes_nothing(repo: MemoryRepo, tmp_path: Path) -> None:
    book = Wiki(repo, "shop")
    book.add("Real", "a page")
    head = git(repo.path, "rev-parse", "HEAD")
    outside = sorted(p.name for p in tmp_path.iterdir())
    for name in BAD_NAMES:
        calls = [lambda n=name: Wiki(repo, n), lambda n=name: book.read(n), lambda n=name: book.delete(n, "x"),
                 lambda n=name: book.add("t", "x", name=n), lambda n=name: book.ingest("t", "x", name=n),
                 lambda n=name: book.log(n)]
        for call in calls:
            with pytest.raises(ValidationError):
                call()
    assert sorted(p.name for p in tmp_path.iterdir()) == outside
    assert git(repo.path, "rev-parse", "HEAD") == head


def test_nul_and_reserved_titles_are_refused(repo: MemoryRepo) -> None:
    book = Wiki(repo, "shop")
    for title in ("bad\x00name", "con", "index", "!!!"):
        with pytest.raises(ValidationError):
            book.ingest(title, "text")
    with pytest.raises(ValidationError):
        Wiki(repo, "shop\x00x")


def test_a_title_with_a_slash_names_its_page_and_a_secret_in_a_title_never_names_a_file(repo_path: Path) -> None:
    """A title is text: "CI/CD pipeline" becomes the page ci-cd-pipeline. A token in a title is redacted before the
    page name is made from it: slugged ("ghp-1a2b…"), it would no longer look like a secret to the commit's gate."""
    env = {"GITMEM_REPO": str(repo_path)}
    assert run_cli("wiki", "ingest", "--title", "CI/CD pipeline", "--project", "shop", "Runs on every push",
                   env=env).code == 0
    assert (repo_path / "wiki" / "shop" / "ci-cd-pipeline.md").is_file()
    assert "Runs on every push" in run_cli("wiki", "read", "ci-cd-pipeline", "--project", "shop", env=env).out
    token = "ghp_" + "1234567890abcdefghijklmnopqrstuvwxyzAB"
    result = run_cli("wiki", "ingest", "--title", f"Creds {token}", "--project", "shop", "rotate monthly", env=env)
    assert result.code == 0, result.err
    history = git(repo_path, "log", "-p", "--stat", "--format=%B", "--all").lower()
    assert token[4:].lower() not in history and token[4:].lower() not in "".join(
        p.name for p in (repo_path / "wiki").rglob("*"))
    writer = run_cli("writer", "world", "add", "Keys", "--work", "AKIAIOSFODNN7EXAMPLE", "--notes", "x", env=env)
    assert writer.code == 0, writer.err
    assert "akiaiosfodnn7example" not in git(repo_path, "log", "--stat", "--format=%B", "--all").lower()


SLACK = "xoxb-123456789012-1234567890123-" + "AbCdEfGhIjKlMnOpQrSt"


def test_a_secret_in_a_tag_or_a_source_is_redacted_and_the_page_still_reads(repo_path: Path) -> None:
    """Tags and sources are redacted as the text is, before the page is written: left to the commit's redaction of
    the written file, ``- [REDACTED:slack-token]`` was a YAML list, and the page (an existing one too) could no
    longer be read, searched, added to, edited or deleted by gitmem."""
    r = ["--repo", str(repo_path)]
    assert run_cli(*r, "wiki", "ingest", "--title", "Runbook", "--project", "shop",
                   "Step 1: page the on-call. Step 2: check dashboards.", "--tags", "ops").code == 0
    added = run_cli(*r, "wiki", "ingest", "--title", "Runbook", "--project", "shop", "Step 3: rotate the bot token.",
                    "--tags", SLACK, "--source", f"{SLACK},ok", "--json")
    assert added.code == 0, added.err
    assert json.loads(added.out)["redacted"] == ["slack-token"]
    page = json.loads(run_cli(*r, "wiki", "read", "runbook", "--project", "shop", "--json").out)
    assert page["tags"] == ["ops", "[REDACTED:slack-token]"] and page["sources"] == ["[REDACTED:slack-token]", "ok"]
    assert "Step 3" in page["body"] and "dashboards" in run_cli(*r, "wiki", "query", "dashboards on-call", "--project",
                                                                "shop").out
    fresh = run_cli(*r, "wiki", "add", "--title", "Bot", "--project", "shop", "the bot", "--tags", f"bot,{SLACK}")
    assert fresh.code == 0, fresh.err
    assert run_cli(*r, "wiki", "read", "bot", "--project", "shop").code == 0
    assert SLACK[5:] not in git(repo_path, "log", "-p", "--all") and not run_cli(*r, "wiki", "lint", "--project",
                                                                                   "shop").err
    assert_clean(repo_path)


def test_a_page_the_commits_redaction_would_break_is_refused_not_committed(repo: MemoryRepo) -> None:
    """The last check before a page's commit: a secret left where ``[REDACTED:kind]`` breaks the YAML (a tag
    written as it came) is refused; one left in the body, where the commit's redaction keeps the page readable, is
    not."""
    book = Wiki(repo, "shop")
    page = wp.make_page("bot", "Bot", "body", tags=["ops"])
    broken = wp.dumps(page).replace("- ops", f"- ops\n- {SLACK}").encode()
    with pytest.raises(ValidationError, match=r"slack-token.*break the page"):
        book._reads_back("wiki/shop/bot.md", broken)
    book._reads_back("wiki/shop/bot.md", wp.dumps(replace(page, body=f"token {SLACK}")).encode())


def test_an_empty_query_or_page_text_is_an_error_that_fits_the_command(repo_path: Path) -> None:
    env = {"GITMEM_REPO": str(repo_path)}
    empty = run_cli("wiki", "ingest", "--title", "x", "--project", "shop", "", env=env)
    assert empty.code != 0 and "the page text is empty" in empty.err and "gitmem remember" not in empty.err
    for args in (["wiki", "query", "", "--project", "shop"], ["writer", "search", " ", "--work", "w"]):
        result = run_cli(*args, env=env)
        assert result.code != 0 and "the query is empty" in result.err, result.err


def test_concurrent_ingests_of_one_title_end_in_one_page_with_both_sections(repo_path: Path) -> None:
    script = ("import sys; from pathlib import Path; from gitmem.config import Config; "
              "from gitmem.store.memories import MemoryRepo; from gitmem.wiki.store import Wiki; "
              "Wiki(MemoryRepo(Config(repo=Path(sys.argv[1]))), 'shop').ingest('Race', sys.argv[2])")
    procs = [subprocess.Popen([sys.executable, "-c", script, str(repo_path), f"text from writer {i}"])
             for i in range(2)]
    assert [p.wait(timeout=60) for p in procs] == [0, 0]
    page = Wiki(open_store(repo_path), "shop").read("race")
    assert _sections(page.body) == 2
    assert "text from writer 0" in page.body and "text from writer 1" in page.body
    assert sorted(p.name for p in (repo_path / "wiki" / "shop").iterdir()) == ["index.md", "race.md"]
    assert_clean(repo_path)


def test_wiki_pages_merge_field_by_field_and_a_true_conflict_keeps_both() -> None:
    path = "wiki/shop/deploy.md"
    base = wp.make_page("deploy", "Deploy", "line one\nline two\nline three", tags=["ci"])
    ours = replace(base, body="line one (ours)\nline two\nline three", tags=("ci", "ours"),
                   updated=base.updated + timedelta(minutes=1))
    theirs = replace(base, body="line one\nline two\nline three (theirs)", tags=("theirs",), confidence="high",
                     updated=base.updated + timedelta(minutes=2))
    merged = merge_file(path, *(wp.dumps(p).encode() for p in (base, ours, theirs)))
    page = wp.loads(merged.changes[path].decode(), "deploy")  # type: ignore[union-attr]
    assert page.body == "line one (ours)\nline two\nline three (theirs)"
    assert page.tags == ("ours", "theirs") and page.confidence == "high" and not merged.conflicts
    clash = replace(theirs, body="line one (theirs)\nline two\nline three")
    merged = merge_file(path, *(wp.dumps(p).encode() for p in (base, ours, clash)))
    page = wp.loads(merged.changes[path].decode(), "deploy")  # type: ignore[union-attr]
    assert page.conflicted and "line one (ours)" in page.body and "line one (theirs)" in page.body
    assert merged.conflicts and list(merged.changes) == [path]


def test_sync_merges_pages_from_two_machines_and_review_lists_them(tmp_path: Path) -> None:
    from gitmem.store.layout import init_repo

    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    one, two = tmp_path / "one", tmp_path / "two"
    init_repo(one, remote=str(bare))
    run_cli("--repo", str(one), "wiki", "ingest", "--title", "Shared", "--project", "shop", "base text")
    assert run_cli("--repo", str(one), "sync").code == 0
    init_repo(two, remote=str(bare))
    run_cli("--repo", str(one), "wiki", "ingest", "--title", "Shared", "--project", "shop", "from one")
    run_cli("--repo", str(two), "wiki", "ingest", "--title", "Shared", "--project", "shop", "from two")
    assert run_cli("--repo", str(one), "sync").code == 0
    synced = run_cli("--repo", str(two), "sync")
    assert synced.code == 0, synced.err
    body = Wiki(open_store(two), "shop").read("shared").body
    assert "base text" in body and "from one" in body and "from two" in body
    review = run_cli("--repo", str(one), "review", "HEAD~1..HEAD")
    assert "### Wiki" in review.out and "**Shared** (`shop/shared`; reference): 1 section added" in review.out
    assert_clean(two)
    # round after round, each machine adding a section: every section once, nothing marked conflicted (the page
    # doubled at each sync: the other side's whole body, base included, under a "Conflicting version" heading)
    for n in range(3):
        for repo, side in ((one, "one"), (two, "two")):
            run_cli("--repo", str(repo), "wiki", "ingest", "--title", "Shared", "--project", "shop",
                    f"round {n} from {side}")
        for repo in (one, two, one):
            synced = run_cli("--repo", str(repo), "sync")
            assert synced.code == 0 and "conflict" not in synced.out + synced.err, synced.out + synced.err
    pages = [Wiki(open_store(repo), "shop").read("shared") for repo in (one, two)]
    assert pages[0].body == pages[1].body and not pages[0].conflicted
    for text in ("base text", "from one", "from two", *(f"round {n} from {s}" for n in range(3)
                                                        for s in ("one", "two"))):
        assert pages[0].body.splitlines().count(text) == 1, text
    # a page each machine alone added: both in the index after the merge (it took the newer side's index)
    for repo, name in ((one, "one"), (two, "two")):
        added = run_cli("--repo", str(repo), "wiki", "add", "--title", f"Only {name}", "--project", "shop",
                        f"made on {name}")
        assert added.code == 0, added.err
    for repo in (one, two, one):
        assert run_cli("--repo", str(repo), "sync").code == 0
    for repo in (one, two):
        listed = {entry.name for entry in index_entries(repo, "shop")}
        assert {"shared", "only-one", "only-two"} <= listed, listed
        assert_clean(repo)


def test_a_true_conflict_in_a_page_keeps_the_other_side_of_that_region_only() -> None:
    base = wp.make_page("deploy", "Deploy", "## Steps\n\nTag the release\n\n## Notes\n\nlong notes\n" * 3)
    ours = replace(base, body=base.body.replace("Tag the release", "Tag the release with vX.Y", 1),
                   updated=base.updated + timedelta(minutes=1))
    theirs = replace(base, body=base.body.replace("Tag the release", "Tag the release, then push tags", 1),
                     updated=base.updated + timedelta(minutes=2))
    merged = merge_file("wiki/shop/deploy.md", *(wp.dumps(p).encode() for p in (base, ours, theirs)))
    page = wp.loads(merged.changes["wiki/shop/deploy.md"].decode(), "deploy")  # type: ignore[union-attr]
    assert page.conflicted and merged.conflicts
    assert "Tag the release with vX.Y" in page.body and "Tag the release, then push tags" in page.body
    assert page.body.count("long notes") == 3  # the unchanged rest once, not the other side's whole body again


def test_session_end_writes_a_session_log_within_budget_even_without_an_index(repo_path: Path, tmp_path: Path
                                                                              ) -> None:
    code = code_repo(tmp_path)
    env = hook_env(repo_path)
    (repo_path / ".cache").mkdir(exist_ok=True)
    (repo_path / ".cache" / "index").write_text("not an index")  # a broken search index must not matter
    transcript = code / "t.jsonl"
    transcript.write_text(json.dumps({"type": "user", "message": {"role": "user", "content":
                                      "Fix the cart total. Always run pytest before committing."}}) + "\n")
    bash = {"tool_name": "Bash", "tool_input": {"command": "pytest -x"}, "tool_response": {"stdout": "3 passed"}}
    edit = {"tool_name": "Edit", "tool_input": {"file_path": str(code / "cart.py")}, "tool_response": {}}
    for call in (bash, edit):
        hook("post-tool-use", payload("PostToolUse", code, **call), env, cwd=code)
    started = time.monotonic()
    assert hook("session-end", payload("SessionEnd", code, reason="exit"), env, cwd=code).returncode == 0
    assert time.monotonic() - started < 5  # the hook's own deadline; the bench measures the real figure
    pages = list((repo_path / "wiki" / PROJECT).glob("session-*.md"))
    assert len(pages) == 1
    text = pages[0].read_text()
    for expected in ("category: session-log", "Fix the cart total", "`cart.py`", "`pytest -x`",
                     "Always run pytest before committing.", "2 tool calls, 0 failed", "session ended: exit"):
        assert expected in text
    start = context_of(hook("session-start", payload("SessionStart", code, "sess-2", source="startup"), env,
                            cwd=code).stdout)
    assert "## Project wiki: 1 page (session-log 1)" in start
    compact = json.loads(hook("pre-compact", payload("PreCompact", code, "sess-2", trigger="auto"), env,
                              cwd=code).stdout)["systemMessage"]
    assert "This project has a wiki of 1 page on session-log" in compact
    after = context_of(hook("session-start", payload("SessionStart", code, "sess-2", source="compact"), env,
                            cwd=code).stdout)
    assert "This project has a wiki of 1 page" in after and "gitmem wiki query" in after
    assert_clean(repo_path)


def test_session_log_gives_up_within_its_budget_when_the_repository_is_locked(repo: MemoryRepo) -> None:
    local = repo.path / "local"
    from gitmem.store import local as observe

    observe.append_observation(local, {"session": "s1", "phase": "post", "tool": "Bash",
                                       "input": '{"command":"make"}', "output": "ok", "project": "shop"})
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, sys, time; f = open(sys.argv[1], 'a'); "
                               "fcntl.flock(f, fcntl.LOCK_EX); print('held', flush=True); time.sleep(30)",
                               str(repo.git.git_dir / "gitmem.lock")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        started = time.monotonic()
        with pytest.raises(LockTimeoutError):
            capture_session_log(repo, session="s1", project="shop", local=local, budget=1.0)
        assert time.monotonic() - started < 2.0
    finally:
        holder.kill()
        holder.wait()
    assert capture_session_log(repo, session="s1", project="shop", local=local) == \
        f"session-{time.strftime('%Y-%m-%d', time.gmtime())}-s1"
    assert capture_session_log(repo, session="nothing-happened", project="shop", local=local) == ""


def test_overview_stays_short_and_names_relevant_pages(repo: MemoryRepo) -> None:
    book = Wiki(repo, "shop")
    for i in range(30):
        book.add(f"A rather long page title about subsystem number {i}", "text", category="architecture")
    book.add("Payment retries", "Retries back off exponentially.", category="debugging")
    text = overview(repo.path, "shop", "payment")
    assert len(text) <= 300 and "31 pages (architecture 30, debugging 1)" in text
    assert "Relevant: Payment retries" in text
    assert overview(repo.path, "no-wiki", "x") == ""


def test_a_session_start_without_a_wiki_never_loads_the_wiki_store(tmp_path: Path) -> None:
    """The overview of a repository with no wiki folder answers "" without importing the wiki's store (and its
    git layer); the folder it looks for is the wiki's own."""
    from gitmem.wiki import lifecycle

    assert lifecycle.WIKI_DIR == wp.WIKI_DIR
    code = ("import sys; from pathlib import Path; from gitmem.wiki.lifecycle import overview, breadcrumb; "
            f"assert overview(Path({str(tmp_path)!r}), 'shop', 'x') == breadcrumb(Path({str(tmp_path)!r}), 'shop') "
            "== ''; print('gitmem.wiki.store' in sys.modules, 'gitmem.git.store' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_environment_page_is_bridged_from_the_project_memory(repo: MemoryRepo) -> None:
    (repo.path / "projects").mkdir()
    (repo.path / "projects" / "shop.md").write_text(
        "---\nproject: \"shop\"\n---\n# Project memory: shop\n\n## Tech stack\n- Python 3.11\n\n"
        "## Commands\n- test: `pytest -q`\n\n## Notes\n- (none yet)\n")
    git(repo.path, "add", "-A")
    git(repo.path, "commit", "-qm", "project")
    book = Wiki(repo, "shop")
    book.ingest("Testing", "Test: `make test`")
    env = book.read("environment")
    assert env.generated and "Python 3.11" in env.body and "`pytest -q`" in env.body
    assert [(f.kind, f.page) for f in book.lint() if f.kind == "contradiction"] == [("contradiction", "testing")]
    assert "environment" not in [p.name for p in book.pages()]
    from gitmem.projects.memory import add_notes

    add_notes(repo, "shop", ["port 5173 (vite dev server)"])  # the project memory changes: the page follows
    assert "port 5173" in book.read("environment").body
    assert git(repo.path, "log", "-1", "--format=%s").strip() == "wiki: regenerate shop environment"
    assert_clean(repo.path)
