/* SPDX-License-Identifier: MIT */
/*
 * infer-opset18.c: shape and dtype rules of ops that ONNX added in opsets 18
 * to 23: RMSNormalization (23), CenterCropPad (18), AffineGrid (20) and
 * Col2Im (18; AffineGrid's size and Col2Im's image_shape and block_shape must
 * be constants, as every shape is fixed at
 * load time). GroupNormalization, Mish and the Bitwise ops sit with their
 * families in npu-infer.c.
 */
#include <string.h>

#include "infer-priv.h"

enum npu_status
ir_infer_rms_norm(struct npu_node *n)
{
    NEED_IN(0);
    NEED_IN(1);
    const struct npu_tensor *x = ir_T(n, 0), *s = ir_T(n, 1);
    if (!npu_dtype_is_float(x->dtype))
        FAIL("input must be a float tensor, not %s", npu_dtype_name(x->dtype));
    if (s->dtype != x->dtype)
        FAIL("scale is %s, the input %s", npu_dtype_name(s->dtype), npu_dtype_name(x->dtype));
    int64_t a;
    if (!ir_norm_axis(npu_node_int(n, "axis", -1), x->ndim, &a))
        FAIL("axis out of range");
    struct npu_tensor ns = {.ndim = x->ndim - (int)a}, o;
    for (int i = 0; i < ns.ndim; i++)
        ns.dims[i] = x->dims[a + i];
    if (!ir_broadcast(&ns, s, &o) || o.ndim != ns.ndim ||
        memcmp(o.dims, ns.dims, sizeof(int64_t) * (size_t)ns.ndim))
        FAIL("scale does not broadcast to the normalized shape");
    if (n->nout > 1)
        FAIL("has %d outputs (one)", n->nout);
    return ir_same_as(n, 0, 0);
}

enum npu_status
ir_infer_center_crop_pad(struct npu_node *n)
{
    NEED_IN(0);
    NEED_DATA(1, "shape");
    const struct npu_tensor *x = ir_T(n, 0);
    int64_t tgt[NPU_MAX_DIMS], sh[NPU_MAX_DIMS];
    memcpy(tgt, x->dims, sizeof(tgt));
    size_t na = 0;
    const int64_t *axes = npu_node_ints(n, "axes", &na);
    int cnt = ir_read_ints(n->in[1], sh, NPU_MAX_DIMS);
    if (cnt < 0 || (axes ? cnt != (int)na : cnt != x->ndim))
        FAIL("shape must be an integer vector with one entry per %s",
             axes ? "listed axis" : "input dim");
    bool seen[NPU_MAX_DIMS] = {false};
    for (int i = 0; i < cnt; i++) {
        int64_t a = i;
        if (axes && !ir_norm_axis(axes[i], x->ndim, &a))
            FAIL("axis %lld out of range", (long long)axes[i]);
        if (seen[a])
            FAIL("axis %lld listed twice", (long long)a);
        seen[a] = true;
        if (sh[i] < 0)
            FAIL("negative target size %lld", (long long)sh[i]);
        tgt[a] = sh[i];
    }
    return ir_set_out(n, 0, x->dtype, x->ndim, tgt);
}

enum npu_status
ir_infer_col2im(struct npu_node *n)
{
    NEED_IN(0);
    NEED_DATA(1, "image_shape");
    NEED_DATA(2, "block_shape");
    const struct npu_tensor *x = ir_T(n, 0);
    if (!npu_dtype_is_float(x->dtype))
        FAIL("input must be a float tensor, not %s", npu_dtype_name(x->dtype));
    if (x->ndim != 3)
        FAIL("input must be 3-d [N, C * prod(block_shape), L]");
    int64_t img[NPU_MAX_DIMS], blk[NPU_MAX_DIMS];
    int nd = ir_read_ints(n->in[1], img, NPU_MAX_DIMS - 2);
    if (nd < 1 || ir_read_ints(n->in[2], blk, NPU_MAX_DIMS - 2) != nd)
        FAIL("image_shape and block_shape must be integer vectors of one length (1 to %d)",
             NPU_MAX_DIMS - 2);
    size_t k;
    if (npu_node_ints(n, "dilations", &k) && (int)k != nd)
        FAIL("dilations must have %d entries", nd);
    if (npu_node_ints(n, "strides", &k) && (int)k != nd)
        FAIL("strides must have %d entries", nd);
    if (npu_node_ints(n, "pads", &k) && (int)k != 2 * nd)
        FAIL("pads must have %d entries", 2 * nd);
    int64_t bprod = 1, d[NPU_MAX_DIMS];
    for (int i = 0; i < nd; i++) {
        if (blk[i] < 1 || img[i] < 0)
            FAIL("bad image_shape or block_shape entry %d", i);
        bprod *= blk[i];
        d[2 + i] = img[i];
    }
    if (x->dims[1] % bprod)
        FAIL("input dim 1 (%lld) is not a multiple of the block size %lld", (long long)x->dims[1],
             (long long)bprod);
    d[0] = x->dims[0];
    d[1] = x->dims[1] / bprod;
    return ir_set_out(n, 0, x->dtype, nd + 2, d);
}

enum npu_status
ir_infer_affine_grid(struct npu_node *n)
{
    NEED_IN(0);
    NEED_DATA(1, "size");
    const struct npu_tensor *th = ir_T(n, 0);
    int64_t sz[5];
    int k = ir_read_ints(n->in[1], sz, 5);
    if (k != 4 && k != 5)
        FAIL("size must be [N, C, H, W] or [N, C, D, H, W]");
    int sd = k - 2; /* spatial dims */
    if (!npu_dtype_is_float(th->dtype))
        FAIL("theta must be a float tensor, not %s", npu_dtype_name(th->dtype));
    if (th->ndim != 3 || th->dims[0] != sz[0] || th->dims[1] != sd || th->dims[2] != sd + 1)
        FAIL("theta must be [%lld, %d, %d] for a size of %d entries", (long long)sz[0], sd, sd + 1,
             k);
    int64_t d[5];
    d[0] = sz[0];
    for (int i = 0; i < sd; i++) {
        if (sz[2 + i] < 0)
            FAIL("negative size");
        d[1 + i] = sz[2 + i];
    }
    d[1 + sd] = sd;
    return ir_set_out(n, 0, th->dtype, sd + 2, d);
}
