"""What the prompt and session-start hook processes load: a hook runs as a new Python process on every prompt and
at every session start, so the shell around the work (entry, handlers, context, settings, directives, the briefing)
must not load modules only a rare path needs. The import tests run the real hook entry under ``python -X importtime``
and read which module loaded which, or run the installed ``gitmem-hook`` with an audit hook that names the gitmem
code behind each import; the last ones check that the directive rules compile only for a prompt that may state
one."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from gitmem.agents.claude.context import recent_errors
from gitmem.api import Repository
from gitmem.config import SNAPSHOT_FILE, Config
from tests.helpers import PROJECT, bm25_only, code_repo, context_of, hook, hook_env, payload

#: standard modules that cost a hook process milliseconds each and that the shell does without
HEAVY = ("dataclasses", "inspect", "typing", "tomllib", "json", "hashlib")
#: the modules whose imports are the work of a prompt's search, not the shell's (the search index, the memory
#: document it returns, the embedding runtime and the tokenizer it may consult)
SEARCH = ("gitmem.search", "gitmem.store.base", "gitmem.store.document", "gitmem.embeddings", "gitmem.text.tokens",
          "tantivy")


@pytest.fixture
def code(tmp_path: Path) -> Path:
    """A code repository whose origin makes the project id ``github.com-acme-shop``."""
    return code_repo(tmp_path)


@pytest.fixture
def env(repo_path: Path) -> dict[str, str]:
    bm25_only(repo_path)  # no model to load
    Repository(Config(repo=repo_path)).remember("Stripe webhooks are verified with the signing secret",
                                                project=PROJECT, category="constraint")
    return hook_env(repo_path)


def importers(report: str) -> dict[str, str]:
    """module → the module whose import loaded it ("" when the script or a function body imported it), from the
    stderr of ``python -X importtime`` (which prints a module after the modules it loaded, one level deeper)."""
    loaded: dict[str, str] = {}
    waiting: list[tuple[int, str]] = []
    for line in report.splitlines():
        if not line.startswith("import time:") or line.rstrip().endswith("imported package"):
            continue
        field = line.rsplit("|", 1)[1]
        depth, name = (len(field) - len(field.lstrip()) - 1) // 2, field.strip()
        for _level, child in [w for w in waiting if w[0] == depth + 1]:
            loaded[child] = name
        waiting = [w for w in waiting if w[0] != depth + 1] + [(depth, name)]
    loaded.update({child: "" for _level, child in waiting})
    return loaded


def loaded_by_the_shell(report: str) -> set[str]:
    """The modules of :data:`HEAVY` that the process loaded other than on behalf of the search."""
    loaded = importers(report)
    found = set()
    for module in HEAVY:
        if module not in loaded:
            continue
        chain, current = [], module
        while current:
            chain.append(current)
            current = loaded.get(current, "")
        if not any(name.startswith(SEARCH) for name in chain):
            found.add(" <- ".join(chain))
    return found


def run_hook(event: str, data: str, env: dict[str, str], cwd: Path) -> tuple[str, str]:
    """(stdout, the import report) of the real hook entry, run as the installed settings run it."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "gitmem.agents.claude.entry", event],
                          input=data, capture_output=True, text=True, cwd=cwd, env={**os.environ, **env}, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout, proc.stderr


#: standard modules a prompt's hook does without (each costs the process milliseconds of CPU: re ~9 with enum and
#: functools, pathlib ~18 with re, fnmatch, urllib.parse and ipaddress, contextlib ~5, threading ~4, signal ~9)
SHELL_FREE = ("re", "enum", "functools", "collections", "pathlib", "fnmatch", "urllib.parse", "ipaddress",
              "contextlib", "threading", "signal", "datetime", "heapq", "hashlib", *HEAVY)
#: what the search's read path needs of them: memories' times are datetimes (a hit carries its Memory)
SEARCH_NEEDS = (("datetime", "gitmem.search."),)

#: run the installed launcher with an audit hook that, for each watched module loaded, writes the gitmem frames
#: (innermost first) that imported it; ``-S`` keeps site's own imports (an editable install's path finder loads
#: re and pathlib) out of the count
_AUDIT = """
import sys
watched, loads = set(sys.argv[1].split(",")), []
def audit(event, args):
    if event == "import" and args[0] in watched:
        frames, frame = [], sys._getframe(1)
        while frame is not None:
            name = frame.f_globals.get("__name__", "")
            if name.startswith("gitmem"):
                frames.append(name + ":" + frame.f_code.co_name)
            frame = frame.f_back
        loads.append(" <- ".join([args[0], *frames]))
sys.addaudithook(audit)
launcher, sys.argv = sys.argv[2], sys.argv[2:]
import os
os._exit = sys.exit  # the launcher ends the process without teardown: here, end it after the report below
try:
    exec(compile(open(launcher, encoding="utf-8").read(), launcher, "exec"), {"__name__": "__main__"})
except SystemExit:
    pass
sys.stderr.write("\\nLOADED\\n" + "\\n".join(loads) + "\\n")
"""


