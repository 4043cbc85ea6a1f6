/* SPDX-License-Identifier: MIT */
/*
 * test-cpu-shape.c: the data-movement ops (Transpose, Slice, Gather,
 * GatherElements, Pad, Concat, Split, Expand, Tile, Reshape, Squeeze,
 * Unsqueeze, Flatten, Range, Trilu, Shape, Size, ConstantOfShape, Constant,
 * Dropout), Resize (a direct, non-separable reference over all taps) and
 * Quantize/DequantizeLinear, against references written here; plus the
 * error returns for out-of-range indices and inconsistent shapes.
 */
#include "cpu-test-util.h"
#include "npu-test.h"

static void
quiet(bool q)
{
    npu_log_set_level(q ? (enum npu_log_level) - 1 : NPU_LOG_WARN);
}

/* ---- Transpose ----------------------------------------------------------------------------- */

static void
check_transpose(enum npu_dtype dt, int nd, const int64_t *dims, const int64_t *perm)
{
    struct npu_tensor *x = tt_fill_rand(tt_new(dt, nd, dims), 0, 100);
    int64_t od[NPU_MAX_DIMS], pn[NPU_MAX_DIMS];
    for (int i = 0; i < nd; i++)
        pn[i] = perm ? (perm[i] < 0 ? perm[i] + nd : perm[i]) : nd - 1 - i;
    for (int i = 0; i < nd; i++)
        od[i] = dims[pn[i]];
    struct npu_tensor *y = tt_new(dt, nd, od);
    struct alist al = {0};
    if (perm)
        al_ints(&al, "perm", perm, (size_t)nd);
    struct npu_tensor *in[1] = {x}, *out[1] = {y};
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_TRANSPOSE, &al, 1, in, 1, out));
    int bad = 0;
    for (int64_t e = 0; e < tt_n(y); e++) {
        int64_t oi[NPU_MAX_DIMS], ii[NPU_MAX_DIMS], off = 0;
        tt_unravel(e, nd, od, oi);
        for (int i = 0; i < nd; i++)
            ii[pn[i]] = oi[i];
        for (int i = 0; i < nd; i++)
            off = off * dims[i] + ii[i];
        bad += tt_get(y, e) != tt_get(x, off);
    }
    CHECK_EQ_INT(0, bad);
    tt_free(x), tt_free(y);
}

static void
test_transpose(void)
{
    int64_t d2[2] = {67, 131}, d3[3] = {5, 6, 7}, d4[4] = {2, 3, 4, 5}, big3[3] = {12, 196, 64};
    int64_t p3a[3] = {2, 0, 1}, p3b[3] = {0, 2, 1}, p4[4] = {0, 2, 1, 3}, p4b[4] = {3, 1, 0, 2},
            p4neg[4] = {-4, -2, -3, -1}, pb[3] = {1, 0, 2};
    static const enum npu_dtype dts[] = {NPU_DTYPE_UINT8, NPU_DTYPE_FP16, NPU_DTYPE_FP32,
                                         NPU_DTYPE_INT64};
    for (size_t i = 0; i < NPU_ARRAY_SIZE(dts); i++) {
        check_transpose(dts[i], 2, d2, NULL);
        check_transpose(dts[i], 3, d3, p3a);
        check_transpose(dts[i], 3, d3, p3b);
        check_transpose(dts[i], 4, d4, p4);
        check_transpose(dts[i], 4, d4, p4b);
    }
    check_transpose(NPU_DTYPE_FP32, 4, d4, p4neg);
    check_transpose(NPU_DTYPE_FP32, 3, big3, p3b);
    check_transpose(NPU_DTYPE_FP32, 3, big3, pb);
    int64_t e[3] = {3, 0, 2};
    check_transpose(NPU_DTYPE_FP32, 3, e, p3a);
    int64_t bad_perm[3] = {0, 0, 1};
    struct npu_tensor *x = tt(NPU_DTYPE_FP32, 3, D(5), D(6), D(7)),
                      *y = tt(NPU_DTYPE_FP32, 3, D(5), D(5), D(6));
    struct alist al = {0};
    al_ints(&al, "perm", bad_perm, 3);
    struct npu_tensor *in[1] = {x}, *out[1] = {y};
    quiet(true);
    CHECK_EQ_INT(NPU_ERR_INVALID, run_op(tctx1, NPU_OP_TRANSPOSE, &al, 1, in, 1, out));
    quiet(false);
    tt_free(x), tt_free(y);
}

/* ---- Slice --------------------------------------------------------------------------------- */

static void
check_slice(int nd, const int64_t *dims, int n, const int64_t *st, const int64_t *en,
            const int64_t *ax, const int64_t *sp)
{
    /* the test's own reading of the clamping rules */
    int64_t start[8], step[8], od[8];
    for (int i = 0; i < nd; i++) {
        start[i] = 0;
        step[i] = 1;
        od[i] = dims[i];
    }
    for (int i = 0; i < n; i++) {
        int a = (int)(ax ? (ax[i] < 0 ? ax[i] + nd : ax[i]) : i);
        int64_t dim = dims[a], k = sp ? sp[i] : 1;
        double s = (double)st[i], e = (double)en[i];
        if (s < 0)
            s += (double)dim;
        if (e < 0)
            e += (double)dim;
        if (k > 0) {
            s = fmin(fmax(s, 0), (double)dim);
            e = fmin(fmax(e, 0), (double)dim);
            od[a] = e > s ? (int64_t)ceil((e - s) / (double)k) : 0;
        } else {
            s = fmin(fmax(s, 0), (double)dim - 1);
            e = fmin(fmax(e, -1), (double)dim - 1);
            od[a] = s > e ? (int64_t)ceil((s - e) / (double)-k) : 0;
        }
        start[a] = (int64_t)s;
        step[a] = k;
    }
    struct npu_tensor *x = tt_fill_rand(tt_new(NPU_DTYPE_INT32, nd, dims), -1000, 1000);
    struct npu_tensor *y = tt_new(NPU_DTYPE_INT32, nd, od);
    struct npu_tensor *ts = tt_ints(n, st), *te = tt_ints(n, en);
    struct npu_tensor *ta = ax ? tt_ints(n, ax) : NULL, *tp = sp ? tt_ints(n, sp) : NULL;
    struct npu_tensor *in[5] = {x, ts, te, ta, tp}, *out[1] = {y};
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_SLICE, NULL, sp ? 5 : ax ? 4 : 3, in, 1, out));
    int bad = 0;
    for (int64_t e = 0; e < tt_n(y); e++) {
        int64_t oi[8], off = 0;
        tt_unravel(e, nd, od, oi);
        for (int i = 0; i < nd; i++)
            off = off * dims[i] + start[i] + oi[i] * step[i];
        bad += tt_get(y, e) != tt_get(x, off);
    }
    CHECK_EQ_INT(0, bad);
    tt_free(x), tt_free(y), tt_free(ts), tt_free(te), tt_free(ta), tt_free(tp);
}

