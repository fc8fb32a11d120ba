#!/usr/bin/env python3
"""Writes tiny random Hugging Face checkpoint directories for the model loader's parity and error
tests: one directory per variant under OUTDIR (config.json, generation_config.json and
model.safetensors, or two shards with model.safetensors.index.json), and deliberately broken ones
under OUTDIR/bad/ with OUTDIR/bad/expected.tsv naming, per broken variant, the strings of which
the loader's error message must contain at least one. numpy only; the safetensors writer is here.
Deterministic: the same --seed writes the same bytes. Every tensor's values depend only on the
seed, the variant's name and the tensor's name, never on the order or the file it is written to.
    tests/models/make_checkpoints.py OUTDIR [--tokenizer DIR] [--seed N]"""
import argparse
import json
import os
import shutil
import struct
import sys
import zlib

import numpy as np

DTYPE_SIZE = {"BF16": 2, "F16": 2, "F32": 4, "F8_E4M3": 1}
TORCH_DTYPE = {"BF16": "bfloat16", "F16": "float16", "F32": "float32"}
DEFAULT_VOCAB = 512


def bf16_bits(values):
    """float32 values -> uint16 bfloat16 bits, rounded to nearest, ties to even (the upper 16 bits
    of the fp32 pattern plus 0x7FFF plus the lowest kept bit, then truncated). The values written
    here are finite, so NaN needs no care."""
    bits = np.asarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return rounded.astype(np.uint16)


def encode(values, dtype):
    """float array -> little-endian bytes in dtype (BF16, F16 or F32)."""
    values = np.asarray(values, dtype=np.float32)
    if dtype == "BF16":
        return bf16_bits(values).astype("<u2").tobytes()
    if dtype == "F16":
        return values.astype("<f2").tobytes()
    if dtype == "F32":
        return values.astype("<f4").tobytes()
    raise ValueError(f"no encoder for dtype {dtype}")


def layout(tensors):
    """[(name, dtype, shape, bytes)] -> (header dict, data bytes), packed in the given order."""
    header = {"__metadata__": {"format": "pt"}}
    chunks, offset = [], 0
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": list(shape),
                        "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    return header, b"".join(chunks)


def emit(path, header, data, header_len=None):
    """Writes a safetensors file: u64 LE header length N, N bytes of JSON padded with spaces to a
    multiple of 8, then the data. header_len overrides N (for the broken variants)."""
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    n = len(text) if header_len is None else header_len
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", n))
        f.write(text)
        f.write(data)


