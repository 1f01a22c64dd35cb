"""The repository layer against the real git CLI: trees, index, atomicity, locks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from dulwich.objects import Blob, Tree
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitmem.errors import LockTimeoutError, RepoError
from gitmem.git.messages import format_message, parse_trailers
from gitmem.git.store import GitStore
from tests.helpers import assert_clean, git

AUTHOR = "Test User <test@example.com>"
names = st.text(alphabet="abcz-_.09中文", min_size=1, max_size=6).filter(lambda n: n not in (".", ".."))


def _reference_tree(files: dict[str, bytes]) -> bytes:
    """The tree id git itself computes for ``files`` (via a throwaway index-free build with dulwich Tree)."""
    from dulwich.object_store import MemoryObjectStore

    store = MemoryObjectStore()
    dirs: dict[tuple[str, ...], Tree] = {(): Tree()}
    for path in sorted(files):
        parts = tuple(path.split("/"))
        for depth in range(1, len(parts)):
            dirs.setdefault(parts[:depth], Tree())
    for prefix in sorted(dirs, key=len, reverse=True):
        tree = dirs[prefix]
        for path, content in files.items():
            parts = tuple(path.split("/"))
            if parts[:-1] == prefix:
                blob = Blob.from_string(content)
                tree.add(parts[-1].encode(), 0o100644, blob.id)
        for sub, subtree in dirs.items():
            if len(sub) == len(prefix) + 1 and sub[:-1] == prefix:
                tree.add(sub[-1].encode(), 0o040000, subtree.id)
        store.add_object(tree)
    return dirs[()].id


def _committed(factory: pytest.TempPathFactory, before: dict[tuple[str, str], bytes]) -> tuple[Path, GitStore,
                                                                                            dict[str, bytes]]:
    """A fresh repository holding ``before`` (folder, name → content) as its first commit."""
    path = factory.mktemp("r")
    store = GitStore.init(path)
    files = {f"{d}/{n}": c for (d, n), c in before.items()}
    with store.locked():
        store.commit(files, "before\n", AUTHOR)
    return path, store, files


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    before=st.dictionaries(st.tuples(st.sampled_from(["a", "a.b", "a-b", "z"]), names), st.binary(max_size=8),
                           max_size=12),
    edits=st.dictionaries(st.tuples(st.sampled_from(["a", "a.b", "ab", "z"]), names),
                          st.one_of(st.none(), st.binary(max_size=8)), max_size=8),
)
def test_tree_splice_matches_git_trees(tmp_path_factory: pytest.TempPathFactory,
                                       before: dict[tuple[str, str], bytes],
                                       edits: dict[tuple[str, str], bytes | None]) -> None:
    path, store, files = _committed(tmp_path_factory, before)
    changes = {f"{d}/{n}": c for (d, n), c in edits.items()}
    expected = dict(files)
    for name, content in changes.items():
        if content is None:
            expected.pop(name, None)
        else:
            expected[name] = content
    with store.locked():
        store.commit(changes, "edit\n", AUTHOR)
    with store.open() as repo:
        head = repo[repo.head()]
        assert head.tree == _reference_tree(expected)  # type: ignore[attr-defined]
    if expected:
        assert_clean(path)


def test_commit_keeps_index_and_status_clean(tmp_path: Path) -> None:
    store = GitStore.init(tmp_path / "r")
    with store.locked():
        for i in range(30):
            store.commit({f"memories/global/m{i:02d}.md": f"memory {i}\n".encode()}, f"add {i}\n", AUTHOR)
        store.commit({"memories/global/m05.md": None, "memories/p/x.md": b"x\n"}, "mixed\n", AUTHOR)
    assert_clean(store.path)
    listed = git(store.path, "ls-files").split()
    assert "memories/global/m05.md" not in listed and "memories/p/x.md" in listed and len(listed) == 30
    assert git(store.path, "rev-list", "--count", "HEAD").strip() == "31"
    assert git(store.path, "log", "-1", "--format=%an <%ae>").strip() == AUTHOR


def test_git_cli_commits_and_gitmem_commits_interleave(tmp_path: Path) -> None:
    store = GitStore.init(tmp_path / "r")
    with store.locked():
        store.commit({"a.md": b"a\n"}, "a\n", AUTHOR)
    (store.path / "b.md").write_text("b\n")
    git(store.path, "add", "b.md")
    git(store.path, "commit", "-qm", "b by hand")
    with store.locked():
        store.commit({"c.md": b"c\n"}, "c\n", AUTHOR)
    assert_clean(store.path)
    assert sorted(git(store.path, "ls-files").split()) == ["a.md", "b.md", "c.md"]


def test_failed_commit_leaves_no_half_state(tmp_path: Path) -> None:
    store = GitStore.init(tmp_path / "r")
    with store.locked():
        store.commit({"keep.md": b"keep\n"}, "keep\n", AUTHOR)
    before = git(store.path, "rev-parse", "HEAD")
    lock = store.git_dir / "refs" / "heads" / "main.lock"
    lock.write_text("held by another git process")  # the branch ref cannot move
    with pytest.raises(RepoError, match=r"lock file .* stayed in place"), store.locked():
        store.commit({"keep.md": b"changed\n", "new.md": b"new\n"}, "fails\n", AUTHOR)
    lock.unlink()
    assert git(store.path, "rev-parse", "HEAD") == before
    assert (store.path / "keep.md").read_text() == "keep\n"
    assert not (store.path / "new.md").exists()
    assert_clean(store.path)


def test_writer_lock_times_out_with_a_clear_error(tmp_path: Path) -> None:
    import threading

    store = GitStore.init(tmp_path / "r")
    other = GitStore(store.path, lock_timeout=0.2)
    errors: list[BaseException] = []

    def contend() -> None:  # another writer (a thread here; processes are covered by tests/files/test_locks.py)
        try:
            with other.locked():
                pass
        except BaseException as exc:
            errors.append(exc)

    with store.locked():
        worker = threading.Thread(target=contend)
        worker.start()
        worker.join()
    assert len(errors) == 1 and isinstance(errors[0], LockTimeoutError)
    assert "held the lock" in str(errors[0])


def test_trailers_round_trip() -> None:
    message = format_message("remember: Use PostgreSQL", {"Gitmem-Op": "add", "Gitmem-Id": ["a", "b"]}, "body")
    assert parse_trailers(message) == {"Gitmem-Op": ["add"], "Gitmem-Id": ["a", "b"]}
    assert message.splitlines()[0] == "remember: Use PostgreSQL"


def test_tree_editor_handles_a_large_folder(tmp_path: Path) -> None:
    store = GitStore.init(tmp_path / "r")
    files = {f"memories/global/m{i:05d}.md": b"x%d\n" % i for i in range(2000)}
    with store.locked():
        store.commit(files, "bulk\n", AUTHOR)
        store.commit({"memories/global/m00500.md": None, "memories/global/m01000x.md": b"y\n"}, "edit\n", AUTHOR)
    assert_clean(store.path)
    assert int(git(store.path, "ls-files").count("\n")) == 2000
    assert os.path.exists(store.path / "memories/global/m01000x.md")


def test_a_briefly_held_git_lock_is_waited_for(tmp_path: Path) -> None:
    import threading

    store = GitStore.init(tmp_path / "r")
    with store.locked():
        store.commit({"a.md": b"a\n"}, "a\n", AUTHOR)
    lock = store.git_dir / "index.lock"
    lock.write_text("a git process is staging")
    threading.Timer(0.3, lock.unlink).start()
    with store.locked():
        assert store.commit({"b.md": b"b\n"}, "b\n", AUTHOR)
    assert sorted(git(store.path, "ls-files").split()) == ["a.md", "b.md"]
    assert_clean(store.path)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    before=st.dictionaries(st.tuples(st.sampled_from(["m/a", "m/a/sub", "m/z", "other"]), names),
                           st.binary(max_size=4), max_size=10),
    edits=st.dictionaries(st.tuples(st.sampled_from(["m/a", "m/a/sub", "m/y", "other"]), names),
                          st.one_of(st.none(), st.binary(max_size=4)), max_size=6),
)
def test_tree_changes_match_git_diff(tmp_path_factory: pytest.TempPathFactory,
                                     before: dict[tuple[str, str], bytes],
                                     edits: dict[tuple[str, str], bytes | None]) -> None:
    """What the search index re-reads after a commit is exactly what ``git diff`` lists under the folder."""
    if not before:
        return
    path, store, files = _committed(tmp_path_factory, before)
    first = store.head()
    assert first is not None
    changes = {f"{d}/{n}": c for (d, n), c in edits.items()}
    changes = {p: c for p, c in changes.items() if c is not None or p in files}
    if not changes:
        return
    with store.locked():
        store.commit(changes, "edit\n", AUTHOR)
    found = store.tree_changes(first.decode(), "m/")
    assert found is not None
    fields = git(path, "diff", "--no-renames", "--raw", "-z", "--abbrev=40", first.decode(), "HEAD", "--", "m/")\
        .split("\0")
    # -z: ":old_mode new_mode old_sha new_sha status\0path\0" per file, paths unquoted
    expected = {fields[i + 1]: (None if fields[i].split()[4] == "D" else fields[i].split()[3])
                for i in range(0, len(fields) - 1, 2)}
    assert found == expected
    assert store.tree_files("m/") == {p: Blob.from_string(c).id.decode()
                                      for p, c in {**files, **changes}.items() if c is not None and p.startswith("m/")}


def test_tree_changes_from_a_commit_that_is_gone(tmp_path: Path) -> None:
    store = GitStore.init(tmp_path)
    with store.locked():
        store.commit({"m/a.md": b"a"}, "one\n", AUTHOR)
    assert store.tree_changes("0" * 40, "m/") is None