static void
test_slice(void)
{
    int64_t d3[3] = {10, 7, 9};
    int64_t s1[1] = {2}, e1[1] = {8};
    check_slice(3, d3, 1, s1, e1, NULL, NULL);
    int64_t s2[2] = {1, -3}, e2[2] = {-1, 1000}, a2[2] = {0, -1}, p2[2] = {2, 1};
    check_slice(3, d3, 2, s2, e2, a2, p2);
    int64_t s3[3] = {-1, 100, 8}, e3[3] = {INT64_MIN, -100, 0}, p3[3] = {-1, -2, -3};
    check_slice(3, d3, 3, s3, e3, NULL, p3); /* negative steps, clamping at both ends */
    int64_t s4[1] = {5}, e4[1] = {INT64_MAX}, a4[1] = {1}, p4[1] = {4};
    check_slice(3, d3, 1, s4, e4, a4, p4);
    int64_t s5[1] = {5}, e5[1] = {3};
    check_slice(3, d3, 1, s5, e5, NULL, NULL); /* empty */
    int64_t s6[1] = {-100}, e6[1] = {-8}, p6[1] = {1};
    check_slice(3, d3, 1, s6, e6, NULL, p6);
    int64_t s7[1] = {INT64_MAX}, e7[1] = {INT64_MIN}, p7[1] = {INT64_MIN + 1};
    check_slice(3, d3, 1, s7, e7, NULL, p7);
    /* step 0 is refused */
    int64_t z[1] = {0};
    struct npu_tensor *x = tt(NPU_DTYPE_FP32, 1, D(5)), *y = tt(NPU_DTYPE_FP32, 1, D(5));
    struct npu_tensor *ts = tt_ints(1, z), *te = tt_ints(1, s4), *ta = tt_ints(1, z),
                      *tp = tt_ints(1, z);
    struct npu_tensor *in[5] = {x, ts, te, ta, tp}, *out[1] = {y};
    quiet(true);
    CHECK_EQ_INT(NPU_ERR_INVALID, run_op(tctx1, NPU_OP_SLICE, NULL, 5, in, 1, out));
    quiet(false);
    tt_free(x), tt_free(y), tt_free(ts), tt_free(te), tt_free(ta), tt_free(tp);
}

/* ---- Gather, GatherElements ---------------------------------------------------------------- */

static void
test_gather(void)
{
    struct npu_tensor *x = tt_fill_rand(tt(NPU_DTYPE_FP32, 3, D(4), D(5), D(6)), -9, 9);
    int64_t iv[6] = {0, -1, 3, -5, 2, 2};
    for (int axis = -3; axis < 3; axis++) {
        int a = axis < 0 ? axis + 3 : axis;
        int64_t dim = x->dims[a];
        int64_t idx[6];
        for (int i = 0; i < 6; i++)
            idx[i] = iv[i] % dim; /* keep in range, negatives included */
        struct npu_tensor *ind = tt_ints(6, idx);
        ind->ndim = 2;
        ind->dims[0] = 2, ind->dims[1] = 3;
        int64_t od[4];
        int k = 0;
        for (int i = 0; i < a; i++)
            od[k++] = x->dims[i];
        od[k++] = 2, od[k++] = 3;
        for (int i = a + 1; i < 3; i++)
            od[k++] = x->dims[i];
        struct npu_tensor *y = tt_new(NPU_DTYPE_FP32, 4, od);
        struct alist al = {0};
        al_int(&al, "axis", axis);
        struct npu_tensor *in[2] = {x, ind}, *out[1] = {y};
        CHECK_EQ_INT(NPU_OK, run2(NPU_OP_GATHER, &al, 2, in, 1, out));
        int bad = 0;
        for (int64_t e = 0; e < tt_n(y); e++) {
            int64_t oi[4], xi[3];
            tt_unravel(e, 4, od, oi);
            int q = 0;
            for (int i = 0; i < 3; i++) {
                if (i == a) {
                    int64_t g = idx[oi[q] * 3 + oi[q + 1]];
                    xi[i] = g < 0 ? g + dim : g;
                    q += 2;
                } else {
                    xi[i] = oi[q++];
                }
            }
            bad += tt_get(y, e) != tt_get(x, (xi[0] * 5 + xi[1]) * 6 + xi[2]);
        }
        CHECK_EQ_INT(0, bad);
        tt_free(ind), tt_free(y);
    }
    /* a scalar index drops the axis; an out-of-range index is refused */
    int64_t three = 3;
    struct npu_tensor *si = tt_ints(1, &three);
    si->ndim = 0;
    struct npu_tensor *y = tt(NPU_DTYPE_FP32, 2, D(4), D(6));
    struct alist al = {0};
    al_int(&al, "axis", 1);
    struct npu_tensor *in[2] = {x, si}, *out[1] = {y};
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_GATHER, &al, 2, in, 1, out));
    CHECK(tt_get(y, 7) == tt_get(x, (1 * 5 + 3) * 6 + 1));
    *(int64_t *)si->data = 5;
    quiet(true);
    CHECK_EQ_INT(NPU_ERR_INVALID, run_op(tctx1, NPU_OP_GATHER, &al, 2, in, 1, out));
    quiet(false);
    tt_free(si), tt_free(y);

    /* GatherElements along each axis, int32 indices with negatives */
    for (int axis = 0; axis < 3; axis++) {
        struct npu_tensor *ind = tt(NPU_DTYPE_INT32, 3, D(3), D(4), D(2));
        int64_t dim = x->dims[axis];
        for (int64_t e = 0; e < tt_n(ind); e++)
            tt_set(ind, e, floor(tt_uniform((double)-dim, (double)dim)));
        struct npu_tensor *ye = tt(NPU_DTYPE_FP32, 3, D(3), D(4), D(2));
        struct alist ae = {0};
        al_int(&ae, "axis", axis);
        struct npu_tensor *ein[2] = {x, ind}, *eout[1] = {ye};
        CHECK_EQ_INT(NPU_OK, run2(NPU_OP_GATHER_ELEMENTS, &ae, 2, ein, 1, eout));
        int bad = 0;
        for (int64_t e = 0; e < tt_n(ind); e++) {
            int64_t ii[3];
            tt_unravel(e, 3, ind->dims, ii);
            int64_t g = (int64_t)tt_get(ind, e);
            ii[axis] = g < 0 ? g + dim : g;
            bad += tt_get(ye, e) != tt_get(x, (ii[0] * 5 + ii[1]) * 6 + ii[2]);
        }
        CHECK_EQ_INT(0, bad);
        tt_free(ind), tt_free(ye);
    }
    tt_free(x);
}

/* ---- Pad ----------------------------------------------------------------------------------- */

static int64_t
pad_src_ref(const char *mode, int64_t o, int64_t before, int64_t n)
{
    int64_t i = o - before;
    if (i >= 0 && i < n)
        return i;
    if (!strcmp(mode, "constant"))
        return -1;
    if (!strcmp(mode, "edge"))
        return i < 0 ? 0 : n - 1;
    if (!strcmp(mode, "wrap")) {
        while (i < 0)
            i += n;
        return i % n;
    }
    /* reflect, one bounce at a time */
    if (n == 1)
        return 0;
    while (i < 0 || i >= n) {
        if (i < 0)
            i = -i;
        if (i >= n)
            i = 2 * (n - 1) - i;
    }
    return i;
}

