"""Sentence vectors of a memory pooled from its own model pass, cached beside its vector: each under the key of its
sentence, never mixed with the vectors an earlier recipe cached, and computed once."""

from __future__ import annotations

from typing import Any

import numpy as np

from gitmem.search import rerank
from gitmem.search import schema as idoc
from gitmem.search.build import ID, SHA, load_state
from gitmem.search.index import Index
from gitmem.search.semantic import store, vector_dir
from gitmem.search.vectors import VectorStore
from gitmem.store.memories import MemoryRepo

TURN = ("Melanie: We finally adopted a rescue dog named Biscuit last weekend. The kids spent the whole of Sunday "
        "painting a sunset together. My sister moved to Lisbon for a new job in March.")
OTHER = "Caroline: The pottery class on Thursday evenings is the best part of my week."


def _shas(ix: Index) -> dict[str, str]:
    """Blob SHA of each indexed memory, by id."""
    loaded = load_state(ix)
    assert loaded is not None
    return {e[ID]: e[SHA] for e in loaded[0].values()}


def _sentence_vectors(ix: Index, model: Any) -> dict[str, Any]:
    keys, matrix = store(ix, model.model_id, "sentences").load()
    assert matrix is not None
    return dict(zip(keys, matrix, strict=True))


def test_each_sentence_vector_is_its_own_sentences(repo: MemoryRepo, model: Any) -> None:
    repo.import_records([{"id": "turn", "text": TURN}, {"id": "other", "text": OTHER}])
    ix = Index(repo, embedder=model)
    assert ix.embed() == 2
    vectors = _sentence_vectors(ix, model)
    mine = sorted(k for k in vectors if k.startswith(_shas(ix)["turn"] + "#"))
    sentences = rerank.sentences(TURN)
    assert len(mine) == len(sentences) == 3  # the one-sentence memory has none
    alone = model.embed_documents(sentences)
    near = np.stack([vectors[k] for k in mine]) @ alone.T
    assert near.argmax(axis=1).tolist() == [0, 1, 2]  # sentence n's vector is nearest sentence n
    hit = ix.search("what is the name of the dog they adopted", k=1)[0]
    assert hit.id == "turn"


def test_vectors_of_an_earlier_recipe_are_not_read_and_a_second_pass_embeds_nothing(repo: MemoryRepo,
                                                                                   model: Any) -> None:
    """Sentence vectors cached before they came from the memory's own pass (recipe 4: each sentence embedded
    alone) sit in another folder: the index embeds every memory again, once."""
    repo.import_records([{"id": "turn", "text": TURN}, {"id": "other", "text": OTHER}])
    ix = Index(repo, embedder=model)
    ix.refresh()
    current = vector_dir(ix, model.model_id)
    old = current.with_name(current.name.replace(f".r{idoc.VECTOR_RECIPE}", ".r4"))  # sentences embedded alone
    assert old != current
    shas = sorted(_shas(ix).values())
    poison = np.ones((len(shas), model.dim), dtype=np.float32) / np.sqrt(model.dim)
    VectorStore(old).add(shas, poison)
    VectorStore(old / "sentences").add([f"{s}#{n}" for s in shas for n in range(3)],
                                       np.repeat(poison, 3, axis=0))
    VectorStore(old).complete.write_text(ix._current_head(), "utf-8")
    assert ix.embed() == 2
    vectors = _sentence_vectors(ix, model)
    assert len(vectors) == 3 and not any(np.allclose(v, poison[0]) for v in vectors.values())
    marker = store(ix, model.model_id, "sentences").marker()
    again = Index(repo, embedder=model)
    assert again.embed() == 0 and store(again, model.model_id, "sentences").marker() == marker
    assert again.search("who moved to Lisbon", k=1)[0].id == "turn"
