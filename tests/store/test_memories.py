"""The library verbs on a real memory repository, checked with the git CLI."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import gitmem
from gitmem.errors import NotFoundError, ValidationError
from gitmem.store.memories import MemoryRepo
from gitmem.text.records import replace
from tests.helpers import assert_clean, git


def test_remember_is_one_commit_with_trailers(repo: MemoryRepo) -> None:
    before = int(git(repo.path, "rev-list", "--count", "HEAD"))
    memory = repo.remember("Use PostgreSQL, not MySQL", category="decision", importance=4, tags="db",
                           project="shop", why="JSON queries are faster")
    assert int(git(repo.path, "rev-list", "--count", "HEAD")) == before + 1
    message = git(repo.path, "log", "-1", "--format=%B")
    assert message.startswith("remember: Use PostgreSQL, not MySQL")
    assert "Gitmem-Op: add" in message and f"Gitmem-Id: {memory.id}" in message
    assert git(repo.path, "show", f"HEAD:{memory.path}").count("**Why:** JSON queries are faster") == 1
    assert repo.get(memory.id) == memory
    assert_clean(repo.path)


def test_the_library_refuses_what_the_other_surfaces_refuse(repo: MemoryRepo) -> None:
    """remember() stored a global memory dropping the project it was given, a memory of project "../../evil", and
    raised TypeError naming make_memory for a misspelt field; search() took k=0 and raised TypeError for a bad
    filter."""
    head = git(repo.path, "rev-parse", "HEAD")
    for fields, says in (({"scope": "global", "project": "shop"}, "contradict each other"),
                         ({"project": "../../evil"}, "path separator"),
                         ({"colour": "red"}, "unknown field(s) colour")):
        with pytest.raises(ValidationError, match=re.escape(says)):
            repo.remember("a rule", **fields)
    assert git(repo.path, "rev-parse", "HEAD") == head
    api = gitmem.open(repo.path)
    api.remember("Use PostgreSQL for orders", scope="global")
    for k in (0, -1, "5", True):
        with pytest.raises(ValidationError, match="not a positive whole number"):
            api.search("postgresql", k=k, mode="bm25")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="unknown filter"):
        api.search("postgresql", colour="red")
    assert [h.memory.text for h in api.search("postgresql", k=1, mode="bm25")] == ["Use PostgreSQL for orders"]


def test_list_filters(repo: MemoryRepo) -> None:
    a = repo.remember("tabs over spaces", category="preference", tags="style")
    b = repo.remember("deploys need approval", category="constraint", project="shop", type="project")
    c = repo.remember("reference docs at /docs", type="reference", tags="style,docs")
    assert {m.id for m in repo.list()} == {a.id, b.id, c.id}
    assert [m.id for m in repo.list(category="constraint")] == [b.id]
    assert {m.id for m in repo.list(tag="style")} == {a.id, c.id}
    assert [m.id for m in repo.list(project="shop")] == [b.id]
    assert [m.id for m in repo.list(type="reference")] == [c.id]
    with pytest.raises(ValidationError, match="use one of"):
        repo.list(category="nope")


def test_forget_restore_and_purge_are_commits(repo: MemoryRepo) -> None:
    memory = repo.remember("the API is at v1")
    repo.forget(memory.id, "v2 shipped")
    assert repo.get(memory.id).deprecated and repo.get(memory.id).deprecated_reason == "v2 shipped"
    assert memory.id not in {m.id for m in repo.list()}
    assert memory.id in {m.id for m in repo.list(deprecated=True)}
    assert "Gitmem-Op: deprecate" in git(repo.path, "log", "-1", "--format=%B")
    repo.restore(memory.id)
    assert not repo.get(memory.id).deprecated
    repo.forget(memory.id, "really gone", purge=True)
    assert not (repo.path / memory.path).exists()
    with pytest.raises(NotFoundError):
        repo.get(memory.id)
    restored = repo.restore(memory.id)
    assert restored.text == "the API is at v1" and (repo.path / memory.path).exists()
    ops = [e.op for e in repo.log(memory.id)]
    assert ops == ["restore", "purge", "restore", "deprecate", "add"]
    assert_clean(repo.path)


def test_forget_needs_a_reason_and_a_known_id(repo: MemoryRepo) -> None:
    memory = repo.remember("x")
    with pytest.raises(ValidationError, match="reason is required"):
        repo.forget(memory.id, "  ")
    with pytest.raises(NotFoundError, match="no memory with id 'nope'"):
        repo.forget("nope", "why")


def test_log_filters_by_op_and_source(repo: MemoryRepo) -> None:
    repo.remember("from the cli")
    repo.import_records([{"text": "imported one", "source": "session_7"}], origin="a.jsonl")
    assert [e.op for e in repo.log(op="ingest")] == ["ingest"]
    assert [e.source for e in repo.log(source="import")] == ["import:a.jsonl"]
    assert len(repo.log(source="cli")) == 2  # init + remember


def test_import_keeps_ids_dates_sources_in_one_commit(repo: MemoryRepo) -> None:
    records = [
        {"id": "D1:3", "text": "Caroline went to the LGBTQ support group", "created": "2023-05-08T13:56:00",
         "source": "session_1", "tags": ["conv"]},
        {"id": "D1:4", "text": "Melanie paints sunsets", "importance": 2, "category": "background"},
    ]
    before = int(git(repo.path, "rev-list", "--count", "HEAD"))
    result = repo.import_records(records)
    assert (result.added, result.updated) == (2, 0)
    assert int(git(repo.path, "rev-list", "--count", "HEAD")) == before + 1
    first = repo.get("D1:3")
    assert first.created.year == 2023 and first.source == "import" and first.source_ref == "session_1"
    assert repo.import_records(records).commit == ""  # same content again: nothing to commit
    assert_clean(repo.path)


def test_import_refuses_everything_when_one_record_is_bad(repo: MemoryRepo) -> None:
    before = git(repo.path, "rev-parse", "HEAD")
    with pytest.raises(ValidationError, match="record 2: importance 9"):
        repo.import_records([{"text": "fine"}, {"text": "bad", "importance": 9}])
    with pytest.raises(ValidationError, match="record 1: unknown field"):
        repo.import_records([{"text": "fine", "importnce": 3}])
    assert git(repo.path, "rev-parse", "HEAD") == before
    assert_clean(repo.path)


def test_export_then_import_into_another_repo(repo: MemoryRepo, tmp_path: Path) -> None:
    repo.remember("one", tags="a")
    gone = repo.remember("two", project="p")
    repo.forget(gone.id, "obsolete")
    records = [json.loads(json.dumps(r)) for r in repo.export()]
    other = gitmem.init(tmp_path / "other")
    other.import_records(records)
    assert {(m.id, m.text, m.deprecated) for m in other.list(deprecated=True)} == {
        (m.id, m.text, m.deprecated) for m in repo.list(deprecated=True)}


def test_broken_file_is_reported_and_others_still_work(repo: MemoryRepo) -> None:
    good = repo.remember("still readable")
    broken = repo.path / "memories" / "global" / "broken.md"
    broken.write_text("---\nid: [oops\n---\ntext\n")
    git(repo.path, "add", ".")
    git(repo.path, "commit", "-qm", "hand edit")
    assert [m.id for m in repo.list()] == [good.id]
    assert "memories/global/broken.md" in str(repo.warnings[0])
    problems = [i for i in repo.doctor() if i.level == "error"]
    assert [p.path for p in problems] == ["memories/global/broken.md"]
    assert "broken YAML" in problems[0].message


def test_secrets_never_reach_git(repo: MemoryRepo) -> None:
    aws = "AKIA" + "ABCDEFGHIJKLMNOP"
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    key = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----"
    memory = repo.remember(f"deploy creds {aws} and {token}\n{key}", why=f"token {token}")
    assert repo.last_redaction
    history = git(repo.path, "log", "-p", "--all")
    for secret in (aws, token, "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC"):
        assert secret not in history
    assert "[REDACTED:" in repo.get(memory.id).text


def test_forget_and_restore_of_a_file_in_the_wrong_folder_leave_one_file(repo: MemoryRepo) -> None:
    """A memory file put in another project's folder by hand: forget wrote a deprecated copy where the file
    belongs and left the original active, so list and show disagreed and doctor saw a duplicate id."""
    memory = repo.remember("Cache is Redis 7", project="acme")
    wrong = "memories/global/" + memory.path.rsplit("/", 1)[1]
    git(repo.path, "mv", memory.path, wrong)
    git(repo.path, "commit", "-q", "-m", "by hand")
    repo.forget(memory.id, "we moved to memcached")
    assert _memory_files(repo) == [memory.path]
    assert repo.get(memory.id).deprecated and memory.id not in [m.id for m in repo.list()]
    restored = repo.restore(memory.id)
    assert not restored.deprecated and [m.id for m in repo.list()] == [memory.id]
    # the same for purge: the file that is there goes, wherever it was put
    git(repo.path, "mv", memory.path, wrong)
    git(repo.path, "commit", "-q", "-m", "by hand again")
    repo.forget(memory.id, "gone", purge=True)
    assert _memory_files(repo) == []
    assert repo.restore(memory.id).id == memory.id and _memory_files(repo) == [memory.path]
    assert_clean(repo.path)


def _memory_files(repo: MemoryRepo) -> list[str]:
    return sorted(p for p in git(repo.path, "ls-files", "memories").split() if p.endswith(".md"))


def test_the_audit_trail_of_a_memory_follows_it_through_moves(repo: MemoryRepo) -> None:
    """``log ID`` read the history of the file's current path only: after a move, everything before it was gone."""
    memory = repo.remember("Cache is Redis 7", scope="global")
    repo.save(replace(repo.get(memory.id), importance=4))
    repo.move(memory.id, "infra")  # type: ignore[attr-defined]
    repo.save(replace(repo.get(memory.id), importance=5))
    repo.move(memory.id, "")  # type: ignore[attr-defined]
    assert [e.subject for e in repo.log(memory.id)] == [
        "move: Cache is Redis 7 to global", "edit: Cache is Redis 7", "move: Cache is Redis 7 to project infra",
        "edit: Cache is Redis 7", "remember: Cache is Redis 7"]
    other = repo.remember("Queue is SQS", scope="global")
    assert [e.subject for e in repo.log(other.id)] == [repo.log(limit=1)[0].subject]


def test_doctor_says_what_a_misnamed_or_misplaced_memory_file_costs(repo: MemoryRepo) -> None:
    """A file whose name is not its id's cannot be opened by that id: doctor said "gitmem finds it by file name"."""
    (repo.path / "memories" / "global" / "upper-Case.md").write_text("---\nid: upper-Case\n---\nzebra one\n")
    (repo.path / "memories" / "shop").mkdir()
    (repo.path / "memories" / "shop" / "moved.md").write_text(
        "---\nid: moved\nproject: infra\nscope: project\n---\nx\n")
    git(repo.path, "add", "-A")
    git(repo.path, "commit", "-q", "-m", "by hand")
    found = {i.path: i.message for i in repo.doctor() if i.level == "warning"}
    misnamed = found["memories/global/upper-Case.md"]
    assert "cannot open it by that id" in misnamed and "finds it by file name" not in misnamed
    assert "mv memories/global/upper-Case.md memories/global/upper-case-" in misnamed
    assert "belongs in memories/infra/moved.md" in found["memories/shop/moved.md"]
    assert repo.get("moved").project == "infra"  # found by its file name meanwhile