def launcher() -> Path:
    """The ``gitmem-hook`` this environment installed."""
    return Path(sys.executable).parent / "gitmem-hook"


def shell_loads(event: str, data: str, env: dict[str, str], cwd: Path) -> tuple[str, list[str], list[str]]:
    """(stdout, the watched modules loaded, those of them loaded for what the search needs) of the installed
    ``gitmem-hook EVENT``, each as ``module <- the gitmem frames that imported it``."""
    import gitmem

    paths = [str(Path(gitmem.__file__).parents[1]), *dict.fromkeys(sysconfig.get_paths()[k] for k in ("purelib",
                                                                                                      "platlib"))]
    proc = subprocess.run([sys.executable, "-S", "-c", _AUDIT, ",".join(SHELL_FREE), str(launcher()), event],
                          input=data, capture_output=True, text=True, cwd=cwd, timeout=60,
                          env={**os.environ, **env, "PYTHONPATH": os.pathsep.join(paths)})
    assert proc.returncode == 0 and "\nLOADED\n" in proc.stderr, proc.stderr
    loads = [line for line in proc.stderr.split("\nLOADED\n", 1)[1].splitlines() if line]
    needed = [line for line in loads
              if any(line.startswith(f"{module} <- ") and f" <- {by}" in line for module, by in SEARCH_NEEDS)]
    return proc.stdout, [line for line in loads if line not in needed], needed


def test_the_installed_launcher_imports_nothing_but_the_hook_entry() -> None:
    """pip's console-script wrapper imports re before anything of ours; gitmem-hook is a plain script whose
    interpreter line the installer pointed at this environment, which turns the cycle collector off before the
    entry's imports."""
    script = launcher().read_text("utf-8")
    interpreter = script.splitlines()[0].removeprefix("#!").split()[0]
    assert Path(interpreter).parent == Path(sys.executable).parent
    imported = {alias.name if isinstance(node, ast.Import) else f"{node.module}.{alias.name}"
                for node in ast.parse(script).body if isinstance(node, ast.Import | ast.ImportFrom)
                for alias in node.names}
    assert imported == {"gc", "gitmem.agents.claude.entry.end", "gitmem.agents.claude.entry.main"}
    body = [ast.unparse(node) for node in ast.parse(script).body]
    assert body.index("gc.disable()") < body.index("from gitmem.agents.claude.entry import end, main")


def test_a_prompt_s_hook_loads_none_of_the_modules_it_does_without(repo_path: Path, code: Path,
                                                                    env: dict[str, str]) -> None:
    hook("session-start", payload("SessionStart", code, source="startup"), env, cwd=code)
    for session, prompt in (("p1", "Fix the Stripe webhook verification"), ("p2", "rename the variable please")):
        out, loaded, _needed = shell_loads("user-prompt-submit", payload("UserPromptSubmit", code, session=session,
                                                                           prompt=prompt), env, code)
        assert ("signing secret" in out) == (session == "p1")
        assert loaded == [], loaded
    edit = {"tool_name": "Edit", "tool_input": {"file_path": str(code / "a.py")}, "tool_response": {}}
    _out, loaded, needed = shell_loads("post-tool-use", payload("PostToolUse", code, session="t1", **edit), env,
                                       code)
    assert loaded == [] and needed == [], loaded + needed  # the per-tool-call hook: none at all


def test_a_session_start_served_from_its_cache_loads_no_recall_and_no_heavy_module(
        repo_path: Path, code: Path, env: dict[str, str]) -> None:
    for session in ("s0", "s1"):  # computed and cached, with the settings' snapshot (taken well after the files)
        first = hook("session-start", payload("SessionStart", code, session=session, source="startup"), env, cwd=code)
    assert "signing secret" in context_of(first.stdout)
    out, report = run_hook("session-start", payload("SessionStart", code, session="s2", source="startup"), env, code)
    assert context_of(out) == context_of(first.stdout)
    loaded = importers(report)
    assert not {"gitmem.recall", "gitmem.api", "gitmem.search.index", "gitmem.wiki.store", "gitmem.projects.scan",
                "gitmem.sync.round", "gitmem.agents.claude.serverclient", "tantivy", "yaml", "dulwich"} & set(loaded)
    assert not {"dataclasses", "typing", "tomllib", "json", "inspect"} & set(loaded)


def test_a_prompt_loads_nothing_heavy_beyond_what_its_search_needs(repo_path: Path, code: Path,
                                                                     env: dict[str, str]) -> None:
    hook("session-start", payload("SessionStart", code, source="startup"), env, cwd=code)
    for session, prompt in (("p1", "Fix the Stripe webhook verification"), ("p2", "rename the variable please")):
        out, report = run_hook("user-prompt-submit", payload("UserPromptSubmit", code, session=session,
                                                             prompt=prompt), env, code)
        assert ("signing secret" in out) == (session == "p1")
        assert not loaded_by_the_shell(report), loaded_by_the_shell(report)
        loaded = set(importers(report))
        assert "tomllib" not in loaded  # the settings come from their snapshot
        # HEAD is read without the git store; the session start's inputs are not the prompt's; with no server
        # recorded and no notepad on this machine, neither their client nor their reader loads
        spared = {"gitmem.git.store", "gitmem.agents.claude.inputs", "gitmem.agents.claude.serverclient",
                  "gitmem.router.notepad"}
        assert not spared & loaded, spared & loaded
        # nor by the search: hits and the notepad are read with gitmem.text.quickjson, type names stay unimported
        assert not {"json", "typing"} & loaded, {"json", "typing"} & loaded


