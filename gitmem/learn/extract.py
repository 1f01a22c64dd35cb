"""Knowledge from code commits: a commit message and the changed files in, decision/constraint findings out.

Pure functions over text (no git, no I/O): the post-commit hook and ``gitmem extract`` read the commit with the
repository layer (:func:`gitmem.git.coderepo.code_commit`) and store what comes out of :func:`findings_for_commit`.

From the **message** (English and Chinese): "switch to", "replace X with Y", "migrate", "drop", "adopt",
"use X instead of Y", "deprecate", "BREAKING CHANGE", a conventional-commit ``!``, rule words ("must", "never",
"always", "do not"), 决定/改用/弃用/迁移/替换/采用/不再/禁止/必须; traditional characters are read as
simplified (棄用 as 弃用, 修復： as 修复：), the finding keeping the text as written. The conventional-commit type
becomes a tag. The body is read sentence by sentence, its wrapped lines joined first. A subject that describes
rather than decides is read more strictly: a bug fix's ("fix: crash introduced in #123", "fix: don't crash on an
empty cart") decides only in so many words ("switch to", "replace X with Y", "never log tokens"); documentation,
tests and style ("docs: explain why we never cache tokens") decide nothing in their subject.

From the **files**: dependencies added, removed or moved a major version in ``package.json``, ``pyproject.toml``,
``requirements*.txt``, ``Cargo.toml``, ``go.mod``, ``Gemfile``, ``pom.xml``; lint/format/test/CI configuration
introduced or changed; Dockerfile base images; license changes.

A dependency finding whose package the message already names, or explains (:func:`gitmem.learn.commits.owners`), is
folded into the message's finding (one memory "Switch HTTP client from urllib to requests", its ``why`` saying
``requirements.txt: +requests``). A BREAKING CHANGE footer restating a ``!`` subject is one finding; findings read as
sentences. A commit in git's revert form yields nothing: ``gitmem extract`` takes back what the reverted commit
taught (:func:`gitmem.learn.commits.take_back`).
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath
from typing import Any

from gitmem.learn.commits import owners, restates, reverted_sha, sentence
from gitmem.text.scripts import simplified

MANIFESTS = ("package.json", "pyproject.toml", "Cargo.toml", "go.mod", "Gemfile", "pom.xml")
MAX_TEXT = 400


@dataclass(frozen=True)
class Finding:
    """One thing a commit decided. ``key`` identifies it for deduplication."""

    text: str
    category: str = "decision"  # decision | constraint
    importance: int = 3
    tags: tuple[str, ...] = ()
    why: str = ""
    key: str = ""
    names: tuple[str, ...] = field(default=(), compare=False)


# -- message --------------------------------------------------------------------------------------------
# the type, its scope and the colon in ASCII or full width ("chore：统一时区", "fix（api）：…"), or a Chinese type word
_CONVENTIONAL = re.compile(r"^(?P<type>[a-z]+|修复|新增|功能|特性|重构|文档|测试|杂项|构建|性能|样式|回滚)"
                           r"(?:[(（][^)）]*[)）])?(?P<bang>[!！])?[:：]\s*(?P<rest>.+)$", re.IGNORECASE)
#: the Chinese type words as the conventional types they stand for
_CN_TYPES = {"修复": "fix", "新增": "feat", "功能": "feat", "特性": "feat", "重构": "refactor", "文档": "docs",
             "测试": "test", "杂项": "chore", "构建": "build", "性能": "perf", "样式": "style", "回滚": "revert"}
# a decision in so many words: these say what was chosen over what, wherever they stand
_DECISION_STRONG = (r"switch(?:ed|es|ing)?\b.*\bto\b|replac(?:e|ed|es|ing)\b.*\bwith\b|migrat(?:e|ed|es|ing|ion)\b|"
                    r"mov(?:e|ed|es|ing) (?:from\b.*\b)?to\b|use\b.*\binstead of\b|stop(?:ped)? using\b|"
                    r"no longer use\b|standardi[sz]e on\b|remov(?:e|ed|es|ing) (?:the )?dependency")
# verbs that decide only when the commit is about a choice: in a fix's subject they describe the bug ("crash
# introduced in #123", "drop shadow missing")
_DECISION_WEAK = (r"drop(?:ped|s|ping)?\b(?! ?-?in\b)|adopt(?:ed|s|ing)?\b|deprecat(?:e|ed|es|ing)\b"
                  r"|introduc(?:e|ed|es|ing)\b")
_DECISION_EN = re.compile(rf"\b(?:{_DECISION_STRONG}|{_DECISION_WEAK})", re.IGNORECASE)
_FIX_DECISION_EN = re.compile(rf"\b(?:{_DECISION_STRONG})", re.IGNORECASE)
# "never"/"always" state a rule as an instruction ("Never log tokens", "we always pin versions", "tokens are never
# logged"), not where they describe what went wrong ("the modal never closes", "always-on banner")
_RULE_WORDS = (r"(?:^\W*|\b(?:we|you|i|they|should|to|and|but|so|please|is|are|be|get|gets)\s+)"
               r"(?:never|always)\b(?!-)|\bmust(?: not)?\b|\bis required\b|\bare required\b|\bforbid\w*")
_CONSTRAINT_EN = re.compile(rf"{_RULE_WORDS}|\b(?:do not|don't)\b", re.IGNORECASE)
# a fix's subject saying what it no longer does ("don't crash on an empty cart") states no rule
_FIX_CONSTRAINT_EN = re.compile(_RULE_WORDS, re.IGNORECASE)
_DECISION_ZH = re.compile(r"(决定|改用|弃用|迁移|替换|采用|换成|切换到|引入|移除)")
_CONSTRAINT_ZH = re.compile(r"(不再|禁止|必须|不要|不得|务必)")
_BREAKING = re.compile(r"^BREAKING[ -]CHANGE:\s*(.+)$", re.IGNORECASE)
_NOISE = re.compile(r"^(merge (branch|pull request|remote-tracking)|revert \"|signed-off-by:|co-authored-by:|"
                    r"[a-z-]+: .*<.*@.*>$)", re.IGNORECASE)
#: conventional-commit types whose subject describes the change rather than decides: documentation, tests, style
_DESCRIBING_TYPES = ("docs", "doc", "test", "tests", "style")
#: types (and opening words) of a bug fix: its subject decides only in so many words
_FIX_TYPES = ("fix", "fixes", "fixed", "bugfix", "hotfix")
_ITEM = re.compile(r"^(?:[-*•]|\d+[.)])\s")
# a sentence ends at . ! ? before a capital (or an opening quote or bracket), or after 。！？
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'`(\[])|(?<=[。！？])")


def _clip(text: str, limit: int = MAX_TEXT) -> str:
    text = " ".join(text.split()).rstrip(".")
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _key(text: str) -> str:
    return "msg:" + normalise(text)


def _paragraphs(lines: list[str]) -> list[str]:
    """The body's lines joined back into what they say: a paragraph wrapped over several lines (git's convention
    of ~72 columns) is one text; a list item, a footer, a blank line or a comment starts a new one."""
    out: list[str] = []
    joining = False
    for line in lines:
        if not line or line.startswith("#") or _NOISE.match(line):
            joining = False
            continue
        if joining and not _ITEM.match(line) and not _BREAKING.match(line):
            out[-1] = f"{out[-1]} {line}"
        else:
            out.append(line)
            joining = True
    return out


def from_message(message: str) -> list[Finding]:
    """Decisions and constraints stated in a commit message: its subject, then each sentence of its body. The
    patterns read a text's simplified form (:func:`simplified`, one character for one, so a match's places hold in
    the text as written); a finding's text is cut from the text as written."""
    lines = [line.strip() for line in message.strip().splitlines()]
    if not lines or _NOISE.match(lines[0]):
        return []
    subject = lines[0]
    tags: list[str] = ["commit"]
    breaking = False
    kind = subject.split(None, 1)[0].lower().rstrip(":") if subject.split() else ""
    match = _CONVENTIONAL.match(simplified(subject))
    if match:
        kind = _CN_TYPES.get(match.group("type"), match.group("type").lower())
        tags.append(kind)
        breaking = bool(match.group("bang"))
        subject = subject[match.start("rest"):match.end("rest")].strip()
    findings: list[Finding] = []
    footers: list[Finding] = []
    seen: set[str] = set()

    def add(text: str, category: str, importance: int) -> Finding | None:
        text = sentence(_clip(text))
        key = _key(text)
        if not text or key in seen:
            return None
        seen.add(key)
        findings.append(Finding(text, category, importance, tuple(tags), key=key))
        return findings[-1]

    def read(text: str, importance: int, fix: bool = False) -> None:
        """Each sentence of ``text`` that states a constraint or a decision."""
        for said in filter(None, (part.strip() for part in _SENTENCE_END.split(text))):
            simple = simplified(said)
            if (_FIX_CONSTRAINT_EN if fix else _CONSTRAINT_EN).search(simple) or _CONSTRAINT_ZH.search(simple):
                add(said, "constraint", 3)
            elif (_FIX_DECISION_EN if fix else _DECISION_EN).search(simple) or _DECISION_ZH.search(simple):
                add(said, "decision", importance)

    if breaking:
        add(subject, "constraint", 4)
    elif kind not in _DESCRIBING_TYPES and not subject.startswith("#"):
        read(subject, 3, fix=kind in _FIX_TYPES)
    for paragraph in _paragraphs(lines[1:]):
        brk = _BREAKING.match(paragraph)
        if brk:
            footer = add(f"Breaking change: {brk.group(1)}", "constraint", 4)
            if footer is not None:
                footers.append(footer)
            continue
        read(paragraph.lstrip("-*• ").strip(), 2)
    # "feat!: drop X" with "BREAKING CHANGE: drop X; …" is one finding, the footer's, which says more
    return [f for f in findings if any(f is b for b in footers) or not any(restates(b.text, f.text) for b in footers)]


