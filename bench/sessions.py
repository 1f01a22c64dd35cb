"""The job itself: does a coding session get the memories it needs, at its start and after its first prompt?

    python bench/sessions.py [--model auto|none] [--limit N] [--json FILE]

The memory repository holds paraphrased rules and facts from the contributor guides of real projects
(``bench/data/sessions/projects.json``: each with its source repository, path and commit), personal preferences in
English and Chinese (``preferences.json``) and guidance sentences of 22 other projects as noise (``noise.json``,
made by ``make_noise.py``). Each labelled session names its project, a branch, a first prompt (a real pull-request
title, a Chinese rendering of one, or a paraphrase that shares no words with what it needs), and two labels: the
memories that must be present from the start (the memories marked ``must``: the project's hard rules and the
user's must-follow preferences) and the memories the task needs.

For every session the real hooks run as Claude Code runs them: ``gitmem-hook session-start`` then
``gitmem-hook user-prompt-submit``, each a new process with the event's JSON on stdin, in a temporary git
repository of the session's project (its remote URL, the session's branch, a few real commit subjects). What the
hooks print is the injected context; the memories in it are read back by their ids. Two baselines run on the
same data: the 8 most important memories of the project and the global ones (no search at all), and those 8 plus
the 5 best SQLite FTS5 matches of the prompt.

Printed, per method: the share of must-have memories injected at session start, precision (injected memories that
are must-have or needed, over all injected), tokens, the share of needed memories injected by the end of the first
prompt (all, English, Chinese, paraphrased), the prompt's own precision, session tokens, memories of another
project injected, and the hooks' median latency.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gitmem.config import Config
from gitmem.projects.identity import project_id_for
from gitmem.store.layout import init_repo
from gitmem.store.memories import MemoryRepo
from gitmem.text.tokens import count_tokens

DATA = Path(__file__).resolve().parent / "data" / "sessions"
TOP = 8
FTS_K = 5
_ID = re.compile(r"\(id: ([^)\s]+)\)")


def load(data: Path = DATA) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    projects = json.loads((data / "projects.json").read_text("utf-8"))
    prefs = json.loads((data / "preferences.json").read_text("utf-8"))
    noise = json.loads((data / "noise.json").read_text("utf-8"))
    return projects, prefs, noise


def pid(repo: str) -> str:
    return project_id_for(f"https://github.com/{repo}.git", Path(repo.split("/")[-1]))


def records(projects: list[dict[str, Any]], prefs: list[dict[str, Any]],
            noise: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every memory as an import record; dates spread over the last 200 days (deterministic)."""
    now = datetime.now(UTC).replace(microsecond=0)
    out: list[dict[str, Any]] = []

    def when(i: int) -> str:
        return (now - timedelta(days=(i * 37) % 200, hours=i % 24)).isoformat().replace("+00:00", "Z")

    for p in projects:
        for m in p["memories"]:
            out.append({"id": m["id"], "text": m["text"], "category": m["category"], "importance": m["importance"],
                        "type": "project", "project": pid(p["repo"]), "scope": "project",
                        "source_ref": f"{m['source']['repo']}:{m['source']['path']}@{m['source']['commit'][:12]}"})
    for m in prefs:
        out.append({"id": m["id"], "text": m["text"], "category": m["category"], "importance": m["importance"],
                    "type": "user" if m["category"] == "background" else "feedback", "scope": "global"})
    for i, m in enumerate(noise):
        out.append({"id": f"noise-{i}", "text": m["text"], "category": "constraint" if i % 3 == 0 else "background",
                    "importance": 2 + i % 3, "type": "project", "project": pid(m["project"]), "scope": "project",
                    "source_ref": f"{m['source']['repo']}:{m['source']['path']}@{m['source']['commit'][:12]}"})
    for i, r in enumerate(out):
        r["created"] = r["updated"] = when(i)
    return out


def git(cwd: Path, *args: str, env: dict[str, str]) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def code_repo(root: Path, project: dict[str, Any], env: dict[str, str]) -> Path:
    """A small git repository standing for the session's project: its remote, default branch, real commits."""
    path = root / "code" / project["repo"].split("/")[-1]
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", project["default_branch"], env=env)
    git(path, "remote", "add", "origin", project["remote"], env=env)
    for i, subject in enumerate(project["commits"]):
        (path / "CHANGES.txt").write_text(f"{i}\n", "utf-8")
        git(path, "add", "-A", env=env)
        git(path, "commit", "-q", "-m", subject, env=env)
    return path


