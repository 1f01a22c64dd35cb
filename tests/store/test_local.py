"""Machine-local hook state: the hot paths a session start names and the memories' uses, counted by one appended
line per use."""

from __future__ import annotations

import json
import multiprocessing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gitmem.store import hotpaths, usage
from gitmem.store import local as observe

DAY = 86400.0
WEEK = 7 * DAY


def expected_ranking(uses: list[tuple[str, float]], now: float) -> list[str]:
    """Paths by the sum of their uses, each halved every week before ``now``."""
    scores: dict[str, float] = {}
    for path, moment in uses:
        scores[path] = scores.get(path, 0.0) + 0.5 ** ((now - moment) / WEEK)
    return [p for p, _ in sorted(scores.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)]


def test_hot_paths_rank_by_uses_that_halve_every_week(tmp_path: Path) -> None:
    start = 1_800_000_000.0
    # a file used a lot three weeks ago falls behind those used a little in the last two
    uses = [("/src/old.py", start + i) for i in range(8)]
    uses += [("/src/mid.py", start + 2 * WEEK + i) for i in range(3)]
    uses += [("/src/new.py", start + 3 * WEEK + i) for i in range(2)]
    for path, moment in uses:
        hotpaths.touch_hot_path(tmp_path, "p", path, now=moment)
    now = start + 3 * WEEK + DAY
    assert hotpaths.hot_paths(tmp_path, "p", now=now) == expected_ranking(uses, now) == \
        ["/src/new.py", "/src/mid.py", "/src/old.py"]


def test_the_log_folds_into_the_same_counts_and_keeps_the_top_50(tmp_path: Path) -> None:
    """Past its size the log is rewritten as one line per file; what a session start reads does not change, and
    only the 50 most used files stay."""
    start = 1_800_000_000.0
    uses = [(f"/src/f{i % 60:02d}.py", start + i * 600.0) for i in range(240)]
    uses += [(f"/src/f{i:02d}.py", start + 240 * 600.0 + i) for i in range(10)]  # f00-f09 used once more
    folded, unfolded = tmp_path / "folded", tmp_path / "unfolded"
    for path, moment in uses:
        hotpaths.touch_hot_path(folded, "p", path, now=moment, max_log_bytes=2048)
        hotpaths.touch_hot_path(unfolded, "p", path, now=moment)
    log = folded / "hotpaths" / "p.jsonl"
    assert log.stat().st_size < (unfolded / "hotpaths" / "p.jsonl").stat().st_size
    now = start + 250 * 600.0
    ranking = hotpaths.hot_paths(folded, "p", limit=60, now=now)
    assert ranking == hotpaths.hot_paths(unfolded, "p", limit=60, now=now)
    assert len(ranking) == 50 and ranking[:10] == expected_ranking(uses, now)[:10]
    assert set(ranking[:10]) == {f"/src/f{i:02d}.py" for i in range(10)}


def _at_once(target: Callable[[str, int], None], folder: str, count: int, processes: int = 4) -> None:
    """``target(folder, count)`` in ``processes`` processes at once (hooks of parallel tool calls), waited for."""
    started = [multiprocessing.get_context("fork").Process(target=target, args=(folder, count))
               for _ in range(processes)]
    for process in started:
        process.start()
    for process in started:
        process.join(30)


def _touch_many(local: str, count: int) -> None:
    for _ in range(count):
        hotpaths.touch_hot_path(local, "p", "/src/cart.py", now=1_800_000_000.0)


def _touch_and_fold(local: str, count: int) -> None:
    for i in range(count):
        hotpaths.touch_hot_path(local, "p", f"/src/{i % 3}.py", now=1_800_000_000.0, max_log_bytes=150)


def test_parallel_tool_calls_lose_no_use(tmp_path: Path) -> None:
    """Each use is one appended line, so hooks running at once (parallel tool calls) all count."""
    _at_once(_touch_many, str(tmp_path), 40)
    log = (tmp_path / "hotpaths" / "p.jsonl").read_text().splitlines()
    assert len(log) == 160
    assert sum(json.loads(line)[1] for line in log) == 160


def test_uses_appended_while_another_hook_folds_the_log_all_count(tmp_path: Path) -> None:
    """Past its limit a hook folds the log into one line per path; hooks appending meanwhile wait for the fold and
    append to the folded log, so no use is lost (at one instant, counts do not decay)."""
    _at_once(_touch_and_fold, str(tmp_path), 60)
    lines = [json.loads(line) for line in (tmp_path / "hotpaths" / "p.jsonl").read_text().splitlines()]
    assert len(lines) < 240  # folded along the way
    assert sum(line[1] for line in lines) == 240


def test_hot_paths_of_an_earlier_version_are_kept(tmp_path: Path) -> None:
    """Counts kept by an earlier version (``hotpaths/<project>.json``) still rank, and the first fold moves them
    into the log."""
    start = 1_800_000_000.0
    earlier = tmp_path / "hotpaths" / "p.json"
    earlier.parent.mkdir()
    earlier.write_text(json.dumps({"/src/cart.py": [5.0, start], "/src/util.py": [1.0, start]}))
    hotpaths.touch_hot_path(tmp_path, "p", "/src/new.py", now=start + 1)
    hotpaths.touch_hot_path(tmp_path, "p", "/src/new.py", now=start + 2)
    before = hotpaths.hot_paths(tmp_path, "p", now=start + 10)
    assert before == ["/src/cart.py", "/src/new.py", "/src/util.py"]
    hotpaths.touch_hot_path(tmp_path, "p", "/src/new.py", now=start + 3, max_log_bytes=0)  # folds
    assert not earlier.exists()
    assert hotpaths.hot_paths(tmp_path, "p", now=start + 10) == ["/src/cart.py", "/src/new.py", "/src/util.py"]
    assert len((tmp_path / "hotpaths" / "p.jsonl").read_text().splitlines()) == 3