static void
check_pad(const char *mode, int nd, const int64_t *dims, const int64_t *pads, int na,
          const int64_t *axes, double cval)
{
    int64_t before[4] = {0}, after[4] = {0}, od[4];
    for (int i = 0; i < (axes ? na : nd); i++) {
        int a = axes ? (int)(axes[i] < 0 ? axes[i] + nd : axes[i]) : i;
        before[a] = pads[i];
        after[a] = pads[(axes ? na : nd) + i];
    }
    for (int i = 0; i < nd; i++)
        od[i] = dims[i] + before[i] + after[i];
    struct npu_tensor *x = tt_fill_rand(tt_new(NPU_DTYPE_INT32, nd, dims), -100, 100);
    struct npu_tensor *y = tt_new(NPU_DTYPE_INT32, nd, od);
    struct npu_tensor *tp = tt_ints(2 * (axes ? na : nd), pads);
    int64_t s0 = 0;
    struct npu_tensor *cv = tt_vals(NPU_DTYPE_INT32, 0, &s0, &cval);
    struct npu_tensor *ta = axes ? tt_ints(na, axes) : NULL;
    struct alist al = {0};
    al_str(&al, "mode", mode);
    struct npu_tensor *in[4] = {x, tp, cv, ta}, *out[1] = {y};
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_PAD, &al, axes ? 4 : 3, in, 1, out));
    int bad = 0;
    for (int64_t e = 0; e < tt_n(y); e++) {
        int64_t oi[4], off = 0;
        bool cst = false;
        tt_unravel(e, nd, od, oi);
        for (int i = 0; i < nd; i++) {
            int64_t s = pad_src_ref(mode, oi[i], before[i], dims[i]);
            cst = cst || s < 0;
            off = off * dims[i] + (s < 0 ? 0 : s);
        }
        bad += tt_get(y, e) != (cst ? cval : tt_get(x, off));
    }
    if (bad)
        fprintf(stderr, "Pad %s failed (%d)\n", mode, bad);
    CHECK_EQ_INT(0, bad);
    tt_free(x), tt_free(y), tt_free(tp), tt_free(cv), tt_free(ta);
}

static void
test_pad(void)
{
    int64_t d[3] = {3, 4, 5}, p[6] = {1, 0, 2, 0, 3, 1}, pneg[6] = {-1, 1, 0, 1, -2, 2};
    int64_t big[6] = {0, 7, 9, 0, 6, 11}, ax[2] = {-1, 0}, pax[4] = {2, 1, 3, 0};
    static const char *modes[] = {"constant", "reflect", "edge", "wrap"};
    for (int m = 0; m < 4; m++) {
        check_pad(modes[m], 3, d, p, 0, NULL, 42);
        check_pad(modes[m], 3, d, pneg, 0, NULL, -7);
        check_pad(modes[m], 3, d, pax, 2, ax, 3);
        if (m != 0)
            check_pad(modes[m], 3, d, big, 0, NULL, 0); /* pads wider than the dims */
    }
    int64_t one[1] = {1}, p1[2] = {3, 2};
    check_pad("reflect", 1, one, p1, 0, NULL, 0);
    /* fp16 with a constant of the same dtype */
    struct npu_tensor *x = tt_fill_rand(tt(NPU_DTYPE_FP16, 2, D(2), D(3)), -1, 1);
    struct npu_tensor *y = tt(NPU_DTYPE_FP16, 2, D(2), D(5)), *cv = tt(NPU_DTYPE_FP16, 0);
    tt_set(cv, 0, 0.5);
    int64_t pp[4] = {0, 1, 0, 1};
    struct npu_tensor *tp = tt_ints(4, pp), *in[3] = {x, tp, cv}, *out[1] = {y};
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_PAD, NULL, 3, in, 1, out));
    CHECK(tt_get(y, 0) == 0.5 && tt_get(y, 1) == tt_get(x, 0) && tt_get(y, 9) == 0.5);
    tt_free(x), tt_free(y), tt_free(cv), tt_free(tp);
}

/* ---- Concat, Split, Expand, Tile, Reshape & co --------------------------------------------- */

static void
test_concat_split(void)
{
    for (int axis = -3; axis < 3; axis++) {
        int a = axis < 0 ? axis + 3 : axis;
        int64_t base[3] = {2, 3, 4}, sizes[3] = {1, 0, 5};
        struct npu_tensor *parts[3];
        int64_t od[3] = {2, 3, 4};
        od[a] = 6;
        for (int p = 0; p < 3; p++) {
            int64_t d[3] = {base[0], base[1], base[2]};
            d[a] = sizes[p];
            parts[p] = tt_fill_rand(tt_new(NPU_DTYPE_FP16, 3, d), -5, 5);
        }
        struct npu_tensor *y = tt_new(NPU_DTYPE_FP16, 3, od);
        struct alist al = {0};
        al_int(&al, "axis", axis);
        CHECK_EQ_INT(NPU_OK, run2(NPU_OP_CONCAT, &al, 3, parts, 1, &y));
        int bad = 0;
        for (int64_t e = 0; e < tt_n(y); e++) {
            int64_t oi[3];
            tt_unravel(e, 3, od, oi);
            int p = oi[a] < 1 ? 0 : 2;
            int64_t pi[3] = {oi[0], oi[1], oi[2]};
            pi[a] -= p ? 1 : 0;
            bad +=
                tt_get(y, e) !=
                tt_get(parts[p], (pi[0] * parts[p]->dims[1] + pi[1]) * parts[p]->dims[2] + pi[2]);
        }
        CHECK_EQ_INT(0, bad);
        /* Split it back, sizes from a `split` input */
        struct npu_tensor *back[3];
        for (int p = 0; p < 3; p++)
            back[p] = tt_new(NPU_DTYPE_FP16, 3, parts[p]->dims);
        struct npu_tensor *ts = tt_ints(3, sizes), *sin[2] = {y, ts};
        CHECK_EQ_INT(NPU_OK, run2(NPU_OP_SPLIT, &al, 2, sin, 3, back));
        for (int p = 0; p < 3; p++) {
            CHECK(tt_same_bytes(parts[p], back[p]));
            tt_free(parts[p]), tt_free(back[p]);
        }
        tt_free(y), tt_free(ts);
    }
    /* num_outputs with an uneven last part: 7 -> 3, 3, 1 */
    struct npu_tensor *x = tt_fill_rand(tt(NPU_DTYPE_INT8, 2, D(2), D(7)), -100, 100);
    struct npu_tensor *o[3] = {tt(NPU_DTYPE_INT8, 2, D(2), D(3)), tt(NPU_DTYPE_INT8, 2, D(2), D(3)),
                               tt(NPU_DTYPE_INT8, 2, D(2), D(1))};
    struct alist al = {0};
    al_int(&al, "axis", 1);
    al_int(&al, "num_outputs", 3);
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_SPLIT, &al, 1, &x, 3, o));
    CHECK(tt_get(o[2], 0) == tt_get(x, 6) && tt_get(o[1], 5) == tt_get(x, 12));
    o[2]->dims[1] = 2;
    quiet(true);
    CHECK_EQ_INT(NPU_ERR_INVALID, run_op(tctx1, NPU_OP_SPLIT, &al, 1, &x, 3, o));
    quiet(false);
    tt_free(x), tt_free(o[0]), tt_free(o[1]), tt_free(o[2]);
}

