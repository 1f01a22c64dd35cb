"""What a session is told: Essentials always, Relevant memories only past the absolute relevance gate, and the
memories each prompt brings in, once per session, never another project's."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from gitmem.api import Repository
from gitmem.briefing.conflicts import negated_terms
from gitmem.briefing.essentials import RULE_VERSION, essentials, settle
from gitmem.briefing.gate import BM25_MIN, CJK_FLOOR, OWN_PROJECT, admits, cjk_share, covers
from gitmem.briefing.prompt import task_terms
from gitmem.config import Config, EmbeddingConfig
from gitmem.recall import relevant_hits
from gitmem.search.hit import Hit
from gitmem.search.index import Index
from gitmem.search.schema import memory_chunks
from gitmem.search.scoring import ScoreParts
from gitmem.store import document as docs
from gitmem.store.layout import init_repo
from gitmem.store.memories import MemoryRepo
from gitmem.store.usage import read_usage
from gitmem.text.records import replace
from tests.helpers import (
    PROJECT,
    bm25_only,
    code_repo,
    context_of,
    design_note,
    hook,
    hook_env,
    payload,
    run_cli,
)

OTHER = "github.com-acme-warehouse"


@pytest.fixture
def code(tmp_path: Path) -> Path:
    return code_repo(tmp_path, "Prepare release notes for 2.3")


@pytest.fixture
def env(repo_path: Path) -> dict[str, str]:
    return hook_env(repo_path)


def _noise(n: int) -> list[dict[str, object]]:
    topics = ["release notes", "changelog wording", "docker images", "logo colours", "translation files"]
    tags = [f"{chr(97 + i % 26)}{chr(97 + i // 26 % 26)}q" for i in range(n)]  # unique words, no digits
    return [{"text": f"{topics[i % 5].capitalize()} note {tags[i]}: keep the entry short and dated",
             "project": OTHER if i % 2 else "", "importance": 3 + i % 2} for i in range(n)]


def _started_among_noise(repo_path: Path, code: Path, env: dict[str, str], own: str, other: str) -> None:
    """A BM25-only repository of 200 unrelated memories plus the decision ``own`` of the session's project and
    ``other`` of another project, and a session that has started in ``code``."""
    bm25_only(repo_path)
    repo = Repository(Config(repo=repo_path))
    repo.import_records(_noise(200))
    repo.remember(own, project=PROJECT, category="decision")
    repo.remember(other, project=OTHER, category="decision")
    hook("session-start", payload("SessionStart", code, source="startup"), env, cwd=code)


def _ask(code: Path, env: dict[str, str], prompt: str) -> str:
    """What the prompt hook injects for ``prompt`` in session ``sess-1`` ("" for nothing)."""
    done = hook("user-prompt-submit", payload("UserPromptSubmit", code, prompt=prompt), env, cwd=code)
    return context_of(done.stdout, "UserPromptSubmit") if done.stdout else ""


def _parts_shown(text: str) -> list[tuple[str, str]]:
    """(id, n) of each long memory ``text`` shows by its part n."""
    return re.findall(r"\(id: (\S+), part (\d+) of", text)


def _session(repo_path: Path) -> dict[str, Any]:
    """Session ``sess-1``'s entry in ``local/sessions.json``."""
    entry: dict[str, Any] = json.loads((repo_path / "local" / "sessions.json").read_text())["sessions"]["sess-1"]
    return entry


def test_a_project_rule_is_there_among_300_unrelated_memories(repo_path: Path, code: Path,
                                                              env: dict[str, str]) -> None:
    bm25_only(repo_path)
    repo = Repository(Config(repo=repo_path))
    repo.import_records(_noise(300))
    made = run_cli("remember", "runs tests with pytest -x", "--category", "constraint", "--importance", "4",
                   env=env, cwd=code)
    assert "project github.com-acme-shop" in made.err
    context = context_of(hook("session-start", payload("SessionStart", code, source="startup"), env,
                              cwd=code).stdout)
    essentials_part = context.split("## Essentials")[1]
    assert "runs tests with pytest -x" in essentials_part
    # the release-note commit matches release-note memories of another project and global ones: none is shown
    assert "keep the entry short" not in context and OTHER not in context
    assert "more memories" in context and "gitmem search" in context


