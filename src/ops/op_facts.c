/*
 * op_facts.c -- what the graph layer needs to know about each operator,
 * beyond its kernel: one designated-initialiser row per ops.def row, in the
 * same order.  The build fails when the row counts differ (a static assert
 * below), rows are found by name (inf__op_facts_of), and the unit test
 * ops_facts_complete checks that the two tables stay parallel.
 *
 * Read by memplan.c (in-place), shape_infer.c (output shape rule),
 * optimize.c (activation fusion, constant folding) and subbatch.c (which
 * operators keep the rows of a batch apart), instead of name lists of
 * their own.  A row with no fields states that none applies.
 *
 *   inplace_inputs    bit i: output 0 may take input i's buffer -- the kernel
 *                     computes y[i] from x[i] alone, reading before writing
 *                     (ops/ref/unary.c, binary.c, gelu.c and ops/vmath.h)
 *   shape             INF_SHAPE_SAME: output 0 has input 0's shape and type;
 *                     INF_SHAPE_BROADCAST: numpy broadcast of the inputs
 *   activation        folds into its producer's epilogue (Relu, LeakyRelu, Clip)
 *   takes_activation  can run such an epilogue in its own store
 *   nondeterministic  outputs differ between runs (random ops, training):
 *                     never constant-folded
 *   batch             sub-batching (graph/subbatch.c): the op keeps the rows
 *                     of axis 0 apart when its inputs are, one letter per
 *                     input (the last repeats): B batched, C constant, F
 *                     constant that does not vary along axis 0 (broadcast),
 *                     A any, E batched or such a constant; NULL: it may mix
 *                     rows (the graph then runs its batches whole)
 *   batch_check       the attribute / constant conditions on top of that
 *                     (a Softmax axis other than 0, Reshape keeping dim 0,
 *                     ...), named here, checked by subbatch.c
 */
#include <string.h>

#include "ops/ops.h"

#define FACTS(domain_, name_, ...) {.domain = INF_DOMAIN_##domain_, .name = name_, __VA_ARGS__}