static void
test_expand_tile_reshape(void)
{
    /* Expand: [3,1] with shape [2,1,4] -> [2,3,4] */
    struct npu_tensor *x = tt_fill_rand(tt(NPU_DTYPE_INT64, 2, D(3), D(1)), -9, 9);
    int64_t shp[3] = {2, 1, 4};
    struct npu_tensor *s = tt_ints(3, shp), *y = tt(NPU_DTYPE_INT64, 3, D(2), D(3), D(4));
    struct npu_tensor *in[2] = {x, s}, *out[1] = {y};
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_EXPAND, NULL, 2, in, 1, out));
    int bad = 0;
    for (int64_t e = 0; e < 24; e++)
        bad += tt_get(y, e) != tt_get(x, (e / 4) % 3);
    CHECK_EQ_INT(0, bad);
    tt_free(s), tt_free(y);
    /* Tile: [3,1] x [2,5] */
    int64_t rep[2] = {2, 5};
    struct npu_tensor *r = tt_ints(2, rep);
    y = tt(NPU_DTYPE_INT64, 2, D(6), D(5));
    in[1] = r, out[0] = y;
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_TILE, NULL, 2, in, 1, out));
    bad = 0;
    for (int64_t e = 0; e < 30; e++)
        bad += tt_get(y, e) != tt_get(x, (e / 5) % 3);
    CHECK_EQ_INT(0, bad);
    tt_free(r), tt_free(y), tt_free(x);

    /* Reshape: 0 copies a dim, -1 is inferred, allowzero keeps a literal 0 */
    x = tt_fill_rand(tt(NPU_DTYPE_FP32, 3, D(2), D(3), D(4)), -1, 1);
    int64_t s1[3] = {0, -1, 2};
    s = tt_ints(3, s1);
    y = tt(NPU_DTYPE_FP32, 3, D(2), D(6), D(2));
    in[0] = x, in[1] = s, out[0] = y;
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_RESHAPE, NULL, 2, in, 1, out));
    CHECK(tt_same_bytes(x, y));
    struct alist az = {0};
    al_int(&az, "allowzero", 1);
    quiet(true);
    CHECK_EQ_INT(NPU_ERR_INVALID, run_op(tctx1, NPU_OP_RESHAPE, &az, 2, in, 1, out));
    int64_t s2[2] = {-1, -1};
    struct npu_tensor *s2t = tt_ints(2, s2);
    in[1] = s2t;
    CHECK_EQ_INT(NPU_ERR_INVALID, run_op(tctx1, NPU_OP_RESHAPE, NULL, 2, in, 1, out));
    quiet(false);
    tt_free(s), tt_free(y), tt_free(s2t);
    struct npu_tensor *e0 = tt(NPU_DTYPE_FP32, 2, D(0), D(3)),
                      *e1 = tt(NPU_DTYPE_FP32, 3, D(3), D(0), D(1));
    int64_t s3[3] = {3, 0, 1};
    s = tt_ints(3, s3);
    struct npu_tensor *ein[2] = {e0, s}, *eout[1] = {e1};
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_RESHAPE, &az, 2, ein, 1, eout));
    tt_free(s), tt_free(e0), tt_free(e1);

    /* Squeeze / Unsqueeze / Flatten */
    struct npu_tensor *sq = tt(NPU_DTYPE_FP32, 3, D(2), D(3), D(4));
    int64_t ua[2] = {-1, 1};
    struct npu_tensor *uax = tt_ints(2, ua),
                      *u = tt(NPU_DTYPE_FP32, 5, D(2), D(1), D(3), D(4), D(1));
    in[0] = x, in[1] = uax, out[0] = u;
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_UNSQUEEZE, NULL, 2, in, 1, out));
    CHECK(tt_same_bytes(x, u));
    in[0] = u, out[0] = sq;
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_SQUEEZE, NULL, 1, in, 1, out)); /* all size-1 dims */
    CHECK(tt_same_bytes(x, sq));
    int64_t sa[1] = {2};
    struct npu_tensor *sax = tt_ints(1, sa);
    in[1] = sax;
    quiet(true);
    CHECK_EQ_INT(NPU_ERR_INVALID, run_op(tctx1, NPU_OP_SQUEEZE, NULL, 2, in, 1, out));
    quiet(false);
    struct npu_tensor *fl = tt(NPU_DTYPE_FP32, 2, D(6), D(4));
    struct alist fa = {0};
    al_int(&fa, "axis", -1);
    in[0] = x, out[0] = fl;
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_FLATTEN, &fa, 1, in, 1, out));
    CHECK(tt_same_bytes(x, fl));
    tt_free(sq), tt_free(uax), tt_free(u), tt_free(sax), tt_free(fl), tt_free(x);
}

static void
test_small_ops(void)
{
    /* Range: float and int, negative delta */
    int64_t s0 = 0;
    double a = 10, l = 1, dl = -3;
    struct npu_tensor *ta = tt_vals(NPU_DTYPE_INT32, 0, &s0, &a),
                      *tl = tt_vals(NPU_DTYPE_INT32, 0, &s0, &l);
    struct npu_tensor *td = tt_vals(NPU_DTYPE_INT32, 0, &s0, &dl),
                      *y = tt(NPU_DTYPE_INT32, 1, D(3));
    struct npu_tensor *in[3] = {ta, tl, td}, *out[1] = {y};
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_RANGE, NULL, 3, in, 1, out));
    CHECK(tt_get(y, 0) == 10 && tt_get(y, 1) == 7 && tt_get(y, 2) == 4);
    tt_free(ta), tt_free(tl), tt_free(td), tt_free(y);
    a = 0.5, l = 2, dl = 0.4;
    ta = tt_vals(NPU_DTYPE_FP32, 0, &s0, &a), tl = tt_vals(NPU_DTYPE_FP32, 0, &s0, &l);
    td = tt_vals(NPU_DTYPE_FP32, 0, &s0, &dl), y = tt(NPU_DTYPE_FP32, 1, D(4));
    in[0] = ta, in[1] = tl, in[2] = td, out[0] = y;
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_RANGE, NULL, 3, in, 1, out));
    CHECK_NEAR(1.7, tt_get(y, 3), 1e-6);
    tt_free(ta), tt_free(tl), tt_free(td), tt_free(y);

    /* Trilu: upper/lower with k */
    struct npu_tensor *x = tt_fill_rand(tt(NPU_DTYPE_FP32, 3, D(2), D(4), D(5)), 1, 9);
    y = tt(NPU_DTYPE_FP32, 3, D(2), D(4), D(5));
    for (int up = 0; up < 2; up++)
        for (int64_t k = -5; k <= 6; k += 2) {
            struct npu_tensor *tk = tt_ints(1, &k);
            tk->ndim = 0;
            struct alist al = {0};
            al_int(&al, "upper", up);
            struct npu_tensor *tin[2] = {x, tk}, *tout[1] = {y};
            CHECK_EQ_INT(NPU_OK, run2(NPU_OP_TRILU, &al, 2, tin, 1, tout));
            int bad = 0;
            for (int64_t e = 0; e < 40; e++) {
                int64_t i = (e / 5) % 4, j = e % 5;
                bool keep = up ? j - i >= k : j - i <= k;
                bad += tt_get(y, e) != (keep ? tt_get(x, e) : 0);
            }
            CHECK_EQ_INT(0, bad);
            tt_free(tk);
        }
    tt_free(y);

    /* Shape with start/end, Size */
    struct npu_tensor *sh = tt(NPU_DTYPE_INT64, 1, D(2));
    struct alist al = {0};
    al_int(&al, "start", -2);
    al_int(&al, "end", 100);
    in[0] = x, out[0] = sh;
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_SHAPE, &al, 1, in, 1, out));
    CHECK(tt_get(sh, 0) == 4 && tt_get(sh, 1) == 5);
    struct npu_tensor *sz = tt(NPU_DTYPE_INT64, 0);
    out[0] = sz;
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_SIZE, NULL, 1, in, 1, out));
    CHECK_EQ_INT(40, tt_get(sz, 0));
    tt_free(sh), tt_free(sz);

    /* ConstantOfShape with an int32 value; Constant from a tensor and from value_ints */
    int64_t shp[2] = {3, 2};
    struct npu_tensor *ts = tt_ints(2, shp), *val = tt(NPU_DTYPE_INT32, 1, D(1));
    tt_set(val, 0, -7);
    struct npu_tensor *c = tt(NPU_DTYPE_INT32, 2, D(3), D(2));
    struct alist cal = {0};
    al_tensor(&cal, "value", val);
    in[0] = ts, out[0] = c;
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_CONSTANT_OF_SHAPE, &cal, 1, in, 1, out));
    CHECK(tt_get(c, 0) == -7 && tt_get(c, 5) == -7);
    struct npu_tensor *cst = tt(NPU_DTYPE_INT32, 1, D(1));
    out[0] = cst;
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_CONSTANT, &cal, 0, in, 1, out));
    CHECK_EQ_INT(-7, tt_get(cst, 0));
    struct npu_tensor *ci = tt(NPU_DTYPE_INT64, 1, D(2));
    struct alist ial = {0};
    al_ints(&ial, "value_ints", shp, 2);
    out[0] = ci;
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_CONSTANT, &ial, 0, in, 1, out));
    CHECK(tt_get(ci, 1) == 2);
    tt_free(ts), tt_free(val), tt_free(c), tt_free(cst), tt_free(ci);

    /* Dropout in inference: identity, mask all true */
    struct npu_tensor *dy = tt(NPU_DTYPE_FP32, 3, D(2), D(4), D(5)),
                      *mask = tt(NPU_DTYPE_BOOL, 3, D(2), D(4), D(5));
    struct npu_tensor *dout[2] = {dy, mask};
    in[0] = x;
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_DROPOUT, NULL, 1, in, 2, dout));
    CHECK(tt_same_bytes(x, dy) && tt_get(mask, 39) == 1);
    struct npu_tensor *ratio = tt(NPU_DTYPE_FP32, 0), *train = tt(NPU_DTYPE_BOOL, 0);
    *(float *)ratio->data = 0.5f;
    tt_set(train, 0, 1);
    struct npu_tensor *din[3] = {x, ratio, train};
    /* training mode draws numpy's MT19937 stream: np.random.seed(0); uniform(0, 1, 8) >= 0.5
     * is T T T T F T F T, and seed 7 against ratio 0.3 gives F T T T T T T F */
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_DROPOUT, NULL, 3, din, 2, dout));
    static const int keep0[8] = {1, 1, 1, 1, 0, 1, 0, 1}, keep7[8] = {0, 1, 1, 1, 1, 1, 1, 0};
    int bad = 0;
    for (int i = 0; i < 8; i++) {
        bad += tt_get(mask, i) != keep0[i];
        bad += tt_get(dy, i) != (keep0[i] ? (double)(tt_get(x, i) * 2.0f) : 0);
    }
    CHECK_EQ_INT(0, bad);
    struct alist sd = {0};
    al_int(&sd, "seed", 7);
    *(float *)ratio->data = 0.3f;
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_DROPOUT, &sd, 3, din, 2, dout));
    bad = 0;
    for (int i = 0; i < 8; i++)
        bad += tt_get(mask, i) != keep7[i];
    CHECK_EQ_INT(0, bad);
    *(float *)ratio->data = 1.5f;
    quiet(true);
    CHECK_EQ_INT(NPU_ERR_INVALID, run_op(tctx1, NPU_OP_DROPOUT, NULL, 3, din, 2, dout));
    quiet(false);
    *(float *)ratio->data = 0;
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_DROPOUT, NULL, 3, din, 2, dout));
    CHECK(tt_same_bytes(x, dy));
    tt_free(dy), tt_free(mask), tt_free(ratio), tt_free(train), tt_free(x);
}

