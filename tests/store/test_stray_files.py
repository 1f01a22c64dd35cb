"""``gitmem doctor`` warns about every file under ``memories/`` that the store does not read, and says where it would
be read; what gitmem keeps there on purpose (``.gitkeep``, a sync's kept version) and links are left to their own
checks."""

from __future__ import annotations

from pathlib import Path

from gitmem.store.memories import MemoryRepo
from tests.helpers import git, run_cli


def test_doctor_warns_about_files_under_memories_that_are_not_read(repo: MemoryRepo, repo_path: Path) -> None:
    memory = repo.remember("Use zebra tables for reports", id="zebra-one")
    text = (repo_path / memory.path).read_text("utf-8")
    for rel in ("memories/stray-top.md", "memories/global/sub/nested.md", "memories/global/texty.txt",
                "memories/.trash/old.md", "memories/global/zebra-one.md.conflict-5bca9a"):
        (repo_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo_path / rel).write_text(text, "utf-8")
    git(repo_path, "add", "-A")
    git(repo_path, "commit", "-qm", "by hand")
    doctor = run_cli("doctor", env={"GITMEM_REPO": str(repo_path)})
    warnings = {line.split(": ", 1)[0].split()[-1]: line for line in doctor.out.splitlines()
                if line.startswith("warning memories/")}
    assert sorted(warnings) == ["memories/global/sub/nested.md", "memories/global/texty.txt",
                                "memories/global/zebra-one.md.conflict-5bca9a", "memories/stray-top.md"]
    assert "another machine's version" in warnings["memories/global/zebra-one.md.conflict-5bca9a"]  # sidecars'
    assert warnings["memories/stray-top.md"] == (
        "warning memories/stray-top.md: directly in memories/: gitmem reads memories/global/<id>.md and "
        "memories/<project>/<id>.md only, so list, show, search and recall never see it (a memory: "
        f"git -C {repo_path} mv memories/stray-top.md memories/global/stray-top.md; anything else: move it out "
        "of memories/)")
    assert warnings["memories/global/sub/nested.md"].startswith(
        "warning memories/global/sub/nested.md: in a sub-folder of memories/global/: gitmem reads")
    assert "mv memories/global/sub/nested.md memories/global/nested.md;" in warnings["memories/global/sub/nested.md"]
    assert warnings["memories/global/texty.txt"].startswith("warning memories/global/texty.txt: not a .md file:")
    assert "mv memories/global/texty.txt memories/global/texty.md;" in warnings["memories/global/texty.txt"]
    assert "ok      memories/: 1 memory readable" in doctor.out