const inf__op_facts inf__op_facts_table[] = {
    FACTS(ONNX, "Abs", .inplace_inputs = 0x1, .shape = INF_SHAPE_SAME, .batch = "BF"),
    FACTS(ONNX, "Acos"),
    FACTS(ONNX, "Acosh"),
    FACTS(ONNX, "Add", .inplace_inputs = 0x3, .shape = INF_SHAPE_BROADCAST, .takes_activation = true, .batch = "E"),
    FACTS(ONNX, "AffineGrid"),
    FACTS(ONNX, "And", .shape = INF_SHAPE_BROADCAST, .batch = "E"),
    FACTS(ONNX, "ArgMax"),
    FACTS(ONNX, "ArgMin"),
    FACTS(ONNX, "Asin"),
    FACTS(ONNX, "Asinh"),
    FACTS(ONNX, "Atan"),
    FACTS(ONNX, "Atanh"),
    FACTS(ONNX, "Attention", .batch = "BBBE", .batch_check = INF_BATCH_RANK4),
    FACTS(ONNX, "AveragePool", .batch = "B"),
    FACTS(ONNX, "BatchNormalization", .shape = INF_SHAPE_SAME, .takes_activation = true, .batch = "BC",
          .batch_check = INF_BATCH_NO_EXTRA_OUTPUTS),
    FACTS(ONNX, "Bernoulli", .nondeterministic = true),
    FACTS(ONNX, "BitCast"),
    FACTS(ONNX, "BitShift"),
    FACTS(ONNX, "BitwiseAnd"),
    FACTS(ONNX, "BitwiseNot"),
    FACTS(ONNX, "BitwiseOr"),
    FACTS(ONNX, "BitwiseXor"),
    FACTS(ONNX, "BlackmanWindow"),
    FACTS(ONNX, "Cast", .batch = "BF"),
    FACTS(ONNX, "CastLike"),
    FACTS(ONNX, "Ceil", .shape = INF_SHAPE_SAME, .batch = "BF"),
    FACTS(ONNX, "Celu", .batch = "BF"),
    FACTS(ONNX, "CenterCropPad"),
    FACTS(ONNX, "Clip", .inplace_inputs = 0x1, .shape = INF_SHAPE_SAME, .activation = true, .batch = "BF"),
    FACTS(ONNX, "Col2Im"),
    FACTS(ONNX, "Compress"),
    FACTS(ONNX, "Concat", .batch = "B", .batch_check = INF_BATCH_CONCAT),
    FACTS(ONNX, "ConcatFromSequence"),
    FACTS(ONNX, "Constant"),
    FACTS(ONNX, "ConstantOfShape"),
    FACTS(ONNX, "Conv", .takes_activation = true, .batch = "BC"),
    FACTS(ONNX, "ConvInteger"),
    FACTS(ONNX, "ConvTranspose", .takes_activation = true, .batch = "BC"),
    FACTS(ONNX, "Cos", .shape = INF_SHAPE_SAME, .batch = "BF"),
    FACTS(ONNX, "Cosh"),
    FACTS(ONNX, "CumProd"),
    FACTS(ONNX, "CumSum", .shape = INF_SHAPE_SAME),
    FACTS(ONNX, "DFT"),
    FACTS(ONNX, "DeformConv"),
    FACTS(ONNX, "DepthToSpace"),
    FACTS(ONNX, "DequantizeLinear", .batch = "BCC", .batch_check = INF_BATCH_QUANTIZE),
    FACTS(ONNX, "Det"),
    FACTS(ONNX, "Div", .inplace_inputs = 0x3, .shape = INF_SHAPE_BROADCAST, .batch = "E"),
    FACTS(ONNX, "Dropout", .shape = INF_SHAPE_SAME, .batch = "BF"),
    FACTS(ONNX, "DynamicQuantizeLinear"),
    FACTS(ONNX, "Einsum"),
    FACTS(ONNX, "Elu", .shape = INF_SHAPE_SAME, .batch = "BF"),
    FACTS(ONNX, "Equal", .shape = INF_SHAPE_BROADCAST, .batch = "E"),
    FACTS(ONNX, "Erf", .inplace_inputs = 0x1, .shape = INF_SHAPE_SAME, .batch = "BF"),
    FACTS(ONNX, "Exp", .inplace_inputs = 0x1, .shape = INF_SHAPE_SAME, .batch = "BF"),
    FACTS(ONNX, "Expand"),
    FACTS(ONNX, "EyeLike"),
    FACTS(ONNX, "Flatten", .batch = "B", .batch_check = INF_BATCH_FLATTEN),
    FACTS(ONNX, "Floor", .shape = INF_SHAPE_SAME, .batch = "BF"),
    FACTS(ONNX, "GRU"),
    FACTS(ONNX, "Gather", .batch = "BC", .batch_check = INF_BATCH_GATHER),
    FACTS(ONNX, "GatherElements"),
    FACTS(ONNX, "GatherND"),
    FACTS(ONNX, "Gelu", .shape = INF_SHAPE_SAME, .batch = "BF"),
    FACTS(ONNX, "Gemm", .takes_activation = true, .batch = "BCF", .batch_check = INF_BATCH_GEMM),
    FACTS(ONNX, "GlobalAveragePool", .batch = "B"),
    FACTS(ONNX, "GlobalLpPool"),
    FACTS(ONNX, "GlobalMaxPool", .batch = "B"),
    FACTS(ONNX, "Greater", .shape = INF_SHAPE_BROADCAST, .batch = "E"),
    FACTS(ONNX, "GreaterOrEqual", .shape = INF_SHAPE_BROADCAST, .batch = "E"),
    FACTS(ONNX, "GridSample"),
    FACTS(ONNX, "GroupNormalization"),
    FACTS(ONNX, "HammingWindow"),
    FACTS(ONNX, "HannWindow"),
    FACTS(ONNX, "HardSigmoid", .shape = INF_SHAPE_SAME, .batch = "BF"),
    FACTS(ONNX, "HardSwish", .shape = INF_SHAPE_SAME, .batch = "BF"),
    FACTS(ONNX, "Hardmax", .batch = "B", .batch_check = INF_BATCH_SOFTMAX),
    FACTS(ONNX, "Identity", .shape = INF_SHAPE_SAME, .batch = "BF"),
    FACTS(ONNX, "If"),
    FACTS(ONNX, "InstanceNormalization", .batch = "BC"),
    FACTS(ONNX, "IsInf"),
    FACTS(ONNX, "IsNaN"),
    FACTS(ONNX, "LRN", .batch = "B"),
    FACTS(ONNX, "LSTM"),
    FACTS(ONNX, "LayerNormalization", .shape = INF_SHAPE_SAME, .batch = "BC", .batch_check = INF_BATCH_AXIS_M1),
    FACTS(ONNX, "LeakyRelu", .inplace_inputs = 0x1, .shape = INF_SHAPE_SAME, .activation = true, .batch = "BF"),
    FACTS(ONNX, "Less", .shape = INF_SHAPE_BROADCAST, .batch = "E"),
    FACTS(ONNX, "LessOrEqual", .shape = INF_SHAPE_BROADCAST, .batch = "E"),
    FACTS(ONNX, "Log", .inplace_inputs = 0x1, .shape = INF_SHAPE_SAME, .batch = "BF"),
    FACTS(ONNX, "LogSoftmax", .shape = INF_SHAPE_SAME, .batch = "B", .batch_check = INF_BATCH_SOFTMAX),
    FACTS(ONNX, "Loop"),
    FACTS(ONNX, "LpNormalization"),
    FACTS(ONNX, "LpPool"),
    FACTS(ONNX, "MatMul", .takes_activation = true, .batch = "BA", .batch_check = INF_BATCH_MATMUL),
    FACTS(ONNX, "MatMulInteger"),
    FACTS(ONNX, "Max", .shape = INF_SHAPE_BROADCAST, .batch = "E"),
    FACTS(ONNX, "MaxPool", .batch = "B", .batch_check = INF_BATCH_NO_EXTRA_OUTPUTS),
    FACTS(ONNX, "MaxRoiPool"),
    FACTS(ONNX, "MaxUnpool"),
    FACTS(ONNX, "Mean", .shape = INF_SHAPE_BROADCAST, .batch = "E"),
    FACTS(ONNX, "MeanVarianceNormalization"),
    FACTS(ONNX, "MelWeightMatrix"),
    FACTS(ONNX, "Min", .shape = INF_SHAPE_BROADCAST, .batch = "E"),
    FACTS(ONNX, "Mish", .shape = INF_SHAPE_SAME, .batch = "BF"),
    FACTS(ONNX, "Mod", .shape = INF_SHAPE_BROADCAST, .batch = "E"),
    FACTS(ONNX, "Mul", .inplace_inputs = 0x3, .shape = INF_SHAPE_BROADCAST, .batch = "E"),
    FACTS(ONNX, "Multinomial", .nondeterministic = true),
    FACTS(ONNX, "Neg", .inplace_inputs = 0x1, .shape = INF_SHAPE_SAME, .batch = "BF"),
    FACTS(ONNX, "NegativeLogLikelihoodLoss"),
    FACTS(ONNX, "NonMaxSuppression"),
    FACTS(ONNX, "NonZero"),
    FACTS(ONNX, "Not", .inplace_inputs = 0x1, .shape = INF_SHAPE_SAME, .batch = "BF"),
    FACTS(ONNX, "OneHot"),
    FACTS(ONNX, "Optional"),
    FACTS(ONNX, "OptionalGetElement"),
    FACTS(ONNX, "OptionalHasElement"),
    FACTS(ONNX, "Or", .shape = INF_SHAPE_BROADCAST, .batch = "E"),
    FACTS(ONNX, "PRelu", .shape = INF_SHAPE_BROADCAST, .batch = "BF"),
    FACTS(ONNX, "Pad", .batch = "BC", .batch_check = INF_BATCH_PAD),
    FACTS(ONNX, "Pow", .shape = INF_SHAPE_BROADCAST, .batch = "E"),
    FACTS(ONNX, "QLinearConv"),
    FACTS(ONNX, "QLinearMatMul"),
    FACTS(ONNX, "QuantizeLinear", .batch = "BCC", .batch_check = INF_BATCH_QUANTIZE),
    FACTS(ONNX, "RMSNormalization", .shape = INF_SHAPE_SAME, .batch = "BC", .batch_check = INF_BATCH_AXIS_M1),
    FACTS(ONNX, "RNN"),
    FACTS(ONNX, "RandomNormal", .nondeterministic = true),
    FACTS(ONNX, "RandomNormalLike", .nondeterministic = true),
    FACTS(ONNX, "RandomUniform", .nondeterministic = true),
    FACTS(ONNX, "RandomUniformLike", .nondeterministic = true),
    FACTS(ONNX, "Range"),
    FACTS(ONNX, "Reciprocal", .inplace_inputs = 0x1, .shape = INF_SHAPE_SAME, .batch = "BF"),
    FACTS(ONNX, "ReduceL1", .batch = "BC", .batch_check = INF_BATCH_REDUCE),
    FACTS(ONNX, "ReduceL2", .batch = "BC", .batch_check = INF_BATCH_REDUCE),
    FACTS(ONNX, "ReduceLogSum"),
    FACTS(ONNX, "ReduceLogSumExp", .batch = "BC", .batch_check = INF_BATCH_REDUCE),
    FACTS(ONNX, "ReduceMax", .batch = "BC", .batch_check = INF_BATCH_REDUCE),
    FACTS(ONNX, "ReduceMean", .batch = "BC", .batch_check = INF_BATCH_REDUCE),
    FACTS(ONNX, "ReduceMin", .batch = "BC", .batch_check = INF_BATCH_REDUCE),
    FACTS(ONNX, "ReduceProd", .batch = "BC", .batch_check = INF_BATCH_REDUCE),
    FACTS(ONNX, "ReduceSum", .batch = "BC", .batch_check = INF_BATCH_REDUCE),
    FACTS(ONNX, "ReduceSumSquare", .batch = "BC", .batch_check = INF_BATCH_REDUCE),
    FACTS(ONNX, "RegexFullMatch"),
    FACTS(ONNX, "Relu", .inplace_inputs = 0x1, .shape = INF_SHAPE_SAME, .activation = true, .batch = "BF"),
    FACTS(ONNX, "Reshape", .batch = "BC", .batch_check = INF_BATCH_RESHAPE),
    FACTS(ONNX, "Resize"),
    FACTS(ONNX, "ReverseSequence"),
    FACTS(ONNX, "RoiAlign"),
    FACTS(ONNX, "RotaryEmbedding"),
    FACTS(ONNX, "Round", .shape = INF_SHAPE_SAME, .batch = "BF"),
    FACTS(ONNX, "STFT"),
    FACTS(ONNX, "Scan"),
    FACTS(ONNX, "Scatter"),
    FACTS(ONNX, "ScatterElements"),
    FACTS(ONNX, "ScatterND"),
    FACTS(ONNX, "Selu", .shape = INF_SHAPE_SAME, .batch = "BF"),
    FACTS(ONNX, "SequenceAt"),
    FACTS(ONNX, "SequenceConstruct"),
    FACTS(ONNX, "SequenceEmpty"),
    FACTS(ONNX, "SequenceErase"),
    FACTS(ONNX, "SequenceInsert"),
    FACTS(ONNX, "SequenceLength"),
    FACTS(ONNX, "SequenceMap"),
    FACTS(ONNX, "Shape"),
    FACTS(ONNX, "Shrink", .batch = "BF"),
    FACTS(ONNX, "Sigmoid", .inplace_inputs = 0x1, .shape = INF_SHAPE_SAME, .batch = "BF"),
    FACTS(ONNX, "Sign", .shape = INF_SHAPE_SAME, .batch = "BF"),
    FACTS(ONNX, "Sin", .shape = INF_SHAPE_SAME, .batch = "BF"),
    FACTS(ONNX, "Sinh"),
    FACTS(ONNX, "Size"),
    FACTS(ONNX, "Slice"),
    FACTS(ONNX, "Softmax", .shape = INF_SHAPE_SAME, .batch = "B", .batch_check = INF_BATCH_SOFTMAX),
    FACTS(ONNX, "SoftmaxCrossEntropyLoss"),
    FACTS(ONNX, "Softplus", .shape = INF_SHAPE_SAME, .batch = "BF"),
    FACTS(ONNX, "Softsign", .batch = "BF"),
    FACTS(ONNX, "SpaceToDepth"),
    FACTS(ONNX, "Split"),
    FACTS(ONNX, "SplitToSequence"),
    FACTS(ONNX, "Sqrt", .inplace_inputs = 0x1, .shape = INF_SHAPE_SAME, .batch = "BF"),
    FACTS(ONNX, "Squeeze", .batch = "BC", .batch_check = INF_BATCH_SQUEEZE),
    FACTS(ONNX, "StringConcat"),
    FACTS(ONNX, "StringNormalizer"),
    FACTS(ONNX, "StringSplit"),
    FACTS(ONNX, "Sub", .inplace_inputs = 0x3, .shape = INF_SHAPE_BROADCAST, .batch = "E"),
    FACTS(ONNX, "Sum", .shape = INF_SHAPE_BROADCAST, .batch = "E"),
    FACTS(ONNX, "Swish"),
    FACTS(ONNX, "Tan", .batch = "BF"),
    FACTS(ONNX, "Tanh", .inplace_inputs = 0x1, .shape = INF_SHAPE_SAME, .batch = "BF"),
    FACTS(ONNX, "TensorScatter"),
    FACTS(ONNX, "TfIdfVectorizer"),
    FACTS(ONNX, "ThresholdedRelu", .batch = "BF"),
    FACTS(ONNX, "Tile"),
    FACTS(ONNX, "TopK"),
    FACTS(ONNX, "Transpose", .batch = "B", .batch_check = INF_BATCH_TRANSPOSE),
    FACTS(ONNX, "Trilu"),
    FACTS(ONNX, "Unique"),
    FACTS(ONNX, "Unsqueeze", .batch = "BC", .batch_check = INF_BATCH_UNSQUEEZE),
    FACTS(ONNX, "Upsample"),
    FACTS(ONNX, "Where", .shape = INF_SHAPE_BROADCAST, .batch = "E"),
    FACTS(ONNX, "Xor", .shape = INF_SHAPE_BROADCAST, .batch = "E"),
    FACTS(ML, "ArrayFeatureExtractor"),
    FACTS(ML, "Binarizer"),
    FACTS(ML, "CastMap"),
    FACTS(ML, "CategoryMapper"),
    FACTS(ML, "DictVectorizer"),
    FACTS(ML, "FeatureVectorizer"),
    FACTS(ML, "Imputer"),
    FACTS(ML, "LabelEncoder"),
    FACTS(ML, "LinearClassifier"),
    FACTS(ML, "LinearRegressor"),
    FACTS(ML, "Normalizer"),
    FACTS(ML, "OneHotEncoder"),
    FACTS(ML, "SVMClassifier"),
    FACTS(ML, "SVMRegressor"),
    FACTS(ML, "Scaler"),
    FACTS(ML, "TreeEnsemble"),
    FACTS(ML, "TreeEnsembleClassifier"),
    FACTS(ML, "TreeEnsembleRegressor"),
    FACTS(ML, "ZipMap"),
    FACTS(TRAINING, "Adagrad", .nondeterministic = true),
    FACTS(TRAINING, "Adam", .nondeterministic = true),
    FACTS(TRAINING, "Momentum", .nondeterministic = true),
    FACTS(MS, "QGemm"),
    FACTS(MS, "QLinearAdd"),
    FACTS(MS, "QLinearAveragePool"),
    FACTS(MS, "QLinearConcat"),
    FACTS(MS, "QLinearGlobalAveragePool"),
    FACTS(MS, "QLinearLeakyRelu", .shape = INF_SHAPE_SAME),
    FACTS(MS, "QLinearMul"),
    FACTS(MS, "QLinearSigmoid", .shape = INF_SHAPE_SAME),
    FACTS(MS, "QLinearSoftmax", .shape = INF_SHAPE_SAME),
    FACTS(INFERA, "Attention", .batch = "BBBE", .batch_check = INF_BATCH_RANK4),
    FACTS(INFERA, "ConvAdd", .takes_activation = true, .batch = "BCCE"),
    FACTS(INFERA, "ConvMaxPool", .batch = "BC"), /* its epilogue (Relu, Clip) comes with its Conv */
    FACTS(INFERA, "FusedMatMul", .batch = "BCCE", .batch_check = INF_BATCH_ROWS),
    FACTS(INFERA, "Gelu", .inplace_inputs = 0x1, .shape = INF_SHAPE_SAME, .batch = "BF"),
    FACTS(INFERA, "QAttention", .batch = "BBBE", .batch_check = INF_BATCH_RANK4),
    FACTS(INFERA, "QConv", .takes_activation = true, .batch = "BCCCCCCCCEC"), /* input 9: the fused residual */
    FACTS(INFERA, "QGemm", .takes_activation = true, .batch = "BCCCCCCCCEC",
          .batch_check = INF_BATCH_ROWS), /* input 9: the fused residual */
};

