#!/usr/bin/env python3
"""Makes tests/models/{mlp,transformer,cnn,dwconv}_ort_dynamic.onnx: the MLP, the encoder, the CNN and the
depthwise-conv net of tests/models quantized by
ONNX Runtime's own quantize_dynamic (onnxruntime 1.31.1 from PyPI: the torch venv of COMMON.md), so
tests/quant/test_quantize.sh can check that ORT's spelling of a dynamic MatMul (DynamicQuantizeLinear shared by
the projections of one activation, MatMulInteger with a weight zero point, Mul(x_scale, w_scale) -> Mul(Cast, .)
-> Add) is fused into QGemm (src/graph/passes/qdynamic.c) and matches ORT without ORT's Python package in CI;
the same for a dynamic conv (ConvInteger, its bias as Reshape(bias, [1, M, 1, 1])) fused into QConv.
The MLP per tensor, the encoder per channel (ORT's ConvInteger is per tensor either way); reduce_range (7-bit weights) so ORT's vpmaddubsw kernels are exact on
x86 CPUs without VNNI too (tests/quant/test_quantize.sh explains).

    /work/wt/venvs/torch/bin/python tests/quant/gen_ort_dynamic_models.py
"""
import os

from onnxruntime.quantization import QuantType, quantize_dynamic

MODELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models")
for name, per_channel in (("mlp", False), ("transformer", True), ("cnn", False), ("dwconv", False)):
    quantize_dynamic(os.path.join(MODELS, name + ".onnx"), os.path.join(MODELS, name + "_ort_dynamic.onnx"),
                     per_channel=per_channel, reduce_range=True, weight_type=QuantType.QInt8)