/* ---- Resize -------------------------------------------------------------------------------- */

struct rs_case {
    const char *mode, *ctm, *nearest;
    bool exclude;
    int64_t in[4], out[4];
    double scales[4]; /* 0: use sizes */
    double roi[8];
    float extrap;
};

static double
rs_coord(const struct rs_case *c, int ax, double x, double scale)
{
    double in = (double)c->in[ax], out = (double)c->out[ax], outw = scale * in;
    if (!strcmp(c->ctm, "half_pixel"))
        return (x + 0.5) / scale - 0.5;
    if (!strcmp(c->ctm, "pytorch_half_pixel"))
        return out > 1 ? (x + 0.5) / scale - 0.5 : 0;
    if (!strcmp(c->ctm, "align_corners"))
        return outw == 1 ? 0 : x * (in - 1) / (outw - 1);
    if (!strcmp(c->ctm, "asymmetric"))
        return x / scale;
    if (!strcmp(c->ctm, "half_pixel_symmetric")) {
        double adj = out / outw, center = in / 2;
        return center * (1 - adj) + (x + 0.5) / scale - 0.5;
    }
    /* tf_crop_and_resize */
    double s = c->roi[ax], e = c->roi[4 + ax];
    return out > 1 ? s * (in - 1) + x * (e - s) * (in - 1) / (out - 1) : 0.5 * (s + e) * (in - 1);
}

/* taps of one axis: index/weight pairs (edge-clamped), or extrapolate */
static int
rs_taps(const struct rs_case *c, int ax, double xo, int64_t *idx, double *w, bool *extra)
{
    int64_t n = c->in[ax];
    *extra = !strcmp(c->ctm, "tf_crop_and_resize") && (xo < 0 || xo > (double)(n - 1));
    if (!strcmp(c->mode, "nearest")) {
        double f = floor(xo), r;
        if (!strcmp(c->nearest, "round_prefer_floor"))
            r = xo - f == 0.5 ? f : round(xo);
        else if (!strcmp(c->nearest, "round_prefer_ceil"))
            r = xo - f == 0.5 ? f + 1 : round(xo);
        else if (!strcmp(c->nearest, "floor"))
            r = f;
        else
            r = ceil(xo);
        idx[0] = (int64_t)fmin(fmax(r, 0), (double)(n - 1));
        w[0] = 1;
        return 1;
    }
    double f = floor(xo), t = xo - f;
    int k;
    if (!strcmp(c->mode, "linear")) {
        idx[0] = (int64_t)f, idx[1] = (int64_t)f + 1;
        w[0] = 1 - t, w[1] = t;
        k = 2;
    } else {
        const double A = -0.75;
        double d[4] = {1 + t, t, 1 - t, 2 - t};
        for (int i = 0; i < 4; i++) {
            double z = d[i];
            idx[i] = (int64_t)f - 1 + i;
            w[i] = z <= 1 ? ((A + 2) * z - (A + 3)) * z * z + 1
                          : ((A * z - 5 * A) * z + 8 * A) * z - 4 * A;
        }
        k = 4;
    }
    if (c->exclude) {
        double s = 0;
        for (int i = 0; i < k; i++) {
            if (idx[i] < 0 || idx[i] >= n)
                w[i] = 0;
            s += w[i];
        }
        for (int i = 0; i < k; i++)
            w[i] /= s;
    }
    for (int i = 0; i < k; i++)
        idx[i] = idx[i] < 0 ? 0 : idx[i] >= n ? n - 1 : idx[i];
    return k;
}

