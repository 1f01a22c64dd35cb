"""Secrets already in a memory repository's history: find them and rewrite them away.

Redaction (:mod:`gitmem.redact`) keeps new secrets out of every commit; a repository written before it, or a
clone that received a secret from elsewhere, may still hold some in old commits. :func:`scan` finds them (in
file contents, file names and commit messages, including the slug of a secret inside a derived id);
:func:`purge` rewrites every local branch so that no commit holds them and drops the old objects.
"""

from gitmem.leaks.history import Leak, PurgeResult, Scan, history_issues, purge, scan

__all__ = ["Leak", "PurgeResult", "Scan", "history_issues", "purge", "scan"]
