/*
 * mlp_onnx.c -- writes a distilled student MLP as an ONNX model that drops
 * in for its teacher: the teacher's input (name, dtype, shape) and the
 * teacher's outputs (names, dtypes, shapes, order).
 *
 *   x -> Sub(mean) -> Mul(1/std) -> Where(IsNaN, 0, .)     standardise; missing = the mean
 *     -> Gemm -> Relu -> ... -> Gemm                        the MLP (float32)
 *     -> Softmax(axis 1) | Sigmoid | (identity)             probabilities / logits / value
 *     -> ArgMax(axis 1) [-> Gather(class labels)] [-> Cast] the label output, if the teacher has one
 *
 * Built through include/infera/model_write.h at opset 13.
 */
#include <stdio.h>
#include <string.h>

#include "infera/model.h"
#include "tools/tools.h"

static inf_status add_init_f32(inf_model_edit *m, const char *name, int ndim, const int64_t *dims, const float *v,
                               inf_error *err) {
    inf_tensor *t;
    if (inf_tensor_new(INF_DTYPE_F32, ndim, dims, &t)) return inf_error_set(err, INF_ENOMEM, "out of memory");
    memcpy(t->data, v, inf_tensor_nbytes(t));
    inf_status st = inf_model_edit_set_initializer(m, name, t, err);
    inf_tensor_free(t);
    return st;
}

static inf_status add_io(inf_model_edit *m, const inf_value_info *vi, int output, inf_error *err) {
    return (output ? inf_model_edit_add_output : inf_model_edit_add_input)(m, vi->name, vi->dtype, vi->ndim, vi->dims,
                                                                           vi->dim_names, err);
}

#define NODE(op, name, nin, ins, nout, outs, nattr, attrs)                                                  \
    do {                                                                                                \
        if ((st = inf_model_edit_add_node(m, op, name, nin, ins, nout, outs, nattr, attrs, err))) goto done; \
    } while (0)

