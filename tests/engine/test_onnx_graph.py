"""Int8 products on ONNX Runtime: as close to float32 as CTranslate2's int8, row by row."""

from __future__ import annotations

import numpy as np
import pytest

from captioner.engine import onnx_graph
from captioner.engine.onnx_graph import Int8MatMul, available, quantize, vnni

pytestmark = pytest.mark.skipif(not available(), reason="ONNX Runtime is a core dependency")


def _weights(rng: np.random.Generator, inputs: int = 384, outputs: int = 1000):
    return (rng.standard_normal((inputs, outputs)) * 0.05).astype(np.float32)


def test_a_model_converted_to_int8_comes_back_bit_exact() -> None:
    rng = np.random.default_rng(1)
    q = rng.integers(-127, 128, size=(64, 40), dtype=np.int8)
    q[0] = 127  # every column reaches the top of the range, as CTranslate2's rows do
    scale = rng.uniform(1e-4, 1e-2, size=40).astype(np.float32)
    again, again_scale = quantize(q.astype(np.float32) * scale)
    assert np.array_equal(again, q)
    np.testing.assert_allclose(again_scale, scale, rtol=1e-6)
    zeros, zero_scale = quantize(np.zeros((8, 3), np.float32))
    assert not zeros.any() and np.all(zero_scale == 1.0)  # no division by zero


# Signed weights only where VNNI sums u8×s8 products in 32 bits: elsewhere they saturate.
STORAGES = sorted({False, vnni()})


@pytest.mark.parametrize("signed", STORAGES)
@pytest.mark.parametrize("rows", [1, 7])
def test_each_row_is_as_close_as_its_own_range_allows(rows: int, signed: bool) -> None:
    rng = np.random.default_rng(2)
    weight = _weights(rng)
    bias = rng.standard_normal(weight.shape[1]).astype(np.float32)
    product = Int8MatMul(*quantize(weight), bias, signed=signed)
    # Rows of very different size, as a batched pass feeds (a residual and a small one).
    x = rng.standard_normal((rows, weight.shape[0])).astype(np.float32)
    x *= np.logspace(1, -3, rows, dtype=np.float32)[:, None] if rows > 1 else 1.0
    got = product(x)
    exact = x @ weight
    assert got.shape == exact.shape
    for row in range(rows):
        error = np.abs(got[row] - bias - exact[row]).max() / np.abs(exact[row]).max()
        assert error < 0.02, (row, error)  # int8 of both operands: about 1 %


@pytest.mark.parametrize("signed", STORAGES)
def test_a_product_without_bias_and_a_column_of_zeros(signed: bool) -> None:
    rng = np.random.default_rng(3)
    weight = _weights(rng, 32, 16)
    weight[:, 5] = 0.0
    x = rng.standard_normal((3, 32)).astype(np.float32)
    got = Int8MatMul(*quantize(weight), signed=signed)(x)
    assert np.all(got[:, 5] == 0.0)
    np.testing.assert_allclose(got, x @ weight, atol=0.02 * np.abs(x @ weight).max())


@pytest.mark.parametrize("has_vnni", [False, True])
def test_weights_are_stored_signed_only_where_vnni_makes_it_safe(monkeypatch,
                                                                 has_vnni: bool) -> None:
    import numpy._core._multiarray_umath as umath

    monkeypatch.setattr(umath, "__cpu_features__",
                        dict(umath.__cpu_features__, AVX512VNNI=has_vnni))
    graph = onnx_graph.Graph()
    graph.linear("x", np.ones((4, 2), np.int8), np.ones(2, np.float32))
    stored = {c.name.rsplit("_", 1)[0]: c.data_type for c in graph.constants}
    int8, uint8 = 3, 2  # onnx.TensorProto.INT8, UINT8
    assert graph.signed is has_vnni
    assert stored["w"] == stored["w_zero"] == (int8 if has_vnni else uint8)
