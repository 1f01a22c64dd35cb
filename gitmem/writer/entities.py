"""Writer memory documents: characters, relationships, scenes and world rules of one work, each a Markdown file
with YAML frontmatter under ``writer/<work>/`` (pure functions, no I/O)::

    writer/<work>/characters/<name>.md        voice, register, sentence length, tics, keywords, taboo, arc
    writer/<work>/relationships/<a>--<b>.md   who, kind, how it changes over chapters
    writer/<work>/scenes/<chapter>-<name>.md  chapter, shots, mood tags, characters present
    writer/<work>/world/<name>.md             a rule of the world

The body of each file is free notes (for a world rule: the rule itself). Unknown frontmatter keys are kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from gitmem.errors import DocumentError, ValidationError
from gitmem.store import document as docs

SCHEMA_VERSION = 1
WRITER_DIR = "writer"
FOLDERS = {"character": "characters", "relationship": "relationships", "scene": "scenes", "world": "world"}
#: the frontmatter fields of each kind (lists are comma-separated on the command line)
FIELDS: dict[str, dict[str, type]] = {
    "character": {"voice": str, "register": str, "sentence_length": str, "tics": list, "keywords": list,
                  "taboo": list, "arc": list},
    "relationship": {"a": str, "b": str, "kind": str, "changes": list},
    "scene": {"chapter": int, "shots": list, "mood": list, "characters": list},
    "world": {"tags": list},
}
REGISTERS = ("formal", "neutral", "casual")
LENGTHS = ("short", "medium", "long")


@dataclass(frozen=True)
class Entity:
    """One character, relationship, scene or world rule: its kind, file name, display title, fields, notes."""

    kind: str
    name: str
    title: str
    fields: dict[str, Any] = field(default_factory=dict)
    body: str = ""
    created: str = ""
    updated: str = ""
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "title": self.title, **self.fields, "notes": self.body,
                "created": self.created, "updated": self.updated}

    def text(self) -> str:
        """Everything searchable about the entity, as one text."""
        values = [" ".join(map(str, v)) if isinstance(v, list) else str(v) for v in self.fields.values() if v]
        return "\n".join([self.title, *values, self.body])


def check_kind(kind: str) -> str:
    if kind not in FIELDS:
        raise ValidationError(f"unknown kind {kind!r}", f"use one of: {', '.join(FIELDS)}")
    return kind


def entity_name(kind: str, title: str, fields: dict[str, Any]) -> str:
    """The file name (without ``.md``) of an entity: a slug of its title, ``<a>--<b>`` for a relationship,
    ``<chapter>-<title>`` for a scene. The title is checked like any name (no ``..``, separators, NUL)."""
    docs.check_name(title, f"{kind} name")
    if kind == "relationship":
        a, b = (docs.name_slug(docs.check_name(str(fields.get(k) or ""), "character name"), 40) for k in ("a", "b"))
        slug = f"{a}--{b}"
    elif kind == "scene":
        slug = f"{int(fields.get('chapter') or 0):03d}-{docs.name_slug(title, 60)}"
    else:
        slug = docs.name_slug(title, 80)
    if not slug.strip("-0"):
        raise ValidationError(f"{kind} name {title!r} has no letters or digits", "give a name such as 'Lin Mei'")
    return docs.check_name(slug, f"{kind} name")


def clean_fields(kind: str, values: dict[str, Any]) -> dict[str, Any]:
    """Validated fields of ``kind`` (None values are left out; lists from lists or comma-separated text)."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        if value is None:
            continue
        wanted = FIELDS[kind].get(key)
        if wanted is None:
            raise ValidationError(f"a {kind} has no field {key!r}", f"fields: {', '.join(FIELDS[kind])}")
        if wanted is list:
            items = value.replace("，", ",").split(",") if isinstance(value, str) else list(value)
            out[key] = [" ".join(str(i).split()) for i in items if str(i).strip()]
        elif wanted is int:
            try:
                out[key] = int(value)
            except (TypeError, ValueError):
                raise ValidationError(f"{key} must be a whole number, not {value!r}", f"e.g. --{key} 3") from None
        else:
            out[key] = " ".join(str(value).split())
    if "register" in out and out["register"].lower() not in REGISTERS:
        out["register"] = out["register"].lower()  # other registers (archaic, poetic…) are kept, checked loosely
    if out.get("sentence_length") and out["sentence_length"] not in LENGTHS:
        raise ValidationError(f"sentence length {out['sentence_length']!r}", f"use one of: {', '.join(LENGTHS)}")
    return out


def dumps(entity: Entity) -> str:
    import frontmatter

    meta: dict[str, Any] = {"kind": entity.kind, "title": entity.title, **entity.fields,
                            "created": entity.created, "updated": entity.updated, "schema_version": SCHEMA_VERSION}
    for key, value in entity.extra.items():
        meta.setdefault(key, value)
    text: str = frontmatter.dumps(frontmatter.Post(entity.body, **meta), sort_keys=False, allow_unicode=True,
                                  width=10_000)
    return text.replace("\r\n", "\n") + "\n"


def loads(text: str, kind: str, name: str, path: str = "<entity>") -> Entity:
    import frontmatter
    import yaml

    try:
        post = frontmatter.loads(text)
    except yaml.YAMLError as exc:
        raise DocumentError(f"{path}: broken YAML frontmatter: {str(exc).splitlines()[0]}",
                            "fix the file or restore it with git") from None
    meta = dict(post.metadata)
    known = {k: meta[k] for k in FIELDS[kind] if k in meta}
    try:
        fields_ = clean_fields(kind, known)
    except ValidationError as exc:  # the hint is a command line's ("e.g. --chapter 3"): not what fixes a file
        raise DocumentError(f"{path}: {exc.message}", "fix the file or restore it with git") from None
    skip = {"kind", "title", "created", "updated", "schema_version", *FIELDS[kind]}
    return Entity(kind, name, str(meta.get("title") or name), fields_, post.content.strip("\n"),
                  str(meta.get("created") or ""), str(meta.get("updated") or ""),
                  {k: v for k, v in meta.items() if k not in skip})


def merged(old: Entity, fields_: dict[str, Any], body: str | None) -> Entity:
    """``old`` with ``fields_`` changed (list fields given again replace the old list) and notes replaced when
    ``body`` is given."""
    return replace(old, fields={**old.fields, **fields_}, body=old.body if body is None else body.strip("\n"))