def test_the_prompt_brings_what_it_needs_once_and_nothing_unrelated(repo_path: Path, code: Path,
                                                                    env: dict[str, str]) -> None:
    _started_among_noise(repo_path, code, env,
                         "Stripe webhooks are verified with the signing secret from settings.STRIPE_WEBHOOK_KEY",
                         "Stripe webhooks of the warehouse go through the queue")

    first = hook("user-prompt-submit", payload("UserPromptSubmit", code, prompt="Fix the Stripe webhook "
                                               "verification failing in production"), env, cwd=code)
    text = context_of(first.stdout, "UserPromptSubmit")
    assert "signing secret" in text and "warehouse" not in text
    again = hook("user-prompt-submit", payload("UserPromptSubmit", code, prompt="the stripe webhook again"), env,
                 cwd=code)
    assert again.stdout == ""  # the session has it already
    unrelated = hook("user-prompt-submit", payload("UserPromptSubmit", code, prompt="rename the variable x to y"),
                     env, cwd=code)
    assert unrelated.returncode == 0 and unrelated.stdout == ""
    other_session = hook("user-prompt-submit", payload("UserPromptSubmit", code, "sess-2",
                                                       prompt="stripe webhook verification"), env, cwd=code)
    assert "signing secret" in context_of(other_session.stdout, "UserPromptSubmit")


@pytest.mark.parametrize("how", ["pre-compact", "clear"])
def test_what_a_prompt_brought_comes_again_after_the_context_is_compacted(repo_path: Path, code: Path,
                                                                        env: dict[str, str], how: str) -> None:
    """A compaction takes from the context what earlier prompts added; the session still counted it as given, so
    no later prompt brought it back."""
    _started_among_noise(repo_path, code, env,
                         "Stripe webhooks are verified with the signing secret from settings.STRIPE_WEBHOOK_KEY",
                         "Stripe webhooks of the warehouse go through the queue")
    assert "signing secret" in _ask(code, env, "Fix the Stripe webhook verification failing in production")
    assert _ask(code, env, "the stripe webhook again") == ""
    if how == "pre-compact":
        hook("pre-compact", payload("PreCompact", code, trigger="auto"), env, cwd=code)
    started = hook("session-start", payload("SessionStart", code, source="compact" if how == "pre-compact"
                                            else "clear"), env, cwd=code)
    assert "signing secret" not in started.stdout  # the start's own block is about the branch, not the webhook
    assert "signing secret" in _ask(code, env, "the stripe webhook verification again")
    assert _ask(code, env, "and the stripe webhook once more") == ""  # given again, counted again


def test_a_text_stored_twice_is_given_once(repo_path: Path, code: Path,
                                                                          env: dict[str, str]) -> None:
    """Two memories of one text (two imports, two machines) made the same line twice in a prompt's block."""
    _started_among_noise(repo_path, code, env, "Never hardcode keys like the AWS one in source",
                         "Warehouse keys rotate monthly")
    repo = Repository(Config(repo=repo_path))
    repo.remember("Payment retries back off exponentially up to 5 times", project=PROJECT)
    repo.remember("Payment  retries back off exponentially up to 5 times", project=PROJECT)
    text = _ask(code, env, "How do payment retries back off?")
    assert text.count("back off exponentially") == 1
    assert _ask(code, env, "the payment retries again") == ""  # the copy counts as given too


def test_a_filler_word_brings_nothing_in_a_small_repository(repo_path: Path, code: Path, env: dict[str, str]) -> None:
    """In a repository of a few dozen memories every word is rare: "What's the weather like?" brought a memory
    whose only shared word was "like"."""
    bm25_only(repo_path)
    repo = Repository(Config(repo=repo_path))
    repo.import_records(_noise(40))
    repo.remember("Old scripts hardcode keys like the AWS one in source", project=PROJECT, importance=2)
    hook("session-start", payload("SessionStart", code, source="startup"), env, cwd=code)
    assert _ask(code, env, "What's the weather like?") == ""
    assert "hardcode keys" in _ask(code, env, "where do the AWS keys go? not hardcoded in source I hope")


def test_a_prompt_stating_a_rule_searches_what_the_rule_is_about(repo_path: Path, code: Path,
                                                                  env: dict[str, str]) -> None:
    """"never use yarn from now on" searched "never" and "use" too, and brought rules sharing only those."""
    bm25_only(repo_path)
    repo = Repository(Config(repo=repo_path))
    repo.import_records(_noise(40))
    for text in ("Never push to a remote without asking me first", "Always use uv for Python installs",
                 "yarn.lock is generated by the lockfile bot"):
        repo.remember(text, project=PROJECT, importance=2)
    hook("session-start", payload("SessionStart", code, source="startup"), env, cwd=code)
    brought = _ask(code, env, "never use yarn from now on")
    assert "yarn.lock" in brought and "Never push" not in brought and "uv for Python" not in brought