def write_json(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")


class Tokenizer:
    """What the checkpoints take from a tokenizer directory: its size and its bos/eos ids."""

    def __init__(self, directory):
        self.directory = directory
        self.size = DEFAULT_VOCAB
        self.bos, self.eos = 1, 2
        if directory is None:
            return
        with open(os.path.join(directory, "tokenizer.json"), encoding="utf-8") as f:
            tok = json.load(f)
        vocab = tok["model"]["vocab"]
        ids = list(vocab.values()) if isinstance(vocab, dict) else list(range(len(vocab)))
        added = [t["id"] for t in tok.get("added_tokens", [])]
        extra = [t for t in added if t not in set(ids)]
        # The embedding must cover every id the tokenizer can produce.
        self.size = max(len(ids) + len(extra), max(ids + added) + 1)
        gen = os.path.join(directory, "generation_config.json")
        if os.path.exists(gen):
            with open(gen, encoding="utf-8") as f:
                g = json.load(f)
            self.bos = g.get("bos_token_id", self.bos)
            self.eos = g.get("eos_token_id", self.eos)

    def copy_into(self, out):
        if self.directory is None:
            return
        for name in ("tokenizer.json", "tokenizer_config.json"):
            src = os.path.join(self.directory, name)
            if os.path.exists(src):
                shutil.copyfile(src, os.path.join(out, name))


# The good variants. Each differs from the others in several numbers so that a loader that reads
# one field from the wrong place, or ignores it, gives different logits.
VARIANTS = {
    "llama3-tied-bf16": dict(
        family="llama", dtype="BF16", hidden=64, layers=2, heads=4, kv_heads=2, inter=128,
        eps=1e-5, tied=True, shards=1,
        # head_dim 16, theta 5e5: wavelengths 6.3, 32.4, 167, ... against the bands
        # [64/4, 64/1] = [16, 64]: index 0 untouched, index 1 smoothed, indices 2..7 divided by 8
        # (reference.py --self-test checks this).
        rope={"rope_theta": 500000.0, "rope_scaling": {
            "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
            "high_freq_factor": 4.0, "original_max_position_embeddings": 64}}),
    "llama3-untied-fp32-sharded": dict(
        family="llama", dtype="F32", hidden=64, layers=2, heads=8, kv_heads=2, inter=112,
        eps=1e-5, tied=False, shards=2,
        # transformers 5's form of the rope fields; head_dim 8: wavelengths 6.3, 167, 4443, ...
        # against the bands [256/8, 256/1] = [32, 256]: one index of each kind again.
        rope={"rope_parameters": {
            "rope_type": "llama3", "rope_theta": 500000.0, "factor": 4.0,
            "low_freq_factor": 1.0, "high_freq_factor": 8.0,
            "original_max_position_embeddings": 256}}),
    "qwen2-bias-bf16": dict(
        family="qwen2", dtype="BF16", hidden=64, layers=2, heads=4, kv_heads=1, inter=160,
        eps=1e-6, tied=True, shards=1, bias=True, rope={"rope_theta": 1000000.0}),
    "qwen3-qknorm-fp32": dict(
        family="qwen3", dtype="F32", hidden=64, layers=2, heads=4, kv_heads=2, inter=96,
        head_dim=32, eps=1e-6, tied=False, shards=1, qk_norm=True,
        rope={"rope_theta": 1000000.0}),
    "mistral-f16": dict(
        family="mistral", dtype="F16", hidden=64, layers=2, heads=8, kv_heads=2, inter=144,
        eps=1e-5, tied=False, shards=1, rope={"rope_theta": 1000000.0}),
}

ARCH = {"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM",
        "qwen3": "Qwen3ForCausalLM", "mistral": "MistralForCausalLM"}


def vocab_size(v, tok):
    # Qwen checkpoints pad the embedding past the tokenizer; do the same (to a multiple of 64)
    # so that padded rows are exercised. The others use the tokenizer's size exactly.
    if v["family"] in ("qwen2", "qwen3"):
        return -(-tok.size // 64) * 64
    return tok.size


def make_config(v, tok):
    cfg = {
        "architectures": [ARCH[v["family"]]],
        "model_type": v["family"],
        "torch_dtype": TORCH_DTYPE[v["dtype"]],
        "bos_token_id": tok.bos,
        "eos_token_id": tok.eos,
        "vocab_size": vocab_size(v, tok),
        "hidden_size": v["hidden"],
        "intermediate_size": v["inter"],
        "num_hidden_layers": v["layers"],
        "num_attention_heads": v["heads"],
        "num_key_value_heads": v["kv_heads"],
        "max_position_embeddings": 2048,
        "rms_norm_eps": v["eps"],
        "hidden_act": "silu",
        "tie_word_embeddings": v["tied"],
        "initializer_range": 0.02,
        "use_cache": True,
    }
    cfg.update(v["rope"])
    if "head_dim" in v:
        cfg["head_dim"] = v["head_dim"]
    if v["family"] == "llama":
        cfg.update(attention_bias=False, mlp_bias=False)
    if v["family"] == "qwen2":
        # sliding_window is set but inactive: use_sliding_window is false.
        cfg.update(use_sliding_window=False, sliding_window=4096, max_window_layers=v["layers"])
    if v["family"] == "qwen3":
        cfg.update(attention_bias=False, use_sliding_window=False, sliding_window=None)
    if v["family"] == "mistral":
        cfg.update(sliding_window=None, head_dim=v["hidden"] // v["heads"])
    return cfg


def shapes(v, cfg):
    """HF tensor names and shapes for variant v, in the order they are written."""
    h, hd = v["hidden"], v.get("head_dim", v["hidden"] // v["heads"])
    q, kv = v["heads"] * hd, v["kv_heads"] * hd
    out = [("model.embed_tokens.weight", (cfg["vocab_size"], h))]
    for i in range(v["layers"]):
        p = f"model.layers.{i}."
        out += [(p + "input_layernorm.weight", (h,)),
                (p + "self_attn.q_proj.weight", (q, h)),
                (p + "self_attn.k_proj.weight", (kv, h)),
                (p + "self_attn.v_proj.weight", (kv, h)),
                (p + "self_attn.o_proj.weight", (h, q))]
        if v.get("bias"):
            out += [(p + "self_attn.q_proj.bias", (q,)),
                    (p + "self_attn.k_proj.bias", (kv,)),
                    (p + "self_attn.v_proj.bias", (kv,))]
        if v.get("qk_norm"):
            out += [(p + "self_attn.q_norm.weight", (hd,)),
                    (p + "self_attn.k_norm.weight", (hd,))]
        out += [(p + "post_attention_layernorm.weight", (h,)),
                (p + "mlp.gate_proj.weight", (v["inter"], h)),
                (p + "mlp.up_proj.weight", (v["inter"], h)),
                (p + "mlp.down_proj.weight", (h, v["inter"]))]
    out.append(("model.norm.weight", (h,)))
    if not v["tied"]:
        out.append(("lm_head.weight", (cfg["vocab_size"], h)))
    return out


def values(seed, variant, name, shape):
    """Random float32 values for one tensor, seeded by (seed, variant, name) alone."""
    rng = np.random.default_rng([seed, zlib.crc32(f"{variant}/{name}".encode())])
    if name.endswith("embed_tokens.weight"):
        # Normal with std 0.2, not 1: at std 1 a token's own embedding dominates the residual
        # stream and a tied model's greedy output only repeats the last input token. At 0.2 the
        # logits span about +-6 and the greedy continuations vary.
        x = 0.2 * rng.standard_normal(shape)
    elif name.endswith("norm.weight"):
        x = 1.0 + 0.2 * rng.uniform(-1.0, 1.0, shape)
    elif name.endswith(".bias"):
        x = 0.1 * rng.standard_normal(shape)
    else:  # a projection [out, in]
        bound = np.sqrt(3.0 / shape[1])
        x = rng.uniform(-bound, bound, shape)
    return x.astype(np.float32)


def tensors_for(name, v, cfg, seed):
    return [(n, v["dtype"], s, encode(values(seed, name, n, s), v["dtype"]))
            for n, s in shapes(v, cfg)]


def write_weights(out, tensors, shards):
    """One model.safetensors, or `shards` files split by size with model.safetensors.index.json."""
    if shards == 1:
        emit(os.path.join(out, "model.safetensors"), *layout(tensors))
        return ["model.safetensors"]
    total = sum(len(t[3]) for t in tensors)
    groups, acc = [[] for _ in range(shards)], 0
    for t in tensors:
        groups[min(shards - 1, acc * shards // total)].append(t)
        acc += len(t[3])
    files, weight_map = [], {}
    for k, group in enumerate(groups):
        fname = f"model-{k + 1:05d}-of-{shards:05d}.safetensors"
        emit(os.path.join(out, fname), *layout(group))
        files.append(fname)
        weight_map.update({t[0]: fname for t in group})
    write_json(os.path.join(out, "model.safetensors.index.json"),
               {"metadata": {"total_size": total},
                "weight_map": dict(sorted(weight_map.items()))})
    return files


def write_common(out, cfg, tok):
    os.makedirs(out, exist_ok=True)
    write_json(os.path.join(out, "config.json"), cfg)
    write_json(os.path.join(out, "generation_config.json"),
               {"bos_token_id": tok.bos, "eos_token_id": tok.eos})
    tok.copy_into(out)


def write_variant(outdir, name, tok, seed, shards=None):
    v = VARIANTS[name]
    cfg = make_config(v, tok)
    out = os.path.join(outdir, name)
    write_common(out, cfg, tok)
    files = write_weights(out, tensors_for(name, v, cfg, seed), shards or v["shards"])
    return out, cfg, files


def write_bad(outdir, tok, seed):
    """Broken variants of llama3-tied-bf16; returns [(name, [expected strings])]."""
    base = "llama3-tied-bf16"
    v = VARIANTS[base]
    good_cfg = make_config(v, tok)
    written = []

    def put(name, expect, cfg=None, tensors=None, mutate=None, header_len=None):
        out = os.path.join(outdir, name)
        write_common(out, cfg or good_cfg, tok)
        header, data = layout(tensors or tensors_for(base, v, good_cfg, seed))
        if mutate:
            mutate(header)
        emit(os.path.join(out, "model.safetensors"), header, data, header_len)
        written.append((name, expect))

    up1, down1 = "model.layers.1.mlp.up_proj.weight", "model.layers.1.mlp.down_proj.weight"

    def overlap(h):
        # down_proj starts in the middle of up_proj; its size stays right.
        b, e = h[down1]["data_offsets"]
        ub, ue = h[up1]["data_offsets"]
        start = (ub + ue) // 2
        h[down1]["data_offsets"] = [start, start + e - b]
    put("overlap", [up1, down1], mutate=overlap)

    last = "model.norm.weight"

    def past_end(h):
        b, e = h[last]["data_offsets"]
        h[last]["data_offsets"] = [b + 4096, e + 4096]
    put("out-of-range", [last], mutate=past_end)

    k0 = "model.layers.0.self_attn.k_proj.weight"

    def wrong_shape(h):
        h[k0]["shape"] = [h[k0]["shape"][0], h[k0]["shape"][1] + 1]
    put("shape-mismatch", [k0], mutate=wrong_shape)

    header, data = layout(tensors_for(base, v, good_cfg, seed))
    text_len = len(json.dumps(header, separators=(",", ":")))
    # N is larger than the whole file.
    put("truncated-header", ["header", "model.safetensors"],
        header_len=8 + text_len + len(data) + 1000)

    f8 = "model.layers.0.mlp.gate_proj.weight"
    tensors = [(n, "F8_E4M3", s, bytes(int(np.prod(s)))) if n == f8 else (n, d, s, r)
               for n, d, s, r in tensors_for(base, v, good_cfg, seed)]
    put("unknown-dtype", [f8, "F8_E4M3"], tensors=tensors)

    v1 = "model.layers.1.self_attn.v_proj.weight"
    tensors = [t for t in tensors_for(base, v, good_cfg, seed) if t[0] != v1]
    put("missing-tensor", [v1], tensors=tensors)

    cfg = dict(good_cfg, quantization_config={
        "quant_method": "fp8", "activation_scheme": "dynamic", "fmt": "e4m3"})
    put("unsupported-config", ["quantization_config"], cfg=cfg)

    # A Mistral whose window (16) is smaller than its context: attention would be windowed.
    cfg = {k: x for k, x in good_cfg.items() if k not in ("rope_scaling", "attention_bias",
                                                          "mlp_bias")}
    cfg.update(model_type="mistral", architectures=[ARCH["mistral"]], sliding_window=16)
    put("sliding-window-active", ["sliding_window"], cfg=cfg)

    with open(os.path.join(outdir, "expected.tsv"), "w", encoding="utf-8") as f:
        f.write("# variant<TAB>strings, one of which the loader's error must contain, '|'-split\n")
        for name, expect in written:
            f.write(f"{name}\t{'|'.join(expect)}\n")
    return written


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--tokenizer", help="tokenizer directory copied into every variant")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    tok = Tokenizer(args.tokenizer)
    for name in VARIANTS:
        out, cfg, files = write_variant(args.outdir, name, tok, args.seed)
        print(f"{out}: {cfg['model_type']} vocab {cfg['vocab_size']}, {', '.join(files)}")
    bad = os.path.join(args.outdir, "bad")
    for name, expect in write_bad(bad, tok, args.seed):
        print(f"{os.path.join(bad, name)}: bad, error must name {' or '.join(expect)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