inf_status inf__mlp_write_onnx(const inf__mlp *mlp, const inf__mlp_outputs *o, const char *path, inf_error *err) {
    const inf_model *t = o->teacher;
    const inf_value_info *in = inf_model_input(t, 0);
    inf_model_edit *m = NULL;
    inf_status st = inf_model_edit_new(13, "distilled_mlp", &m, err);
    if (st) return st;
    char a[128], b[128], c[128];
    /* inputs and outputs as the teacher declares them */
    if ((st = add_io(m, in, 0, err))) goto done;
    for (int k = 0; k < inf_model_n_outputs(t); k++)
        if ((st = add_io(m, inf_model_output(t, k), 1, err))) goto done;
    /* standardise */
    int K = mlp->dims[0];
    int64_t kd[1] = {K};
    float zero = 0;
    if ((st = add_init_f32(m, "distill_mean", 1, kd, mlp->mean, err)) ||
        (st = add_init_f32(m, "distill_scale", 1, kd, mlp->scale, err)) ||
        (st = add_init_f32(m, "distill_zero", 0, kd, &zero, err)))
        goto done;
    const char *x = in->name;
    if (in->dtype != INF_DTYPE_F32) {
        inf_model_edit_attr to = {.name = "to", .i = INF_DTYPE_F32};
        const char *i1[1] = {x}, *o1[1] = {"distill_x32"};
        NODE("Cast", "distill_cast_input", 1, i1, 1, o1, 1, &to);
        x = "distill_x32";
    }
    {
        const char *i1[2] = {x, "distill_mean"}, *o1[1] = {"distill_centered"};
        NODE("Sub", "distill_sub_mean", 2, i1, 1, o1, 0, NULL);
        const char *i2[2] = {"distill_centered", "distill_scale"}, *o2[1] = {"distill_scaled"};
        NODE("Mul", "distill_mul_scale", 2, i2, 1, o2, 0, NULL);
        const char *i3[1] = {"distill_scaled"}, *o3[1] = {"distill_isnan"};
        NODE("IsNaN", "distill_isnan", 1, i3, 1, o3, 0, NULL);
        const char *i4[3] = {"distill_isnan", "distill_zero", "distill_scaled"}, *o4[1] = {"distill_h0"};
        NODE("Where", "distill_impute", 3, i4, 1, o4, 0, NULL);
    }
    /* dense layers */
    snprintf(a, sizeof a, "distill_h0");
    for (int l = 0; l < mlp->n_layers; l++) {
        int64_t wd[2] = {mlp->dims[l], mlp->dims[l + 1]}, bd[1] = {mlp->dims[l + 1]};
        char wn[64], bn[64];
        snprintf(wn, sizeof wn, "distill_W%d", l);
        snprintf(bn, sizeof bn, "distill_b%d", l);
        if ((st = add_init_f32(m, wn, 2, wd, mlp->W[l], err)) || (st = add_init_f32(m, bn, 1, bd, mlp->b[l], err))) goto done;
        int last = l == mlp->n_layers - 1;
        snprintf(b, sizeof b, "distill_z%d", l);
        if (last && o->task == INF__TASK_REGRESSION && inf_model_output(t, inf_model_find_output(t, o->prob_output))->ndim != 1)
            snprintf(b, sizeof b, "%s", o->prob_output);
        const char *ig[3] = {a, wn, bn}, *og[1] = {b};
        snprintf(c, sizeof c, "distill_gemm%d", l);
        NODE("Gemm", c, 3, ig, 1, og, 0, NULL);
        if (last) break;
        snprintf(a, sizeof a, "distill_h%d", l + 1);
        const char *ir[1] = {b}, *orr[1] = {a};
        snprintf(c, sizeof c, "distill_relu%d", l);
        NODE("Relu", c, 1, ir, 1, orr, 0, NULL);
    }
    /* head: b holds the logits */
    const inf_value_info *po = inf_model_output(t, inf_model_find_output(t, o->prob_output));
    if (o->task == INF__TASK_REGRESSION) {
        if (po->ndim == 1) { /* [N, 1] -> [N] */
            int64_t one[1] = {1};
            inf_tensor *ax;
            if (inf_tensor_new(INF_DTYPE_I64, 1, one, &ax)) {
                st = inf_error_set(err, INF_ENOMEM, "out of memory");
                goto done;
            }
            ((int64_t *)ax->data)[0] = 1;
            st = inf_model_edit_set_initializer(m, "distill_axis1", ax, err);
            inf_tensor_free(ax);
            if (st) goto done;
            const char *is[2] = {b, "distill_axis1"}, *os[1] = {o->prob_output};
            NODE("Squeeze", "distill_squeeze", 2, is, 1, os, 0, NULL);
        }
    } else {
        int C = mlp->dims[mlp->n_layers];
        inf_model_edit_attr axis = {.name = "axis", .i = 1};
        const char *ih[1] = {b}, *oh[1] = {o->prob_output};
        if (o->logits)
            NODE("Identity", "distill_logits", 1, ih, 1, oh, 0, NULL);
        else if (C == 1)
            NODE("Sigmoid", "distill_sigmoid", 1, ih, 1, oh, 0, NULL);
        else NODE("Softmax", "distill_softmax", 1, ih, 1, oh, 1, &axis);
        if (o->label_output && *o->label_output) {
            const inf_value_info *lo = inf_model_output(t, inf_model_find_output(t, o->label_output));
            if (C == 1) {
                st = inf_error_set(err, INF_EUNSUPPORTED, "a teacher with one probability column and a label output");
                goto done;
            }
            inf_model_edit_attr am[2] = {{.name = "axis", .i = 1}, {.name = "keepdims", .i = lo->ndim == 2}};
            const char *ia[1] = {o->prob_output}, *oa[1] = {"distill_argmax"};
            NODE("ArgMax", "distill_argmax", 1, ia, 1, oa, 2, am);
            const char *cur = "distill_argmax";
            if (o->class_labels) {
                int64_t cd[1] = {C};
                inf_tensor *cl;
                if (inf_tensor_new(INF_DTYPE_I64, 1, cd, &cl)) {
                    st = inf_error_set(err, INF_ENOMEM, "out of memory");
                    goto done;
                }
                memcpy(cl->data, o->class_labels, (size_t)C * sizeof(int64_t));
                st = inf_model_edit_set_initializer(m, "distill_classes", cl, err);
                inf_tensor_free(cl);
                if (st) goto done;
                const char *ig[2] = {"distill_classes", cur}, *og[1] = {"distill_class_value"};
                NODE("Gather", "distill_class_labels", 2, ig, 1, og, 0, NULL);
                cur = "distill_class_value";
            }
            const char *ic[1] = {cur}, *oc[1] = {o->label_output};
            if (o->label_dtype == INF_DTYPE_I64) NODE("Identity", "distill_label", 1, ic, 1, oc, 0, NULL);
            else {
                inf_model_edit_attr to = {.name = "to", .i = o->label_dtype};
                NODE("Cast", "distill_label", 1, ic, 1, oc, 1, &to);
            }
        }
    }
    if ((st = inf_model_edit_add_metadata(m, "infera.distilled", "student MLP", err))) goto done;
    st = inf_model_edit_save(m, path, err);
done:
    inf_model_edit_free(m);
    return st;
}