class Hooks:
    """Runs ``gitmem-hook`` as Claude Code does and reads back the memory ids it injected."""

    def __init__(self, env: dict[str, str]) -> None:
        script = Path(sys.executable).parent / "gitmem-hook"
        self.cmd = [str(script)] if script.exists() else [sys.executable, "-m", "gitmem.agents.claude.entry"]
        self.env = env

    def run(self, event: str, cwd: Path, payload: dict[str, Any]) -> tuple[str, float]:
        start = time.perf_counter()
        proc = subprocess.run([*self.cmd, event], input=json.dumps(payload).encode(), cwd=cwd, env=self.env,
                              capture_output=True, check=True)
        ms = (time.perf_counter() - start) * 1000
        out = proc.stdout.decode("utf-8").strip()
        if not out:
            return "", ms
        answer = json.loads(out)
        text = answer.get("hookSpecificOutput", {}).get("additionalContext", "") or answer.get("systemMessage", "")
        return str(text), ms


def ids_in(text: str, by_text: dict[str, str]) -> list[str]:
    found = _ID.findall(text)
    # lines without an id (directives, summaries) are matched by their text
    flat = " ".join(text.split())
    found += [mid for snippet, mid in by_text.items() if snippet in flat and mid not in found]
    return list(dict.fromkeys(found))


class Baselines:
    """The 8 most important memories of the project and the global ones; plus SQLite FTS5 over the prompt."""

    def __init__(self, recs: list[dict[str, Any]]) -> None:
        self.recs = recs
        self.db = sqlite3.connect(":memory:")
        self.db.execute("CREATE VIRTUAL TABLE m USING fts5(id UNINDEXED, project UNINDEXED, body)")
        self.db.executemany("INSERT INTO m VALUES (?, ?, ?)",
                            [(r["id"], r.get("project", ""), r["text"]) for r in recs])

    def top(self, project: str) -> list[dict[str, Any]]:
        mine = [r for r in self.recs if r.get("project", "") in (project, "")]
        mine.sort(key=lambda r: (r["importance"], r["updated"]), reverse=True)
        return mine[:TOP]

    def fts(self, project: str, prompt: str) -> list[str]:
        words = [w for w in re.findall(r"\w+", prompt) if len(w) > 1]
        if not words:
            return []
        query = " OR ".join(f'"{w}"' for w in words)
        rows = self.db.execute("SELECT id FROM m WHERE m MATCH ? AND project IN (?, '') ORDER BY bm25(m) LIMIT ?",
                               (query, project, FTS_K)).fetchall()
        return [r[0] for r in rows]


def line_of(rec: dict[str, Any]) -> str:
    return f"- [{rec.get('type', 'project')}] {rec['text']} (id: {rec['id']})"


def score(rows: list[dict[str, Any]]) -> dict[str, Any]:
    def mean(values: list[float]) -> float:
        return round(statistics.fmean(values), 3) if values else float("nan")

    out: dict[str, Any] = {
        "must@start": mean([r["must_hit"] for r in rows]),
        "precision@start": mean([r["start_precision"] for r in rows]),
        "tokens@start": round(statistics.fmean([r["start_tokens"] for r in rows])),
        "needed@prompt": mean([r["need_hit"] for r in rows]),
    }
    for lang in ("en", "zh", "para"):
        out[f"needed@prompt.{lang}"] = mean([r["need_hit"] for r in rows if r["lang"] == lang])
    prompt_rows = [r for r in rows if r["prompt_ids"]]
    out["precision@prompt"] = mean([r["prompt_precision"] for r in prompt_rows])
    out["prompts injecting"] = f"{len(prompt_rows)}/{len(rows)}"
    out["tokens/session"] = round(statistics.fmean([r["start_tokens"] + r["prompt_tokens"] for r in rows]))
    out["foreign memories"] = sum(r["foreign"] for r in rows)
    if rows and "start_ms" in rows[0]:
        out["start ms (median)"] = round(statistics.median(r["start_ms"] for r in rows))
        out["prompt ms (median)"] = round(statistics.median(r["prompt_ms"] for r in rows))
    return out