def test_essentials_are_deduplicated_and_a_correction_wins() -> None:
    def memory(text: str, category: str, day: int, importance: int = 4) -> docs.Memory:
        when = docs.parse_timestamp(f"2026-11-{day:02d}T10:00:00Z", "updated")
        return docs.make_memory(text, category=category, importance=importance, project=PROJECT, created=when,
                                updated=when)

    old = memory("Run the frontend with npm run dev", "constraint", 1)
    fix = memory("Use pnpm, not npm: the lockfile is pnpm-lock.yaml", "correction", 20)
    twice = [memory("Never commit .env files", "constraint", 3), memory("never commit .env files!", "constraint", 4)]
    kept = settle([old, fix, *twice])
    texts = [m.text for m in kept]
    assert fix.text in texts and old.text not in texts
    assert sum("commit .env" in t.lower() for t in texts) == 1
    assert negated_terms("不要用 yarn，用 pnpm") == {"yarn"}


def test_a_rule_written_again_in_nearly_the_same_words_is_shown_once() -> None:
    def memory(text: str, day: int, importance: int = 4, project: str = PROJECT) -> docs.Memory:
        when = docs.parse_timestamp(f"2026-11-{day:02d}T10:00:00Z", "updated")
        return docs.make_memory(text, category="constraint", importance=importance, project=project, created=when,
                                updated=when)

    first = memory("Run tests with pytest -x; never use unittest", 2)
    again = memory("Run tests with pytest -x, never unittest", 9)
    other = memory("Never use unittest for new test files", 5)
    kept = [m.text for m in settle([first, again, other])]
    assert kept == [again.text, other.text]  # the newer wording of the same rule, and the other rule
    stronger = memory("Run tests with pytest -x; never use unittest", 1, importance=5, project="")
    assert [m.text for m in settle([again, stronger])] == [stronger.text]  # a global one of importance 5 first
    zh = [memory("所有接口都必须写单元测试", 3), memory("所有接口都必须写单元测试，没有例外", 4)]
    assert len(settle(zh)) == 1
    assert len(settle([memory("所有接口都必须写单元测试", 3), memory("所有页面都必须做无障碍检查", 4)])) == 2


def test_a_standing_preference_of_importance_4_is_essential(repo_path: Path) -> None:
    """"Keep answers short" (a global preference of importance 4) was not shown at session start: only rules were."""
    repo = Repository(Config(repo=repo_path, embedding=EmbeddingConfig(model="none")))
    repo.remember("Keep answers short: the change, why, and how it was checked", category="preference",
                  importance=4, scope="global")
    repo.remember("改动较大的时候先说明思路再动手", category="preference", importance=4, project=PROJECT)
    repo.remember("I like a line length of 100 in my own projects", category="preference", importance=3,
                  scope="global")
    shown, more = essentials(repo_path, PROJECT)
    assert sorted(m.text for m in shown) == ["Keep answers short: the change, why, and how it was checked",
                                             "改动较大的时候先说明思路再动手"]
    assert more == 1


def test_when_two_rules_contradict_the_newer_is_kept_unless_the_other_is_a_correction() -> None:
    def memory(text: str, category: str, day: int, project: str = PROJECT) -> docs.Memory:
        when = docs.parse_timestamp(f"2026-11-{day:02d}T10:00:00Z", "updated")
        return docs.make_memory(text, category=category, importance=4, project=project, created=when, updated=when)

    yarn = memory("Use yarn, not npm, for installs", "constraint", 2)
    back = memory("We are back on npm: install with npm ci", "constraint", 9)
    assert [m.text for m in settle([yarn, back])] == [back.text]  # the newer rule wins, whichever way it points
    newer_again = memory("Install with yarn; do not use npm", "constraint", 15)
    assert [m.text for m in settle([yarn, back, newer_again])] == [newer_again.text, yarn.text]
    fix = memory("Correction: never run npm publish by hand", "correction", 1)
    later = memory("Release with npm publish from the release branch", "decision", 20)
    assert [m.text for m in settle([fix, later])] == [fix.text]  # a correction outranks a newer plain memory
    elsewhere = memory("Use npm workspaces", "constraint", 30, project="github.com-acme-other")
    assert elsewhere.text in [m.text for m in settle([yarn, elsewhere])]  # other scopes do not contradict
    # a rule that forbids something only under a condition forbids nothing another rule names: both stand
    asking = memory("From now on never push without asking me.", "constraint", 3)
    bot = memory("Always push with the deploy bot account.", "constraint", 4)
    assert len(settle([asking, bot])) == 2 and negated_terms(asking.text) == set()
    assert len(settle([memory("不要直接 push 到 main", "constraint", 3), bot])) == 2


