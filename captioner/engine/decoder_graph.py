"""Whisper's decoder blocks as ONNX graphs with int8 products (for ``whisper_decoder``).

Two graphs per model: ``cross`` turns an encoder output into each block's
cross-attention keys and values (once per decode); ``layers`` runs new token
rows through every block, reading the cached keys and values of the rows
before them and returning the new rows' own. The same arithmetic as the
numpy decoder's ``_forward`` (which is the float32 reference), in one runtime
call instead of about a hundred numpy operations and 24 products.
"""

from __future__ import annotations

import math

import numpy as np

from captioner.engine.onnx_graph import Graph, quantize

_LN_EPS = 1e-5


class DecoderGraphs:
    """The ``cross`` and ``layers`` sessions of one decoder's weights."""

    def __init__(self, variables: dict[str, np.ndarray], layers: int, heads: int) -> None:
        width = variables["decoder/layer_norm/gamma"].shape[0]
        self.layers, self.heads, self.head_width = layers, heads, width // heads
        self._cross = self._cross_graph(variables, width)
        self._layers = self._layers_graph(variables, width)

    def cross(self, memory: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        """Each block's keys ([heads, width, frames]) and values ([heads, frames, width])."""
        out = self._cross.run(None, {"memory": np.ascontiguousarray(memory, np.float32)})
        return [(out[2 * i], out[2 * i + 1]) for i in range(self.layers)]

    def run(self, x: np.ndarray, mask: np.ndarray, keys: np.ndarray, values: np.ndarray,
            position: int, cross: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
        """Hidden states of rows ``x`` placed at ``position``; their keys and values are
        written into ``keys``/``values`` ([block, heads, positions, width]) there."""
        feeds = {"x": np.ascontiguousarray(x, np.float32), "mask": mask}
        for i, (k, v) in enumerate(cross):
            feeds[f"past_k{i}"] = np.ascontiguousarray(keys[i, :, :position])
            feeds[f"past_v{i}"] = np.ascontiguousarray(values[i, :, :position])
            feeds[f"cross_k{i}"], feeds[f"cross_v{i}"] = k, v
        hidden, *new = self._layers.run(None, feeds)
        end = position + len(x)
        for i in range(self.layers):
            keys[i, :, position:end] = new[2 * i]
            values[i, :, position:end] = new[2 * i + 1]
        return hidden

    # -- the graphs ------------------------------------------------------------

    def _linear(self, g: Graph, x: str, v: dict[str, np.ndarray], name: str) -> str:
        return g.linear(x, *quantize(v[f"{name}/weight"].T), v[f"{name}/bias"])

    def _cross_graph(self, v: dict[str, np.ndarray], width: int):
        g = Graph()
        heads, hw = self.heads, self.head_width
        split = g.constant(np.array([width, width], np.int64))
        shape = g.constant(np.array([-1, heads, hw], np.int64))
        outputs = []
        for i in range(self.layers):
            kv = self._linear(g, "memory", v, f"decoder/layer_{i}/attention/linear_1")
            k, vv = g.op("Split", kv, split, axis=1, outputs=2)
            outputs.append((f"k{i}", g.op("Transpose", g.op("Reshape", k, shape), perm=[1, 2, 0]),
                            [heads, hw, "frames"]))
            outputs.append((f"v{i}", g.op("Transpose", g.op("Reshape", vv, shape), perm=[1, 0, 2]),
                            [heads, "frames", hw]))
        return g.session([("memory", ["frames", width])], outputs)

    def _layers_graph(self, v: dict[str, np.ndarray], width: int):
        g = Graph()
        heads, hw = self.heads, self.head_width
        split = g.constant(np.array([width] * 3, np.int64))
        to_heads = g.constant(np.array([-1, heads, hw], np.int64))
        to_rows = g.constant(np.array([-1, width], np.int64))
        scale = g.constant(np.float32(1.0 / math.sqrt(hw)))
        half, root2 = g.constant(np.float32(0.5)), g.constant(np.float32(math.sqrt(2.0)))
        one = g.constant(np.float32(1.0))

        def norm(x: str, name: str) -> str:
            return g.op("LayerNormalization", x, g.constant(v[f"{name}/gamma"], "gamma"),
                        g.constant(v[f"{name}/beta"], "beta"), axis=-1, epsilon=_LN_EPS)

        def split_heads(x: str) -> str:  # [rows, width] → [heads, rows, head width]
            return g.op("Transpose", g.op("Reshape", x, to_heads), perm=[1, 0, 2])

        def attend(q: str, keys_t: str, values: str, mask: str | None) -> str:
            scores = g.op("MatMul", q, keys_t)
            if mask is not None:
                scores = g.op("Add", scores, mask)
            out = g.op("MatMul", g.op("Softmax", scores, axis=-1), values)
            return g.op("Reshape", g.op("Transpose", out, perm=[1, 0, 2]), to_rows)

        inputs = [("x", ["rows", width]), ("mask", ["rows", "total"])]
        outputs = []
        x = "x"
        for i in range(self.layers):
            p = f"decoder/layer_{i}/"
            inputs += [(f"past_k{i}", [heads, "past", hw]), (f"past_v{i}", [heads, "past", hw]),
                       (f"cross_k{i}", [heads, hw, "frames"]),
                       (f"cross_v{i}", [heads, "frames", hw])]
            h = self._linear(g, norm(x, f"{p}self_attention/layer_norm"), v,
                             f"{p}self_attention/linear_0")
            q, k, vv = g.op("Split", h, split, axis=1, outputs=3)
            k, vv = split_heads(k), split_heads(vv)
            outputs += [(f"k{i}", k, [heads, "rows", hw]), (f"v{i}", vv, [heads, "rows", hw])]
            keys = g.op("Concat", f"past_k{i}", k, axis=1)
            values = g.op("Concat", f"past_v{i}", vv, axis=1)
            q = g.op("Mul", split_heads(q), scale)
            att = attend(q, g.op("Transpose", keys, perm=[0, 2, 1]), values, "mask")
            x = g.op("Add", x, self._linear(g, att, v, f"{p}self_attention/linear_1"))
            q = self._linear(g, norm(x, f"{p}attention/layer_norm"), v, f"{p}attention/linear_0")
            att = attend(g.op("Mul", split_heads(q), scale), f"cross_k{i}", f"cross_v{i}", None)
            x = g.op("Add", x, self._linear(g, att, v, f"{p}attention/linear_2"))
            h = self._linear(g, norm(x, f"{p}ffn/layer_norm"), v, f"{p}ffn/linear_0")
            erf = g.op("Erf", g.op("Div", h, root2))  # exact GELU: x·Φ(x)
            h = g.op("Mul", g.op("Mul", h, half), g.op("Add", erf, one))
            x = g.op("Add", x, self._linear(g, h, v, f"{p}ffn/linear_1"))
        return g.session(inputs, [("hidden", x, ["rows", width]), *outputs])
