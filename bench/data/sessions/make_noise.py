"""One-off: extract guidance sentences from noise projects' contributor guides (provenance kept)."""
import json, re, subprocess, sys
REPOS = ["psf/black","pallets/click","encode/starlette","rust-lang/rustfmt","serde-rs/serde","clap-rs/clap",
 "sharkdp/bat","sharkdp/fd","junegunn/fzf","expressjs/express","nodejs/undici","hyperium/hyper","psf/requests",
 "aio-libs/aiohttp","scrapy/scrapy","tokio-rs/tokio","python-poetry/poetry","pallets/jinja","eslint/eslint",
 "celery/celery","rust-lang/rust-clippy","fastapi/typer"]
CANDS = ["CONTRIBUTING.md",".github/CONTRIBUTING.md","CONTRIBUTING.rst","docs/contributing.md","docs/contributing.rst",
 "docs/CONTRIBUTING.md","AGENTS.md","CLAUDE.md","docs/development/contributing.md","docs/src/contributing/index.md",
 "docs/contributing/index.md","docs/contributing.rst","README.md"]
KEY = re.compile(r"\b(must|never|always|should|run|use|don't|do not|please|require|test|lint|format|commit|changelog|branch|review|release)\b", re.I)
out = []
for repo in REPOS:
    git = f"/work/.mirror/{repo.replace('/','+')}/repo"
    sha = subprocess.run(["git","--git-dir",git,"rev-parse","HEAD"],capture_output=True,text=True).stdout.strip()
    files = subprocess.run(["git","--git-dir",git,"ls-tree","-r","--name-only","HEAD"],capture_output=True,text=True).stdout.split("\n")
    picked = []
    for path in CANDS + [f for f in files if re.search(r"contributing", f, re.I) and f.endswith((".md",".rst"))]:
        if path not in files: continue
        text = subprocess.run(["git","--git-dir",git,"show",f"HEAD:{path}"],capture_output=True,text=True).stdout
        text = re.sub(r"```.*?```", " ", text, flags=re.S)
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
        text = re.sub(r"<[^>]+>|`_|\*\*|__", "", text)
        for para in re.split(r"\n\s*\n", text):
            para = " ".join(l.strip().lstrip("-*>#0123456789.) ") for l in para.splitlines()).strip()
            for s in re.split(r"(?<=[.!])\s+", para):
                s = s.strip()
                if 50 <= len(s) <= 220 and KEY.search(s) and not re.search(r"http|\|", s) and s[0].isupper():
                    if s not in [p[0] for p in picked]:
                        picked.append((s, path))
        if len(picked) >= 40: break
    step = max(1, len(picked)//20)
    for i,(s,path) in enumerate(picked[::step][:20]):
        out.append({"project": repo, "text": s, "source": {"repo": repo, "path": path, "commit": sha}})
    print(repo, len(picked), file=sys.stderr)
json.dump(out, open("bench/data/sessions/noise.json","w"), indent=1, ensure_ascii=False)
print(len(out), file=sys.stderr)
