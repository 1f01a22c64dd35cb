"""Project ids that two machines agree on, and the recall query built from the code repository."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitmem.projects.identity import code_context, normalise_remote, project_id_for
from gitmem.text.tokens import count_tokens
from tests.helpers import git


@pytest.mark.parametrize(
    "url",
    [
        "git@github.com:Acme/Shop.git",
        "https://github.com/acme/shop",
        "https://user:secret@github.com/acme/shop.git/",
        "ssh://git@github.com:22/acme/shop.git",
        "github.com:acme/shop",
    ],
)
def test_every_spelling_of_a_remote_gives_one_project_id(url: str) -> None:
    assert normalise_remote(url) == "github.com/acme/shop"
    assert project_id_for(url, Path("/x/whatever")) == "github.com-acme-shop"


def test_without_a_remote_the_directory_name_is_the_id(tmp_path: Path) -> None:
    assert project_id_for("", tmp_path / "My Project") == "my-project"
    assert code_context(tmp_path / "My Project").project == "my-project"


def test_query_from_project_branch_and_last_three_subjects(tmp_path: Path) -> None:
    code = tmp_path / "shop"
    code.mkdir()
    git(code, "init", "-q", "-b", "main")
    git(code, "remote", "add", "origin", "git@github.com:acme/shop.git")
    for subject in ("first commit", "Add payment retries", "Switch HTTP client to requests", "Fix flaky test"):
        git(code, "commit", "-q", "--allow-empty", "-m", subject)
    git(code, "checkout", "-q", "-b", "feature/billing-export")
    (code / "src").mkdir()
    context = code_context(code / "src")
    assert context.project == "github.com-acme-shop" and context.root == code
    assert context.branch == "feature/billing-export"
    assert context.subjects == ("Fix flaky test", "Switch HTTP client to requests", "Add payment retries")
    query = context.query()
    assert query.startswith("shop feature billing export") and "first commit" not in query


def test_token_counts_come_from_a_real_tokenizer() -> None:
    assert count_tokens("") == 0
    # A subword tokenizer splits identifiers: more tokens than words, fewer than characters.
    code = "def parse_frontmatter_header(text): return yaml.safe_load(text)"
    assert len(code.split()) < count_tokens(code) < len(code)
    assert count_tokens("改完代码不要自动提交") == 10
