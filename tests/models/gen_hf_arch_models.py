#!/usr/bin/env python3
"""gen_hf_arch_models.py -- tiny Hugging Face models of the architectures users bring (RoBERTa, GPT-2, Llama, T5's
encoder) exported to ONNX the way users export them, for the fusions of session 29 (tests/integration/test_hf_arch.sh).

  OUT_DIR               the committed fixture (tests/models/hf_arch/): each architecture randomly initialised at
                        hidden 32, 2 layers, 4 heads (Llama: 2 key/value heads, grouped-query attention), vocab 96,
                        seed 0 -> OUT_DIR/<arch>.{torchscript,dynamo}.onnx, the inputs input_ids_a.npy /
                        attention_mask_a.npy (int64 [2, 12]; row 1 padded after 7 tokens) and torch's outputs
                        <arch>_a.torch.npy (last_hidden_state, eager, eval)
  --bench OUT_DIR       the same architectures at hidden 256, 4 layers, 4 heads (Llama 2 kv heads), ff 1024, one
                        row of 128 tokens: the before/after measurements of bench/RESULTS.md (session 29); not
                        committed

Regenerate the fixture: /work/wt/venvs/torch/bin/python tests/models/gen_hf_arch_models.py tests/models/hf_arch

Each model is exported with torch.onnx.export: dynamo=False (the TorchScript exporter, opset 17, dynamic_axes
batch and sequence) and dynamo=True (its default opset, dynamic_shapes batch and sequence), and RoBERTa and GPT-2
also with dynamo=True and no dynamic_shapes (`dynamo_static`: every shape fixed, [2, 12], the spelling whose K^T
reshapes hid behind CumSum / GatherElements / Split before session 29); inputs input_ids and attention_mask,
output last_hidden_state.  Biases and norm weights are perturbed (seeded) so that no two
initializers are equal (a random init's zero biases are one shared initializer in the dynamo export, which a
trained model never has).  The dynamo exports' node metadata (source stack traces, 3/4 of each file) is dropped.
Made with (PyPI, /work/wt/venvs/torch): torch 2.15.0, transformers 5.23.0, onnx 1.23.2,
onnxscript; transformers' default attention implementation (sdpa), as a user's export does.
"""
import argparse
import os
import sys

import numpy as np
import onnx
import torch
import transformers as T


def configs(big):
    h, layers, ff, vocab, pos = (256, 4, 1024, 512, 256) if big else (32, 2, 64, 96, 64)
    return {
        "roberta": (T.RobertaModel, T.RobertaConfig(vocab_size=vocab, hidden_size=h, num_hidden_layers=layers,
                                                    num_attention_heads=4, intermediate_size=ff,
                                                    max_position_embeddings=pos + 2)),
        "gpt2": (T.GPT2Model, T.GPT2Config(vocab_size=vocab, n_embd=h, n_layer=layers, n_head=4, n_inner=ff,
                                           n_positions=pos, use_cache=False)),
        "llama": (T.LlamaModel, T.LlamaConfig(vocab_size=vocab, hidden_size=h, num_hidden_layers=layers,
                                              num_attention_heads=4, num_key_value_heads=2, intermediate_size=ff,
                                              max_position_embeddings=pos, use_cache=False)),
        "t5enc": (T.T5EncoderModel, T.T5Config(vocab_size=vocab, d_model=h, d_kv=h // 4, d_ff=ff, num_layers=layers,
                                               num_heads=4)),
    }


class LastHidden(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask):
        return self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state


def build(cls, cfg):
    torch.manual_seed(0)
    model = cls(cfg).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") or "norm" in name.lower() or name.endswith("ln_1.weight") or \
                    name.endswith("ln_2.weight") or name.endswith("ln_f.weight"):
                p.add_(torch.randn_like(p) * 0.1)
    return LastHidden(model).eval()


def export(model, ids, mask, path, kind):
    args = (torch.from_numpy(ids), torch.from_numpy(mask))
    names = ["input_ids", "attention_mask"]
    if kind.startswith("dynamo"):
        batch, seq = torch.export.Dim("batch"), torch.export.Dim("sequence")
        shapes = {n: {0: batch, 1: seq} for n in names} if kind == "dynamo" else None
        prog = torch.onnx.export(model, args, input_names=names, output_names=["last_hidden_state"],
                                 dynamic_shapes=shapes, dynamo=True)
        prog.save(path)
        m = onnx.load(path)  # the nodes' metadata (PyTorch source stack traces) is 3/4 of the file: dropped,
        for n in m.graph.node:  # the graph is unchanged
            n.doc_string = ""
            del n.metadata_props[:]
        onnx.save(m, path)
    else:
        axes = {n: {0: "batch", 1: "sequence"} for n in names}
        axes["last_hidden_state"] = {0: "batch", 1: "sequence"}
        torch.onnx.export(model, args, path, input_names=names, output_names=["last_hidden_state"],
                          dynamic_axes=axes, opset_version=17, dynamo=False)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out_dir")
    ap.add_argument("--bench", action="store_true")
    ap.add_argument("--only", nargs="*")
    a = ap.parse_args()
    os.makedirs(a.out_dir, exist_ok=True)
    rng = np.random.default_rng(1)
    if a.bench:
        ids, mask = rng.integers(3, 500, (1, 128)).astype(np.int64), np.ones((1, 128), np.int64)
    else:
        ids, mask = rng.integers(3, 95, (2, 12)).astype(np.int64), np.ones((2, 12), np.int64)
        mask[1, 7:] = 0
    tag = "" if a.bench else "_a"
    np.save(os.path.join(a.out_dir, f"input_ids{tag}.npy"), ids)
    np.save(os.path.join(a.out_dir, f"attention_mask{tag}.npy"), mask)
    for arch, (cls, cfg) in configs(a.bench).items():
        if a.only and arch not in a.only:
            continue
        model = build(cls, cfg)
        with torch.no_grad():
            ref = model(torch.from_numpy(ids), torch.from_numpy(mask)).numpy()
        np.save(os.path.join(a.out_dir, f"{arch}{tag}.torch.npy"), ref)
        kinds = ["torchscript", "dynamo"] + (["dynamo_static"] if arch in ("roberta", "gpt2") else [])
        for kind in kinds:
            path = os.path.join(a.out_dir, f"{arch}.{kind}.onnx")
            try:
                with torch.no_grad():
                    export(model, ids, mask, path, kind)
                print(f"{path}: {os.path.getsize(path)} bytes")
            except Exception as e:  # report and go on: the other exporter may still work
                print(f"{arch} {kind} export failed: {type(e).__name__}: {str(e)[:300]}", file=sys.stderr)


if __name__ == "__main__":
    main()