def test_a_damaged_line_counts_for_nothing(tmp_path: Path) -> None:
    hotpaths.touch_hot_path(tmp_path, "p", "/src/cart.py", now=1_800_000_000.0)
    with (tmp_path / "hotpaths" / "p.jsonl").open("a") as fh:
        fh.write('["/src/half.py", 1.0, 18000\n{"not": "a use"}\n42\n')
    hotpaths.touch_hot_path(tmp_path, "p", "/src/util.py", now=1_800_000_001.0)
    assert hotpaths.hot_paths(tmp_path, "p", now=1_800_000_002.0) == ["/src/util.py", "/src/cart.py"]


def test_a_large_output_is_summarised_from_its_start_with_its_secrets_redacted() -> None:
    """A Read of a whole file or a long list of files: the summary is its start, secrets there redacted, and the
    rest (which cannot reach the summary) costs nothing to redact."""
    token = "ghp" + "_" + "aB3dE5fG7hJ9kL1m" * 2 + "nP4q"
    content = f'GITHUB_TOKEN = "{token}"\n' + "def handler(event):\n    return event\n" * 6000
    read = {"type": "text", "file": {"filePath": "/src/app.py", "content": content + token, "numLines": 12001}}
    summary = observe.summarise(read)
    assert token not in summary and "[REDACTED:github-token]" in summary
    assert summary.startswith('{"type":"text","file":{"filePath":"/src/app.py","content":"GITHUB_TOKEN = ')
    assert len(summary) < observe.SUMMARY_CHARS + 20 and summary.endswith("]") and "…[+" in summary
    listing = observe.summarise({"filenames": [f"/src/f{i}.py" for i in range(20000)], "numFiles": 20000})
    assert listing.startswith('{"filenames":["/src/f0.py","/src/f1.py",') and "…[+" in listing


def _use_many(repo: str, count: int) -> None:
    for _ in range(count):
        usage.bump_usage(repo, ["pg", "ruff"])


def test_uses_are_appended_and_folded_into_the_same_counts(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A prompt's memories count as used with one appended line; past the log's limit the lines fold into
    ``usage.json``, and parallel hooks folding and appending at once lose no use."""
    from datetime import UTC, datetime

    usage.bump_usage(tmp_path, ["pg"], now=datetime(2026, 5, 1, tzinfo=UTC))
    usage.bump_usage(tmp_path, ["pg", "ruff"], now=datetime(2026, 5, 2, tzinfo=UTC))
    assert not (tmp_path / "local" / "usage.json").exists()  # nothing rewritten yet
    assert usage.read_usage(tmp_path) == {"pg": {"count": 2, "last_used": "2026-05-02T00:00:00Z"},
                                            "ruff": {"count": 1, "last_used": "2026-05-02T00:00:00Z"}}
    monkeypatch.setattr(usage, "USAGE_LOG_BYTES", 300)  # fold every few uses
    _at_once(_use_many, str(tmp_path), 30)
    counts = usage.read_usage(tmp_path)
    assert counts["pg"]["count"] == 122 and counts["ruff"]["count"] == 121
    assert (tmp_path / "local" / "usage.json").is_file()
    assert (tmp_path / "local" / "usage.jsonl").stat().st_size < 2000  # of ~10 kB appended


JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=250),
                           lambda inner: st.lists(inner, max_size=4), max_leaves=12)


@given(st.lists(JSON_VALUES, max_size=6), st.lists(JSON_VALUES, max_size=6))
def test_what_a_session_was_given_keeps_only_ids_and_parts_a_server_accepts(recalled: list[Any],
                                                                           parts: list[Any]) -> None:
    """Whatever a hand-edited or older sessions file holds, what is read back is ids of at most
    ``MAX_ID_CHARS`` characters and ``(id, n)`` with a part number n ≥ 1, and recording more keeps the old ones."""
    entry: dict[str, Any] = {"recalled": recalled, "parts": parts}
    observe.record_given(entry, ["new-id"], [("long-id", 2)])
    ids, pairs = observe.read_ids(entry["recalled"]), observe.read_parts(entry["parts"])
    assert ids[-1] == "new-id" and pairs[-1] == ("long-id", 2)
    assert all(0 < len(i) <= observe.MAX_ID_CHARS for i in ids)
    assert all(0 < len(i) <= observe.MAX_ID_CHARS and type(n) is int and n >= 1 for i, n in pairs)
    assert set(observe.read_ids(recalled)) <= set(ids) and set(observe.read_parts(parts)) <= set(pairs)


def test_junk_in_a_session_entry_is_skipped() -> None:
    junk = [[1, 2], ["x" * 300, 1], ["a", True], ["a", 0], ["a"], "a", ["ok", 2]]
    assert observe.read_parts(junk) == [("ok", 2)]
    assert observe.read_ids(["x" * 300, 5, "", None, "ok"]) == ["ok"]
    assert observe.read_parts({"a": 1}) == [] and observe.read_ids("abc") == []
