/*
 * wire_scan.c -- bounds the nesting of an ONNX protobuf message before
 * protobuf-c decodes it.
 *
 * protobuf-c unpacks sub-messages by recursion and has no depth limit: a
 * ~430 KB model of 3,000 If bodies nested in each other (Graph > Node >
 * Attribute > Graph > ...) overflows the stack and kills the process.  This
 * file walks the protobuf wire format ITERATIVELY, with an explicit stack of
 * the enclosing messages, and follows only the fields through which ONNX
 * messages nest (a table: message kind, field number -> child kind); every
 * other field is skipped by its length.  It counts three depths and refuses
 * a message that exceeds any of them, naming the limit and the byte offset:
 *
 *   - subgraph levels (If/Loop/Scan bodies, GraphProto inside AttributeProto)
 *     beyond INF_ONNX_MAX_SUBGRAPH_DEPTH;
 *   - TypeProto nesting (sequence of map of optional of ...) beyond
 *     INF_ONNX_MAX_TYPE_DEPTH;
 *   - SequenceProto / MapProto / OptionalProto value nesting (the .pb files
 *     of `infera run`) beyond INF_ONNX_MAX_VALUE_DEPTH.
 *
 * With these limits every recursion downstream (protobuf-c, the IR builder,
 * shape inference, the optimizer, the session, the tensor converters) is
 * bounded by a small constant.  The scan is linear in the message size and
 * never allocates.  Malformed wire data (a length past its message's end, a
 * bad varint, group wire types) is refused here too, as protobuf-c would.
 */
#include <string.h>

#include "bundle/format.h"
#include "onnx/onnx.h"

typedef enum msg_kind {
    K_NONE, /* a field that is not followed (scalars, strings, tensors) */
    K_MODEL,
    K_TRAINING,
    K_FUNCTION,
    K_GRAPH,
    K_NODE,
    K_ATTRIBUTE,
    K_VALUE_INFO,
    K_TYPE,
    K_TYPE_ELEM,  /* TypeProto.Sequence / TypeProto.Optional: elem_type = 1 */
    K_TYPE_MAP,   /* TypeProto.Map: value_type = 2 */
    K_SEQUENCE,
    K_MAP,
    K_OPTIONAL,
    K_TENSOR,     /* a root only: TensorProto does not nest */
} msg_kind;

/* Which fields of which message hold a message that can (transitively)
 * nest again (onnx.proto of Debian's libonnx-dev, src/onnx/onnx_data.proto). */
static const struct {
    unsigned char kind;
    unsigned char field;
    unsigned char child;
} nesting_fields[] = {
    {K_MODEL, 7, K_GRAPH},         {K_MODEL, 20, K_TRAINING},     {K_MODEL, 25, K_FUNCTION},
    {K_TRAINING, 1, K_GRAPH},      {K_TRAINING, 2, K_GRAPH},      {K_FUNCTION, 7, K_NODE},
    {K_GRAPH, 1, K_NODE},          {K_GRAPH, 11, K_VALUE_INFO},   {K_GRAPH, 12, K_VALUE_INFO},
    {K_GRAPH, 13, K_VALUE_INFO},   {K_NODE, 5, K_ATTRIBUTE},      {K_ATTRIBUTE, 6, K_GRAPH},
    {K_ATTRIBUTE, 11, K_GRAPH},    {K_ATTRIBUTE, 14, K_TYPE},     {K_ATTRIBUTE, 15, K_TYPE},
    {K_VALUE_INFO, 2, K_TYPE},     {K_TYPE, 4, K_TYPE_ELEM},      {K_TYPE, 5, K_TYPE_MAP},
    {K_TYPE, 9, K_TYPE_ELEM},      {K_TYPE_ELEM, 1, K_TYPE},      {K_TYPE_MAP, 2, K_TYPE},
    {K_SEQUENCE, 5, K_SEQUENCE},   {K_SEQUENCE, 6, K_MAP},        {K_SEQUENCE, 7, K_OPTIONAL},
    {K_MAP, 5, K_SEQUENCE},        {K_OPTIONAL, 5, K_SEQUENCE},   {K_OPTIONAL, 6, K_MAP},
    {K_OPTIONAL, 7, K_OPTIONAL},
};

static msg_kind child_kind(msg_kind kind, uint64_t field) {
    for (size_t i = 0; i < sizeof nesting_fields / sizeof nesting_fields[0]; i++)
        if (nesting_fields[i].kind == kind && nesting_fields[i].field == field) return nesting_fields[i].child;
    return K_NONE;
}

/* Deepest message nesting the limits above allow, with room to spare:
 * model, graph, 3 per subgraph level, then a node, an attribute and a type. */
#define MAX_FRAMES (8 + 3 * INF_ONNX_MAX_SUBGRAPH_DEPTH + 2 * INF_ONNX_MAX_TYPE_DEPTH + 3 * INF_ONNX_MAX_VALUE_DEPTH)

typedef struct frame {
    size_t end;       /* offset one past the message */
    msg_kind kind;
} frame;

typedef struct scanner {
    const uint8_t *p;
    size_t pos, size;
    frame stack[MAX_FRAMES];
    int top;
    int graphs, types, values; /* how many of each are open */
    const char *what;
    inf_error *err;
} scanner;

static int read_varint(scanner *s, uint64_t *out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64 && s->pos < s->size; shift += 7) {
        uint8_t b = s->p[s->pos++];
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return 1;
        }
    }
    return 0;
}

static inf_status malformed(scanner *s, const char *why) {
    return inf_error_set(s->err, INF_EFORMAT, "%s: not a valid ONNX model (protobuf decoding failed: %s at byte %zu of %zu)",
                      s->what, why, s->pos, s->size);
}