def test_a_rule_written_as_background_is_essential_and_a_summary_line_it_contradicts_is_dropped(
        repo_path: Path, code: Path, env: dict[str, str]) -> None:
    bm25_only(repo_path)
    (code / "package.json").write_text(json.dumps({"name": "shop", "scripts": {"test": "jest", "dev": "vite"},
                                                   "devDependencies": {"vite": "5"}}))
    (code / "package-lock.json").write_text("{}")
    assert run_cli("project", "scan", "--cwd", str(code), env=env).code == 0
    shown = json.loads(run_cli("project", "show", "--cwd", str(code), "--json", env=env).out)
    assert "npm" in shown["summary"]
    run_cli("remember", "Use pnpm, not npm, for every script", "--category", "correction", "--importance", "4",
            env=env, cwd=code)
    run_cli("remember", "Never touch the migrations folder by hand", "--importance", "3", env=env, cwd=code)
    context = context_of(hook("session-start", payload("SessionStart", code, source="startup"), env,
                              cwd=code).stdout)
    assert "Never touch the migrations folder" in context.split("## Essentials")[1]
    summary = context.split("## Project memory")[1] if "## Project memory" in context else ""
    assert "npm" not in summary.replace("pnpm", "")
    rules, _more = essentials(repo_path, PROJECT)
    assert [m.category for m in rules].count("correction") == 1


def test_the_gate_ignores_an_english_model_on_chinese_text(tmp_path: Path) -> None:
    """With the packaged English model, a Chinese prompt's cosines are noise: only a word match admits."""
    path = tmp_path / "mem"
    init_repo(path)
    repo = Repository(Config(repo=path, embedding=EmbeddingConfig(model="auto")))
    repo.import_records([{"text": "Deploys go through the staging cluster first, then production",
                          "project": PROJECT},
                         {"text": "The billing service retries card payments three times", "project": PROJECT},
                         {"text": "Unrelated: the office plants are watered on Fridays"}])
    index = repo.index()
    if index.embedder is None:
        pytest.skip("no embedding model installed")
    assert not covers(index.embedder.model_id, "部署") and covers(index.embedder.model_id, "deploy")
    chinese = relevant_hits(index, "周五给植物浇水", project=PROJECT, k=5)
    assert chinese == []
    related = relevant_hits(index, "deployment order of environments", project=PROJECT, k=5)
    assert [h.memory.text for h in related] == ["Deploys go through the staging cluster first, then production"]


def test_a_chinese_prompt_finds_the_memory_holding_its_latin_word(tmp_path: Path) -> None:
    """A Chinese prompt's BM25 floor is raised against chance matches of single characters; a memory holding the
    prompt's Latin word ("slurm") was held to it too and missed (BM25 5.4 under ~6.5), while a memory sharing the
    common word 提交 came."""
    path = tmp_path / "mem"
    init_repo(path)
    repo = Repository(Config(repo=path, embedding=EmbeddingConfig(model="none")))
    repo.import_records([*_noise(60),
                         {"text": "Training jobs go to the gpu-long slurm partition", "project": PROJECT},
                         {"text": "回答我时用中文，但代码注释和提交信息用英文。"}])
    texts = [h.memory.text for h in relevant_hits(repo.index(), "训练任务提交到哪个 slurm 分区？", project=PROJECT, k=5,
                                                  own_project=OWN_PROJECT)]
    assert "Training jobs go to the gpu-long slurm partition" in texts
    # a Latin word in a memory the query does not hold is no exemption
    assert "Training jobs go to the gpu-long slurm partition" not in [
        h.memory.text for h in relevant_hits(repo.index(), "训练任务提交到哪个分区？", project=PROJECT, k=5,
                                             own_project=OWN_PROJECT)]


def test_a_long_note_with_one_rule_in_it_is_no_essential(repo_path: Path) -> None:
    """A 2.5k runbook of importance 4 with "Never hotfix in production containers." in it was given whole as a rule
    at every session start."""
    repo = Repository(Config(repo=repo_path, embedding=EmbeddingConfig(model="none")))
    runbook = "Infra runbook. Never hotfix in production containers. " + " ".join(
        f"Step {i}: check the dashboard, page the on-call engineer, then write the incident note." for i in range(30))
    assert len(runbook) > 2000
    repo.remember(runbook, project=PROJECT, importance=4)
    repo.remember("Never hotfix in production containers", project=PROJECT, importance=4)
    shown, _ = essentials(repo_path, PROJECT)
    assert [m.text for m in shown] == ["Never hotfix in production containers"]
    assert json.loads((repo_path / ".cache" / "essentials.json").read_text())["/rule"] == RULE_VERSION


