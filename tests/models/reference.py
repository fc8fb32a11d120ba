#!/usr/bin/env python3
"""An independent forward pass of a Hugging Face Llama / Qwen2 / Qwen3 / Mistral checkpoint in
float64 numpy, with its own safetensors reader, as the reference the C++ loader is compared with
(tests/models/compare.py). Prints one JSON object:
    {"logits": [[vocab floats] per input position],
     "greedy": [N ids, each the argmax of the last position's logits, ties to the lowest id,
                appended to the input before the next step; no stop at eos],
     "top2_gap": [per greedy step, logit(top1) - logit(top2)]}
Semantics follow transformers' modeling_llama / qwen2 / qwen3 / mistral (see the functions).
    tests/models/reference.py DIR --tokens 1,2,3 [--greedy N]
    tests/models/reference.py --self-test"""
import argparse
import json
import math
import os
import struct
import sys

import numpy as np

# dtype -> (bytes per element, decoder from a little-endian byte buffer to float64)
DTYPES = {
    "F32": (4, lambda b: np.frombuffer(b, dtype="<f4").astype(np.float64)),
    "F16": (2, lambda b: np.frombuffer(b, dtype="<f2").astype(np.float64)),
    # bf16 is the upper half of an fp32 bit pattern.
    "BF16": (2, lambda b: (np.frombuffer(b, dtype="<u2").astype(np.uint32) << 16)
             .view(np.float32).astype(np.float64)),
}


class CheckpointError(Exception):
    pass


