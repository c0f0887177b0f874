#!/usr/bin/python3
"""Makes the small malformed models used by tests/integration/test_cli.sh.

Run with Debian's python3-onnx:  /usr/bin/python3 tests/models/gen_bad_models.py
"""
import os

import onnx
from onnx import TensorProto, helper

here = os.path.dirname(os.path.abspath(__file__))


def save(model, name):
    with open(os.path.join(here, name), "wb") as f:
        f.write(model.SerializeToString())


x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])

# An operator no runtime knows.
node = helper.make_node("FrobnicateTensor", ["x"], ["y"], name="frob")
save(helper.make_model(helper.make_graph([node], "unknown_op", [x], [y]),
                       opset_imports=[helper.make_opsetid("", 13)]), "bad_unknown_op.onnx")

# Two nodes reading each other's output.
a = helper.make_node("Relu", ["b"], ["a"], name="first")
b = helper.make_node("Relu", ["a"], ["b"], name="second")
save(helper.make_model(helper.make_graph([a, b], "cycle", [x], [helper.make_tensor_value_info("b", TensorProto.FLOAT, [2, 3])]),
                       opset_imports=[helper.make_opsetid("", 13)]), "bad_cycle.onnx")

# An initializer whose raw data is shorter than its shape.
w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[2, 3], raw_data=b"\x00" * 8)
add = helper.make_node("Add", ["x", "w"], ["y"], name="add")
save(helper.make_model(helper.make_graph([add], "short_initializer", [x], [y], [w]),
                       opset_imports=[helper.make_opsetid("", 13)]), "bad_short_initializer.onnx")

# A Gemm whose weight does not fit its input: fails at run time with the node named.
w = helper.make_tensor("w", TensorProto.FLOAT, [4, 2], [0.0] * 8)
gemm = helper.make_node("Gemm", ["x", "w"], ["y"], name="mismatched_gemm")
save(helper.make_model(helper.make_graph([gemm], "shape_mismatch", [x],
                                         [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w]),
                       opset_imports=[helper.make_opsetid("", 13)]), "bad_shape_mismatch.onnx")

# A Conv whose stride is 2^40 (found by fuzz_bundle: the geometry's 16 * stride
# overflowed int64); sliding-window attributes above 2^31 - 1 are refused.
xc = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])
yc = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
wc = helper.make_tensor("w", TensorProto.FLOAT, [1, 1, 1, 1], [1.0])
conv = helper.make_node("Conv", ["x", "w"], ["y"], name="huge_stride", strides=[1, 1 << 40])
save(helper.make_model(helper.make_graph([conv], "huge_stride", [xc], [yc], [wc]),
                       opset_imports=[helper.make_opsetid("", 13)]), "bad_conv_huge_stride.onnx")


def one_node(node, inits, opset, out_name, x_shape=(2, 3)):
    """A model of one node reading graph input x (float x_shape) and initializers."""
    xi = helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))
    yi = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    save(helper.make_model(helper.make_graph([node], node.name, [xi], [yi], inits),
                           opset_imports=[helper.make_opsetid("", opset)]), out_name)


# Attributes and constant inputs whose size arithmetic overflowed int64 (the
# fuzz follow-up to bad_conv_huge_stride.onnx); each is refused by name.
# Tile: 3 * 2^62 columns.
one_node(helper.make_node("Tile", ["x", "reps"], ["y"], name="huge_tile"),
         [helper.make_tensor("reps", TensorProto.INT64, [2], [1, 1 << 62])], 13, "bad_tile_huge_repeats.onnx")
# EyeLike with k = 2^63 - 1: row + k overflowed; the diagonal misses the matrix (all zeros).
one_node(helper.make_node("EyeLike", ["x"], ["y"], name="far_diagonal", k=(1 << 63) - 1), [], 13,
         "eyelike_huge_k.onnx")
# Resize to sizes [2^63 - 1, 1] keeping the aspect ratio (not_smaller): the other
# axis's scale * length converted to int64 out of range.
one_node(helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], name="huge_aspect",
                          keep_aspect_ratio_policy="not_smaller"),
         [helper.make_tensor("sizes", TensorProto.INT64, [2], [(1 << 63) - 1, 1])], 18, "bad_resize_huge_aspect.onnx")
# DepthToSpace with blocksize 2^32: blocksize² wrapped to 0 (a division by zero).
one_node(helper.make_node("DepthToSpace", ["x"], ["y"], name="huge_block", blocksize=1 << 32), [], 13,
         "bad_depth_to_space_huge_block.onnx", (1, 4, 1, 1))
