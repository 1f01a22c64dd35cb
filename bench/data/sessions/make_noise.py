"""Builds ``noise.json``: guidance sentences from the contributor guides of projects no session works in.

    python bench/data/sessions/make_noise.py MIRRORS

``MIRRORS`` holds bare clones named ``owner+name/repo``. Each kept sentence records its repository, file and
commit. The sentences are kept as written (they only need to look like the rules of other projects).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

REPOS = ["psf/black", "pallets/click", "encode/starlette", "rust-lang/rustfmt", "serde-rs/serde", "clap-rs/clap",
         "sharkdp/bat", "sharkdp/fd", "junegunn/fzf", "expressjs/express", "nodejs/undici", "hyperium/hyper",
         "psf/requests", "aio-libs/aiohttp", "scrapy/scrapy", "tokio-rs/tokio", "python-poetry/poetry",
         "pallets/jinja", "eslint/eslint", "celery/celery", "rust-lang/rust-clippy", "fastapi/typer"]
GUIDES = ["CONTRIBUTING.md", ".github/CONTRIBUTING.md", "CONTRIBUTING.rst", "docs/contributing.md",
          "docs/contributing.rst", "docs/CONTRIBUTING.md", "AGENTS.md", "CLAUDE.md",
          "docs/development/contributing.md", "docs/src/contributing/index.md", "docs/contributing/index.md",
          "README.md"]
GUIDANCE = re.compile(r"\b(must|never|always|should|run|use|don't|do not|please|require|test|lint|format|commit|"
                      r"changelog|branch|review|release)\b", re.IGNORECASE)
PER_REPO = 20


def _git(git_dir: Path, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", str(git_dir), *args], capture_output=True, text=True).stdout


def sentences(text: str) -> list[str]:
    text = re.sub(r"```.*?```", " ", text, flags=re.DOTALL)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"<[^>]+>|`_|\*\*|__", "", text)
    found = []
    for para in re.split(r"\n\s*\n", text):
        para = " ".join(line.strip().lstrip("-*>#0123456789.) ") for line in para.splitlines()).strip()
        for sentence in re.split(r"(?<=[.!])\s+", para):
            sentence = sentence.strip()
            if (50 <= len(sentence) <= 220 and GUIDANCE.search(sentence) and not re.search(r"http|\|", sentence)
                    and sentence[0].isupper()):
                found.append(sentence)
    return found


def main(mirrors: Path) -> None:
    out = []
    for repo in REPOS:
        git_dir = mirrors / repo.replace("/", "+") / "repo"
        sha = _git(git_dir, "rev-parse", "HEAD").strip()
        files = _git(git_dir, "ls-tree", "-r", "--name-only", "HEAD").split("\n")
        extra = [f for f in files if re.search("contributing", f, re.IGNORECASE) and f.endswith((".md", ".rst"))]
        picked: list[tuple[str, str]] = []
        for path in [p for p in GUIDES + extra if p in files]:
            for sentence in sentences(_git(git_dir, "show", f"HEAD:{path}")):
                if sentence not in [s for s, _ in picked]:
                    picked.append((sentence, path))
            if len(picked) >= 40:
                break
        step = max(1, len(picked) // PER_REPO)
        out += [{"project": repo, "text": s, "source": {"repo": repo, "path": p, "commit": sha}}
                for s, p in picked[::step][:PER_REPO]]
    target = Path(__file__).resolve().parent / "noise.json"
    target.write_text(json.dumps(out, indent=1, ensure_ascii=False), "utf-8")
    print(f"{len(out)} sentences from {len({o['project'] for o in out})} projects -> {target}")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "/work/.mirror"))
