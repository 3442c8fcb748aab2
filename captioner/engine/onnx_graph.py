"""Small ONNX graphs built in code and run on ONNX Runtime, with int8 products.

Why: each step of a live decode multiplies one row by every decoder weight,
the 20 MB output projection above all. Where CTranslate2 runs without Intel
MKL (AMD CPUs, with or without VNNI), its int8 path (oneDNN) does that product
at about 3.5 GMAC/s on AVX2, and numpy's float32 reads four times the bytes;
ONNX Runtime's integer kernels (MLAS) do it in 2 ms instead of 5
(``docs/streaming-engine.md``). A whole graph per call, not one call per
product, because each call from Python costs tens of microseconds.

A weight is quantized as CTranslate2 quantizes a model: symmetric, one scale
per output (a model converted to int8 comes back bit-exact). Without VNNI it
is stored as uint8 around a zero point of 128: the u8×s8 kernels on AVX2 sum
pairs of products in 16 bits, which saturates with full-range int8 weights
(10 % error measured; u8×u8 has no such step). With VNNI the u8×s8 dot product
sums into 32 bits, so the weights stay int8: the same error as u8×u8, and a
one-row product with the output projection 0.6 ms instead of 1.0. The input is
quantized per call (``DynamicQuantizeLinear``) with one range for the whole
input, so rows are first scaled to the same range: each row is then quantized
as finely as CTranslate2 quantizes it (one scale per row). Without that, a
batched pass (a prompt read at once) agreed with the float32 answer less often
than CTranslate2's int8 did. Weights are graph constants, so the runtime packs
them once at load.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

_ZERO = 128  # the stored weights' zero point, unless they are stored signed
Shape = Sequence[int | str]  # a dimension's size, or a name for a size that varies
_OPSET = 17


class GraphError(RuntimeError):
    """ONNX Runtime refused a graph (its own errors derive from Exception only)."""


def available() -> bool:
    """True when ONNX Runtime and the ``onnx`` graph builder can be imported."""
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


def vnni() -> bool:
    """True when the CPU has AVX-512 VNNI (as numpy reports it; AVX-VNNI it does not)."""
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as features
    except ImportError:  # numpy moved it
        return False
    return bool(features.get("AVX512VNNI"))


def quantize(weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 per column of ``weight`` ([inputs, outputs]): ``W ≈ q * scale``."""
    weight = np.asarray(weight, dtype=np.float32)
    scale = np.abs(weight).max(axis=0) / 127.0
    scale[scale == 0] = 1.0
    q = np.clip(np.rint(weight / scale), -127, 127).astype(np.int8)
    return q, scale.astype(np.float32)


class Graph:
    """Nodes and constants of one graph; each op returns its output's (unique) name."""

    def __init__(self, signed: bool | None = None) -> None:
        """``signed``: int8 weights (u8×s8 products), the default where VNNI makes them safe."""
        from onnx import helper, numpy_helper

        self._helper, self._numpy_helper = helper, numpy_helper
        self.signed = vnni() if signed is None else signed
        self.nodes: list[Any] = []
        self.constants: list[Any] = []
        self._names = 0

    def _name(self, hint: str) -> str:
        self._names += 1
        return f"{hint}_{self._names}"

    def constant(self, value: np.ndarray | float | Sequence[int], hint: str = "c") -> str:
        array = np.asarray(value)
        if array.dtype.kind == "f":  # float16 as packaged, float64 from Python
            array = array.astype(np.float32)
        name = self._name(hint)
        self.constants.append(self._numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def op(self, op_type: str, *inputs: str, outputs: int = 1, **attributes: Any) -> Any:
        names = [self._name(op_type.lower()) for _ in range(outputs)]
        self.nodes.append(self._helper.make_node(op_type, list(inputs), names, **attributes))
        return names[0] if outputs == 1 else names

    def linear(self, x: str, q: np.ndarray, scale: np.ndarray,
               bias: np.ndarray | None = None) -> str:
        """``x @ (q * scale) + bias`` for rows ``x``, with ``q`` int8 [inputs, outputs]."""
        if self.signed:
            stored, zero = np.asarray(q, dtype=np.int8), np.zeros(q.shape[1], np.int8)
        else:
            stored = (np.asarray(q, dtype=np.int16) + _ZERO).astype(np.uint8)
            zero = np.full(q.shape[1], _ZERO, np.uint8)
        peak = self.op("ReduceMax", self.op("Abs", x), axes=[1], keepdims=1)
        peak = self.op("Max", peak, self.constant(np.float32(1e-30)))  # a row of zeros stays 0
        xq, x_scale, x_zero = self.op("DynamicQuantizeLinear", self.op("Div", x, peak),
                                      outputs=3)
        sums = self.op("MatMulInteger", xq, self.constant(stored, "w"), x_zero,
                       self.constant(zero, "w_zero"))
        scales = self.op("Mul", x_scale, self.constant(np.asarray(scale, np.float32), "w_scale"))
        y = self.op("Mul", self.op("Mul", self.op("Cast", sums, to=1), scales), peak)
        return y if bias is None else self.op("Add", y, self.constant(bias, "b"))

    def session(self, inputs: Sequence[tuple[str, Shape]],
                outputs: Sequence[tuple[str, str, Shape]]) -> Any:
        """An ONNX Runtime session of the graph (float32 in and out, one thread).

        ``inputs``: (name, shape); ``outputs``: (name, the op output it is, shape).
        """
        import onnxruntime

        helper = self._helper
        float32 = 1  # TensorProto.FLOAT
        nodes = self.nodes + [helper.make_node("Identity", [value], [name])
                              for name, value, _ in outputs]
        graph = helper.make_graph(
            nodes, "graph",
            [helper.make_tensor_value_info(n, float32, list(s)) for n, s in inputs],
            [helper.make_tensor_value_info(n, float32, list(s)) for n, _, s in outputs],
            self.constants)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", _OPSET)])
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1  # small products: a second thread only waits
        options.inter_op_num_threads = 1
        options.log_severity_level = 3  # errors only
        options.enable_cpu_mem_arena = False  # an arena keeps its peak for the process
        try:
            return onnxruntime.InferenceSession(model.SerializeToString(), options,
                                                providers=["CPUExecutionProvider"])
        except Exception as exc:  # Fail, InvalidGraph, NotImplemented, …: no common base
            raise GraphError(f"ONNX Runtime refused the graph: {exc}") from exc


class Int8MatMul:
    """One constant int8 matrix; calling it with ``x`` ([rows, inputs]) gives ``x @ W + b``."""

    def __init__(self, q: np.ndarray, scale: np.ndarray, bias: np.ndarray | None = None,
                 signed: bool | None = None) -> None:
        graph = Graph(signed)
        y = graph.linear("x", q, scale, bias)
        self._session = graph.session([("x", ["rows", q.shape[0]])],
                                      [("y", y, ["rows", q.shape[1]])])

    def __call__(self, x: np.ndarray) -> np.ndarray:
        x = np.ascontiguousarray(x, dtype=np.float32)
        return self._session.run(None, {"x": x})[0]
