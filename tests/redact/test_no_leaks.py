"""Nothing leaked: a secret planted in any input never reaches git objects, file names, commit messages, a pushed
remote, the search index, the local observation log or a command's output.

Each property plants a fake secret (built at run time from harmless pieces, so this file holds none) in arbitrary
surrounding text and sends it through one public entry point, with few examples: each example writes a commit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitmem.config import Config
from gitmem.errors import ValidationError
from gitmem.store.layout import init_repo
from gitmem.store.memories import MemoryRepo
from tests.helpers import git, run_cli

FEW = settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                     HealthCheck.too_slow])


def fill(pattern: str, length: int) -> str:
    return (pattern * (length // len(pattern) + 1))[:length]


# (how the secret is written in the text, the secret) -- kinds the rules know by format, and keyword forms.
PLANTED: list[tuple[str, str]] = [
    (s, s) for s in [
        "AK" + "IA" + fill("QWERTYUIOPASDFGH", 16),
        "gh" + "p_" + fill("aB3dE5fG7hJ9kL1m", 36),
        "github" + "_pat_11" + fill("ABCDE12345", 20) + "_" + fill("xY9zW8vU7t", 59),
        "sk-" + "ant-api03-" + fill("Ab3_De5-Fg7Hi9", 93) + "AA",
        "xox" + "b-" + fill("918273", 12) + "-" + fill("645372", 13) + "-" + fill("QwErTy7", 24),
        "AI" + "za" + fill("Sy0Qw9Er8", 35),
        "SG." + fill("Ab3_Cd4-", 22) + "." + fill("Ef5-Gh6_", 43),
        "dop" + "_v1_" + fill("a1b2c3d4e5f6", 64),
        "HR" + "KU-AA" + fill("Zx9_Yw8-", 58),
        "hv" + "s." + fill("CAESIJ7x_", 90),
        "1234567" + "89:AA" + fill("Hk9_Lm8-Np7", 33),
        "sh" + "pat_" + fill("0a1b2c3d4e5f", 32),
        "Ab" + "c8Q~" + fill("x7-Yz_9.w", 34),
        "da" + "pi" + fill("0a1b2c3d4e", 32),
        "np" + "m_" + fill("aB3dE5fG7h", 36),
        "hf" + "_" + fill("aBcDeFgHiJkL", 34),
    ]
] + [
    ("the admin password is " + "hunter2" + "X9!", "hunter2" + "X9!"),
    ("DB_PASSWORD=" + "Sup3r" + "Secret77", "Sup3r" + "Secret77"),
    ('{"api_key": "' + "k3y" + fill("Zq8Vt3Lp0Xw5", 29) + '"}', "k3y" + fill("Zq8Vt3Lp0Xw5", 29)),
    ("postgres://app:" + "pa55" + "w0rdXY" + "@db.internal:5432/shop", "pa55" + "w0rdXY"),
]
SECRETS = st.sampled_from(PLANTED)
AROUND = st.sampled_from(["", "note:", "deploy with", "密钥是", "(see", "Rotated yesterday;", "use"])
TAIL = st.sampled_from(["", "for staging", "然后重启", "— do not share", ") ok", "in CI"])


def planted(written: str, before: str, after: str) -> str:
    return " ".join(part for part in (before, written, after) if part)


def forms(secret: str) -> list[bytes]:
    """The secret, and for a long one its lower-case form (what a slug of it in a derived id would hold)."""
    out = [secret.encode()]
    if len(secret) >= 12:
        out.append(secret.lower().encode())
    return out


def leaks(secret: str, repos: Iterable[Path], outputs: Iterable[str] = ()) -> list[str]:
    """Every place the secret still appears: git objects (contents, trees, messages), file names in the work
    tree, the search index and the other files under ``.cache``, and the given command outputs."""
    found = []
    for repo in repos:
        objects = subprocess.run(["git", "-C", str(repo), "cat-file", "--batch-all-objects", "--batch"],
                                 capture_output=True, check=True).stdout
        if any(form in objects for form in forms(secret)):
            found.append(f"{repo}: git objects")
        names = git(repo, "log", "--all", "--name-only", "--format=%B").encode()
        if any(form in names for form in forms(secret)):
            found.append(f"{repo}: file names or messages")
        cache = repo / ".cache"
        for path in cache.rglob("*") if cache.is_dir() else []:
            if path.is_file() and any(form in path.read_bytes() for form in forms(secret)):
                found.append(f"{path}")
    for output in outputs:
        if any(form.decode() in output for form in forms(secret)):
            found.append(f"output: {output[:200]}")
    return found


def _repo(tmp_path: Path) -> MemoryRepo:
    path = tmp_path / "mem"
    if not path.exists():
        init_repo(path)
    return MemoryRepo(Config(repo=path))


@FEW
@given(SECRETS, AROUND, TAIL, st.sampled_from(["text", "tags", "why", "how", "name", "description"]))
def test_remember_any_field(tmp_path: Path, item: tuple[str, str], before: str, after: str, field: str) -> None:
    written, secret = item
    repo = _repo(tmp_path)
    value = planted(written, before, after)
    if field == "text":
        memory = repo.remember(value)
    elif field == "tags":
        memory = repo.remember("Deploy notes", tags=f"deploy, {written}" if len(written) <= 64 else "deploy")
    else:
        memory = repo.remember("Deploy notes", **{field: value})
    assert memory.id.isascii() and secret not in memory.id
    assert not leaks(secret, [repo.path])


@FEW
@given(SECRETS, AROUND)
def test_a_given_id_or_project_with_a_secret_is_refused(tmp_path: Path, item: tuple[str, str], before: str) -> None:
    written, secret = item
    repo = _repo(tmp_path)
    for field in ("id", "project"):
        with pytest.raises(ValidationError, match="holds a secret") as refused:
            repo.remember("Deploy notes", **{field: planted(written, before, "x")})
        assert secret not in str(refused.value)
    assert not leaks(secret, [repo.path])


def test_a_project_that_is_a_url_with_its_password_is_refused_without_echoing_it(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    with pytest.raises(ValidationError, match="holds a secret") as refused:
        repo.remember("Deploy notes", project="postgres://app:pa55w0rdXY@db.internal:5432/shop x")
    assert "pa55w0rdXY" not in str(refused.value)


@FEW
@given(SECRETS, AROUND, TAIL, st.booleans())
def test_forget_reason(tmp_path: Path, item: tuple[str, str], before: str, after: str, purge: bool) -> None:
    written, secret = item
    repo = _repo(tmp_path)
    memory = repo.remember("Use the staging bucket")
    forgotten = repo.forget(memory.id, planted(written, before, after), purge=purge)
    assert secret not in forgotten.deprecated_reason
    assert not leaks(secret, [repo.path])


@FEW
@given(SECRETS, AROUND, st.sampled_from(["id", "text", "tags", "why", "name", "project", "source", "extra"]))
def test_import_any_field(tmp_path: Path, item: tuple[str, str], before: str, field: str) -> None:
    written, secret = item
    repo = _repo(tmp_path)
    value = planted(written, before, "")
    record: dict[str, object] = {"text": "Imported note", "id": f"imported-{abs(hash(value)) % 10**8}"}
    if field == "extra":
        record = {"text": "Imported note", "deprecated_reason": value}
    elif field == "tags":
        record["tags"] = [written] if len(written) <= 64 else ["x"]
    else:
        record[field] = value
    try:
        repo.import_records([record], origin="notes.jsonl")
    except ValidationError as refused:  # a given id or project that holds a secret
        assert field in ("id", "project") and secret not in str(refused)
    assert not leaks(secret, [repo.path])


@FEW
@given(SECRETS, AROUND, TAIL)
def test_edit(tmp_path: Path, item: tuple[str, str], before: str, after: str) -> None:
    from gitmem.text.records import replace

    written, secret = item
    repo = _repo(tmp_path)
    memory = repo.remember("Cache the product list for 60 s")
    saved = repo.save(replace(memory, text=planted(written, before, after), how=planted(written, "", "")))
    assert secret not in saved.text
    assert not leaks(secret, [repo.path])


@FEW
@given(SECRETS, AROUND)
def test_capture(tmp_path: Path, item: tuple[str, str], before: str) -> None:
    from gitmem.learn.capture import capture

    written, secret = item
    repo = _repo(tmp_path)
    capture(repo, texts=[f"We decided to always deploy with {planted(written, before, '')} from now on.",
                         f"Never commit {written} to the repository."], session="s1")
    assert not leaks(secret, [repo.path])


@FEW
@given(SECRETS, AROUND)
def test_code_commit_extraction(tmp_path: Path, item: tuple[str, str], before: str) -> None:
    from gitmem.git.coderepo import code_commit
    from gitmem.learn.extract import findings_for_commit
    from gitmem.learn.oncommit import store_findings

    written, secret = item
    repo = _repo(tmp_path)
    code = tmp_path / "code"
    if not code.exists():
        code.mkdir()
        git(code, "init", "-q")
    (code / "requirements.txt").write_text(f"requests\n# {written}\n")
    (code / ".env.example").write_text(f"API_TOKEN={written}\n")
    git(code, "add", ".")
    git(code, "commit", "-q", "--allow-empty", "-m",
        f"Switch HTTP client from urllib to requests {planted(written, before, '')}")
    commit = code_commit(code, "HEAD", lambda path: True)
    findings = findings_for_commit(commit.message, commit.files)
    assert findings
    store_findings(repo, "shop", commit, findings, set())
    assert not leaks(secret, [repo.path])


def _hook(event: str, repo: Path, code: Path, **fields: object) -> None:
    from gitmem.agents.claude.entry import run

    data = json.dumps({"session_id": "s1", "transcript_path": str(code / "t.jsonl"), "cwd": str(code),
                       "hook_event_name": event, **fields}).encode()
    run(event, data, env={"GITMEM_REPO": str(repo), "GITMEM_WARM": "0"}, cwd=code, home=Path.home())


@FEW
@given(SECRETS, AROUND)
def test_directives_and_observations(tmp_path: Path, item: tuple[str, str], before: str) -> None:
    written, secret = item
    repo = _repo(tmp_path)
    code = tmp_path / "code"
    code.mkdir(exist_ok=True)
    _hook("user-prompt-submit", repo.path, code, prompt=f"From now on always deploy with {written} please")
    _hook("post-tool-use", repo.path, code, tool_name="Bash",
          tool_input={"command": f"curl -H \"X-Key: {written}\" https://api.example.com", "api_key": secret,
                      "env": {"password": secret}}, tool_response={"stdout": planted(written, before, "")})
    _hook("stop", repo.path, code)
    local = b"".join(p.read_bytes() for p in (repo.path / "local").rglob("*") if p.is_file())
    assert not any(form in local for form in forms(secret))
    assert not leaks(secret, [repo.path])


def test_sync_to_a_bare_remote_and_the_search_index(tmp_path: Path) -> None:
    import gitmem
    from gitmem.sync.round import sync

    repo = gitmem.open(tmp_path / "mem") if (tmp_path / "mem").exists() else None
    init_repo(tmp_path / "mem")
    repo = gitmem.open(tmp_path / "mem", config=Config(repo=tmp_path / "mem"))
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    repo.git.set_remote(str(remote))
    for written, _ in PLANTED:
        repo.remember(f"staging uses {written}", tags="staging", why=f"rotated: {written}")
    sync(repo.git, author="Test User <test@example.com>")
    assert repo.search("staging", k=50)  # the index is built from the redacted tree
    for _, secret in PLANTED:
        assert not leaks(secret, [repo.path, remote])


def test_cli_output_and_errors(tmp_path: Path) -> None:
    mem = tmp_path / "mem"
    init_repo(mem)
    written, secret = PLANTED[0]
    runs = [
        run_cli("--repo", str(mem), "remember", f"{written} is the staging credential", "--tags", written),
        run_cli("--repo", str(mem), "remember", "Deploy", "--why", f"rotated {written}", "--json"),
        run_cli("--repo", str(mem), "remember", "Deploy", "--id", f"key-{written}"),
        run_cli("--repo", str(mem), "remember", "Deploy", "--importance", written),
        run_cli("--repo", str(mem), "show", written),
        run_cli("--repo", str(mem), "list"),
        run_cli("--repo", str(mem), "log"),
    ]
    memory_id = json.loads(runs[1].out)["id"]
    runs.append(run_cli("--repo", str(mem), "forget", memory_id, "--reason", f"leaked {written}", "--json"))
    records = tmp_path / "in.jsonl"
    records.write_text(json.dumps({"text": f"key {written}", "id": f"x-{written}"}) + "\n")
    runs.append(run_cli("--repo", str(mem), "import", str(records)))
    assert runs[0].code == 0 and "redacted secrets before committing: aws-access-key" in runs[0].err
    assert runs[2].code != 0 and "holds a secret" in runs[2].err
    assert runs[-1].code != 0 and "holds a secret" in runs[-1].err
    assert not leaks(secret, [mem], [r.out + r.err for r in runs])


def test_doctor_finds_an_old_leak_and_purge_rewrites_it_away(tmp_path: Path) -> None:
    mem = tmp_path / "mem"
    init_repo(mem)
    repo = MemoryRepo(Config(repo=mem))
    repo.remember("Use PostgreSQL for the shop")
    written, secret = PLANTED[0]
    slug = secret.lower()
    # A leak written before redaction covered ids: the file name, the id and the message hold the secret.
    name = f"memories/global/{slug}-is-the-staging-credential-3f9a1c.md"
    (mem / name).write_text(f"---\nid: {slug}-is-the-staging-credential-3f9a1c\nname: x\ntype: user\n"
                            "category: background\nimportance: 3\ntags: []\nscope: global\nsource: cli\n"
                            "created: 2026-01-01T00:00:00Z\nupdated: 2026-01-01T00:00:00Z\ndeprecated: false\n"
                            f"schema_version: 1\n---\n{written} is the staging credential\n")
    git(mem, "add", "-A")
    git(mem, "commit", "-q", "-m", f"remember: {written} is the staging credential")
    # an annotated tag on the leaking commit, whose own message holds a secret too: purge-secrets failed on every
    # run with "refs/tags/v1 moved", the secret kept alive by the tag
    git(mem, "tag", "-a", "v1", "-m", f"release, see {PLANTED[1][0]}")
    repo.remember("A memory written after the leak")
    before = git(mem, "rev-list", "--all").split()
    doctor = run_cli("--repo", str(mem), "doctor")
    assert doctor.code == 1 and "secret in history" in doctor.out and "purge-secrets" in doctor.out
    plan = run_cli("--repo", str(mem), "purge-secrets")
    assert plan.code == 0 and "--yes" in plan.out and git(mem, "rev-list", "--all").split() == before
    assert leaks(secret, [mem])  # the plan changed nothing
    done = run_cli("--repo", str(mem), "purge-secrets", "--yes")
    assert done.code == 0, done.err
    assert "tag message" in plan.out and "refs/tags/v1" in done.out
    assert not leaks(secret, [mem], [plan.out, plan.err, done.out, done.err, doctor.out])
    assert not leaks(PLANTED[1][1], [mem], [plan.out, done.out])
    assert "[REDACTED" in git(mem, "tag", "-n1") and git(mem, "cat-file", "-t", "v1").strip() == "tag"
    assert git(mem, "rev-parse", "v1^{commit}").strip() == git(mem, "rev-parse", "HEAD~1").strip()
    assert git(mem, "status", "--porcelain") == ""
    git(mem, "fsck", "--strict")
    after = git(mem, "log", "--format=%s").splitlines()
    assert after[1] == "remember: [REDACTED:aws-access-key] is the staging credential" and len(after) == 4
    assert (mem / "memories/global/redacted-aws-access-key-is-the-staging-credential-3f9a1c.md").is_file()
    assert before[-1] == git(mem, "rev-list", "--max-parents=0", "HEAD").strip()  # history before the leak kept
    assert run_cli("--repo", str(mem), "doctor").code == 0
    assert MemoryRepo(Config(repo=mem)).get("redacted-aws-access-key-is-the-staging-credential-3f9a1c")


def test_a_catastrophic_extra_pattern_neither_hangs_remember_nor_the_hook(tmp_path: Path) -> None:
    mem = tmp_path / "mem"
    init_repo(mem)
    (mem / "gitmem.toml").write_text((mem / "gitmem.toml").read_text()
                                     + "\n[redaction]\nextra_patterns = ['(a+)+$', 'ACME-[0-9]+']\n")
    text = "ticket ACME-1234 " + "a" * 15_000 + "!"  # 30 characters already take minutes to backtrack
    result = run_cli("--repo", str(mem), "remember", text, timeout=30)
    assert result.code == 0, result.err
    assert "ACME-1234" not in git(mem, "show", "HEAD")
    code = tmp_path / "code"
    code.mkdir()
    data = json.dumps({"session_id": "s", "cwd": str(code), "hook_event_name": "PostToolUse", "tool_name": "Bash",
                       "tool_input": {"command": "echo " + "a" * 50_000 + "!"}})
    proc = subprocess.run([sys.executable, "-m", "gitmem.agents.claude.entry", "post-tool-use"], input=data.encode(),
                          capture_output=True, env={**os.environ, "GITMEM_REPO": str(mem)}, timeout=30, cwd=code)
    assert proc.returncode == 0
    # A pattern the linear-time engine cannot run is refused with a message that says what to do.
    (mem / "gitmem.toml").write_text((mem / "gitmem.toml").read_text().replace("'ACME-[0-9]+'", "'(?<=x)y'"))
    refused = run_cli("--repo", str(mem), "remember", "x", timeout=30)
    assert refused.code != 0 and "extra_patterns" in refused.err and "look-around" in refused.err
    assert "rewrite or remove it in gitmem.toml" in refused.err  # the file it is in (a user's is config.toml)
