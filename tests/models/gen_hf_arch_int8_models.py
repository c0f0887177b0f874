#!/usr/bin/env python3
"""gen_hf_arch_int8_models.py -- ONNX Runtime's own INT8 files of tests/models/hf_arch exports, for
tests/integration/test_hf_arch.sh (session 30, h21/qdecoder) and tests/integration/test_ort_qdq.sh (session 31,
h22/qdqfuse).

Dynamic (session 30): onnxruntime.quantization.quantize_dynamic with its defaults on

  llama.torchscript.onnx     -> llama.torchscript.ort_dynamic.onnx
  roberta.dynamo_static.onnx -> roberta.dynamo_static.ort_dynamic.onnx

ORT's dynamic writer also quantizes the embedding Gathers (uint8 table -> Gather -> DequantizeLinear), and Infera's
shape inference did not know DequantizeLinear: every shape after the embeddings was unknown, so Llama lost its
RMSNorm and grouped-query attention fusions and RoBERTa's fixed-shape dynamo export its attention (the FP32 file
and Infera's own dynamic file kept them).

Static QDQ (session 31, --static): onnxruntime.quantization.quantize_static, QDQ format, uint8 activations, int8
weights (what tests/quant/hf_arch_int8_survey.py's ort-qdq mode writes), calibrated on 32 rows of 12 random tokens
(numpy seed 3; every other row's tail masked), fed 8 rows at a time (2 for the fixed-batch export), on

  llama.torchscript.onnx     -> llama.torchscript.ort_qdq.onnx      (ORT's own INT8 error 1.74: the mask's pair)
  roberta.dynamo_static.onnx -> roberta.dynamo_static.ort_qdq.onnx
  gpt2.dynamo.onnx           -> gpt2.dynamo.ort_qdq.onnx

Q -> DQ pairs around nearly every op (60-120 a file): the form graph/passes/qdq_activations.c reduces.  With
them, the same quantizer's file of the small residual CNN tests/models/cnn.onnx (calibrated on 8 seeded normal
batches of its input shape) -> tests/models/ort_qdq/cnn.ort_qdq.onnx: ORT removes each Relu after a residual Add
and lets the Add's pair (a grid starting at 0) clamp in its place, which the pass must keep.  (Not in tests/models/
itself: edge_bundle would bundle it, and a bundle of a QConv with a residual uint8 link does not load -- ops.def
gives QConv 5..10 inputs, the link makes 12 or 14; main's bug too, reported, not fixed here.)

  /work/wt/venvs/torch/bin/python tests/models/gen_hf_arch_int8_models.py tests/models/hf_arch [--static]

Made with PyPI onnxruntime 1.31.1, onnx 1.23.2, numpy (the torch venv of tests/models/README.md).
"""
import os
import sys

import numpy as np
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType, quantize_dynamic,
                                      quantize_static)


class Reader(CalibrationDataReader):
    def __init__(self, rows):
        rng = np.random.default_rng(3)
        ids = rng.integers(3, 95, (32, 12)).astype(np.int64)
        mask = np.ones((32, 12), np.int64)
        for r in range(1, 32, 2):
            mask[r, rng.integers(6, 12):] = 0
        self.batches = [{"input_ids": ids[r:r + rows], "attention_mask": mask[r:r + rows]} for r in range(0, 32, rows)]

    def get_next(self):
        return self.batches.pop(0) if self.batches else None


def main():
    d = sys.argv[1]
    if "--static" in sys.argv[2:]:
        for name, rows in (("llama.torchscript", 8), ("roberta.dynamo_static", 2), ("gpt2.dynamo", 8)):
            src, dst = os.path.join(d, name + ".onnx"), os.path.join(d, name + ".ort_qdq.onnx")
            quantize_static(src, dst, Reader(rows), quant_format=QuantFormat.QDQ,
                            activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
            print("%s: %d bytes" % (dst, os.path.getsize(dst)))
        import onnx
        src, dst = os.path.join(d, "..", "cnn.onnx"), os.path.join(d, "..", "ort_qdq", "cnn.ort_qdq.onnx")
        inp = onnx.load(src).graph.input[0]
        shape = [x.dim_value or 4 for x in inp.type.tensor_type.shape.dim]
        rng = np.random.default_rng(0)

        class Cnn(CalibrationDataReader):
            batches = [{inp.name: rng.standard_normal(shape).astype(np.float32)} for _ in range(8)]

            def get_next(self):
                return self.batches.pop() if self.batches else None

        quantize_static(src, dst, Cnn(), quant_format=QuantFormat.QDQ, activation_type=QuantType.QUInt8,
                        weight_type=QuantType.QInt8)
        print("%s: %d bytes" % (dst, os.path.getsize(dst)))
        return
    for name in ("llama.torchscript", "roberta.dynamo_static"):
        src, dst = os.path.join(d, name + ".onnx"), os.path.join(d, name + ".ort_dynamic.onnx")
        quantize_dynamic(src, dst)
        print("%s: %d bytes" % (dst, os.path.getsize(dst)))


if __name__ == "__main__":
    main()