def judge(session: dict[str, Any], must: set[str], start: list[str], prompt: list[str], start_tokens: int,
          prompt_tokens: int, owner: dict[str, str], project: str) -> dict[str, Any]:
    needs = set(session["needs"])
    wanted = must | needs
    seen = set(start) | set(prompt)
    new_prompt = [i for i in prompt if i not in start]
    return {
        "session": session["id"], "lang": session["lang"],
        "must_hit": len(must & set(start)) / len(must) if must else 1.0,
        "start_precision": len(wanted & set(start)) / len(start) if start else 0.0,
        "start_tokens": start_tokens,
        "need_hit": len(needs & seen) / len(needs),
        "prompt_ids": new_prompt,
        "prompt_precision": len(wanted & set(new_prompt)) / len(new_prompt) if new_prompt else 0.0,
        "prompt_tokens": prompt_tokens,
        "foreign": sum(1 for i in seen if owner.get(i, "") not in ("", project)),
        "missed_must": sorted(must - set(start)), "missed_needs": sorted(needs - seen),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="auto", help="[embedding] model for the memory repo (auto or none)")
    parser.add_argument("--prompt-vectors", action="store_true",
                        help="[recall] prompt_vectors = true: the model joins the prompt's search")
    parser.add_argument("--limit", type=int, default=0, help="run only the first N sessions (0: all)")
    parser.add_argument("--json", type=Path, help="write per-session rows here")
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args()

    projects, prefs, noise = load(args.data)
    recs = records(projects, prefs, noise)
    owner = {r["id"]: r.get("project", "") for r in recs}
    by_text = {" ".join(r["text"].split())[:60]: r["id"] for r in recs}
    global_must = {p["id"] for p in prefs if p["must"]}
    print(f"{len(recs)} memories ({sum(len(p['memories']) for p in projects)} in {len(projects)} session projects, "
          f"{len(prefs)} personal, {len(noise)} in {len({n['project'] for n in noise})} other projects); "
          f"{sum(len(p['sessions']) for p in projects)} sessions; model={args.model}"
          f"{'; prompt vectors' if args.prompt_vectors else ''}")

    root = Path(tempfile.mkdtemp(prefix="gitmem-sessions-"))
    home = root / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@x",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "b@x", "GIT_CONFIG_NOSYSTEM": "1",
           "GITMEM_WARM": "0", "GITMEM_LEARN": "0", "GITMEM_PROJECT_SCAN": "0"}
    for key in ("GITMEM_REPO", "GITMEM_CONFIG", "XDG_CONFIG_HOME"):
        env.pop(key, None)
    mem = home / ".gitmem"
    init_repo(mem, author="bench <b@x>")
    settings = f'[embedding]\nmodel = "{args.model}"\n'
    if args.prompt_vectors:
        settings += "[recall]\nprompt_vectors = true\n"
    (mem / "gitmem.toml").write_text(settings, "utf-8")
    MemoryRepo(Config(repo=mem, author="bench <b@x>")).import_records(recs)
    # an installed memory repo has its index and vectors already: build them before timing anything
    subprocess.run([str(Path(sys.executable).parent / "gitmem"), "reindex"], env=env, cwd=home, check=True,
                   capture_output=True)
    hooks = Hooks(env)
    base = Baselines(recs)

    rows: dict[str, list[dict[str, Any]]] = {"gitmem": [], "top-8": [], "top-8 + FTS5": []}
    done = 0
    for project in projects:
        project_id = pid(project["repo"])
        code = code_repo(root, project, env)
        must = {m["id"] for m in project["memories"] if m["must"]} | global_must
        top = base.top(project_id)
        top_ids = [r["id"] for r in top]
        top_tokens = count_tokens("\n".join(line_of(r) for r in top))
        for session in project["sessions"]:
            if args.limit and done >= args.limit:
                break
            done += 1
            git(code, "checkout", "-q", "-B", session["branch"], env=env)
            sid = f"bench-{session['id']}"
            common = {"session_id": sid, "cwd": str(code), "transcript_path": ""}
            start_text, start_ms = hooks.run("session-start", code, {**common, "hook_event_name": "SessionStart",
                                                                      "source": "startup"})
            prompt_text, prompt_ms = hooks.run("user-prompt-submit", code, {
                **common, "hook_event_name": "UserPromptSubmit", "prompt": session["prompt"]})
            row = judge(session, must, ids_in(start_text, by_text), ids_in(prompt_text, by_text),
                        count_tokens(start_text), count_tokens(prompt_text), owner, project_id)
            row.update(start_ms=start_ms, prompt_ms=prompt_ms)
            rows["gitmem"].append(row)
            rows["top-8"].append(judge(session, must, top_ids, [], top_tokens, 0, owner, project_id))
            extra = [i for i in base.fts(project_id, session["prompt"]) if i not in top_ids]
            extra_tokens = count_tokens("\n".join(line_of(r) for r in recs if r["id"] in extra))
            rows["top-8 + FTS5"].append(judge(session, must, top_ids, extra, top_tokens, extra_tokens, owner,
                                              project_id))
    results = {name: score(r) for name, r in rows.items()}
    keys = list(results["gitmem"])
    width = max(len(k) for k in keys)
    print(f"{'':{width}}  " + "  ".join(f"{name:>14}" for name in results))
    for key in keys:
        print(f"{key:{width}}  " + "  ".join(f"{results[name].get(key, ''):>14}" for name in results))
    if args.json:
        args.json.write_text(json.dumps({"results": results, "rows": rows}, indent=1, ensure_ascii=False), "utf-8")
    print(f"(memory repo and code repos left in {root})")


if __name__ == "__main__":
    main()