# TfIdfVectorizer with max_skip_count = 2^62: the count loop ran to it (for ever).
# Input and expected output: ONNX's node test tfidfvectorizer_tf_batch_onlybigrams_skip5
# (any skip >= 4 counts the same in rows of 6).
tf_x = helper.make_tensor_value_info("x", TensorProto.INT32, ["N", "C"])
tfidf = helper.make_node("TfIdfVectorizer", ["x"], ["y"], name="wide_skip", mode="TF", min_gram_length=2,
                         max_gram_length=2, max_skip_count=1 << 62, ngram_counts=[0, 4],
                         ngram_indexes=list(range(7)), pool_int64s=[2, 3, 5, 4, 5, 6, 7, 8, 6, 7])
save(helper.make_model(helper.make_graph([tfidf], "wide_skip", [tf_x],
                                         [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]),
                       opset_imports=[helper.make_opsetid("", 9)]), "tfidf_huge_skip.onnx")
with open(os.path.join(here, "tfidf_huge_skip_input.pb"), "wb") as f:
    f.write(helper.make_tensor("x", TensorProto.INT32, [2, 6], [1, 1, 3, 3, 3, 7, 8, 6, 7, 5, 6, 8]).SerializeToString())
# An LSTM whose R is empty but [1, 0, 2^62]: 4 * hidden overflowed int64.  A shape
# whose nonzero dimensions multiply past 2^48 is refused, empty or not.
lstm_x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 3])
lstm = helper.make_node("LSTM", ["x", "W", "R"], ["y"], name="empty_r")
save(helper.make_model(helper.make_graph([lstm], "empty_r", [lstm_x],
                                         [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                                         [helper.make_tensor("W", TensorProto.FLOAT, [1, 0, 3], []),
                                          helper.make_tensor("R", TensorProto.FLOAT, [1, 0, 1 << 62], [])]),
                       opset_imports=[helper.make_opsetid("", 14)]), "bad_lstm_empty_huge_r.onnx")
# Resize tf_crop_and_resize with a roi of 1e30: every output is extrapolated, but
# the source coordinate 2e30 was still converted to int64 (UB).
one_node(helper.make_node("Resize", ["x", "roi", "scales"], ["y"], name="far_roi", mode="linear",
                          coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=7.0),
         [helper.make_tensor("roi", TensorProto.FLOAT, [4], [0, 1e30, 1, 1e30]),
          helper.make_tensor("scales", TensorProto.FLOAT, [2], [2, 2])], 13, "resize_far_roi.onnx")
# Col2Im with dilations [2^62]: dilation * (block - 1) overflowed int64.
one_node(helper.make_node("Col2Im", ["x", "image", "block"], ["y"], name="huge_dilation", dilations=[1 << 62]),
         [helper.make_tensor("image", TensorProto.INT64, [1], [5]), helper.make_tensor("block", TensorProto.INT64, [1], [3])],
         18, "bad_col2im_huge_dilation.onnx", (1, 3, 1))
# DeformConv with dilations [1, 2^62]: dilation * (kW - 1) overflowed int64.
deform = helper.make_node("DeformConv", ["x", "w", "offset"], ["y"], name="huge_dilation", dilations=[1, 1 << 62])
one_node(deform, [helper.make_tensor("w", TensorProto.FLOAT, [1, 1, 1, 3], [1.0] * 3),
                  helper.make_tensor("offset", TensorProto.FLOAT, [1, 6, 1, 1], [0.0] * 6)],
         19, "bad_deform_conv_huge_dilation.onnx", (1, 1, 1, 1))
# MaxUnpool with strides [1, 2^62]: (width - 1) * stride overflowed int64.
unpool = helper.make_node("MaxUnpool", ["x", "idx"], ["y"], name="huge_stride", kernel_shape=[1, 1], strides=[1, 1 << 62])
one_node(unpool, [helper.make_tensor("idx", TensorProto.INT64, [1, 1, 1, 4], [0, 1, 2, 3])], 11,
         "bad_max_unpool_huge_stride.onnx", (1, 1, 1, 4))
# SplitToSequence with a chunk length of 2^63 - 1: dim + chunk - 1 overflowed int64.
seq_out = helper.make_tensor_sequence_value_info("y", TensorProto.FLOAT, None)
sts = helper.make_node("SplitToSequence", ["x", "chunk"], ["y"], name="huge_chunk", axis=1)
save(helper.make_model(helper.make_graph([sts], "huge_chunk", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                                         [seq_out], [helper.make_tensor("chunk", TensorProto.INT64, [], [(1 << 63) - 1])]),
                       opset_imports=[helper.make_opsetid("", 13)]), "split_to_sequence_huge_chunk.onnx")
# CenterCropPad padding an empty [0, 2^47] to [2^20, 1]: the source offset of
# a padded element overflowed int64 (it is not read).
ccp_x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [0, 1 << 47])
ccp = helper.make_node("CenterCropPad", ["x", "shape"], ["y"], name="pad_empty")
save(helper.make_model(helper.make_graph([ccp], "pad_empty", [ccp_x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                                         [helper.make_tensor("shape", TensorProto.INT64, [2], [1 << 20, 1])]),
                       opset_imports=[helper.make_opsetid("", 18)]), "center_crop_pad_empty_huge.onnx")