def test_essentials_follow_edits_through_their_cache(repo_path: Path) -> None:
    repo = Repository(Config(repo=repo_path, embedding=EmbeddingConfig(model="none")))
    hint = repo.remember("Staging deploys need the VPN", project=PROJECT, category="background", importance=2)
    repo.remember("Never deploy on Fridays", project=PROJECT, category="constraint", importance=4)
    first, _ = essentials(repo_path, PROJECT)
    assert [m.text for m in first] == ["Never deploy on Fridays"]
    cache = json.loads((repo_path / ".cache" / "essentials.json").read_text())
    assert set(cache[PROJECT]) == {f"{hint.id}.md", f"{first[0].id}.md"}
    repo.save(replace(hint, importance=5))  # the file changes: read again, now an essential
    again, _ = essentials(repo_path, PROJECT)
    assert {m.text for m in again} == {"Never deploy on Fridays", "Staging deploys need the VPN"}
    repo.forget(first[0].id, "deploys are automated now")
    assert [m.text for m in essentials(repo_path, PROJECT)[0]] == ["Staging deploys need the VPN"]
    # what a block leaves out counts active memories: not the forgotten one, nor a file that cannot be read
    # (a project with old deprecated memories said "N more memories not shown" for them)
    (repo_path / hint.path).with_name("broken.md").write_text("---\nid: [\n---\ntext\n", "utf-8")
    for _ in range(2):  # read, then from the cache
        assert essentials(repo_path, PROJECT)[1] == 0


def test_a_task_prompt_is_read_as_one() -> None:
    """Identifiers give their words, abbreviations their long form, a commit type is no topic."""
    query = task_terms("fix(ssr): rewrite stack traces in moduleRunnerTransform and session_interface docs")
    words = re.findall(r"\w+", query)
    assert "fix" not in words and "ssr" in words
    assert {"module", "runner", "transform", "session", "interface", "documentation"} <= set(words)
    assert task_terms("Document the perf flags").split()[-2:] == ["docs", "performance"]
    assert task_terms("plain words only") == "plain words only"


def test_a_chinese_prompt_s_rule_words_are_no_topic(repo: MemoryRepo) -> None:
    """"以後所有提交訊息都必須用英文寫" brought "上線前必須經過運維審批": they share 必须 alone, a rule's wording."""
    assert task_terms("以後所有提交訊息都必須用英文寫") == "以后所有提交讯息都 用英文写"
    assert task_terms("不要用 npm，改用 pnpm") == "用 npm，改用 pnpm"
    assert task_terms("必须") == "必须"  # nothing else: the words stay
    assert task_terms("绝对路径怎么处理") == "绝对路径怎么处理"  # a word that names a thing too
    repo.import_records([{"id": "gate", "text": "上線前必須經過運維審批"},
                         {"id": "msgs", "text": "提交信息用中文写，标题不超过 50 字"}])
    index = Index(repo, embedder=None)
    found = [h.id for h in index.search(task_terms("以後所有提交訊息都必須用英文寫"), k=5)]
    assert found[0] == "msgs" and "gate" not in found


def test_a_prompt_naming_an_identifier_finds_the_memory_in_plain_words(repo_path: Path, code: Path,
                                                                      env: dict[str, str]) -> None:
    _started_among_noise(repo_path, code, env,
                         "Sessions are signed cookies by default; server-side sessions come from extensions",
                         "The interface of the warehouse sessions is private")
    first = hook("user-prompt-submit", payload("UserPromptSubmit", code, prompt="Ensure "
                                               "session_interface.open_session runs after URL matching"),
                 env, cwd=code)
    text = context_of(first.stdout, "UserPromptSubmit")
    assert "signed cookies" in text and "warehouse" not in text


def test_a_prompt_about_part_of_a_long_note_brings_that_part(repo_path: Path, code: Path,
                                                             env: dict[str, str]) -> None:
    """A long memory found for a prompt is shown by the part that matched (with its place among the parts and
    the id that fetches the rest), where the whole note would not fit the prompt's token budget at all."""
    note = design_note()
    _started_among_noise(repo_path, code, env, note, "Stripe webhooks of the warehouse go through the queue")
    first = hook("user-prompt-submit", payload("UserPromptSubmit", code, prompt="Fix the Stripe webhook "
                                               "verification failing in production"), env, cwd=code)
    text = context_of(first.stdout, "UserPromptSubmit")
    line = next(line for line in text.splitlines() if "signing secret" in line)
    part = re.search(r"\(id: (\S+), part (\d+) of (\d+)\)$", line)
    assert part is not None, line
    assert 1 < int(part[2]) < int(part[3])  # a middle part: neither the note's start nor the whole note
    assert "billing subsystem" not in text and len(line) < len(note) / 2
    assert Repository(Config(repo=repo_path)).get(part[1]).text == note  # the id fetches the whole note
    assert read_usage(repo_path)[part[1]]["count"] == 1  # a part shown is a use of the memory


