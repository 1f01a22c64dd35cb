"""One extraction run over code commits (``gitmem extract`` and the hooks' background runs): which commits it
reads (one, a range, or what an amend or a rebase made), what each teaches (stored as memories of the project
unless known already), what a revert takes back, and what a rewrite carries over or deprecates. The steps live
in :mod:`gitmem.learn.extract` (findings), :mod:`gitmem.learn.commits` (known texts, reverts),
:mod:`gitmem.learn.rewrites` (amends and rebases) and :mod:`gitmem.learn.oncommit` (storing, the lock); this
module puts them in order and says what happened, for the CLI to print."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gitmem.learn.oncommit import MAX_FINDINGS, extracting, new_findings, skip_reason, store_findings


@dataclass
class CommitResult:
    """What one code commit gave: its findings (texts redacted as stored; ``known`` when the project has the text
    already, ``None`` when no memory repository was read), the memories it added, and what its revert undid."""

    commit: str
    skipped: str = ""  # why it taught nothing ("merge commit", "made during a rebase", "rewritten as …")
    reverts: str = ""  # the commit it reverts
    left_out: int = 0  # findings past MAX_FINDINGS
    findings: list[dict[str, Any]] = field(default_factory=list)
    added: list[Any] = field(default_factory=list)
    deprecated: list[Any] = field(default_factory=list)  # by its revert
    restored: list[Any] = field(default_factory=list)  # by its revert of a revert

    def as_dict(self) -> dict[str, Any]:
        return {"commit": self.commit, "skipped": self.skipped, "reverts": self.reverts, "left_out": self.left_out,
                "findings": self.findings, "added": [m.id for m in self.added],
                "deprecated": [m.id for m in self.deprecated], "restored": [m.id for m in self.restored]}


@dataclass
class ExtractRun:
    """What :func:`extract_commits` did: one :class:`CommitResult` a commit read, in order, and for a rewrite the
    memories moved to a new commit or deprecated with an old one."""

    results: list[CommitResult] = field(default_factory=list)
    moved: list[Any] = field(default_factory=list)
    dropped: list[Any] = field(default_factory=list)
    rewrites: int = 0  # the (old, new) pairs git reported

    @property
    def added(self) -> int:
        return sum(len(r.added) for r in self.results)


def extract_commits(root: Path, repo: Any, project: str, *, rev: str | None = None, rev_range: str | None = None,
                    rewritten: str | None = None, rewrites: Sequence[tuple[str, str]] = (),
                    orig_head: str | None = None, onto: str | None = None, dry_run: bool = False,
                    patterns: Sequence[str] = (), progress: Callable[[int], Any] | None = None) -> ExtractRun:
    """Learn what the commits of the code repository at ``root`` say into ``project``'s memories in ``repo``.

    The commits: ``rev`` (default ``HEAD``), every commit of ``rev_range``, or (``rewritten`` = ``amend`` or
    ``rebase``) the new commits of git's post-rewrite ``rewrites`` pairs plus, for a rebase, every commit from
    ``onto`` to ``HEAD``, with ``orig_head`` naming the branch's tip before it (the commits it dropped). A
    ``dry_run`` stores nothing and takes no lock; ``repo`` may then be ``None`` (nothing is marked known).
    ``patterns`` are the repository's extra redaction patterns, for the texts reported. ``progress(total)`` is
    called once with the size of a range, and returns a callable advanced by one after each commit (a progress
    bar's ``update``) or ``None``.
    """
    from gitmem.errors import RepoError
    from gitmem.git.coderepo import arrived, code_commit, code_range, count_range, left_behind, rebasing
    from gitmem.learn.commits import KnownTexts, reverted_origins, reverted_sha, take_back
    from gitmem.learn.extract import findings_for_commit, interesting, normalise
    from gitmem.learn.rewrites import carry_over, latest, note_rewritten, replacements
    from gitmem.redact.engine import redact

    run = ExtractRun(rewrites=len(rewrites))
    # a rebase replaces each commit it makes at its end (a squash or fixup at once): its post-rewrite run learns the
    # result, so a run for one of its commits, or for an amend inside it, does nothing (a hand-added hook line too)
    during_rebase = not rev_range and rewritten != "rebase" and rebasing(root)
    replaced: dict[str, str] = {}  # commits amends and rebases replaced, read under the extraction lock

    def read(sha: str) -> Any:
        try:
            return code_commit(root, sha, interesting)
        except RepoError:
            return None  # gone (gc) or never fetched

    def handle(commit: Any, known: KnownTexts | None) -> None:
        result = CommitResult(commit.sha, skip_reason(commit) or ("made during a rebase" if during_rebase else ""))
        if not result.skipped and commit.sha in replaced:
            # amended or rebased away before this background run started: the rewrite's run learns the new commit
            result.skipped = f"rewritten as {replaced[commit.sha][:10]}"
        # a revert teaches nothing of its own (its diff undoes the reverted one's): it takes back what that taught
        result.reverts = "" if result.skipped else reverted_sha(commit.message)
        findings = [] if result.skipped else findings_for_commit(commit.message, commit.files)  # [] for a revert
        result.left_out = max(0, len(findings) - MAX_FINDINGS)
        findings = findings[:MAX_FINDINGS]
        new: set[str] = set()  # the texts stored (or, in a dry run, that would be)
        if known is not None and dry_run:
            new = {text for _f, text in new_findings(findings, known.for_commit(commit.sha), patterns)}
            known.texts.update(normalise(text) for text in new)  # as if stored: a later commit's copy is known
        elif known is not None:
            result.added = (store_findings(repo, project, commit, findings, known.for_commit(commit.sha))
                            if findings else [])
            new = {m.text for m in result.added}
            if result.reverts:
                taught, undo = reverted_origins(result.reverts, read,
                                                lambda a, b: code_range(root, f"{a}..{b}", interesting))
                result.deprecated, result.restored = take_back(repo, project, commit, result.reverts, origins=taught,
                                                               restore=not undo)
            known.update(result.added, result.deprecated, result.restored)
        for finding in findings:
            # reported redacted like what is stored; "known": the project has it already, not stored
            text = redact(finding.text, extra_patterns=patterns).text
            result.findings.append({"text": text, "category": finding.category,
                                    "why": redact(finding.why, extra_patterns=patterns).text,
                                    **({} if known is None else {"known": text not in new})})
        run.results.append(result)

    known: KnownTexts | None
    with contextlib.nullcontext() if repo is None or dry_run else extracting(repo):
        if rewritten and during_rebase:
            pass  # an amend inside a rebase: the rebase's own run sees the result
        elif rewritten:
            # the commits the rebase made, oldest first: those git names in its pairs, and those made at an edit or
            # break stop or by --exec, which it does not name
            made = code_range(root, f"{onto}..HEAD", interesting) if onto else []
            on_branch = {c.sha for c in made}
            # git pairs an edit stop's commit, still on the branch, with the HEAD it continued from: nothing replaced
            pairs = [(old, new) for old, new in rewrites if old not in on_branch]
            run.rewrites = len(pairs)
            replaced = note_rewritten(repo, pairs)
            olds = [(old, read(old), read(latest(replaced, new)) or code_commit(root, new, interesting))
                    for old, new in pairs]
            named = {old for old, _new in pairs}
            left = [sha for sha in left_behind(root, orig_head) if sha not in named] if orig_head else []
            came = arrived(root, orig_head, interesting) if left and orig_head else []  # a dropped change upstream
            if olds or left:
                run.moved, run.dropped = carry_over(repo, project, rewritten, olds, left, [*made, *came])
            known = KnownTexts(repo, project)
            for new in {c.sha: c for c in [*made, *(new for _o, _old, new in olds)]}.values():
                handle(new, known)  # one amended again meanwhile is skipped: the run of that amend learns it
        elif rev_range:
            step = progress(count_range(root, rev_range)) if progress else None
            known = KnownTexts(repo, project) if repo is not None else None
            for commit in code_range(root, rev_range, interesting):
                handle(commit, known)
                if step:
                    step(1)
        else:
            replaced = replacements(repo) if repo is not None and rev else {}
            handle(code_commit(root, rev or "HEAD", interesting),
                   KnownTexts(repo, project) if repo is not None else None)
    return run