static void
check_resize(const struct rs_case *c)
{
    struct npu_tensor *x = tt_fill_rand(tt_new(NPU_DTYPE_FP32, 4, c->in), -10, 10);
    struct npu_tensor *y = tt_new(NPU_DTYPE_FP32, 4, c->out);
    double sc[4];
    for (int i = 0; i < 4; i++)
        sc[i] =
            c->scales[0] > 0 ? (double)(float)c->scales[i] : (double)c->out[i] / (double)c->in[i];
    struct npu_tensor *roi = NULL, *scales = NULL, *sizes = NULL;
    if (!strcmp(c->ctm, "tf_crop_and_resize")) {
        int64_t d8 = 8;
        roi = tt_vals(NPU_DTYPE_FP32, 1, &d8, c->roi);
    }
    int64_t d4 = 4;
    if (c->scales[0] > 0)
        scales = tt_vals(NPU_DTYPE_FP32, 1, &d4, c->scales);
    else
        sizes = tt_ints(4, c->out);
    struct alist al = {0};
    al_str(&al, "mode", c->mode);
    al_str(&al, "coordinate_transformation_mode", c->ctm);
    if (c->nearest)
        al_str(&al, "nearest_mode", c->nearest);
    al_int(&al, "exclude_outside", c->exclude);
    al_float(&al, "extrapolation_value", c->extrap);
    struct npu_tensor *in[4] = {x, roi, scales, sizes}, *out[1] = {y};
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_RESIZE, &al, 4, in, 1, out));
    /* direct: for every output element, the product of per-axis weights over all taps */
    int bad = 0;
    for (int64_t e = 0; e < tt_n(y); e++) {
        int64_t oi[4], ti[4][4];
        double tw[4][4];
        int tn[4];
        bool extra = false;
        tt_unravel(e, 4, c->out, oi);
        for (int a = 0; a < 4; a++) {
            bool ident =
                c->in[a] == c->out[a] && sc[a] == 1 && strcmp(c->ctm, "tf_crop_and_resize");
            if (ident) {
                tn[a] = 1, ti[a][0] = oi[a], tw[a][0] = 1;
                continue;
            }
            bool ex;
            tn[a] = rs_taps(c, a, rs_coord(c, a, (double)oi[a], sc[a]), ti[a], tw[a], &ex);
            extra = extra || ex;
        }
        double want = 0;
        if (extra) {
            want = c->extrap;
        } else {
            for (int p = 0; p < tn[0]; p++)
                for (int q = 0; q < tn[1]; q++)
                    for (int r = 0; r < tn[2]; r++)
                        for (int s = 0; s < tn[3]; s++) {
                            int64_t off = ((ti[0][p] * c->in[1] + ti[1][q]) * c->in[2] + ti[2][r]) *
                                              c->in[3] +
                                          ti[3][s];
                            want += tw[0][p] * tw[1][q] * tw[2][r] * tw[3][s] * tt_get(x, off);
                        }
        }
        if (!(fabs(tt_get(y, e) - want) <= 1e-4 * (1 + fabs(want)))) {
            if (bad++ < 3)
                fprintf(stderr, "  resize element %lld: got %g want %g\n", (long long)e,
                        tt_get(y, e), want);
        }
    }
    if (bad)
        fprintf(stderr, "Resize %s %s %s failed\n", c->mode, c->ctm, c->nearest ? c->nearest : "");
    CHECK_EQ_INT(0, bad);
    tt_free(x), tt_free(y), tt_free(roi), tt_free(scales), tt_free(sizes);
}

static void
test_resize(void)
{
    static const char *ctms[] = {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                                 "half_pixel_symmetric"};
    static const char *nms[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
    for (size_t i = 0; i < NPU_ARRAY_SIZE(ctms); i++) {
        struct rs_case up = {"linear",     ctms[i], NULL, false, {1, 2, 4, 5},
                             {1, 2, 8, 9}, {0},     {0},  0};
        check_resize(&up);
        struct rs_case dn = {"linear",     ctms[i], NULL, false, {1, 2, 9, 7},
                             {1, 2, 4, 3}, {0},     {0},  0};
        check_resize(&dn);
        struct rs_case cu = {"cubic",      ctms[i], NULL, i & 1, {1, 1, 5, 6},
                             {1, 1, 9, 4}, {0},     {0},  0};
        check_resize(&cu);
        struct rs_case sc = {"linear",     ctms[i],           NULL, false, {1, 2, 4, 6},
                             {1, 2, 7, 3}, {1, 1, 1.75, 0.6}, {0},  0};
        check_resize(&sc);
        for (size_t j = 0; j < NPU_ARRAY_SIZE(nms); j++) {
            struct rs_case nn = {"nearest",     ctms[i], nms[j], false, {2, 1, 5, 4},
                                 {2, 1, 8, 10}, {0},     {0},    0};
            check_resize(&nn);
            struct rs_case nd = {"nearest",    ctms[i], nms[j], false, {1, 3, 7, 9},
                                 {1, 3, 3, 4}, {0},     {0},    0};
            check_resize(&nd);
        }
    }
    struct rs_case crop = {
        "linear",     "tf_crop_and_resize", NULL, false,
        {1, 1, 6, 7}, {1, 1, 4, 5},         {0},  {0, 0, -0.2, 0.3, 1, 1, 0.8, 1.4},
        9.5f};
    check_resize(&crop);
    crop.mode = "nearest";
    crop.nearest = "round_prefer_ceil";
    check_resize(&crop);
    /* batch/channel axes resized too (nearest) */
    struct rs_case all = {"nearest",    "asymmetric", "floor", false, {2, 3, 4, 4},
                          {4, 3, 2, 8}, {0},          {0},     0};
    check_resize(&all);
}

/* ---- Quantize / Dequantize ----------------------------------------------------------------- */

static void
test_quant(void)
{
    /* per tensor: half to even, saturation, NaN -> zero point */
    int64_t n = 10;
    double xv[10] = {0.5, 1.5, 2.5, -0.5, -1.5, 1000, -1000, NAN, 3.49, -3.51};
    struct npu_tensor *x = tt_vals(NPU_DTYPE_FP32, 1, &n, xv);
    struct npu_tensor *s = tt(NPU_DTYPE_FP32, 0), *z = tt(NPU_DTYPE_INT8, 0),
                      *y = tt(NPU_DTYPE_INT8, 1, D(10));
    *(float *)s->data = 0.5f;
    tt_set(z, 0, 3);
    struct npu_tensor *in[3] = {x, s, z}, *out[1] = {y};
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_QUANTIZE_LINEAR, NULL, 3, in, 1, out));
    static const double want[10] = {4, 6, 8, 2, 0, 127, -128, 3, 10, -4};
    int bad = 0;
    for (int i = 0; i < 10; i++)
        bad += tt_get(y, i) != want[i];
    CHECK_EQ_INT(0, bad);
    /* and back: (q - zp) * scale */
    struct npu_tensor *dq = tt(NPU_DTYPE_FP32, 1, D(10));
    in[0] = y, out[0] = dq;
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_DEQUANTIZE_LINEAR, NULL, 3, in, 1, out));
    bad = 0;
    for (int i = 0; i < 10; i++)
        bad += tt_get(dq, i) != (want[i] - 3) * 0.5;
    CHECK_EQ_INT(0, bad);
    tt_free(x), tt_free(s), tt_free(z), tt_free(y), tt_free(dq);

    /* per axis (axis 1 of [2,3,4]), uint8 without a zero point, and blocked (block 2 on axis 2) */
    x = tt_fill_rand(tt(NPU_DTYPE_FP32, 3, D(2), D(3), D(4)), -50, 300);
    s = tt_fill_rand(tt(NPU_DTYPE_FP32, 1, D(3)), 0.5, 2);
    y = tt(NPU_DTYPE_UINT8, 3, D(2), D(3), D(4));
    struct alist al = {0};
    al_int(&al, "axis", -2);
    struct npu_tensor *pin[2] = {x, s}, *pout[1] = {y};
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_QUANTIZE_LINEAR, &al, 2, pin, 1, pout));
    bad = 0;
    for (int64_t e = 0; e < 24; e++) {
        double q = nearbyintf((float)tt_get(x, e) / (float)tt_get(s, (e / 4) % 3));
        bad += tt_get(y, e) != fmin(fmax(q, 0), 255);
    }
    CHECK_EQ_INT(0, bad);
    struct npu_tensor *bs = tt_fill_rand(tt(NPU_DTYPE_FP32, 3, D(2), D(3), D(2)), 0.5, 2);
    struct npu_tensor *bz = tt_fill_rand(tt(NPU_DTYPE_UINT8, 3, D(2), D(3), D(2)), 0, 40);
    struct alist bl = {0};
    al_int(&bl, "axis", 2);
    al_int(&bl, "block_size", 2);
    struct npu_tensor *bin[3] = {x, bs, bz};
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_QUANTIZE_LINEAR, &bl, 3, bin, 1, pout));
    bad = 0;
    for (int64_t e = 0; e < 24; e++) {
        int64_t si = (e / 4) * 2 + (e % 4) / 2;
        double q = nearbyintf((float)tt_get(x, e) / (float)tt_get(bs, si)) + tt_get(bz, si);
        bad += tt_get(y, e) != fmin(fmax(q, 0), 255);
    }
    CHECK_EQ_INT(0, bad);
    /* per-axis dequantize of int32 */
    struct npu_tensor *xi = tt_fill_rand(tt(NPU_DTYPE_INT32, 3, D(2), D(3), D(4)), -100000, 100000);
    struct npu_tensor *yf = tt(NPU_DTYPE_FP32, 3, D(2), D(3), D(4)), *din[2] = {xi, s},
                      *dout[1] = {yf};
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_DEQUANTIZE_LINEAR, &al, 2, din, 1, dout));
    bad = 0;
    for (int64_t e = 0; e < 24; e++)
        bad += tt_get(yf, e) != (double)((float)tt_get(xi, e) * (float)tt_get(s, (e / 4) % 3));
    CHECK_EQ_INT(0, bad);
    /* a wrong-length per-axis scale is refused */
    struct npu_tensor *s4 = tt(NPU_DTYPE_FP32, 1, D(4));
    pin[1] = s4;
    quiet(true);
    CHECK_EQ_INT(NPU_ERR_INVALID, run_op(tctx1, NPU_OP_QUANTIZE_LINEAR, &al, 2, pin, 1, pout));
    quiet(false);
    tt_free(x), tt_free(s), tt_free(y), tt_free(bs), tt_free(bz), tt_free(xi), tt_free(yf),
        tt_free(s4);
}

