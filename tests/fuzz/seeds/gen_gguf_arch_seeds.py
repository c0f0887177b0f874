#!/usr/bin/env python3
"""gen_gguf_arch_seeds.py -- tiny random GGUF models of the architectures beyond llama, as seeds of fuzz_gguf
(the fuzzer mutates their keys and tensors, so the phi3 / gemma2 / gemma3 loading and decoding paths are reached):
phi3 (fused attn_qkv and gate|up ffn_up, LongRoPE factors and attn_factor), gemma2 (post-norms, soft-caps, a
sliding window) and gemma3 (q/k head norms, post-norms, sliding layers with their own RoPE base).  F32, 2 layers,
embedding 32, 2 heads over 1 KV head, vocabulary 16.  Writes into the folder given (default: this one).

  /usr/bin/python3 tests/fuzz/seeds/gen_gguf_arch_seeds.py [DIR]
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "llm", "models"))
import gguf_io as G  # noqa: E402

E, HEADS, KV, FF, VOCAB, LAYERS = 32, 2, 1, 64, 16, 2
HD = E // HEADS


def model(arch, rng, fused=False, head_norms=False, post_norms=False, extra_keys=(), extra_tensors=()):
    kvs = [("general.architecture", arch), ("general.name", "fuzz seed " + arch),
           (arch + ".context_length", 16), (arch + ".embedding_length", E), (arch + ".block_count", LAYERS),
           (arch + ".feed_forward_length", FF), (arch + ".attention.head_count", HEADS),
           (arch + ".attention.head_count_kv", KV), (arch + ".attention.layer_norm_rms_epsilon", 1e-5),
           (arch + ".rope.freq_base", 10000.0), ("tokenizer.ggml.bos_token_id", 1),
           ("tokenizer.ggml.eos_token_id", 2)] + list(extra_keys)

    def m(rows, cols):  # ggml shape [cols, rows]: numpy (rows, cols)
        return rng.normal(0, cols ** -0.5, (rows, cols)).astype(np.float32)

    def v(n):
        return rng.uniform(0.5, 1.5, n).astype(np.float32)

    t = [("token_embd.weight", m(VOCAB, E)), ("output_norm.weight", v(E))]
    for layer in range(LAYERS):
        p = "blk.%d." % layer
        t.append((p + "attn_norm.weight", v(E)))
        if fused:
            t.append((p + "attn_qkv.weight", m(E + 2 * KV * HD, E)))
        else:
            t += [(p + "attn_q.weight", m(E, E)), (p + "attn_k.weight", m(KV * HD, E)),
                  (p + "attn_v.weight", m(KV * HD, E))]
        t.append((p + "attn_output.weight", m(E, E)))
        t.append((p + "ffn_norm.weight", v(E)))
        if fused:
            t.append((p + "ffn_up.weight", m(2 * FF, E)))
        else:
            t += [(p + "ffn_gate.weight", m(FF, E)), (p + "ffn_up.weight", m(FF, E))]
        t.append((p + "ffn_down.weight", m(E, FF)))
        if head_norms:
            t += [(p + "attn_q_norm.weight", v(HD)), (p + "attn_k_norm.weight", v(HD))]
        if post_norms:
            t += [(p + "post_attention_norm.weight", v(E)), (p + "post_ffw_norm.weight", v(E))]
    t += list(extra_tensors)
    return kvs, [(name, arr, G.GGML_F32) for name, arr in t]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else HERE
    rng = np.random.default_rng(29)
    seeds = {
        "tiny-phi3-fused.gguf": model(
            "phi3", rng, fused=True,
            extra_keys=[("phi3.rope.scaling.attn_factor", 1.2), ("phi3.rope.scaling.original_context_length", 8)],
            extra_tensors=[("rope_factors_short.weight", rng.uniform(1, 2, HD // 2).astype(np.float32)),
                           ("rope_factors_long.weight", rng.uniform(2, 4, HD // 2).astype(np.float32))]),
        "tiny-gemma2.gguf": model(
            "gemma2", rng, post_norms=True,
            extra_keys=[("gemma2.attention.sliding_window", 4), ("gemma2.attn_logit_softcapping", 5.0),
                        ("gemma2.final_logit_softcapping", 3.0)]),
        "tiny-gemma3.gguf": model(
            "gemma3", rng, head_norms=True, post_norms=True,
            extra_keys=[("gemma3.attention.sliding_window", 4), ("gemma3.attention.sliding_window_pattern", 2),
                        ("gemma3.rope.freq_base_swa", 1000.0)]),
    }
    for name, (kvs, tensors) in seeds.items():
        G.write_gguf(os.path.join(out, name), kvs, tensors)
        print(name)


if __name__ == "__main__":
    main()