def test_a_later_prompt_brings_another_part_of_a_long_note_but_never_the_same_part_twice(
        repo_path: Path, code: Path, env: dict[str, str]) -> None:
    """What a session was shown of a long memory is recorded by part: a prompt about another section of the
    same note brings that section, a prompt about the first section again brings nothing."""
    _started_among_noise(repo_path, code, env, design_note(), "Stripe webhooks of the warehouse go through the queue")

    first = _ask(code, env, "Fix the Stripe webhook verification failing in production")
    second = _ask(code, env, "The Redis mail queue is not drained by the mail worker")
    assert "signing secret" in first and "Redis queue" not in first
    assert "Redis queue" in second and "signing secret" not in second
    parts = [_parts_shown(text) for text in (first, second)]
    assert len(parts[0]) == len(parts[1]) == 1 and parts[0][0][0] == parts[1][0][0] and parts[0] != parts[1]
    session = _session(repo_path)
    assert sorted(session["parts"]) == sorted([i, int(n)] for i, n in (parts[0][0], parts[1][0]))
    # the query holds the previous prompts too: whichever part it matches best, the webhook's or the mail
    # queue's, was shown already, so nothing of the note comes again
    assert parts[0][0][0] not in _ask(code, env, "Stripe webhook verification still fails")


def test_a_prompt_whose_best_part_was_shown_brings_the_part_its_new_words_match(
        repo_path: Path, code: Path, env: dict[str, str]) -> None:
    """When the part of a long note a prompt matches best was shown already, the part that matches the prompt's
    other words comes instead (judged by that part's own score), rather than nothing; a part that only repeats
    the shown one's matching sentence (chunks overlap) does not."""
    _started_among_noise(repo_path, code, env, design_note(), "Stripe webhooks of the warehouse go through the queue")

    first = _ask(code, env, "Fix the Stripe webhook verification failing in production")
    second = _ask(code, env, "Stripe webhook events still fail verification; could the Redis mail queue be the cause?")
    assert "signing secret" in first and "Redis queue" in second and "signing secret" not in second
    shown = [_parts_shown(text) for text in (first, second)]
    assert len(shown[0]) == len(shown[1]) == 1 and shown[0][0][0] == shown[1][0][0] and shown[0] != shown[1]


def test_a_long_rule_opened_at_session_start_gives_its_other_parts_to_later_prompts(
        repo_path: Path, code: Path, env: dict[str, str]) -> None:
    """A must-follow note too long for the session-start budget is shown by its first part, and the session
    records that part only: a prompt about another section of the note brings that section."""
    bm25_only(repo_path, "[recall]\nbudget = 500\n")  # a small session-start budget
    repo = Repository(Config(repo=repo_path))
    repo.import_records(_noise(50))
    note = repo.remember(design_note(), project=PROJECT, category="constraint", importance=5)
    started = context_of(hook("session-start", payload("SessionStart", code, source="startup"), env,
                              cwd=code).stdout)
    assert f"(id: {note.id}, part 1 of" in started and "signing secret" not in started
    session = _session(repo_path)
    assert session["parts"] == [[note.id, 1]] and note.id not in session["recalled"]
    asked = hook("user-prompt-submit", payload("UserPromptSubmit", code, prompt="Fix the Stripe webhook "
                                               "verification failing in production"), env, cwd=code)
    text = context_of(asked.stdout, "UserPromptSubmit")
    assert "signing secret" in text and re.search(rf"\(id: {note.id}, part [2-9] of", text)


def test_a_long_memory_matched_as_a_whole_shows_its_part_holding_most_query_words() -> None:
    """A hit that points at no chunk (the memory's own document matched best, or its vector did) shows the part
    holding most of the query's words; a short memory is shown whole."""
    from gitmem.search.analysis import analyze_query, build_analyzer
    from gitmem.store.memory import bullet

    analyzer = build_analyzer()
    memory = docs.make_memory(design_note(), category="decision")
    terms = frozenset(analyze_query("stripe signing secret", analyzer).highlight_terms())
    parts = ScoreParts(bm25=9.0, vector=None, similarity=1.0, importance=0.6, recency=1.0)
    hit = Hit(id=memory.id, score=1.0, memory=memory, parts=parts, terms=terms, analyzer=analyzer)
    assert hit.passage is not None
    text, n, count = hit.passage
    assert "signing secret" in text and 1 < n < count
    assert bullet(memory, hit.passage).endswith(f"(id: {memory.id}, part {n} of {count})")
    # a hit that points at a chunk shows that chunk, not the one holding most query words
    assert replace(hit, chunk=n + 1).passage == (memory_chunks(memory)[n], n + 1, count)
    unmatched = replace(hit, terms=frozenset({"nothing"}))
    assert unmatched.passage is not None and unmatched.passage[1] == 1  # none holds a query word: the first
    short = docs.make_memory("Stripe webhooks are verified with the signing secret", category="decision")
    assert replace(hit, memory=short).passage is None