/* DepthToSpace / SpaceToDepth, ScatterND / ScatterElements, TopK (npu-cpu-index.c), each
 * against references written from the ONNX operator text (the 6-d reshape/transpose of
 * DepthToSpace, the scatter loops, TopK by repeated selection); bad operands are refused. */
static void
test_index_ops(void)
{
    /* DepthToSpace: x [1, C=8, 2, 3], b = 2 -> [1, 2, 4, 6] */
    const int64_t b = 2, C = 8, H = 2, W = 3, C2 = C / 4;
    struct npu_tensor *x = tt_fill_rand(tt(NPU_DTYPE_FP32, 4, D(1), D(C), D(H), D(W)), -1, 1);
    struct npu_tensor *y = tt(NPU_DTYPE_FP32, 4, D(1), D(C2), D(H * b), D(W * b));
    for (int crd = 0; crd < 2; crd++) {
        struct alist al = {0};
        al_int(&al, "blocksize", b);
        al_str(&al, "mode", crd ? "CRD" : "DCR");
        struct npu_tensor *in[1] = {x}, *out[1] = {y};
        CHECK_EQ_INT(NPU_OK, run2(NPU_OP_DEPTH_TO_SPACE, &al, 1, in, 1, out));
        /* ONNX: DCR reshapes to [N, b, b, C', H, W] and transposes (0,3,4,1,5,2); CRD
         * reshapes to [N, C', b, b, H, W] and transposes (0,1,4,2,5,3). Walk the
         * reshaped 6-d input and place each element where the transpose sends it. */
        int bad = 0;
        for (int64_t e = 0; e < C * H * W; e++) {
            int64_t d0, d1, d2, h = (e / W) % H, w = e % W, c = e / (H * W);
            int64_t cc, i, j;
            if (crd) {
                d0 = c / (b * b), d1 = (c / b) % b, d2 = c % b; /* [C', b, b] */
                cc = d0, i = d1, j = d2;
            } else {
                d0 = c / (b * C2), d1 = (c / C2) % b, d2 = c % C2; /* [b, b, C'] */
                cc = d2, i = d0, j = d1;
            }
            int64_t o = (cc * H * b + h * b + i) * W * b + w * b + j;
            bad += tt_get(y, o) != tt_get(x, e);
        }
        CHECK_EQ_INT(0, bad);
        if (!crd) { /* SpaceToDepth inverts DCR */
            struct npu_tensor *z = tt(NPU_DTYPE_FP32, 4, D(1), D(C), D(H), D(W));
            struct alist a2 = {0};
            al_int(&a2, "blocksize", b);
            struct npu_tensor *i2[1] = {y}, *o2[1] = {z};
            CHECK_EQ_INT(NPU_OK, run2(NPU_OP_SPACE_TO_DEPTH, &a2, 1, i2, 1, o2));
            CHECK(tt_same_bytes(z, x));
            tt_free(z);
        }
    }
    struct alist bad_b = {0};
    al_int(&bad_b, "blocksize", 3); /* 8 channels are not a multiple of 9 */
    CHECK_EQ_INT(NPU_ERR_INVALID, run2(NPU_OP_DEPTH_TO_SPACE, &bad_b, 1, (struct npu_tensor *[]){x},
                                       1, (struct npu_tensor *[]){y}));
    tt_free(x), tt_free(y);

    /* ScatterND: data [4,3]; rows 1 and -1 (= 3) replaced; with reduction add a
     * duplicated row index accumulates both updates */
    struct npu_tensor *data = tt_fill_rand(tt(NPU_DTYPE_FP32, 2, D(4), D(3)), -1, 1);
    struct npu_tensor *upd = tt_fill_rand(tt(NPU_DTYPE_FP32, 2, D(2), D(3)), -1, 1);
    struct npu_tensor *out = tt(NPU_DTYPE_FP32, 2, D(4), D(3));
    for (int red = 0; red < 2; red++) {
        int64_t iv[2] = {red ? 0 : 1, red ? 0 : -1};
        struct npu_tensor *ind = tt_ints(2, iv);
        ind->ndim = 2, ind->dims[0] = 2, ind->dims[1] = 1;
        struct alist al = {0};
        if (red)
            al_str(&al, "reduction", "add");
        struct npu_tensor *in[3] = {data, ind, upd}, *o[1] = {out};
        CHECK_EQ_INT(NPU_OK, run2(NPU_OP_SCATTER_ND, &al, 3, in, 1, o));
        int bad = 0;
        for (int64_t r = 0; r < 4; r++)
            for (int64_t c = 0; c < 3; c++) {
                double want = tt_get(data, r * 3 + c);
                if (!red && r == 1)
                    want = tt_get(upd, c);
                if (!red && r == 3)
                    want = tt_get(upd, 3 + c);
                if (red && r == 0)
                    want = (double)((float)((float)want + (float)tt_get(upd, c)) +
                                    (float)tt_get(upd, 3 + c));
                bad += fabs(tt_get(out, r * 3 + c) - want) > 1e-6;
            }
        CHECK_EQ_INT(0, bad);
        tt_free(ind);
    }
    int64_t oob[2] = {4, 0};
    struct npu_tensor *ind = tt_ints(2, oob);
    ind->ndim = 2, ind->dims[0] = 2, ind->dims[1] = 1;
    CHECK_EQ_INT(NPU_ERR_INVALID,
                 run2(NPU_OP_SCATTER_ND, NULL, 3, (struct npu_tensor *[]){data, ind, upd}, 1,
                      (struct npu_tensor *[]){out}));
    tt_free(ind);

    /* ScatterElements along axis 1 with negative indices */
    int64_t ev[6] = {0, -1, 1, 2, -3, 0};
    ind = tt_ints(6, ev);
    ind->ndim = 2, ind->dims[0] = 2, ind->dims[1] = 3;
    struct npu_tensor *upd2 = tt_fill_rand(tt(NPU_DTYPE_FP32, 2, D(2), D(3)), -1, 1);
    struct alist al = {0};
    al_int(&al, "axis", 1);
    CHECK_EQ_INT(NPU_OK,
                 run2(NPU_OP_SCATTER_ELEMENTS, &al, 3, (struct npu_tensor *[]){data, ind, upd2}, 1,
                      (struct npu_tensor *[]){out}));
    double want[12];
    for (int e = 0; e < 12; e++)
        want[e] = tt_get(data, e);
    for (int r = 0; r < 2; r++)
        for (int j = 0; j < 3; j++) {
            int64_t col = ev[r * 3 + j] < 0 ? ev[r * 3 + j] + 3 : ev[r * 3 + j];
            want[r * 3 + col] = tt_get(upd2, r * 3 + j);
        }
    CHECK(tt_err(out, want, 0, 0) == 0);
    /* updates of another shape than the indices */
    struct npu_tensor *upd3 = tt(NPU_DTYPE_FP32, 2, D(2), D(2));
    CHECK_EQ_INT(NPU_ERR_INVALID,
                 run2(NPU_OP_SCATTER_ELEMENTS, &al, 3, (struct npu_tensor *[]){data, ind, upd3}, 1,
                      (struct npu_tensor *[]){out}));
    tt_free(upd3);
    tt_free(ind), tt_free(upd2), tt_free(data), tt_free(upd), tt_free(out);

    /* TopK along axis 1 of [3, 7, 2] with ties (values on a coarse grid), largest and
     * smallest, against selection: repeatedly take the best unused value, lowest index
     * first among equals */
    x = tt(NPU_DTYPE_FP32, 3, D(3), D(7), D(2));
    for (int64_t e = 0; e < tt_n(x); e++)
        tt_set(x, e, (double)(int)tt_uniform(-3, 3));
    int64_t k = 4;
    struct npu_tensor *tk = tt_ints(1, &k);
    struct npu_tensor *vals = tt(NPU_DTYPE_FP32, 3, D(3), D(4), D(2));
    struct npu_tensor *idx = tt(NPU_DTYPE_INT64, 3, D(3), D(4), D(2));
    for (int largest = 0; largest < 2; largest++) {
        struct alist a3 = {0};
        al_int(&a3, "axis", 1);
        al_int(&a3, "largest", largest);
        CHECK_EQ_INT(NPU_OK, run2(NPU_OP_TOP_K, &a3, 2, (struct npu_tensor *[]){x, tk}, 2,
                                  (struct npu_tensor *[]){vals, idx}));
        int bad = 0;
        for (int a = 0; a < 3; a++)
            for (int c = 0; c < 2; c++) {
                bool used[7] = {0};
                for (int r = 0; r < 4; r++) {
                    int best = -1;
                    for (int l = 0; l < 7; l++) {
                        if (used[l])
                            continue;
                        double v = tt_get(x, (a * 7 + l) * 2 + c);
                        double bv = best < 0 ? 0 : tt_get(x, (a * 7 + best) * 2 + c);
                        if (best < 0 || (largest ? v > bv : v < bv))
                            best = l;
                    }
                    used[best] = true;
                    int64_t o = (a * 4 + r) * 2 + c;
                    bad += tt_get(idx, o) != best;
                    bad += tt_get(vals, o) != tt_get(x, (a * 7 + best) * 2 + c);
                }
            }
        CHECK_EQ_INT(0, bad);
    }
    k = 8; /* more than the axis holds */
    tt_free(tk);
    tk = tt_ints(1, &k);
    struct alist a4 = {0};
    al_int(&a4, "axis", 1);
    CHECK_EQ_INT(NPU_ERR_INVALID, run2(NPU_OP_TOP_K, &a4, 2, (struct npu_tensor *[]){x, tk}, 2,
                                       (struct npu_tensor *[]){vals, idx}));
    tt_free(tk), tt_free(vals), tt_free(idx), tt_free(x);

    /* GatherND and OneHot refuse out-of-range operands (their values are checked by the
     * ONNX node tests, cpu-onnx-node-tests); OneHot: an index outside [-depth, depth)
     * gives an all-off row, -1 counts from the end */
    x = tt_fill_rand(tt(NPU_DTYPE_FP32, 2, D(3), D(4)), -1, 1);
    int64_t gv[2] = {1, 4};
    struct npu_tensor *gi = tt_ints(2, gv), *gy = tt(NPU_DTYPE_FP32, 0);
    CHECK_EQ_INT(NPU_ERR_INVALID, run2(NPU_OP_GATHER_ND, NULL, 2, (struct npu_tensor *[]){x, gi}, 1,
                                       (struct npu_tensor *[]){gy}));
    gv[1] = -1;
    tt_free(gi);
    gi = tt_ints(2, gv);
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_GATHER_ND, NULL, 2, (struct npu_tensor *[]){x, gi}, 1,
                              (struct npu_tensor *[]){gy}));
    CHECK(tt_get(gy, 0) == tt_get(x, 1 * 4 + 3));
    tt_free(gi), tt_free(gy), tt_free(x);
    int64_t ohv[3] = {2, -1, 7}, depth = 3;
    struct npu_tensor *oi = tt_ints(3, ohv), *od = tt_ints(1, &depth);
    double onoff[2] = {-1, 5};
    struct npu_tensor *ov = tt_vals(NPU_DTYPE_FP32, 1, (int64_t[]){2}, onoff);
    struct npu_tensor *oy = tt(NPU_DTYPE_FP32, 2, D(3), D(3));
    CHECK_EQ_INT(NPU_OK, run2(NPU_OP_ONE_HOT, NULL, 3, (struct npu_tensor *[]){oi, od, ov}, 1,
                              (struct npu_tensor *[]){oy}));
    const double ohw[9] = {-1, -1, 5, -1, -1, 5, -1, -1, -1};
    CHECK(tt_err(oy, ohw, 0, 0) == 0);
    depth = 0;
    tt_free(od);
    od = tt_ints(1, &depth);
    CHECK_EQ_INT(NPU_ERR_INVALID, run2(NPU_OP_ONE_HOT, NULL, 3, (struct npu_tensor *[]){oi, od, ov},
                                       1, (struct npu_tensor *[]){oy}));
    tt_free(oi), tt_free(od), tt_free(ov), tt_free(oy);
}

int
main(void)
{
    tctx_init();
    test_transpose();
    test_slice();
    test_gather();
    test_pad();
    test_concat_split();
    test_expand_tile_reshape();
    test_small_ops();
    test_resize();
    test_quant();
    test_index_ops();
    CHECK_EQ_INT(0, t_thread_mismatches);
    tctx_fini();
    return npu_test_done("test-cpu-shape");
}
