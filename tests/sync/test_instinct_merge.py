"""Instincts through a sync: each machine's learner confirms an instinct in its own sessions, and the merge adds
both machines' learning up (it kept one side and put the other in a ``.conflict-*`` file, so the other machine's
sessions were lost from the counts, and every later round added another file)."""

from __future__ import annotations

import subprocess
from datetime import timedelta
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from gitmem.config import Config
from gitmem.learn import instincts as ins
from gitmem.learn.instinctmerge import merge_instincts
from gitmem.store import document as docs
from gitmem.store.layout import init_repo
from gitmem.store.memories import MemoryRepo
from gitmem.sync import round as sync
from gitmem.sync import sidecars
from gitmem.sync.merge import merge_file
from tests.helpers import assert_clean

AUTHOR = "Test User <test@example.com>"
START = docs.utcnow() - timedelta(days=30)


def _seen(item: ins.Instinct | None, day: int, machine: str) -> ins.Instinct:
    """The instinct after one more session, on ``machine``, ``day`` days after START (the learner's own step)."""
    return ins.apply_finding(item, pattern="read-before-edit", trigger="before editing a file",
                             action="read it first", domain="editing", project="shop",
                             when=START + timedelta(days=day), support=3,
                             line=f"{(START + timedelta(days=day)):%Y-%m-%d} session {machine}{day}: read then edit"
                             ).instinct


def _sessions(item: ins.Instinct | None, days: range, machine: str) -> ins.Instinct:
    for day in days:
        item = _seen(item, day, machine)
    assert item is not None
    return item


def test_both_machines_sessions_add_up() -> None:
    base = _sessions(None, range(0, 3), "a")  # 3 sessions: NEW + 2 steps
    ours, theirs = _sessions(base, range(3, 5), "a"), _sessions(base, range(10, 13), "b")
    merged = merge_instincts(base, ours, theirs)
    everything = _sessions(base, range(3, 8), "a")  # one machine that saw all five later sessions
    assert merged.sessions == 8 and merged.evidence_count == 24
    assert merged.confidence == everything.confidence
    assert merged.last_seen == theirs.last_seen and merged.observed_at == base.observed_at
    assert merged.evidence[0].startswith(f"{START + timedelta(days=12):%Y-%m-%d} session b12")
    assert len(merged.evidence) == 8 and not merged.deprecated
    # made on both machines without a common version: NEW once, then one step a session
    apart = merge_instincts(None, _sessions(None, range(0, 2), "a"), _sessions(None, range(5, 8), "b"))
    assert apart.sessions == 5 and apart.confidence == _sessions(None, range(0, 5), "a").confidence


def test_decay_counts_once_and_a_session_elsewhere_revives() -> None:
    base = _sessions(None, range(0, 5), "a")
    later = base.last_seen + timedelta(days=20)
    decayed = ins.replace(base, confidence=ins.weaken(base.confidence), last_decay=later)
    assert merge_instincts(base, decayed, decayed) == decayed  # both decayed the same period: once
    confirmed = _seen(base, 40, "b")
    merged = merge_instincts(base, decayed, confirmed)
    assert merged.confidence == confirmed.confidence and merged.last_decay is None
    gone = ins.replace(decayed, deprecated=True, deprecated_reason="not seen for 30 days")
    assert merge_instincts(base, gone, decayed).deprecated  # nothing new on the other side
    assert not merge_instincts(base, gone, confirmed).deprecated  # a session on the other machine revives it


def test_a_rejected_instinct_stays_rejected_whatever_the_other_machine_saw() -> None:
    """``gitmem instincts reject`` is for good: a session on the other machine, which revives a decayed instinct,
    brought a rejected one back active on every machine (confidence 0.55) at the next sync."""
    base = _sessions(None, range(0, 5), "a")
    refused = ins.replace(base, deprecated=True, deprecated_reason=f"{ins.REJECTED}it reads files it never edits")
    confirmed = _seen(base, 40, "b")
    for merged in (merge_instincts(base, refused, confirmed), merge_instincts(base, confirmed, refused)):
        assert merged.deprecated and ins.rejected(merged) and merged.confidence == refused.confidence
        assert merged.sessions == confirmed.sessions  # the other machine's sessions still count


@given(st.integers(0, 6), st.integers(0, 6), st.integers(1, 5))
def test_the_merge_does_not_depend_on_which_machine_merges(mine: int, other: int, before: int) -> None:
    base = _sessions(None, range(before), "a")
    ours, theirs = _sessions(base, range(10, 10 + mine), "a"), _sessions(base, range(20, 20 + other), "b")
    one, two = merge_instincts(base, ours, theirs), merge_instincts(base, theirs, ours)
    assert ins.dumps(one) == ins.dumps(two)
    assert one.sessions == before + mine + other
    assert one.confidence == _sessions(base, range(10, 10 + mine + other), "a").confidence


def test_a_real_sync_keeps_both_machines_learning_and_no_conflict_file(tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    machines = []
    for name in ("a", "b"):
        init_repo(tmp_path / name, remote=str(remote))
        machines.append(MemoryRepo(Config(repo=tmp_path / name)))
    a, b = machines
    first = _sessions(None, range(0, 3), "a")
    ins.commit_changes(a, [ins.Change(first, "new")], "learn: 1 instinct", "learn", "learn")
    sync.sync(a.git, author=AUTHOR)
    sync.sync(b.git, author=AUTHOR)
    for round_ in range(3):  # each machine learns in its own sessions, then both sync
        for repo, machine in ((a, "a"), (b, "b")):
            held = ins.get_instinct(repo.path, first.id)
            ins.commit_changes(repo, [ins.Change(_sessions(held, range(10 * round_ + 3, 10 * round_ + 5), machine),
                                                 "confirm")], "learn: confirm", "learn", "learn")
        for repo in (a, b, a):
            result = sync.sync(repo.git, author=AUTHOR)
            assert not result.conflicts, result.conflicts
    held = [ins.get_instinct(repo.path, first.id) for repo in (a, b)]
    assert ins.dumps(held[0]) == ins.dumps(held[1])
    assert held[0].sessions == 3 + 3 * 2 * 2 and held[0].confidence == ins.CAP
    for repo in (a, b):
        assert sidecars.conflict_files(repo.path) == []
        assert not list(repo.path.rglob("*.conflict-*"))
        assert_clean(repo.path)


def test_merge_file_routes_instincts_and_leaves_other_files_alone() -> None:
    base = _sessions(None, range(0, 3), "a")
    ours, theirs = _sessions(base, range(3, 4), "a"), _sessions(base, range(5, 6), "b")
    merged = merge_file(base.path, *(ins.dumps(i).encode() for i in (base, ours, theirs)))
    assert not merged.conflicts and list(merged.changes) == [base.path]
    assert ins.loads(merged.changes[base.path].decode()).sessions == 5  # type: ignore[union-attr]
    broken = merge_file(base.path, ins.dumps(base).encode(), b"not an instinct\n", ins.dumps(theirs).encode())
    assert broken.conflicts  # not readable: the whole-file rule keeps both