def test_a_passage_labels_the_reason_and_the_how_where_they_start() -> None:
    """A long memory's part that runs into its why (or lies inside it) shows the "Why:" a whole memory's bullet
    gives, where the reason starts, so the agent does not read the reason as more of the rule; the index keeps
    the words unlabelled. A short memory's bullet labels each once."""
    from gitmem.search.analysis import analyze_query, build_analyzer
    from gitmem.store.memory import bullet

    analyzer = build_analyzer()
    why = " ".join(f"Incident {i} taught us that a replayed webhook charges a customer twice." for i in range(14))
    memory = docs.make_memory(design_note(), why=why, how="Check the event id against the ledger first.",
                              category="decision")
    terms = frozenset(analyze_query("replayed webhook charges twice ledger", analyzer).highlight_terms())
    parts = ScoreParts(bm25=9.0, vector=None, similarity=1.0, importance=0.6, recency=1.0)
    hit = Hit(id=memory.id, score=1.0, memory=memory, parts=parts, terms=terms, analyzer=analyzer)
    raw = memory_chunks(memory)
    shown = [replace(hit, chunk=n).passage for n in range(1, len(raw) + 1)]
    texts = [p[0] for p in shown if p is not None]
    assert len(texts) == len(raw) > 2
    assert "Why: Incident 0 taught" in " ".join(texts) and "How: Check the event id" in texts[-1]
    assert all(t.startswith("Why: Incident") for t, r in zip(texts, raw, strict=True) if r.startswith("Incident"))
    assert not any("Why:" in r or "How:" in r for r in raw)  # what BM25 and the model read
    assert [t.replace("Why: ", "").replace("How: ", "") for t in texts] == raw  # nothing else moved
    assert "Why: Incident" in bullet(memory, shown[-1])
    short = docs.make_memory("Use PostgreSQL", why="JSON queries", how="new services")
    assert bullet(short) == f"- [user] Use PostgreSQL Why: JSON queries How: new services (id: {short.id})"


def _scored(project: str, bm25: float, query: str = "unit tests",
            text: str = "Unit tests run with pnpm run test-unit; 单元测试用 pnpm 运行") -> Hit:
    """A hit on a memory reading ``text`` with a raw BM25 score of ``bm25`` for ``query``, as the gate sees it."""
    from gitmem.search.analysis import analyze_query, build_analyzer

    memory = docs.make_memory(text, project=project)
    return Hit(id=memory.id, score=1.0, memory=memory, terms=frozenset(analyze_query(query, build_analyzer())
                                                                       .highlight_terms()),
               parts=ScoreParts(bm25=bm25, vector=None, similarity=1.0, importance=0.6, recency=1.0))


def test_a_chinese_prompt_needs_more_evidence_than_an_english_one() -> None:
    """A Chinese query's BM25 counts each of its characters besides the character pairs, so chance matches score
    higher than an English query's words do: its floor is CJK_FLOOR times as high, a mixed query's in proportion
    to its Chinese characters, and a Japanese stopword changes nothing."""
    between = BM25_MIN * (1 + CJK_FLOOR) / 2
    assert CJK_FLOOR > 1
    assert admits(_scored("", between), "unit tests")
    assert not admits(_scored("", between, "单元测试"), "单元测试")
    assert admits(_scored("", BM25_MIN * CJK_FLOOR, "单元测试"), "单元测试")
    assert admits(_scored("", BM25_MIN, "unit tests です"), "unit tests です")  # a stopword: no Japanese term left
    mixed = "run unit tests 单元测试"  # 3 words, 4 characters: the floor rises by 4/7 of CJK_FLOOR - 1
    chinese = "单元测试用 pnpm 运行"  # a memory holding none of the query's Latin words
    assert cjk_share(_scored("", 0.0, mixed, chinese).terms) == pytest.approx(4 / 7)
    assert admits(_scored("", BM25_MIN * (1 + (CJK_FLOOR - 1) * 4 / 7), mixed, chinese), mixed)
    assert not admits(_scored("", BM25_MIN * (1 + (CJK_FLOOR - 1) * 4 / 7) * 0.99, mixed, chinese), mixed)
    # one that holds them ("unit", "test") matched more than characters: the plain floor
    assert admits(_scored("", BM25_MIN, mixed), mixed)