# -- dependencies ---------------------------------------------------------------------------------------
_REQ = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?\s*(.*)$")
_VERSION = re.compile(r"(\d+)(?:\.\d+)*")


def _major(version: str) -> int | None:
    match = _VERSION.search(version or "")
    return int(match.group(1)) if match else None


def _pep508(spec: str) -> tuple[str, str] | None:
    match = _REQ.match(spec.split(";")[0])
    if not match:
        return None
    return match.group(1).lower().replace("_", "-"), match.group(2).strip()


def _requirements(text: str) -> dict[str, str]:
    deps: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line or line.startswith("-") or "://" in line:
            continue
        parsed = _pep508(line)
        if parsed:
            deps[parsed[0]] = parsed[1]
    return deps


def _toml(text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return {}


def _pyproject(text: str) -> dict[str, str]:
    data = _toml(text)
    deps: dict[str, str] = {}
    project = data.get("project", {}) if isinstance(data.get("project"), dict) else {}
    specs: list[Any] = list(project.get("dependencies") or [])
    for group in (project.get("optional-dependencies") or {}).values():
        specs.extend(group or [])
    for group in (data.get("dependency-groups") or {}).values():
        specs.extend(g for g in group or [] if isinstance(g, str))
    for spec in specs:
        parsed = _pep508(str(spec))
        if parsed:
            deps[parsed[0]] = parsed[1]
    poetry = data.get("tool", {}).get("poetry", {}) if isinstance(data.get("tool"), dict) else {}
    tables = [poetry.get("dependencies") or {}, poetry.get("dev-dependencies") or {}]
    tables += [g.get("dependencies") or {} for g in (poetry.get("group") or {}).values() if isinstance(g, dict)]
    for table in tables:
        for name, value in table.items():
            if name.lower() != "python":
                deps[name.lower()] = value if isinstance(value, str) else str(value.get("version", ""))
    return deps


def _package_json(text: str) -> dict[str, str]:
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return {}
    deps: dict[str, str] = {}
    if isinstance(data, dict):
        for section in ("dependencies", "devDependencies", "peerDependencies", "optionalDependencies"):
            table = data.get(section)
            if isinstance(table, dict):
                deps.update({str(k): str(v) for k, v in table.items()})
    return deps


def _cargo(text: str) -> dict[str, str]:
    data = _toml(text)
    deps: dict[str, str] = {}
    for section in ("dependencies", "dev-dependencies", "build-dependencies"):
        table = data.get(section)
        if isinstance(table, dict):
            for name, value in table.items():
                deps[name] = value if isinstance(value, str) else str(value.get("version", "")) if isinstance(
                    value, dict) else ""
    return deps


_GO_REQ = re.compile(r"^\s*(?:require\s+)?([a-z0-9.-]+\.[a-z]+/[^\s]+)\s+(v[^\s]+)", re.IGNORECASE)


def _go_mod(text: str) -> dict[str, str]:
    deps: dict[str, str] = {}
    for line in text.splitlines():
        match = _GO_REQ.match(line)
        if match and not line.strip().startswith("module"):
            path = re.sub(r"/v\d+$", "", match.group(1))
            deps[path] = match.group(2)
    return deps


_GEM = re.compile(r"""^\s*gem\s+['"]([^'"]+)['"](?:\s*,\s*['"]([^'"]+)['"])?""")


def _gemfile(text: str) -> dict[str, str]:
    return {m.group(1): m.group(2) or "" for m in map(_GEM.match, text.splitlines()) if m}


_POM_DEP = re.compile(r"<dependency>(.*?)</dependency>", re.DOTALL)


def _pom(text: str) -> dict[str, str]:
    deps: dict[str, str] = {}
    for block in _POM_DEP.findall(text):
        group = re.search(r"<groupId>\s*([^<]+?)\s*</groupId>", block)
        artifact = re.search(r"<artifactId>\s*([^<]+?)\s*</artifactId>", block)
        version = re.search(r"<version>\s*([^<]+?)\s*</version>", block)
        if artifact:
            name = f"{group.group(1)}:{artifact.group(1)}" if group else artifact.group(1)
            deps[name] = version.group(1) if version else ""
    return deps


def dependencies(path: str, text: str) -> dict[str, str] | None:
    """Dependencies (name → version spec) declared by a manifest file, None when ``path`` is no manifest."""
    name = PurePosixPath(path).name
    if re.match(r"^requirements.*\.txt$", name) or (name.endswith(".txt") and "requirements" in path):
        return _requirements(text)
    parsers = {"package.json": _package_json, "pyproject.toml": _pyproject, "Cargo.toml": _cargo,
               "go.mod": _go_mod, "Gemfile": _gemfile, "pom.xml": _pom}
    parser = parsers.get(name)
    return parser(text) if parser else None


def _names(name: str) -> tuple[str, ...]:
    """A dependency's name and its short form (``github.com/gin-gonic/gin`` → ``gin``, ``org.junit:junit``
    → ``junit``): what a commit message would call it."""
    short = name.rsplit("/", 1)[-1].rsplit(":", 1)[-1]
    return (name, short) if short and short != name and len(short) > 1 else (name,)


def from_dependencies(path: str, old: str | None, new: str | None) -> list[Finding]:
    before = dependencies(path, old or "") or {}
    after = dependencies(path, new or "") or {}
    findings: list[Finding] = []
    for name in sorted(set(after) - set(before)):
        version = f" {after[name]}" if after[name] and after[name] != "*" else ""
        findings.append(Finding(f"Added dependency {name}{version} ({path})", "decision", 3,
                                ("dependency",), f"{path}: +{name}", f"dep:add:{name}:{path}", _names(name)))
    for name in sorted(set(before) - set(after)):
        findings.append(Finding(f"Removed dependency {name} ({path})", "decision", 3,
                                ("dependency",), f"{path}: -{name}", f"dep:remove:{name}:{path}", _names(name)))
    for name in sorted(set(before) & set(after)):
        old_major, new_major = _major(before[name]), _major(after[name])
        if old_major is not None and new_major is not None and old_major != new_major:
            findings.append(Finding(
                f"Moved dependency {name} from {before[name]} to {after[name]} ({path})", "decision", 3,
                ("dependency", "upgrade"), f"{path}: {name} {before[name]} → {after[name]}",
                f"dep:major:{name}:{new_major}:{path}", _names(name)))
    return findings


# -- tooling, docker, license ---------------------------------------------------------------------------
_TOOLS: tuple[tuple[str, str], ...] = (
    (r"(^|/)\.github/workflows/[^/]+\.ya?ml$|(^|/)\.gitlab-ci\.ya?ml$|(^|/)\.circleci/config\.ya?ml$|"
     r"(^|/)Jenkinsfile$|(^|/)azure-pipelines\.ya?ml$|(^|/)\.travis\.ya?ml$|(^|/)bitbucket-pipelines\.ya?ml$", "CI"),
    (r"(^|/)(pytest\.ini|tox\.ini|noxfile\.py|conftest\.py|phpunit\.xml(\.dist)?|karma\.conf\.js|"
     r"(jest|vitest|playwright|cypress)\.config\.[cm]?[jt]s)$", "test"),
    (r"(^|/)(\.?ruff\.toml|\.flake8|\.pylintrc|pylintrc|mypy\.ini|\.mypy\.ini|\.isort\.cfg|\.pre-commit-config\.yaml|"
     r"\.editorconfig|\.eslintrc(\.[a-z]+)?|eslint\.config\.[cm]?[jt]s|\.prettierrc(\.[a-z]+)?|"
     r"prettier\.config\.[cm]?js|biome\.jsonc?|\.stylelintrc(\.[a-z]+)?|\.rubocop\.yml|\.golangci\.ya?ml|"
     r"rustfmt\.toml|\.rustfmt\.toml|clippy\.toml|\.clang-format|\.clang-tidy|checkstyle\.xml)$",
     "lint/format"),
)
_PYPROJECT_TOOLS = {"ruff": "lint/format", "black": "lint/format", "isort": "lint/format", "mypy": "lint/format",
                    "pylint": "lint/format", "flake8": "lint/format", "pyright": "lint/format",
                    "pytest": "test", "coverage": "test", "tox": "test"}


def tool_kind(path: str) -> str | None:
    for pattern, kind in _TOOLS:
        if re.search(pattern, path):
            return kind
    return None


def from_tooling(path: str, old: str | None, new: str | None, subject: str) -> list[Finding]:
    findings: list[Finding] = []
    kind = tool_kind(path)
    if kind and new is not None:
        what = "Introduced" if old is None else "Changed"
        tail = f": {subject}" if subject and old is not None else ""
        findings.append(Finding(_clip(f"{what} {kind} configuration {path}{tail}"),
                                "constraint" if kind != "CI" else "decision", 3 if old is None else 2,
                                ("tooling", kind.replace("/", "-")), key=f"tool:{what.lower()}:{path}"))
    if PurePosixPath(path).name == "pyproject.toml":
        before = _toml(old or "").get("tool", {})
        after = _toml(new or "").get("tool", {})
        for tool in sorted(set(after) - set(before)):
            if tool in _PYPROJECT_TOOLS:
                label = _PYPROJECT_TOOLS[tool]
                findings.append(Finding(f"Introduced {tool} ({label}) configuration in {path}", "constraint", 3,
                                        ("tooling", label.replace("/", "-"), tool), key=f"tool:add:{tool}:{path}",
                                        names=(tool,)))
    return findings


_FROM = re.compile(r"^\s*FROM\s+(?:--platform=\S+\s+)?(\S+)", re.IGNORECASE | re.MULTILINE)


def from_dockerfile(path: str, old: str | None, new: str | None) -> list[Finding]:
    name = PurePosixPath(path).name
    if not (name == "Dockerfile" or name.startswith("Dockerfile.") or name.endswith(".Dockerfile")):
        return []
    before = [m for m in _FROM.findall(old or "") if not m.startswith("$")]
    after = [m for m in _FROM.findall(new or "") if not m.startswith("$")]
    if before == after or not after:
        return []
    if before:
        text = f"Docker base image changed from {', '.join(before)} to {', '.join(after)} ({path})"
    else:
        text = f"Docker base image {', '.join(after)} ({path})"
    return [Finding(text, "decision", 3, ("docker",), key=f"docker:{path}:{','.join(after)}",
                    names=tuple(a.split(":")[0] for a in after))]


_LICENSES = (
    (r"Apache License,?\s+Version 2\.0", "Apache-2.0"), (r"GNU AFFERO GENERAL PUBLIC LICENSE", "AGPL-3.0"),
    (r"GNU LESSER GENERAL PUBLIC LICENSE", "LGPL"), (r"GNU GENERAL PUBLIC LICENSE\s+Version 3", "GPL-3.0"),
    (r"GNU GENERAL PUBLIC LICENSE\s+Version 2", "GPL-2.0"),
    (r"Mozilla Public License,? (version|v\.?) ?2\.0", "MPL-2.0"),
    (r"\bMIT License\b|Permission is hereby granted, free of charge", "MIT"),
    (r"Redistribution and use in source and binary forms", "BSD"), (r"\bISC License\b", "ISC"),
    (r"This is free and unencumbered software released into the public domain", "Unlicense"),
)


def license_name(text: str) -> str:
    for pattern, name in _LICENSES:
        if re.search(pattern, text, re.IGNORECASE):
            return name
    return "a custom license" if text.strip() else ""


def from_license(path: str, old: str | None, new: str | None) -> list[Finding]:
    name = PurePosixPath(path).name.upper()
    if path.count("/") or not name.startswith(("LICENSE", "LICENCE", "COPYING")):
        return []
    before, after = license_name(old or ""), license_name(new or "")
    if before == after:
        return []
    if not after:
        text = f"Removed the {before} license file {path}"
    elif before:
        text = f"License changed from {before} to {after} ({path})"
    else:
        text = f"The project is licensed under {after} ({path})"
    return [Finding(text, "constraint", 4, ("license",), key=f"license:{after or 'none'}")]


def _json_license(text: str) -> Any:
    return (json.loads(text) or {}).get("license")


def _pyproject_license(text: str) -> Any:
    return _toml(text).get("project", {}).get("license")


def _cargo_license(text: str) -> Any:
    return _toml(text).get("package", {}).get("license")


_META_LICENSE: dict[str, Callable[[str], Any]] = {
    "package.json": _json_license, "pyproject.toml": _pyproject_license, "Cargo.toml": _cargo_license}


def _meta_license(path: str, text: str | None) -> str:
    getter = _META_LICENSE.get(PurePosixPath(path).name)
    if getter is None or not text:
        return ""
    try:
        value = getter(text)
    except (ValueError, AttributeError):
        return ""
    if isinstance(value, dict):
        value = value.get("text") or value.get("file") or ""
    return str(value or "")


def from_manifest_license(path: str, old: str | None, new: str | None) -> list[Finding]:
    before, after = _meta_license(path, old), _meta_license(path, new)
    if before == after or not after:
        return []
    text = f"License changed from {before} to {after} ({path})" if before else f"License set to {after} ({path})"
    return [Finding(text, "constraint", 4, ("license",), key=f"license:{after}")]


# -- one commit -----------------------------------------------------------------------------------------
def interesting(path: str) -> bool:
    """Whether a changed file can yield a finding (only those are read from git)."""
    name = PurePosixPath(path).name
    return (name in MANIFESTS or dependencies(path, "") is not None or tool_kind(path) is not None
            or bool(from_dockerfile(path, None, "FROM x")) or name.upper().startswith(("LICENSE", "LICENCE",
                                                                                      "COPYING")))


def from_files(files: Mapping[str, tuple[str | None, str | None]], subject: str = "") -> list[Finding]:
    """Findings from changed files: path → (old text or None when added, new text or None when deleted)."""
    findings: list[Finding] = []
    for path, (old, new) in sorted(files.items()):
        findings += from_dependencies(path, old, new)
        findings += from_tooling(path, old, new, subject)
        findings += from_dockerfile(path, old, new)
        findings += from_license(path, old, new)
        findings += from_manifest_license(path, old, new)
    return findings


def findings_for_commit(message: str, files: Mapping[str, tuple[str | None, str | None]]) -> list[Finding]:
    """Everything one commit teaches, deduplicated; file findings a message finding explains are folded in. A
    revert teaches nothing of its own (``gitmem extract`` takes back what the reverted commit taught)."""
    if reverted_sha(message):
        return []
    said = from_message(message)
    subject = message.strip().splitlines()[0] if message.strip() else ""
    found = from_files(files, subject)
    result: list[Finding] = []
    folded: dict[int, list[str]] = {}
    # the message's findings as the patterns read them ("從 redis 遷移到 memcached" as 从…迁移到…)
    simple = [replace(finding, text=simplified(finding.text)) for finding in said]
    for finding, owner in zip(found, owners(simple, found), strict=True):
        if owner is None:
            result.append(finding)
        else:
            folded.setdefault(owner, []).append(finding.why or finding.text)
    merged = []
    for i, finding in enumerate(said):
        if i in folded:
            tags = tuple(dict.fromkeys((*finding.tags, "dependency")))
            finding = replace(finding, why="; ".join(folded[i]), tags=tags)
        merged.append(finding)
    return _unique([*merged, *result])


def _unique(findings: Iterable[Finding]) -> list[Finding]:
    seen: set[str] = set()
    out: list[Finding] = []
    for finding in findings:
        if finding.key not in seen:
            seen.add(finding.key)
            out.append(finding)
    return out


def normalise(text: str) -> str:
    """The form two findings are compared in for deduplication: lower case, words only, traditional characters in
    their simplified form (棄用舊接口 and 弃用旧接口 are one finding)."""
    return re.sub(r"\W+", " ", simplified(text).lower()).strip()