def test_the_import_report_is_read_right() -> None:
    """The reader above on a report of a known shape: ``json`` loads ``json.decoder``, which loads ``re``."""
    report = "\n".join([
        "import time: self [us] | cumulative | imported package",
        "import time:       100 |        100 |     re",
        "import time:       100 |        200 |   json.decoder",
        "import time:       100 |        300 | json",
        "import time:       100 |        100 |   hashlib",
        "import time:       100 |        200 | gitmem.search.index",
    ])
    assert importers(report) == {"re": "json.decoder", "json.decoder": "json", "json": "",
                                 "gitmem.search.index": "", "hashlib": "gitmem.search.index"}
    assert loaded_by_the_shell(report) == {"json"}


def test_a_changed_settings_file_takes_effect_at_the_next_hook(repo_path: Path, code: Path,
                                                              env: dict[str, str]) -> None:
    prompt = "Fix the Stripe webhook verification"
    first = hook("user-prompt-submit", payload("UserPromptSubmit", code, session="a", prompt=prompt), env, cwd=code)
    assert "signing secret" in context_of(first.stdout, "UserPromptSubmit")
    assert (repo_path / SNAPSHOT_FILE).is_file()
    # a prompt's memories may now take 5 tokens: none fits
    (repo_path / "gitmem.toml").write_text('[embedding]\nmodel = "none"\n[recall]\nprompt_budget = 5\n', "utf-8")
    second = hook("user-prompt-submit", payload("UserPromptSubmit", code, session="b", prompt=prompt), env, cwd=code)
    assert second.returncode == 0 and second.stdout.strip() == "", second.stdout
    (repo_path / "gitmem.toml").write_text("[recall\n", "utf-8")  # broken: the hook logs why, as without a snapshot
    third = hook("user-prompt-submit", payload("UserPromptSubmit", code, session="c", prompt=prompt), env, cwd=code)
    assert third.returncode == 0 and third.stdout.strip() == ""
    assert any("gitmem.toml: not valid TOML" in line for line in recent_errors(repo_path))
    # and says so, once, where the user sees it: every prompt goes without memories until the file is mended
    assert third.stderr.count("\n") == 1 and "gitmem.toml: not valid TOML" in third.stderr, third.stderr
    (repo_path / "gitmem.toml").write_text('[embedding]\nmodel = "none"\n', "utf-8")
    (repo_path / SNAPSHOT_FILE).write_text("{damaged", "utf-8")  # a damaged snapshot: the full loader serves
    fourth = hook("user-prompt-submit", payload("UserPromptSubmit", code, session="d", prompt=prompt), env, cwd=code)
    assert "signing secret" in context_of(fourth.stdout, "UserPromptSubmit")


def test_a_task_prompt_with_common_words_compiles_no_rule() -> None:
    """Words as common as "from", "not", "have" and "this" no longer make a prompt pay for the rules."""
    code = ("from gitmem.text import directives as d\n"
            "prompt = 'This page does not load the avatars from the CDN; every user would have seen it'\n"
            "assert d.detect_directives(prompt) == [] and d.detect_correction(prompt) is None\n"
            "print(sum(v.compiled for v in vars(d).values() if isinstance(v, d.LazyPattern)))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["0"]


def test_the_memory_record_loads_no_dataclasses_re_nor_functools() -> None:
    """A prompt's hits are :class:`Memory` objects: the module that declares it, and building and rendering one,
    must not load what a hook process spares. Run without ``site`` (the package from the source tree): an
    editable install's import finder loads ``re`` before any of gitmem does."""
    from tests.helpers import ROOT

    code = ("import sys\n"
            "from gitmem.store.memory import Memory, bullet\n"
            "imported = set(sys.modules)\n"
            "memory = Memory(id='pg', text='Use PostgreSQL', category='decision')\n"
            "assert bullet(memory) == '- [user] Use PostgreSQL (id: pg)' and memory.title == 'Use PostgreSQL'\n"
            "print(' '.join(sorted(imported)), '|', ' '.join(sorted(sys.modules)))\n")
    proc = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    imported, built = (set(part.split()) for part in proc.stdout.split("|"))
    assert "gitmem.store.memory" in imported and "gitmem.store.document" not in built
    spared = {"dataclasses", "inspect", "re", "functools", "unicodedata", "typing", "enum"}
    assert not spared & built, spared & built
    assert "datetime" not in imported  # a search hit brings its own datetimes; only taking the time loads it
