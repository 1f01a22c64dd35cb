"""Search over the memories: the tantivy index and its refresh (index), the document schema (schema),
analysis and scoring (scoring), chunks of long memories (chunks), questions about order (order), the second stage
(rerank), time expressions in queries (timeexpr), snapshot copies for readers (snapshot) and the vector sidecar
files (vectors).

May import: the foundation, gitmem.store, gitmem.git, gitmem.embeddings (lazily: numpy only when vectors run)."""
