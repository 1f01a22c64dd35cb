"""What tests share besides fixtures: the real CLI and git runners, the hook runner, small embedders.

Fixtures live in ``conftest.py`` files; everything a test imports lives here (``from tests.helpers import ...``).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: the repository root (README, docs, scripts)
ROOT = Path(__file__).resolve().parents[1]
GITMEM = shutil.which("gitmem", path=str(Path(sys.executable).parent)) or "gitmem"
#: the project id of the code repositories the hook tests build (remote git@github.com:acme/shop.git)
PROJECT = "github.com-acme-shop"


def git(repo: Path, *args: str) -> str:
    """Run the real git CLI on ``repo`` and return its stdout (raises on failure)."""
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


@dataclass
class Run:
    code: int
    out: str
    err: str


def bm25_only(repo: Path, settings: str = "") -> None:
    """Commit ``[embedding] model = "none"`` (and the TOML ``settings``) to the memory repository at ``repo``:
    searches run BM25 alone, with no model to load."""
    (repo / "gitmem.toml").write_text('[embedding]\nmodel = "none"\n' + settings, "utf-8")
    git(repo, "add", "gitmem.toml")
    git(repo, "commit", "-qm", "settings: BM25 only")


def code_repo(parent: Path, subject: str | None = None) -> Path:
    """A code project ``shop`` (a git repository whose origin is Acme/Shop on GitHub, so its project id is
    :data:`PROJECT`), with one empty commit named ``subject`` when one is given."""
    path = parent / "shop"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    git(path, "remote", "add", "origin", "git@github.com:Acme/Shop.git")
    if subject is not None:
        git(path, "commit", "-q", "--allow-empty", "-m", subject)
    return path


def run_cli(*args: str, stdin: bytes | str | None = None, cwd: Path | None = None,
            env: dict[str, str] | None = None, timeout: float = 60) -> Run:
    """Run the installed ``gitmem`` console script, as a user would."""
    data = stdin.encode() if isinstance(stdin, str) else stdin
    proc = subprocess.run([GITMEM, *args], input=data, capture_output=True, cwd=cwd,
                          env={**os.environ, **(env or {})}, timeout=timeout)
    return Run(proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace"))


def assert_clean(repo: Path) -> None:
    """What a user checks after every command: nothing pending, nothing corrupt."""
    assert git(repo, "status", "--porcelain") == ""
    git(repo, "fsck", "--strict")


def hook_env(repo: Path, **extra: str) -> dict[str, str]:
    """The environment of a hook test: the memory repository, and none of the detached background work (project
    scan, session learning, warm-up), which commits on its own and has its own tests."""
    return {"GITMEM_REPO": str(repo), "GITMEM_PROJECT_SCAN": "0", "GITMEM_LEARN": "0", "GITMEM_WARM": "0", **extra}


def payload(event: str, cwd: Path, session: str = "sess-1", **fields: Any) -> str:
    return json.dumps({"session_id": session, "transcript_path": str(cwd / "t.jsonl"), "cwd": str(cwd),
                       "hook_event_name": event, **fields})


def hook(event: str, data: str | bytes, env: dict[str, str], cwd: Path | None = None,
         fast: bool = True) -> subprocess.CompletedProcess[str]:
    """Run a hook the way the installed settings do (``python -m gitmem.agents.claude.entry``), or through
    ``gitmem hook``."""
    cmd = [sys.executable, "-m", "gitmem.agents.claude.entry", event] if fast else [GITMEM, "hook", event]
    raw = data.encode() if isinstance(data, str) else data
    proc = subprocess.run(cmd, input=raw, capture_output=True, cwd=cwd, env={**os.environ, **env}, timeout=60)
    return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode(), proc.stderr.decode())


def context_of(out: str, event: str = "SessionStart") -> str:
    answer = json.loads(out)
    assert answer["hookSpecificOutput"]["hookEventName"] == event
    text = answer["hookSpecificOutput"]["additionalContext"]
    assert isinstance(text, str)
    return text


class CountingEmbedder:
    """Wraps a real embedder and counts the documents it was asked to embed."""

    def __init__(self, inner: Any, scripts: Sequence[str] = ()) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dim = inner.dim
        self.scripts = tuple(scripts)  # the scripts it reads (runtime.covers); () = all, as a fake embedder does
        self.documents = 0

    def embed_documents(self, texts: Sequence[str]) -> Any:
        self.documents += len(texts)
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> Any:
        return self.inner.embed_query(text)


class FakeEmbedder:
    """A bag-of-letters embedder: deterministic, instant, good enough to test the vector plumbing."""

    model_id = "fake-letters"
    dim = 26

    def __init__(self) -> None:
        self.documents = 0

    def _vec(self, text: str) -> Any:
        import numpy as np

        v = np.zeros(self.dim, dtype=np.float32)
        for ch in text.lower():
            if "a" <= ch <= "z":
                v[ord(ch) - 97] += 1
        n = float(np.linalg.norm(v))
        return v / n if n else v

    def embed_documents(self, texts: Sequence[str]) -> Any:
        import numpy as np

        self.documents += len(texts)
        return np.stack([self._vec(t) for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

    def embed_query(self, text: str) -> Any:
        return self._vec(text)


_SUBSYSTEMS = ("billing", "search", "uploads", "mailer", "reports", "exports", "audit", "sessions", "themes",
               "imports", "metrics", "backups", "invoices", "coupons", "ratings", "carts", "banners", "refunds")


def design_note() -> str:
    """A long design note (about 3k characters, cut into 7 chunks), one paragraph per subsystem; the payment
    webhooks' paragraph stands in the middle, the mail queue's at the end."""
    paragraphs = [f"The {name} subsystem keeps its state in its own schema; changes to {name} go through review "
                  f"by the {name} owners and ship with the weekly release." for name in _SUBSYSTEMS]
    paragraphs.insert(9, "Stripe webhook verification: each event is checked with the signing secret from "
                         "settings.STRIPE_WEBHOOK_KEY; an event that fails it is dropped and logged.")
    paragraphs.append("Outgoing mail waits in a Redis queue that the mail worker drains every minute; a bounced "
                      "address is suppressed for thirty days.")
    return "\n\n".join(paragraphs)


def damage_tantivy(folder: Path, how: str) -> None:
    """Break the tantivy index in ``folder`` the ways a tester did, so tantivy raises when it opens or reads it:
    ``meta`` (its ``meta.json`` no JSON) or ``terms`` (every term file cut to nothing)."""
    if how == "meta":
        (folder / "meta.json").write_text("{garbage\n", "utf-8")
        return
    terms = list(folder.glob("*.term"))
    assert terms
    for term in terms:
        term.write_bytes(b"")


@contextlib.contextmanager
def lock_held(path: Path) -> Iterator[None]:
    """``path``'s file lock held as another process would hold it, for the block's duration."""
    from filelock import FileLock

    lock = FileLock(str(path), thread_local=False)
    lock.acquire()
    try:
        yield
    finally:
        lock.release()
