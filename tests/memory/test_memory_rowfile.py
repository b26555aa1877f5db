"""Rows of the index's vector files read the same whether the file is memory-mapped (small
files) or read row by row with pread (large ones), and a file shorter than its meta says is
never mapped (docs/spec/memory-retrieval.md "The index")."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engram.memory.internals import RowFile


def _write(path: Path, rows: np.ndarray) -> None:
    path.write_bytes(rows.astype("<f4").tobytes())


@pytest.mark.req("engram.memory.index-vector-rows")
def test_mapped_and_pread_rows_are_the_same_bytes(tmp_path: Path) -> None:
    rng = np.random.default_rng(16)
    vectors = rng.standard_normal((500, 128)).astype(np.float32)
    path = tmp_path / "local.bin"
    _write(path, vectors)
    mapped = RowFile(path, 500, 128)
    read = RowFile(path, 500, 128, map_max=0)
    assert mapped.mapped
    assert not read.mapped
    picks = [499, 0, 17, 17, 250, 3]
    for rows in (mapped.rows(picks), read.rows(picks), mapped.rows(np.asarray(picks))):
        assert rows.dtype == np.float32
        assert rows.shape == (6, 128)
        assert np.array_equal(rows, vectors[picks])


@pytest.mark.req("engram.memory.index-vector-rows")
def test_a_file_shorter_than_its_meta_is_read_not_mapped(tmp_path: Path) -> None:
    vectors = np.arange(10 * 4, dtype=np.float32).reshape(10, 4)
    path = tmp_path / "local.bin"
    _write(path, vectors[:7])  # the meta says 10 rows; 3 never reached the disk
    rows = RowFile(path, 10, 4)
    assert not rows.mapped
    got = rows.rows([6, 7, 9])
    assert np.array_equal(got[0], vectors[6])
    assert not got[1:].any()  # missing rows read as zeros, never past the end of a mapping


@pytest.mark.req("engram.memory.index-vector-rows")
def test_files_above_the_mapping_limit_are_read_with_pread(tmp_path: Path) -> None:
    path = tmp_path / "local.bin"
    _write(path, np.ones((64, 8), dtype=np.float32))
    assert not RowFile(path, 64, 8, map_max=64 * 8 * 4 - 1).mapped
    assert RowFile(path, 64, 8, map_max=64 * 8 * 4).mapped
