"""Three-way merge of instinct files (``instincts/<domain>/<id>.md``) for ``gitmem sync``: pure functions.

Each machine's learner confirms the instincts it sees in its own sessions (observations never leave the machine),
so two machines touch the same instinct all the time, and a line merge of two sets of counts always conflicts: the
sync kept one side and put the other beside it, and the other machine's sessions were lost from the counts. The
merge adds up what each side learned since the common version instead:

- ``sessions`` and ``evidence_count``: the base's plus each side's increase (a side never goes below its own);
- ``confidence``: the higher side's plus one step (:data:`~gitmem.learn.instincts.STEP`) for each session the
  other side confirmed too; a confirmation is one step, so two sides that confirmed ``m`` and ``n`` sessions end
  where one machine that saw all ``m + n`` would (capped); decay on one side and confirmations on the other keep
  the confirmed confidence; decay on both sides counts once;
- ``evidence`` lines: both sides', newest first (they start with their date), at most ten, as the learner keeps;
- ``deprecated``: when the user rejected it on either side (``gitmem instincts reject``: for good), or when both
  sides are, or one is and the other learned nothing new (a session on the other machine revives it, as it would
  there);
- ``observed_at`` the earlier, ``last_seen`` the later; ``last_decay`` only when it is later than ``last_seen``;
- the texts (trigger, action, pattern, domain, scope, project, source): the side seen last.

Without a common version (both machines made it), each side's counts are its own increase, and the first
session's ``NEW`` confidence is counted once. A side that is not a readable instinct is left to the caller.
"""

from __future__ import annotations

from dataclasses import replace

from gitmem.errors import DocumentError
from gitmem.learn.instincts import INSTINCTS_DIR, STEP, Instinct, clamp, dumps, loads, rejected

#: evidence lines an instinct keeps (the learner's own limit)
EVIDENCE_LINES = 10


def merge_instincts(base: Instinct | None, ours: Instinct, theirs: Instinct) -> Instinct:
    """The instinct both sides' learning adds up to (see the module docstring)."""
    sessions0 = base.sessions if base is not None else 0
    evidence0 = base.evidence_count if base is not None else 0
    mine, other = ours.sessions - sessions0, theirs.sessions - sessions0
    newer = ours if (ours.last_seen, dumps(ours)) >= (theirs.last_seen, dumps(theirs)) else theirs
    # without a base too: the higher side's NEW counts once, each of the other side's sessions is one step more
    confidence = clamp(max(ours.confidence, theirs.confidence) + STEP * max(0, min(mine, other)))
    # the user's rejection holds whatever the other side saw meanwhile, as new evidence never revives it on one
    # machine (a session on the other brought it back active on every machine)
    refused = next((side for side in (ours, theirs) if rejected(side)), None)
    deprecated = refused is not None or (ours.deprecated and theirs.deprecated) or \
        (ours.deprecated and other <= 0) or (theirs.deprecated and mine <= 0)
    if deprecated:
        held = refused or (ours if ours.deprecated else theirs)
        confidence, reason = held.confidence, held.deprecated_reason
    else:
        reason = ""
    last_seen = max(ours.last_seen, theirs.last_seen)
    decays = [d for d in (ours.last_decay, theirs.last_decay) if d is not None and d > last_seen]
    lines = sorted(dict.fromkeys((*ours.evidence, *theirs.evidence)), reverse=True)[:EVIDENCE_LINES]
    return replace(
        newer, confidence=confidence, deprecated=deprecated, deprecated_reason=reason,
        observed_at=min(ours.observed_at, theirs.observed_at), last_seen=last_seen,
        last_decay=max(decays) if decays else None,
        sessions=max(sessions0 + mine + other, ours.sessions, theirs.sessions),
        evidence_count=max(evidence0 + (ours.evidence_count - evidence0) + (theirs.evidence_count - evidence0),
                           ours.evidence_count, theirs.evidence_count),
        evidence=tuple(lines), schema_version=max(ours.schema_version, theirs.schema_version))


def merge_instinct_file(path: str, base: bytes | None, ours: bytes, theirs: bytes) -> bytes | None:
    """The merged file of an instinct both sides changed; None when ``path`` is no instinct or a side cannot be
    read as one (the caller's whole-file rule then applies)."""
    if not (path.startswith(f"{INSTINCTS_DIR}/") and path.endswith(".md")):
        return None

    def read(data: bytes | None) -> Instinct | None:
        if data is None:
            return None
        try:
            return loads(data.decode("utf-8"), path)
        except (UnicodeDecodeError, DocumentError, ValueError, TypeError):
            return None

    o, t = read(ours), read(theirs)
    if o is None or t is None or o.id != t.id:
        return None
    return dumps(merge_instincts(read(base), o, t)).encode("utf-8")
