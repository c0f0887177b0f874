#!/usr/bin/env python3
"""gen_hf_arch_int8_models.py -- ONNX Runtime's own dynamic INT8 files of two tests/models/hf_arch exports, for
tests/integration/test_hf_arch.sh (session 30, h21/qdecoder): onnxruntime.quantization.quantize_dynamic with its
defaults on

  llama.torchscript.onnx     -> llama.torchscript.ort_dynamic.onnx
  roberta.dynamo_static.onnx -> roberta.dynamo_static.ort_dynamic.onnx

ORT's dynamic writer also quantizes the embedding Gathers (uint8 table -> Gather -> DequantizeLinear), and Infera's
shape inference did not know DequantizeLinear: every shape after the embeddings was unknown, so Llama lost its
RMSNorm and grouped-query attention fusions and RoBERTa's fixed-shape dynamo export its attention (the FP32 file
and Infera's own dynamic file kept them).

  /work/wt/venvs/torch/bin/python tests/models/gen_hf_arch_int8_models.py tests/models/hf_arch

Made with PyPI onnxruntime 1.31.1, onnx 1.23.2 (the torch venv of tests/models/README.md).
"""
import os
import sys

from onnxruntime.quantization import quantize_dynamic


def main():
    d = sys.argv[1]
    for name in ("llama.torchscript", "roberta.dynamo_static"):
        src, dst = os.path.join(d, name + ".onnx"), os.path.join(d, name + ".ort_dynamic.onnx")
        quantize_dynamic(src, dst)
        print("%s: %d bytes" % (dst, os.path.getsize(dst)))


if __name__ == "__main__":
    main()