static inf_status too_deep(scanner *s, const char *which, int limit, size_t at) {
    return inf_error_set(s->err, INF_EMODEL, "%s: %s nested more than %d levels deep (at byte %zu); refused before decoding",
                      s->what, which, limit, at);
}

static void count(scanner *s, msg_kind kind, int delta) {
    if (kind == K_GRAPH) s->graphs += delta;
    else if (kind == K_TYPE) s->types += delta;
    else if (kind == K_SEQUENCE || kind == K_MAP || kind == K_OPTIONAL) s->values += delta;
}

static inf_status push(scanner *s, msg_kind kind, size_t end) {
    size_t at = s->pos;
    count(s, kind, +1);
    /* the model's main graph is level 0; each If/Loop/Scan body adds one */
    if (s->graphs - 1 > INF_ONNX_MAX_SUBGRAPH_DEPTH)
        return too_deep(s, "subgraphs (If/Loop/Scan bodies)", INF_ONNX_MAX_SUBGRAPH_DEPTH, at);
    if (s->types > INF_ONNX_MAX_TYPE_DEPTH) return too_deep(s, "types", INF_ONNX_MAX_TYPE_DEPTH, at);
    if (s->values > INF_ONNX_MAX_VALUE_DEPTH)
        return too_deep(s, "sequence/map/optional values", INF_ONNX_MAX_VALUE_DEPTH, at);
    if (s->top == MAX_FRAMES) return too_deep(s, "messages", MAX_FRAMES, at);
    s->stack[s->top].kind = kind;
    s->stack[s->top].end = end;
    s->top++;
    return INF_OK;
}

/* Reads one field of the innermost open message: skips it, or opens it when
 * it is a message that nests. */
static inf_status scan_field(scanner *s) {
    uint64_t tag, len;
    if (!read_varint(s, &tag)) return malformed(s, "truncated field tag");
    uint64_t field = tag >> 3;
    size_t end = s->stack[s->top - 1].end;
    if (field == 0) return malformed(s, "field number 0");
    switch (tag & 7) {
    case 0: return read_varint(s, &len) ? INF_OK : malformed(s, "truncated varint");
    case 1:
        if (end - s->pos < 8) return malformed(s, "truncated fixed64");
        s->pos += 8;
        return INF_OK;
    case 5:
        if (end - s->pos < 4) return malformed(s, "truncated fixed32");
        s->pos += 4;
        return INF_OK;
    case 2: break;
    default: return malformed(s, "unsupported wire type");
    }
    if (!read_varint(s, &len)) return malformed(s, "truncated length");
    if (s->pos > end || len > end - s->pos) return malformed(s, "length past the end of its message");
    msg_kind child = child_kind(s->stack[s->top - 1].kind, field);
    if (child == K_NONE) {
        s->pos += (size_t)len;
        return INF_OK;
    }
    return push(s, child, s->pos + (size_t)len);
}

static inf_status scan(scanner *s, msg_kind root) {
    inf_status st = push(s, root, s->size);
    while (st == INF_OK) {
        while (s->top > 0 && s->pos == s->stack[s->top - 1].end) {
            s->top--;
            count(s, s->stack[s->top].kind, -1);
        }
        if (s->top == 0) break;
        if (s->pos > s->stack[s->top - 1].end) return malformed(s, "field past the end of its message");
        st = scan_field(s);
    }
    return st;
}

static inf_status check(const void *data, size_t size, msg_kind root, const char *what, inf_error *err) {
    scanner s;
    memset(&s, 0, sizeof s);
    s.p = data;
    s.size = size;
    s.what = what ? what : "<memory>";
    s.err = err;
    return scan(&s, root);
}

/* Files users mistake for ONNX models, known by their first bytes (a protobuf
 * ModelProto cannot start so: 'G' and 'I' are tags of wire types 7 and 1 of
 * fields 8 and 9, which ModelProto does not use with those types). */
static const struct {
    const char *magic;
    size_t len;
    const char *kind;
} k_not_onnx[] = {
    {"GGUF", 4, "a GGUF file (a language model: infera generate, tokenize, serve)"},
    {INF__BUNDLE_MAGIC, INF__BUNDLE_MAGIC_LEN, "a compiled bundle (infera compile's output: give its source .onnx)"},
};

inf_status inf__onnx_wire_check_model(const void *data, size_t size, const char *what, inf_error *err) {
    for (size_t i = 0; i < sizeof k_not_onnx / sizeof k_not_onnx[0]; i++)
        if (size >= k_not_onnx[i].len && !memcmp(data, k_not_onnx[i].magic, k_not_onnx[i].len))
            return inf_error_set(err, INF_EFORMAT, "%s: not an ONNX model but %s", what ? what : "<memory>",
                                 k_not_onnx[i].kind);
    return check(data, size, K_MODEL, what, err);
}

inf_status inf__onnx_wire_check_value(const void *data, size_t size, int kind_hint, const char *what, inf_error *err) {
    msg_kind root = kind_hint == INF_KIND_SEQUENCE ? K_SEQUENCE
                    : kind_hint == INF_KIND_MAP    ? K_MAP
                    : kind_hint == INF_KIND_NONE   ? K_OPTIONAL
                                                   : K_TENSOR;
    /* malformed wire data: left to protobuf-c, whose error the callers word */
    inf_error local;
    inf_status st = check(data, size, root, what, &local);
    if (st == INF_EFORMAT) return INF_OK;
    if (st && err) *err = local;
    return st;
}