const int inf__op_facts_count = (int)(sizeof inf__op_facts_table / sizeof inf__op_facts_table[0]);

/* Checked when compiling: one facts row per ops.def row. */
#define OP(...) +1
enum { OPS_DEF_ROWS = 0
#include "ops/ops.def"
};
#undef OP
_Static_assert(sizeof inf__op_facts_table / sizeof inf__op_facts_table[0] == OPS_DEF_ROWS,
               "src/ops/op_facts.c needs exactly one row per src/ops/ops.def row");

static int compare_facts(const inf__op_facts *f, inf__domain domain, const char *name) {
    if (f->domain != domain) return f->domain < domain ? -1 : 1;
    return strcmp(f->name, name);
}

/* The row of an operator, found by name: the row at the operator's own
 * position when its name matches (the tables are parallel), else a
 * bisection (both tables follow ops.def's sort order), else "no facts",
 * which every reader treats conservatively. */
const inf__op_facts *inf__op_facts_of(const inf__op *op) {
    static const inf__op_facts none = {0};
    if (!op) return &none;
    ptrdiff_t i = op - inf__op_table;
    if (i >= 0 && i < inf__op_facts_count && compare_facts(&inf__op_facts_table[i], op->domain, op->name) == 0)
        return &inf__op_facts_table[i];
    int lo = 0, hi = inf__op_facts_count - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        int c = compare_facts(&inf__op_facts_table[mid], op->domain, op->name);
        if (c == 0) return &inf__op_facts_table[mid];
        if (c < 0) lo = mid + 1; else hi = mid - 1;
    }
    return &none;
}