def read_safetensors(path):
    """{name: float64 array} from one safetensors file, checking what the format promises."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise CheckpointError(f"{path}: shorter than the 8-byte header length")
    (n,) = struct.unpack_from("<Q", blob, 0)
    if 8 + n > len(blob):
        raise CheckpointError(f"{path}: header length {n} past the end of the file")
    header = json.loads(blob[8:8 + n].decode("utf-8"))
    data = memoryview(blob)[8 + n:]
    out, spans = {}, []
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] not in DTYPES:
            raise CheckpointError(f"{path}: tensor {name}: unsupported dtype {info['dtype']}")
        size, decode = DTYPES[info["dtype"]]
        shape = tuple(info["shape"])
        begin, end = info["data_offsets"]
        if not 0 <= begin <= end <= len(data):
            raise CheckpointError(f"{path}: tensor {name}: data_offsets past the end of the file")
        if end - begin != math.prod(shape) * size:
            raise CheckpointError(f"{path}: tensor {name}: {end - begin} bytes for shape {shape}")
        spans.append((begin, end, name))
        out[name] = decode(data[begin:end]).reshape(shape)
    spans.sort()
    for (_, e0, a), (b1, _, b) in zip(spans, spans[1:]):
        if b1 < e0:
            raise CheckpointError(f"{path}: tensors {a} and {b} overlap")
    return out


def load_weights(directory):
    index = os.path.join(directory, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index, encoding="utf-8") as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    weights = {}
    for name in files:
        weights.update(read_safetensors(os.path.join(directory, name)))
    return weights


def rope_parameters(cfg):
    """(theta, rope_type, params) from either rope_theta + rope_scaling (transformers 4) or
    rope_parameters (transformers 5)."""
    if cfg.get("rope_parameters"):
        p = dict(cfg["rope_parameters"])
        return float(p.get("rope_theta", cfg.get("rope_theta", 10000.0))), \
            p.get("rope_type", p.get("type", "default")), p
    p = dict(cfg.get("rope_scaling") or {})
    return float(cfg.get("rope_theta", 10000.0)), p.get("rope_type", p.get("type", "default")), p


def inv_freq(cfg, head_dim):
    """Per-pair inverse frequencies, as transformers' ROPE_INIT_FUNCTIONS (default, linear,
    llama3), in float64."""
    theta, kind, p = rope_parameters(cfg)
    inv = 1.0 / theta ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    if kind == "default":
        return inv
    if kind == "linear":
        return inv / float(p["factor"])
    if kind == "llama3":
        return llama3_inv_freq(inv, float(p["factor"]), float(p["low_freq_factor"]),
                               float(p["high_freq_factor"]),
                               float(p["original_max_position_embeddings"]))
    raise CheckpointError(f"rope type {kind} not supported by the reference")


def llama3_inv_freq(inv, factor, low, high, old_ctx):
    """transformers' _compute_llama3_parameters: long wavelengths divided by factor, short ones
    kept, the band between interpolated."""
    low_wavelen, high_wavelen = old_ctx / low, old_ctx / high
    wavelen = 2.0 * math.pi / inv
    out = np.where(wavelen > low_wavelen, inv / factor, inv)
    smooth = (old_ctx / wavelen - low) / (high - low)
    smoothed = (1.0 - smooth) * out / factor + smooth * out
    medium = ~(wavelen < high_wavelen) & ~(wavelen > low_wavelen)
    return np.where(medium, smoothed, out)


def rms_norm(x, weight, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * weight


def rotate_half(x):
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def apply_rope(x, cos, sin):
    """x [T, heads, head_dim]; cos, sin [T, head_dim] (the NeoX / rotate-half form)."""
    return x * cos[:, None, :] + rotate_half(x) * sin[:, None, :]


def silu(x):
    return x / (1.0 + np.exp(-x))


class Model:
    def __init__(self, directory):
        with open(os.path.join(directory, "config.json"), encoding="utf-8") as f:
            self.cfg = cfg = json.load(f)
        self.w = load_weights(directory)
        self.hidden = cfg["hidden_size"]
        self.heads = cfg["num_attention_heads"]
        self.kv_heads = cfg.get("num_key_value_heads") or self.heads
        self.head_dim = cfg.get("head_dim") or self.hidden // self.heads
        self.layers = cfg["num_hidden_layers"]
        self.eps = cfg["rms_norm_eps"]
        if "quantization_config" in cfg:
            raise CheckpointError("quantization_config: quantized checkpoints not supported")
        if cfg.get("hidden_act", "silu") != "silu":
            raise CheckpointError(f"hidden_act {cfg['hidden_act']} not supported")
        self.inv_freq = inv_freq(cfg, self.head_dim)
        tied = cfg.get("tie_word_embeddings", False)
        self.lm_head = self.get("model.embed_tokens.weight" if tied else "lm_head.weight")

    def get(self, name):
        if name not in self.w:
            raise CheckpointError(f"tensor {name} missing")
        return self.w[name]

    def linear(self, x, name):
        """x @ W.T (+ bias when the checkpoint has one: qwen2's q/k/v, llama's attention_bias)."""
        y = x @ self.get(name + ".weight").T
        if name + ".bias" in self.w:
            y = y + self.w[name + ".bias"]
        return y

    def window(self, layer):
        """The sliding window of a layer, or None: mistral's sliding_window, qwen2/3's when
        use_sliding_window and the layer is at or past max_window_layers."""
        cfg, sw = self.cfg, self.cfg.get("sliding_window")
        if not sw:
            return None
        if cfg["model_type"] in ("qwen2", "qwen3"):
            if not cfg.get("use_sliding_window") or layer < cfg.get("max_window_layers", 0):
                return None
        return sw

    def attention(self, x, i, cos, sin):
        p = f"model.layers.{i}.self_attn."
        t, hd = x.shape[0], self.head_dim
        q = self.linear(x, p + "q_proj").reshape(t, self.heads, hd)
        k = self.linear(x, p + "k_proj").reshape(t, self.kv_heads, hd)
        v = self.linear(x, p + "v_proj").reshape(t, self.kv_heads, hd)
        if p + "q_norm.weight" in self.w:  # qwen3: per-head RMSNorm before RoPE
            q = rms_norm(q, self.w[p + "q_norm.weight"], self.eps)
            k = rms_norm(k, self.get(p + "k_norm.weight"), self.eps)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        pos = np.arange(t)
        allowed = pos[None, :] <= pos[:, None]  # [query, key]
        sw = self.window(i)
        if sw:
            allowed &= pos[:, None] - pos[None, :] < sw
        group = self.heads // self.kv_heads
        out = np.empty((t, self.heads, hd))
        for h in range(self.heads):
            kv = h // group
            scores = q[:, h, :] @ k[:, kv, :].T * hd ** -0.5
            scores = np.where(allowed, scores, -np.inf)
            scores -= scores.max(axis=-1, keepdims=True)
            probs = np.exp(scores)
            probs /= probs.sum(axis=-1, keepdims=True)
            out[:, h, :] = probs @ v[:, kv, :]
        return self.linear(out.reshape(t, self.heads * hd), p + "o_proj")

    def mlp(self, x, i):
        p = f"model.layers.{i}.mlp."
        return self.linear(silu(self.linear(x, p + "gate_proj")) * self.linear(x, p + "up_proj"),
                           p + "down_proj")

    def forward(self, tokens):
        """Logits [len(tokens), vocab] in float64."""
        x = self.get("model.embed_tokens.weight")[np.asarray(tokens)]
        angles = np.arange(len(tokens), dtype=np.float64)[:, None] * self.inv_freq[None, :]
        angles = np.concatenate([angles, angles], axis=-1)
        cos, sin = np.cos(angles), np.sin(angles)
        for i in range(self.layers):
            p = f"model.layers.{i}."
            x = x + self.attention(rms_norm(x, self.get(p + "input_layernorm.weight"), self.eps),
                                   i, cos, sin)
            x = x + self.mlp(rms_norm(x, self.get(p + "post_attention_layernorm.weight"),
                                      self.eps), i)
        return rms_norm(x, self.get("model.norm.weight"), self.eps) @ self.lm_head.T


def run(directory, tokens, greedy):
    model = Model(directory)
    vocab = model.lm_head.shape[0]
    bad = [t for t in tokens if not 0 <= t < vocab]
    if bad:
        raise CheckpointError(f"token ids {bad} outside the vocabulary of {vocab}")
    logits = model.forward(tokens)
    seq, ids, gaps = list(tokens), [], []
    last = logits[-1]
    for step in range(greedy):
        if step:
            last = model.forward(seq)[-1]
        top = int(np.argmax(last))  # the first of equal maxima: ties to the lowest id
        rest = np.delete(last, top)
        ids.append(top)
        gaps.append(float(last[top] - rest.max()))
        seq.append(top)
    return {"logits": logits.tolist(), "greedy": ids, "top2_gap": gaps}


def self_test():
    """Checks needing no files: llama3 inv_freq by hand, bf16 rounding, RMSNorm, RoPE."""
    ok = True

    def check(what, cond):
        nonlocal ok
        print(f"{'ok  ' if cond else 'FAIL'} {what}")
        ok = ok and bool(cond)

    # llama3: theta 5e5, head_dim 16, factor 8, low 1, high 4, old context 64 (the tied variant).
    inv = 1.0 / 500000.0 ** (np.arange(0, 16, 2) / 16.0)
    got = llama3_inv_freq(inv, 8.0, 1.0, 4.0, 64.0)
    # By hand (30-digit decimal arithmetic): index 1 has inv = 5e5^(-1/8) = 0.19392274475,
    # wavelength 2pi/inv = 32.400455735, within [16, 64]; smooth = (64/32.4004557 - 1)/3 =
    # 0.32509361930; (1 - smooth)*inv/8 + smooth*inv = 0.07940300918. Index 0 (wavelength 6.28 <
    # 16) is kept; index 2 (wavelength 167 > 64) is 5e5^(-1/4)/8 = 0.03760603093/8 = 0.00470075387.
    check("llama3: index 0 (short wavelength) unchanged", got[0] == inv[0] == 1.0)
    check(f"llama3: index 1 smoothed, {got[1]:.11f} = 0.07940300918 by hand",
          abs(got[1] - 0.07940300918) < 1e-11)
    check(f"llama3: index 2 divided by 8, {got[2]:.11f} = 0.00470075387 by hand",
          abs(got[2] - 0.00470075387) < 1e-11)
    check("llama3: indices 2..7 divided by 8", np.allclose(got[2:], inv[2:] / 8, rtol=0, atol=0))
    cfg = {"rope_parameters": {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
                               "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                               "original_max_position_embeddings": 64}}
    old = {"rope_theta": 500000.0, "rope_scaling": dict(cfg["rope_parameters"])}
    del old["rope_scaling"]["rope_theta"]
    check("rope_parameters and rope_theta + rope_scaling agree",
          np.array_equal(inv_freq(cfg, 16), inv_freq(old, 16)) and np.array_equal(
              inv_freq(cfg, 16), got))

    # bf16: the writer's rounding (make_checkpoints.py) against bit patterns by hand, then the
    # reader's decoding back.
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from make_checkpoints import bf16_bits  # pylint: disable=import-outside-toplevel
    cases = [(1.0, 0x3F80), (1.0 + 2 ** -8, 0x3F80),  # halfway: down to even 0x3F80
             (1.0 + 3 * 2 ** -8, 0x3F82),  # halfway: up to even 0x3F82
             (1.0 + 2 ** -8 + 2 ** -20, 0x3F81),  # above halfway: up
             (-2.5, 0xC020), (3.0e38, 0x7F62), (0.0, 0x0000), (-1.0 - 2 ** -9, 0xBF80)]
    bits = bf16_bits(np.array([c[0] for c in cases], dtype=np.float32))
    check("bf16: round to nearest, ties to even", [int(b) for b in bits] == [c[1] for c in cases])
    back = DTYPES["BF16"][1](bits.astype("<u2").tobytes())
    check("bf16: decoded exactly", back[0] == 1.0 and back[2] == 1.015625 and back[4] == -2.5)

    # RMSNorm of [1, 2, 3, 4]: mean square 7.5, 1/sqrt(7.5) = 0.36514837.
    y = rms_norm(np.array([1.0, 2.0, 3.0, 4.0]), np.array([1.0, 1.0, 2.0, 0.5]), 0.0)
    check("rms_norm by hand", np.allclose(y, [0.36514837, 0.73029674, 2.19089023, 0.73029674],
                                          rtol=0, atol=1e-8))
    y = rms_norm(np.array([3.0, 4.0]), np.ones(2), 0.5)  # mean square 12.5 + eps 0.5 = 13
    check("rms_norm eps inside the root", abs(y[0] - 3 / math.sqrt(13.0)) < 1e-15)

    # RoPE, rotate-half: pair (x[i], x[i + d/2]) rotated by angle pos * inv[i].
    x = np.array([[[1.0, 0.0, 0.0, 1.0]]])  # T=1, one head, head_dim 4
    a = np.array([[0.5, 0.25, 0.5, 0.25]])
    r = apply_rope(x, np.cos(a), np.sin(a))[0, 0]
    want = [math.cos(0.5), -math.sin(0.25), math.sin(0.5), math.cos(0.25)]
    check("rope rotate-half by hand", np.allclose(r, want, rtol=0, atol=1e-15))
    print("self-test: " + ("passed" if ok else "FAILED"))
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir", nargs="?", help="checkpoint directory")
    ap.add_argument("--tokens", help="comma-separated input ids")
    ap.add_argument("--greedy", type=int, default=0, help="greedy steps after the input")
    ap.add_argument("--self-test", action="store_true", help="check the building blocks")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    if not args.dir or not args.tokens:
        ap.error("DIR and --tokens are required")
    tokens = [int(t) for t in args.tokens.split(",") if t.strip()]
    if not tokens:
        ap.error("--tokens is empty")
    try:
        result = run(args.dir, tokens, args.greedy)
    except CheckpointError as e:
        print(f"reference.py: {args.dir}: {e}", file=sys.stderr)
        return 1
    json.dump(result, sys.stdout, separators=(",", ":"))
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
