"""Whisper's text decoder in numpy, for the streaming engine's decodes.

Live decodes re-read a growing utterance about once a second, and most of
what they say the previous one already said. CTranslate2 runs every token of
an answer as its own decoder step (about 10 ms each here, forced tokens
included) and keeps nothing between calls. This decoder keeps its own
key/value cache, so it can

- read the prompt (previous text, start token, forced words) in **one batched
  pass** instead of one step per token, and
- **check a draft** in that same pass: the previous live answer is fed after
  the prompt, and its tokens are accepted for as long as the model, step by
  step, would have chosen them itself (greedy speculative decoding). Only
  what comes after — usually the words of the newest audio — costs a step
  each. The answer is the greedy answer whatever the draft; a wrong draft
  only costs the pass it rode in.

The choice at each step follows CTranslate2's Whisper ``generate`` exactly
(suppressed tokens, blank suppression, the timestamp rules, the score and the
no-speech probability), so the engine reads results the same way from both.
Finals use its beam search (``beam``), CTranslate2's in every detail that
decides a close call, with all beams in the one cache (each beam's rows see
the prompt and their own ancestors only).
The network runs one of two ways:

- **float32 in numpy** (``int8=False``): the model's stored values (float16 as
  packaged, or the installers' int8 copy dequantized), so it gives exactly
  what CTranslate2 in float32 gives; the tests hold it to that.
- **int8 on ONNX Runtime** (``int8=True``, ``decoder_graph``): the blocks and the
  output projection quantized as CTranslate2 quantizes them, so a word on a
  knife's edge may read differently, as it does between CTranslate2's int8
  and float32. A step costs about a third of float32 numpy's.

The encoder stays in CTranslate2: its output comes in as an array.
No I/O; one instance serves calls one at a time.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from captioner.engine.ct2_model import ModelFileError, dequantized, read_variables
from captioner.engine.decoder_graph import DecoderGraphs
from captioner.engine.onnx_graph import Int8MatMul, quantize

_MAX_POSITIONS = 448  # Whisper's text context
_LN_EPS = 1e-5
_GELU = 3  # CTranslate2's ActivationType.GELU
_NEAR = 10.0  # beam candidates are looked for within this log-probability of the best


@dataclass(frozen=True)
class SpecialTokens:
    """The ids the decoding rules need (Whisper's tokenizer)."""

    eot: int
    sot: int
    no_timestamps: int
    no_speech: int

    @property
    def timestamp_begin(self) -> int:
        return self.no_timestamps + 1


@dataclass(frozen=True)
class Decoded:
    """A greedy answer, shaped like CTranslate2's result for one prompt."""

    tokens: list[int]  # after the start token: the forced ones, then the chosen ones (no eot)
    score: float  # chosen tokens' log-probabilities (eot's included) over len(tokens)
    no_speech_prob: float  # of <|nospeech|> right after the start token
    drafted: int  # draft tokens accepted without a step of their own


@dataclass(frozen=True)
class Rules:
    """What a ``generate`` call's options say about which tokens may come next."""

    suppress: np.ndarray  # never chosen (Whisper's non-speech symbols)
    suppress_begin: np.ndarray  # not as the first chosen token (blank, eot)
    max_initial_timestamp: int  # index of the last timestamp an answer may start with
    timestamps: bool  # the answer is timestamped (the start token is not <|notimestamps|>)


@dataclass(frozen=True)
class _Candidate:
    """One way to grow a beam: which beam, by which token, to which total log-probability."""

    beam: int
    token: int
    score: float


@dataclass
class _Beam:
    """A hypothesis: its chosen tokens, their total log-probability, and the cache slots
    its chosen tokens were written to (all but a newly chosen one)."""

    chosen: list[int]
    score: float
    slots: list[int]


Product = Callable[[np.ndarray], np.ndarray]  # x ([rows, inputs]) → x @ W + b


class _Layer:
    """One decoder block's weights, transposed for ``x @ w`` (the float32 path)."""

    def __init__(self, v: dict[str, np.ndarray], prefix: str) -> None:
        def w(name: str) -> np.ndarray:
            return np.ascontiguousarray(v[f"{prefix}{name}/weight"].T, dtype=np.float32)

        def b(name: str) -> np.ndarray:
            return v[f"{prefix}{name}"].astype(np.float32)

        self.norm1 = b("self_attention/layer_norm/gamma"), b("self_attention/layer_norm/beta")
        self.qkv, self.qkv_b = w("self_attention/linear_0"), b("self_attention/linear_0/bias")
        self.out1, self.out1_b = w("self_attention/linear_1"), b("self_attention/linear_1/bias")
        self.norm2 = b("attention/layer_norm/gamma"), b("attention/layer_norm/beta")
        self.q, self.q_b = w("attention/linear_0"), b("attention/linear_0/bias")
        self.kv, self.kv_b = w("attention/linear_1"), b("attention/linear_1/bias")
        self.out2, self.out2_b = w("attention/linear_2"), b("attention/linear_2/bias")
        self.norm3 = b("ffn/layer_norm/gamma"), b("ffn/layer_norm/beta")
        self.ff1, self.ff1_b = w("ffn/linear_0"), b("ffn/linear_0/bias")
        self.ff2, self.ff2_b = w("ffn/linear_1"), b("ffn/linear_1/bias")


class WhisperDecoder:
    """Greedy decoding with a batched prompt pass and draft checking, and beam search."""

    def __init__(self, variables: dict[str, np.ndarray], special: SpecialTokens,
                 suppress_ids: Sequence[int], suppress_ids_begin: Sequence[int],
                 int8: bool = False) -> None:
        flags = {name: int(variables[f"decoder/{name}"]) for name in
                 ("pre_norm", "activation", "scale_embeddings", "alibi")}
        if flags != {"pre_norm": 1, "activation": _GELU, "scale_embeddings": 0, "alibi": 0}:
            raise ModelFileError(f"not a Whisper decoder this code runs: {flags}")
        self.heads = int(variables["decoder/num_heads"])
        embeddings = variables["decoder/embeddings/weight"]
        self.width = embeddings.shape[1]
        self.head_width = self.width // self.heads
        # Tied: logits = x @ E.T, and a token's embedding is a row of E.
        if int8:
            q, scale = quantize(embeddings.T)
            self._embed = lambda tokens: q.T[tokens] * scale[tokens, None]
            self._project: Product = Int8MatMul(q, scale)
        else:
            output = np.ascontiguousarray(embeddings.T, dtype=np.float32)  # one float32 copy
            self._embed = lambda tokens: output[:, tokens].T
            self._project = lambda x: x @ output
        self._positions = variables["decoder/position_encodings/encodings"].astype(np.float32)
        count = 0
        while f"decoder/layer_{count}/ffn/linear_0/weight" in variables:
            count += 1
        self._layers = [] if int8 else [_Layer(variables, f"decoder/layer_{i}/")
                                        for i in range(count)]
        self._graphs = DecoderGraphs(variables, count, self.heads) if int8 else None
        self._norm = (variables["decoder/layer_norm/gamma"].astype(np.float32),
                      variables["decoder/layer_norm/beta"].astype(np.float32))
        self.special = special
        self._suppress = np.asarray(sorted(suppress_ids), dtype=np.int64)
        self._suppress_begin = np.asarray(sorted(suppress_ids_begin), dtype=np.int64)
        shape = (count, self.heads, _MAX_POSITIONS, self.head_width)
        self._keys = np.zeros(shape, np.float32)
        self._values = np.zeros(shape, np.float32)
        self._cross: list[tuple[np.ndarray, np.ndarray]] = []

    @property
    def int8(self) -> bool:
        """Whether the network runs as int8 ONNX Runtime graphs (else float32 numpy)."""
        return self._graphs is not None

    @classmethod
    def from_model_dir(cls, folder: str | os.PathLike[str], int8: bool = False
                       ) -> WhisperDecoder:
        """The decoder of a converted Whisper model (``model.bin`` + ``config.json``).

        ``int8``: the blocks and the output projection on ONNX Runtime with int8
        products (``decoder_graph``), as CTranslate2 runs the model; otherwise
        numpy float32.
        """
        folder = Path(folder)
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        vocabulary = _vocabulary(folder)
        variables = dequantized(
            read_variables(folder / "model.bin", lambda n: n.startswith("decoder/")))
        index = {token: i for i, token in enumerate(vocabulary)}
        no_speech = index.get("<|nospeech|>", index.get("<|nocaptions|>"))
        if no_speech is None or "<|notimestamps|>" not in index:
            raise ModelFileError("the vocabulary has no Whisper special tokens")
        special = SpecialTokens(eot=index["<|endoftext|>"], sot=index["<|startoftranscript|>"],
                                no_timestamps=index["<|notimestamps|>"],
                                no_speech=no_speech)
        return cls(variables, special, config.get("suppress_ids", []),
                   config.get("suppress_ids_begin", []), int8=int8)

    # -- decoding --------------------------------------------------------------

    def greedy(self, encoder_output: np.ndarray, prompt: Sequence[int], start: int, *,
               max_length: int, suppress_blank: bool = True, suppress_tokens: bool = True,
               max_initial_timestamp_index: int = 50, draft: Sequence[int] = (),
               stop: Callable[[list[int]], bool] | None = None) -> Decoded:
        """The greedy answer to ``prompt`` (as CTranslate2's ``generate`` would give it).

        ``encoder_output`` is one clip's encoder output ([frames, width]).
        ``prompt[start]`` is the start token (the last of <|startoftranscript|>'s
        special tokens); what follows it is forced. ``draft`` is a guess at the
        tokens after the forced ones: checked, never trusted. ``stop`` sees the
        chosen tokens after each text token and may end the answer there (the
        caller knows it will throw the rest away, e.g. a repetition loop).
        """
        special = self.special
        forced = list(prompt[start + 1 :])
        before = start  # tokens before the start token (positions 0 .. start-1)
        steps, rules = self._rules(prompt, start, max_length, suppress_blank, suppress_tokens,
                                   max_initial_timestamp_index)
        if steps <= len(forced):  # no room left after the forced tokens: they are the answer
            return Decoded(forced[:steps], 0.0, 0.0, 0)
        draft = list(draft[: steps - len(forced) - 1])
        if special.eot in draft:
            draft = draft[: draft.index(special.eot)]
        self._cross = self._cross_attention(np.asarray(encoder_output, dtype=np.float32))

        # One pass: prompt, start token, forced tokens, draft.
        hidden = self._forward(list(prompt) + draft, 0)
        sot = max(i for i in range(start + 1) if prompt[i] == special.sot)
        # The start token's row (for the no-speech probability) and one row per step after
        # the forced tokens, through the output projection together.
        logits = self._logits(hidden[[sot, *range(start + len(forced), len(hidden))]])
        no_speech = _softmax_at(logits[0], special.no_speech)
        rows = logits[1:]
        chosen: list[int] = []
        score = 0.0
        drafted = 0
        while True:
            step = len(forced) + len(chosen)
            if rows is None:  # past the draft: one step for the last token
                rows = self._logits(self._forward([chosen[-1]], before + step))
            row, rows = rows[0], (rows[1:] if len(rows) > 1 else None)
            logprobs = self._logprobs(row[None], [chosen], rules, first=step == 0)[0]
            token = int(np.argmax(logprobs))
            logprob = float(logprobs[token])
            score += logprob
            if token == special.eot:
                break
            chosen.append(token)
            if step + 1 == steps or (stop is not None and token < special.eot and stop(chosen)):
                break
            if rows is not None:  # the next row's input is draft[len(chosen) - 1]
                if token == draft[len(chosen) - 1]:
                    drafted += 1  # the pass already ran this token
                else:
                    rows = None  # the draft went astray here: later rows are void
        tokens = forced + chosen
        return Decoded(tokens, score / max(1, len(tokens)), no_speech, drafted)

    def beam(self, encoder_output: np.ndarray, prompt: Sequence[int], start: int, *,
             max_length: int, beam_size: int = 5, patience: float = 1.0,
             suppress_blank: bool = True, suppress_tokens: bool = True,
             max_initial_timestamp_index: int = 50) -> Decoded:
        """The beam search answer to ``prompt``, as CTranslate2's ``generate`` gives it.

        Arguments as for ``greedy``. CTranslate2's search in the details that decide
        a close call: each step keeps the best ``2 × beam_size`` candidates of all
        beams; a candidate among the first ``beam_size`` that ends its answer is
        set aside and the next unfinished one takes its place; the search stops
        once ``beam_size × patience`` answers are set aside (or at the length
        cap, where every beam is); answers are ranked by score over length
        (length penalty 1), forced tokens counted in the length but not the score.
        After forced tokens only the first beam grows, and an end of text among
        the other candidates of that step is dropped.

        Every beam lives in the one key/value cache: a step runs each beam's
        newest token as one row, seeing the prompt's rows and its own ancestors'
        (a mask), so nothing is copied between beams.
        """
        special = self.special
        forced = list(prompt[start + 1 :])
        steps, rules = self._rules(prompt, start, max_length, suppress_blank, suppress_tokens,
                                   max_initial_timestamp_index)
        if steps <= len(forced):
            return Decoded(forced[:steps], 0.0, 0.0, 0)
        size = len(prompt)
        self._reserve(size + beam_size * (steps - len(forced)))
        self._cross = self._cross_attention(np.asarray(encoder_output, dtype=np.float32))
        hidden = self._forward(list(prompt), 0)
        sot = max(i for i in range(start + 1) if prompt[i] == special.sot)
        logits = self._logits(hidden[[sot, size - 1]])
        no_speech = _softmax_at(logits[0], special.no_speech)
        rows = logits[1:]
        beams = [_Beam([], 0.0, [])]
        done: list[tuple[float, list[int]]] = []  # (length-normalized score, tokens)
        wanted = round(beam_size * patience)
        fill = size  # cache slots in use
        while True:
            step = len(forced) + len(beams[0].chosen)
            logprobs = self._logprobs(rows, [b.chosen for b in beams], rules, first=step == 0)
            logprobs += np.array([[b.score] for b in beams], np.float32)
            flat = logprobs.ravel()
            top = _best(flat, 2 * beam_size)
            vocabulary = logprobs.shape[1]
            candidates: list[_Candidate | None] = [
                _Candidate(int(i) // vocabulary, int(i) % vocabulary, float(flat[i]))
                for i in top]
            if forced and step == len(forced):  # CTranslate2's guard against short answers
                candidates[1:] = [None if c is not None and c.token == special.eot else c
                                  for c in candidates[1:]]
            last = step + 1 == steps
            grown: list[_Candidate] = []
            spare = beam_size
            for candidate in candidates[:beam_size]:
                kept = candidate
                if candidate is not None and (candidate.token == special.eot or last):
                    chosen = beams[candidate.beam].chosen
                    tokens = forced + chosen + ([] if candidate.token == special.eot
                                                else [candidate.token])
                    done.append((candidate.score / max(1, len(tokens)), tokens))
                    for j in range(spare, len(candidates)):  # the next one not ended
                        other = candidates[j]
                        if other is None or other.token != special.eot:
                            kept, spare = other, j + 1
                            break
                if kept is not None:
                    grown.append(kept)
            if last or len(done) >= wanted or not grown:
                break
            beams = [_Beam([*beams[c.beam].chosen, c.token], c.score, beams[c.beam].slots)
                     for c in grown]
            mask = np.full((len(beams), fill + len(beams)), -np.inf, np.float32)
            mask[:, :size] = 0.0
            for k, b in enumerate(beams):
                mask[k, b.slots] = 0.0
                mask[k, fill + k] = 0.0
                b.slots = [*b.slots, fill + k]
            place = size + len(beams[0].chosen) - 1
            rows = self._logits(self._forward([b.chosen[-1] for b in beams], fill,
                                              places=[place] * len(beams), mask=mask))
            fill += len(beams)
        score, tokens = max(done, key=lambda answer: answer[0])
        return Decoded(tokens, score, no_speech, 0)

    def _rules(self, prompt: Sequence[int], start: int, max_length: int, suppress_blank: bool,
               suppress_tokens: bool, max_initial_timestamp_index: int) -> tuple[int, Rules]:
        """How many tokens the answer may have after the start token, and its rules."""
        special = self.special
        steps = min(max_length // 2, max_length - start)
        if start + steps > _MAX_POSITIONS:
            raise ValueError(f"max_length {max_length} is past the model's {_MAX_POSITIONS}")
        if special.sot not in prompt[: start + 1]:
            raise ValueError("the prompt has no <|startoftranscript|>")
        return steps, Rules(
            suppress=self._suppress if suppress_tokens else self._suppress[:0],
            suppress_begin=self._suppress_begin if suppress_blank else self._suppress[:0],
            max_initial_timestamp=special.timestamp_begin + max_initial_timestamp_index,
            timestamps=prompt[start] != special.no_timestamps,
        )

    def _logprobs(self, logits: np.ndarray, chosen: Sequence[list[int]], rules: Rules,
                  first: bool) -> np.ndarray:
        """Log-probabilities of each row's next token (CTranslate2's rules, in its order).

        Row i of ``logits`` continues the answer whose chosen tokens are ``chosen[i]``.
        """
        special = self.special
        begin = special.timestamp_begin
        x = logits.copy()
        x[:, rules.suppress] = -np.inf
        checked = []  # rows whose timestamps may outweigh their text
        for i, tokens in enumerate(chosen):
            row = x[i]
            if not tokens:
                row[rules.suppress_begin] = -np.inf
            if not rules.timestamps:
                continue
            row[special.no_timestamps] = -np.inf
            if first:  # nothing forced: the answer opens with an early timestamp
                row[:begin] = -np.inf
                row[rules.max_initial_timestamp + 1 :] = -np.inf
            elif tokens:  # timestamps come in pairs and never go back
                last = tokens[-1]
                if last >= begin:
                    penultimate = tokens[-2] if len(tokens) > 1 else last
                    if penultimate >= begin:
                        row[begin:] = -np.inf
                    else:
                        row[: special.eot] = -np.inf
                        row[begin:last] = -np.inf
                        checked.append(i)
                else:
                    checked.append(i)
                    latest = next((t for t in reversed(tokens) if t >= begin), None)
                    if latest is not None:
                        row[begin : latest + 1] = -np.inf
        logprobs = _log_softmax(x)
        for i in checked:
            if _logsumexp(logprobs[i, begin:]) > float(logprobs[i, :begin].max()):
                x[i, :begin] = -np.inf
                logprobs[i] = _log_softmax(x[i])
        return logprobs

    # -- the network -----------------------------------------------------------

    def _cross_attention(self, memory: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        """Each layer's keys ([heads, width, frames]) and values ([heads, frames, width])."""
        if self._graphs is not None:
            return self._graphs.cross(memory)
        frames = memory.shape[0]
        out = []
        for layer in self._layers:
            kv = memory @ layer.kv + layer.kv_b
            k = kv[:, : self.width].reshape(frames, self.heads, self.head_width)
            v = kv[:, self.width :].reshape(frames, self.heads, self.head_width)
            out.append((np.ascontiguousarray(k.transpose(1, 2, 0)),
                        np.ascontiguousarray(v.transpose(1, 0, 2))))
        return out

    def _forward(self, tokens: Sequence[int], position: int, places: Sequence[int] | None = None,
                 mask: np.ndarray | None = None) -> np.ndarray:
        """Hidden states of ``tokens`` written to the cache from slot ``position`` on.

        By default row i is at position + i of one sequence and sees the slots
        before it; beams give each row its ``places`` in its own sequence and a
        ``mask`` ([rows, slots], 0 or -inf) of the slots it sees.
        """
        n = len(tokens)
        end = position + n
        heads, width = self.heads, self.head_width
        scale = 1.0 / math.sqrt(width)
        x = self._embed(tokens) + (self._positions[position:end] if places is None
                                   else self._positions[list(places)])
        if mask is None and n > 1:
            mask = np.triu(np.full((n, end), -np.inf, np.float32), position + 1)
        if self._graphs is not None:
            return self._graphs.run(x, np.zeros((n, end), np.float32) if mask is None else mask,
                                    self._keys, self._values, position, self._cross)
        for i, layer in enumerate(self._layers):
            h = _layer_norm(x, *layer.norm1) @ layer.qkv + layer.qkv_b
            q = h[:, : self.width].reshape(n, heads, width).transpose(1, 0, 2) * scale
            self._keys[i, :, position:end] = h[:, self.width : 2 * self.width].reshape(
                n, heads, width).transpose(1, 0, 2)
            self._values[i, :, position:end] = h[:, 2 * self.width :].reshape(
                n, heads, width).transpose(1, 0, 2)
            scores = q @ self._keys[i, :, :end].transpose(0, 2, 1)
            if mask is not None:
                scores += mask
            x = x + _attend(scores, self._values[i, :, :end]) @ layer.out1 + layer.out1_b
            q = (_layer_norm(x, *layer.norm2) @ layer.q + layer.q_b).reshape(
                n, heads, width).transpose(1, 0, 2) * scale
            keys, values = self._cross[i]
            x = x + _attend(q @ keys, values) @ layer.out2 + layer.out2_b
            h = _gelu(_layer_norm(x, *layer.norm3) @ layer.ff1 + layer.ff1_b)
            x = x + h @ layer.ff2 + layer.ff2_b
        return x

    def _reserve(self, slots: int) -> None:
        """Room for ``slots`` rows of keys and values (beams need more than a sequence)."""
        layers, heads, size, width = self._keys.shape
        if slots > size:
            self._keys = np.zeros((layers, heads, slots, width), np.float32)
            self._values = np.zeros_like(self._keys)

    def _logits(self, hidden: np.ndarray) -> np.ndarray:
        return self._project(_layer_norm(hidden, *self._norm))


def _vocabulary(folder: Path) -> list[str]:
    text = folder / "vocabulary.txt"
    if text.exists():
        return text.read_text(encoding="utf-8").splitlines()
    return json.loads((folder / "vocabulary.json").read_text(encoding="utf-8"))


def _attend(scores: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Softmax over the last axis, then the weighted values, heads merged back."""
    scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
    scores /= scores.sum(axis=-1, keepdims=True)
    out = scores @ values  # [heads, n, width]
    return out.transpose(1, 0, 2).reshape(out.shape[1], -1)


def _layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    variance = (centred * centred).mean(axis=-1, keepdims=True)
    return centred / np.sqrt(variance + _LN_EPS) * gamma + beta


def _gelu(x: np.ndarray) -> np.ndarray:
    """Exact GELU, x·Φ(x), with erf from Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7)."""
    z = np.abs(x) * (1.0 / math.sqrt(2.0))
    t = 1.0 / (1.0 + 0.3275911 * z)
    poly = ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t
            + 0.254829592) * t
    erf = 1.0 - poly * np.exp(-z * z)
    return 0.5 * x * (1.0 + np.copysign(erf, x))


def _log_softmax(x: np.ndarray) -> np.ndarray:
    """Along the last axis, of one row or a block of rows."""
    top = x.max(axis=-1, keepdims=True)
    top[top == -np.inf] = 0.0
    return x - (top + np.log(np.exp(x - top).sum(axis=-1, keepdims=True)))


def _logsumexp(x: np.ndarray) -> float:
    top = float(x.max())
    if top == -np.inf:
        return top
    return top + math.log(float(np.exp(x - top).sum()))


def _best(x: np.ndarray, count: int) -> np.ndarray:
    """Indices of the ``count`` largest values, largest first."""
    count = min(count, x.size)
    near = np.flatnonzero(x >= x.max() - _NEAR)  # a few hundred of 260,000: cheap to sort
    if len(near) < count:
        near = np.arange(x.size)
    top = near[np.argpartition(-x[near], count - 1)[:count]]
    return top[np.argsort(-x[top], kind="stable")]


def _softmax_at(x: np.ndarray, index: int) -> float:
    return float(np.exp(_log_softmax(x)[index]))