def test_in_a_small_repository_a_chinese_prompt_s_chance_characters_stay_out() -> None:
    """The threshold shrinks with a small repository (its rarity weights are small), but chance matches of single
    characters do not: in one of 20 memories, "用" and "文" carried 今天天气怎么样？用中文回答 to 文件存储用S3
    (BM25 1.8). The characters' part of the floor keeps its full size; an English prompt's floor still shrinks."""
    query = "单元测试"
    full = BM25_MIN * CJK_FLOOR
    small = BM25_MIN * 20 / 200 + BM25_MIN * (CJK_FLOOR - 1)  # size 20: the words' part shrinks, not the rest
    assert not admits(_scored("", small * 0.99, query), query, size=20)
    assert admits(_scored("", small, query), query, size=20)
    assert small < full and admits(_scored("", full, query), query, size=200)
    assert admits(_scored("", BM25_MIN * 20 / 200, "unit tests"), "unit tests", size=20)


def test_a_chinese_prompt_brings_what_it_names_and_nothing_by_chance_in_a_small_repository(repo_path: Path) -> None:
    texts = ["文件存储用S3", "接口文档用OpenAPI描述", "日志统一写到ELK", "订单服务使用PostgreSQL数据库",
             "前端使用React和TypeScript开发", "部署前需要运维审批", "缓存用Redis，过期时间一小时", "发布只在周二和周四",
             "不要在周五发布", "用户密码用bcrypt哈希", "接口统一返回JSON", "提交信息用英文"]
    repo = Repository(Config(repo=repo_path, embedding=EmbeddingConfig(model="none")))
    repo.import_records([{"text": t, "project": PROJECT} for t in texts])
    index = repo.index()
    asked = {"今天天气怎么样？用中文回答": set(), "帮我写一首关于春天的诗": set(),
             "订单服务应该用哪个数据库？": {"订单服务使用PostgreSQL数据库"},
             "缓存过期时间设多少": {"缓存用Redis，过期时间一小时"},
             "周五能发布吗": {"不要在周五发布", "发布只在周二和周四"}, "密码怎么存": {"用户密码用bcrypt哈希"},
             "日志写到哪里": {"日志统一写到ELK"}, "前端用什么框架": {"前端使用React和TypeScript开发"}}
    for prompt, wanted in asked.items():
        found = relevant_hits(index, prompt, project=PROJECT, k=5, mode="bm25", own_project=OWN_PROJECT)
        assert {h.memory.text for h in found} == wanted, prompt


def test_a_prompt_admits_weaker_evidence_for_the_project_s_own_memories() -> None:
    """The same BM25 score admits a memory of the session's project for a prompt, not a global one, and not at
    session start (whose query is a guess from the branch and commits)."""
    hit = _scored
    between = BM25_MIN * (OWN_PROJECT + 1) / 2
    assert admits(hit(PROJECT, between), "unit tests", project=PROJECT, own_project=OWN_PROJECT)
    assert not admits(hit("", between), "unit tests", project=PROJECT, own_project=OWN_PROJECT)
    assert not admits(hit(PROJECT, between), "unit tests", project=PROJECT)
    assert not admits(hit(PROJECT, BM25_MIN * OWN_PROJECT * 0.9), "unit tests", project=PROJECT,
                      own_project=OWN_PROJECT)


def test_the_prompt_hook_opens_the_index_without_the_memory_api(repo_path: Path, code: Path,
                                                                env: dict[str, str]) -> None:
    """A prompt's recall reads the index from the repository's folder: the memory API (its redaction rules,
    layout checks) stays unloaded, and an English prompt over English memories never compiles a CJK pattern."""
    import os
    import subprocess
    import sys

    bm25_only(repo_path)
    Repository(Config(repo=repo_path)).remember("Stripe webhooks are verified with the signing secret",
                                                project=PROJECT, category="decision")
    hook("session-start", payload("SessionStart", code, source="startup"), env, cwd=code)
    prompt = payload("UserPromptSubmit", code, prompt="Fix the Stripe webhook verification")
    script = (
        "import sys, os; from pathlib import Path; from gitmem.agents.claude.entry import run; "
        f"run('user-prompt-submit', {prompt!r}.encode(), env=dict(os.environ), cwd=Path.cwd(), home=Path.home()); "
        "from gitmem.search import analysis; from gitmem.text import scripts; "
        "print(scripts.CJK_RUN.compiled or analysis._CJK_STOP_RE.compiled "
        "or scripts.CJK_CHAR.compiled, file=sys.stderr); "
        "print(','.join(sorted(sys.modules)), file=sys.stderr)"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=code,
                          env={**os.environ, **env}, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "signing secret" in context_of(proc.stdout, "UserPromptSubmit")
    compiled, modules = proc.stderr.strip().splitlines()[-2:]
    assert compiled == "False"
    assert not set(modules.split(",")) & {"gitmem.api", "gitmem.store.memories", "gitmem.store.layout"}
