#!/usr/bin/env python3
"""hf_arch_sweep.py -- tiny randomly initialised Hugging Face models of nine architectures, exported by both
torch.onnx exporters, through Infera: FP32 against ONNX Runtime and PyTorch, then `infera quantize --mode dynamic`
and the INT8 file in both runtimes.  A survey tool, not a CI test (it needs PyPI torch, transformers and
onnxruntime, too large for CI); one line per model and step, "FAIL"/"DIFF" where something is wrong.

  python hf_arch_sweep.py INFERA OUT_DIR [ARCH...]

Made with torch==2.15.0 transformers==5.23.0 onnx==1.23.2 onnxruntime==1.31.1 (session 28: every line ok but the
dynamo T5 encoder, where ONNX Runtime is the one away from PyTorch; it found the quantizer skipping weights reached
through Identity -- ALBERT's shared layers, GPT-2's zero biases -- and refusing external data).
"""
import json
import os
import subprocess
import sys

import numpy as np
import onnxruntime as ort
import torch
import transformers as T

INFERA, OUT = sys.argv[1], sys.argv[2]
ONLY = sys.argv[3:]
os.makedirs(OUT, exist_ok=True)
B, S = 2, 12
TEXT = ["input_ids", "attention_mask"]
ARCHS = {
    "distilbert": (lambda: T.DistilBertModel(T.DistilBertConfig(vocab_size=100, dim=64, n_layers=2, n_heads=4,
                                                                 hidden_dim=128)), TEXT),
    "roberta": (lambda: T.RobertaModel(T.RobertaConfig(vocab_size=100, hidden_size=64, num_hidden_layers=2,
                                                       num_attention_heads=4, intermediate_size=128,
                                                       max_position_embeddings=64)), TEXT),
    "gpt2": (lambda: T.GPT2Model(T.GPT2Config(vocab_size=100, n_embd=64, n_layer=2, n_head=4, n_positions=64,
                                              use_cache=False)), TEXT),
    "albert": (lambda: T.AlbertModel(T.AlbertConfig(vocab_size=100, embedding_size=32, hidden_size=64,
                                                    num_hidden_layers=2, num_attention_heads=4,
                                                    intermediate_size=128)), TEXT),
    "electra": (lambda: T.ElectraModel(T.ElectraConfig(vocab_size=100, embedding_size=32, hidden_size=64,
                                                       num_hidden_layers=2, num_attention_heads=4,
                                                       intermediate_size=128)), TEXT),
    "deberta": (lambda: T.DebertaV2Model(T.DebertaV2Config(vocab_size=100, hidden_size=64, num_hidden_layers=2,
                                                           num_attention_heads=4, intermediate_size=128,
                                                           max_position_embeddings=64)), TEXT),
    "llama": (lambda: T.LlamaModel(T.LlamaConfig(vocab_size=100, hidden_size=64, num_hidden_layers=2,
                                                 num_attention_heads=4, num_key_value_heads=2,
                                                 intermediate_size=128, max_position_embeddings=64,
                                                 use_cache=False)), TEXT),
    "t5enc": (lambda: T.T5EncoderModel(T.T5Config(vocab_size=100, d_model=64, d_kv=16, d_ff=128, num_layers=2,
                                                  num_heads=4)), TEXT),
    "vit": (lambda: T.ViTModel(T.ViTConfig(image_size=32, patch_size=8, hidden_size=64, num_hidden_layers=2,
                                           num_attention_heads=4, intermediate_size=128)), ["pixel_values"]),
}


class LastHidden(torch.nn.Module):
    def __init__(self, m, names):
        super().__init__()
        self.m, self.names = m, names

    def forward(self, *a):
        return self.m(**dict(zip(self.names, a))).last_hidden_state


def infera_run(path, feeds, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    args = [INFERA, "run", path, "--output-dir", out_dir]
    for k, v in feeds.items():
        np.save(os.path.join(out_dir, k + ".in.npy"), v)
        args += ["--input", "%s=%s" % (k, os.path.join(out_dir, k + ".in.npy"))]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(r.stderr.strip()[:300])
    return np.load(os.path.join(out_dir, "y.npy"))


def check(tag, path, feeds, ref, tol):
    try:
        o = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
        y = infera_run(path, feeds, path + ".out")
    except Exception as e:  # noqa: BLE001 -- a survey line, not a crash
        print("FAIL %s: %s" % (tag, e))
        return
    d = float(np.abs(y - o).max()) if y.shape == o.shape else float("inf")
    dt = float(np.abs(y - ref).max()) if y.shape == ref.shape else float("inf")
    print("%s %s: max|infera - ort| %.3g, max|ort - torch| %.3g, max|infera - torch| %.3g" %
          ("ok  " if d <= tol else "DIFF", tag, d, float(np.abs(o - ref).max()), dt))


torch.manual_seed(0)
ids = torch.randint(5, 99, (B, S))
mask = torch.ones(B, S, dtype=torch.long)
mask[1, 8:] = 0
for name, (make, names) in ARCHS.items():
    if ONLY and name not in ONLY:
        continue
    m = make().eval()
    args = (torch.randn(B, 3, 32, 32),) if names == ["pixel_values"] else (ids, mask)
    with torch.no_grad():
        ref = LastHidden(m, names)(*args).numpy()
    feeds = {k: a.numpy() for k, a in zip(names, args)}
    for exporter in ("torchscript", "dynamo"):
        path = os.path.join(OUT, "%s_%s.onnx" % (name, exporter))
        try:
            if exporter == "torchscript":
                dyn = {k: {0: "batch"} for k in names} | {"y": {0: "batch"}}
                torch.onnx.export(LastHidden(m, names), args, path, input_names=names, output_names=["y"],
                                  opset_version=17, dynamo=False, dynamic_axes=dyn)
            else:
                torch.onnx.export(LastHidden(m, names), args, path, input_names=names, output_names=["y"],
                                  opset_version=18, dynamo=True)
        except Exception as e:  # noqa: BLE001 -- exporters fail on some architectures (t5 with dynamo)
            print("skip %s %s: the exporter failed: %s" % (name, exporter, str(e).splitlines()[0][:120]))
            continue
        check("%s %s fp32" % (name, exporter), path, feeds, ref, 1e-4)
        info = subprocess.run([INFERA, "info", path, "--json"], capture_output=True, text=True)
        if info.returncode == 0:  # which of the optimizer's transformer fusions fired (docs/optimizer.md)
            ops = json.loads(info.stdout).get("ops_optimized", {})
            print("     %s %s fused: %s" % (name, exporter, ", ".join("%s %d" % (k, ops[k]) for k in (
                "Attention", "FusedMatMul", "LayerNormalization", "MatMul", "Softmax") if k in ops)))
        q = path[:-5] + ".int8.onnx"
        r = subprocess.run([INFERA, "quantize", path, "-o", q, "--mode", "dynamic"], capture_output=True, text=True)
        if r.returncode:
            print("FAIL %s %s quantize: %s" % (name, exporter, r.stderr.strip()[:300]))
            continue
        print("     %s %s: %s" % (name, exporter, " / ".join(line.strip() for line in r.stdout.splitlines()[1:3])))
        check("%s %s int8" % (name, exporter), q, feeds, ref, 1e-3)
