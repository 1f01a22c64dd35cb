"""Search over the memories: the tantivy index's read side (index), its refresh, rebuild and embedding (build), the
model's side of a search (semantic), the document schema (schema), analysis and scoring (scoring), chunks of long
memories (chunks), questions about order (order), the second stage (rerank), time expressions in queries
(timeexpr), snapshot copies for readers (snapshot) and the vector sidecar files (vectors). The records a search
returns (hits, score parts) are :class:`gitmem.text.records.Record` types.

May import: the foundation, gitmem.store, gitmem.git, gitmem.embeddings (lazily, as numpy: only when a model
runs; a BM25 search loads none of the vector side, nor the write side when the index is current)."""
