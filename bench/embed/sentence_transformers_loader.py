"""Loads all-MiniLM-L6-v2 with sentence-transformers from a local model directory.

A directory made by `membank models fetch` holds only config.json, tokenizer.json and
model.safetensors, not the sentence-transformers module files (modules.json,
sentence_bert_config.json, 1_Pooling/). For such a directory the pipeline of the published
model is built explicitly: Transformer(max_seq_length=256) -> mean Pooling -> Normalize,
which is exactly what the model's modules.json describes. A full sentence-transformers
directory is loaded as is.
"""

import os


def load_model(model_dir):
    from sentence_transformers import SentenceTransformer, models

    if os.path.exists(os.path.join(model_dir, "modules.json")):
        return SentenceTransformer(model_dir, device="cpu")
    transformer = models.Transformer(model_dir, max_seq_length=256)
    pooling = models.Pooling(384, pooling_mode="mean")
    return SentenceTransformer(modules=[transformer, pooling, models.Normalize()], device="cpu")
