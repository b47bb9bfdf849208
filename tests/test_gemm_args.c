/* Argument checking through the public API only (this executable links the
 * shared library): every bad argument gives VX_ERR_INVALID_ARG, a message
 * from vx_last_error(), and leaves C bytewise untouched. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref.h"

#define CBUF 4096   /* floats in every operand buffer: enough for all valid shapes here */

typedef struct {
    float a[CBUF], b[CBUF], c[CBUF];
} bufs;

static void fill(bufs *x)
{
    vt_rng r;
    vt_rng_seed(&r, 5);
    for (int i = 0; i < CBUF; i++) {
        x->a[i] = vt_rng_float(&r);
        x->b[i] = vt_rng_float(&r);
    }
    vt_fill_sentinel(x->c, CBUF);
}

typedef struct {
    vx_layout l;
    vx_transpose ta, tb;
    int64_t m, n, k, lda, ldb, ldc;
    int null_a, null_b, null_c;
} call;

static void describe(const call *q, char *buf, size_t len)
{
    snprintf(buf, len,
             "dyn_gemm(layout=%d, transa=%d, transb=%d, m=%lld, n=%lld, k=%lld, a=%s, lda=%lld, "
             "b=%s, ldb=%lld, c=%s, ldc=%lld)",
             (int)q->l, (int)q->ta, (int)q->tb, (long long)q->m, (long long)q->n, (long long)q->k,
             q->null_a ? "NULL" : "buf", (long long)q->lda, q->null_b ? "NULL" : "buf",
             (long long)q->ldb, q->null_c ? "NULL" : "buf", (long long)q->ldc);
}

static vx_status do_call(const call *q, bufs *x, float beta)
{
    return dyn_gemm(q->l, q->ta, q->tb, q->m, q->n, q->k, 1.0f, q->null_a ? NULL : x->a, q->lda,
                    q->null_b ? NULL : x->b, q->ldb, beta, q->null_c ? NULL : x->c, q->ldc);
}

/* The call must fail with VX_ERR_INVALID_ARG, a message, and C untouched
 * (with beta 0 and beta 0.5, so neither a zeroing nor a scaling pass may
 * run before the check). */
static void expect_invalid(const call *q, const char *why)
{
    static bufs x;
    char d[320];
    describe(q, d, sizeof d);
    for (int bi = 0; bi < 2; bi++) {
        fill(&x);
        vx_status s = do_call(q, &x, bi ? 0.5f : 0.0f);
        cr_assert_eq(s, VX_ERR_INVALID_ARG, "%s (%s, beta=%g): returned %s (%d), expected "
                     "VX_ERR_INVALID_ARG", d, why, bi ? 0.5 : 0.0, vx_status_string(s), (int)s);
        const char *msg = vx_last_error();
        cr_assert(msg != NULL && msg[0] != '\0', "%s (%s): vx_last_error() is empty", d, why);
        int64_t bad = vt_check_sentinel(x.c, CBUF);
        cr_assert(bad < 0, "%s (%s): C written at offset %lld although the call failed", d, why,
                  (long long)bad);
    }
}

static void expect_ok(const call *q, const char *why)
{
    static bufs x;
    char d[320];
    describe(q, d, sizeof d);
    fill(&x);
    vx_status s = do_call(q, &x, 0.0f);
    cr_assert_eq(s, VX_OK, "%s (%s): returned %s (\"%s\"), expected VX_OK", d, why,
                 vx_status_string(s), vx_last_error());
}

static call valid_call(vx_layout l, vx_transpose ta, vx_transpose tb, int64_t m, int64_t n,
                       int64_t k)
{
    call q;
    memset(&q, 0, sizeof q);
    q.l = l;
    q.ta = ta;
    q.tb = tb;
    q.m = m;
    q.n = n;
    q.k = k;
    vt_min_lds(l, ta, tb, m, n, k, &q.lda, &q.ldb, &q.ldc);
    return q;
}

Test(args, last_error_empty_before_any_failure)
{
    const char *msg = vx_last_error();
    cr_assert(msg != NULL, "vx_last_error() returned NULL");
    cr_assert_str_empty(msg, "vx_last_error() is \"%s\" before any call failed", msg);
}

Test(args, status_strings_distinct)
{
    const vx_status all[] = {VX_OK, VX_ERR_INVALID_ARG, VX_ERR_UNSUPPORTED, VX_ERR_NO_MEMORY,
                             VX_ERR_DEVICE, VX_ERR_INTERNAL};
    const int n = (int)(sizeof all / sizeof all[0]);
    for (int i = 0; i < n; i++) {
        const char *s = vx_status_string(all[i]);
        cr_assert(s != NULL && s[0] != '\0', "vx_status_string(%d) is NULL or empty", (int)all[i]);
        for (int j = 0; j < i; j++)
            cr_assert(strcmp(s, vx_status_string(all[j])) != 0,
                      "vx_status_string(%d) == vx_status_string(%d) == \"%s\"", (int)all[i],
                      (int)all[j], s);
    }
    cr_assert_str_eq(vx_status_string(VX_OK), "VX_OK");
    cr_assert_str_eq(vx_status_string(VX_ERR_INVALID_ARG), "VX_ERR_INVALID_ARG");
    /* out of range values still give a string */
    cr_assert(vx_status_string((vx_status)99) != NULL, "vx_status_string(99) is NULL");
    cr_assert(vx_status_string((vx_status)-1) != NULL, "vx_status_string(-1) is NULL");
}

Test(args, negative_sizes)
{
    for (int combo = 0; combo < 8; combo++) {
        vx_layout l;
        vx_transpose ta, tb;
        vt_combo(combo, &l, &ta, &tb);
        call q = valid_call(l, ta, tb, 5, 7, 3);
        q.m = -1;
        expect_invalid(&q, "m < 0");
        q = valid_call(l, ta, tb, 5, 7, 3);
        q.n = -1;
        expect_invalid(&q, "n < 0");
        q = valid_call(l, ta, tb, 5, 7, 3);
        q.k = -1;
        expect_invalid(&q, "k < 0");
        q = valid_call(l, ta, tb, 5, 7, 3);
        q.m = INT64_MIN;
        expect_invalid(&q, "m = INT64_MIN");
        /* a negative size with another one zero is still an error */
        q = valid_call(l, ta, tb, 0, 7, 3);
        q.k = -2;
        expect_invalid(&q, "k < 0 with m = 0");
        q = valid_call(l, ta, tb, 5, 0, 3);
        q.m = -3;
        expect_invalid(&q, "m < 0 with n = 0");
    }
}

/* For each layout x transa x transb and several shapes: ld = minimum is
 * accepted, ld = minimum - 1 (and 0, and negative) is rejected. */
Test(args, leading_dimensions)
{
    static const int64_t shapes[][3] = {{5, 7, 3}, {7, 3, 5}, {3, 5, 7}, {4, 4, 0}, {1, 6, 9}};
    for (int s = 0; s < 5; s++)
        for (int combo = 0; combo < 8; combo++) {
            vx_layout l;
            vx_transpose ta, tb;
            vt_combo(combo, &l, &ta, &tb);
            int64_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
            call ok = valid_call(l, ta, tb, m, n, k);
            /* the minimum, spelled out as in cblas */
            int64_t want_lda = (l == VX_ROW_MAJOR) == (ta == VX_NO_TRANS) ? k : m;
            int64_t want_ldb = (l == VX_ROW_MAJOR) == (tb == VX_NO_TRANS) ? n : k;
            int64_t want_ldc = l == VX_ROW_MAJOR ? n : m;
            want_lda = want_lda > 1 ? want_lda : 1;
            want_ldb = want_ldb > 1 ? want_ldb : 1;
            want_ldc = want_ldc > 1 ? want_ldc : 1;
            cr_assert(ok.lda == want_lda && ok.ldb == want_ldb && ok.ldc == want_ldc,
                      "test bug: minimum ld mismatch");
            expect_ok(&ok, "minimum leading dimensions");

            call q = ok;
            q.lda = want_lda - 1;
            expect_invalid(&q, "lda one too small");
            q.lda = -want_lda;
            expect_invalid(&q, "lda negative");
            q = ok;
            q.ldb = want_ldb - 1;
            expect_invalid(&q, "ldb one too small");
            q.ldb = -1;
            expect_invalid(&q, "ldb negative");
            q = ok;
            q.ldc = want_ldc - 1;
            expect_invalid(&q, "ldc one too small");
            q.ldc = -1;
            expect_invalid(&q, "ldc negative");
        }
}

Test(args, null_pointers)
{
    for (int combo = 0; combo < 8; combo++) {
        vx_layout l;
        vx_transpose ta, tb;
        vt_combo(combo, &l, &ta, &tb);
        call q = valid_call(l, ta, tb, 5, 7, 3);
        q.null_a = 1;
        expect_invalid(&q, "a == NULL");
        q = valid_call(l, ta, tb, 5, 7, 3);
        q.null_b = 1;
        expect_invalid(&q, "b == NULL");
        q = valid_call(l, ta, tb, 5, 7, 3);
        q.null_c = 1;
        expect_invalid(&q, "c == NULL");
        /* k == 0 still writes C (C = beta C): C must exist */
        q = valid_call(l, ta, tb, 5, 7, 0);
        q.null_c = 1;
        expect_invalid(&q, "c == NULL with k = 0");
    }
}

Test(args, bad_enums)
{
    static const int bad_layouts[] = {0, 7, 100, 103, 111, -1};
    static const int bad_trans[] = {0, 7, 101, 110, 113, -1};
    for (int i = 0; i < 6; i++) {
        call q = valid_call(VX_ROW_MAJOR, VX_NO_TRANS, VX_NO_TRANS, 5, 7, 3);
        q.l = (vx_layout)bad_layouts[i];
        expect_invalid(&q, "bad layout");
        q = valid_call(VX_COL_MAJOR, VX_NO_TRANS, VX_TRANS, 5, 7, 3);
        q.ta = (vx_transpose)bad_trans[i];
        expect_invalid(&q, "bad transa");
        q = valid_call(VX_ROW_MAJOR, VX_TRANS, VX_NO_TRANS, 5, 7, 3);
        q.tb = (vx_transpose)bad_trans[i];
        expect_invalid(&q, "bad transb");
    }
}

/* Sizes whose products or index extents overflow int64. The buffers are
 * tiny: a library that misses the check would write far out of them. */
Test(args, overflow)
{
    const int64_t T40 = (int64_t)1 << 40, T33 = (int64_t)1 << 33, T31 = (int64_t)1 << 31;
    call q;

    /* m * k overflows (A's element count) */
    q = valid_call(VX_ROW_MAJOR, VX_NO_TRANS, VX_NO_TRANS, T40, 1, T40);
    expect_invalid(&q, "m*k overflows int64");
    q = valid_call(VX_COL_MAJOR, VX_TRANS, VX_NO_TRANS, T40, 1, T40);
    expect_invalid(&q, "m*k overflows int64 (col-major, A^T)");
    /* k * n overflows (B) */
    q = valid_call(VX_ROW_MAJOR, VX_NO_TRANS, VX_NO_TRANS, 1, T40, T40);
    expect_invalid(&q, "k*n overflows int64");
    q = valid_call(VX_COL_MAJOR, VX_NO_TRANS, VX_TRANS, 1, T40, T40);
    expect_invalid(&q, "k*n overflows int64 (col-major, B^T)");
    /* m * n overflows (C) */
    q = valid_call(VX_ROW_MAJOR, VX_NO_TRANS, VX_NO_TRANS, T40, T40, 1);
    expect_invalid(&q, "m*n overflows int64");
    q = valid_call(VX_COL_MAJOR, VX_NO_TRANS, VX_NO_TRANS, T40, T40, 1);
    expect_invalid(&q, "m*n overflows int64 (col-major)");
    /* the largest sizes */
    q = valid_call(VX_ROW_MAJOR, VX_NO_TRANS, VX_NO_TRANS, INT64_MAX, INT64_MAX, INT64_MAX);
    expect_invalid(&q, "all sizes INT64_MAX");

    /* products fit, but lda * (rows - 1) + cols does not */
    q = valid_call(VX_ROW_MAJOR, VX_NO_TRANS, VX_NO_TRANS, T33, 1, 1);
    q.lda = T31;
    expect_invalid(&q, "lda*(m-1)+k overflows int64");
    q = valid_call(VX_COL_MAJOR, VX_TRANS, VX_NO_TRANS, T33, 1, 1);
    q.lda = T31;
    expect_invalid(&q, "lda*(m-1)+k overflows int64 (col-major A^T)");
    /* ldb * (rows - 1) + cols */
    q = valid_call(VX_COL_MAJOR, VX_NO_TRANS, VX_NO_TRANS, 1, T33, 1);
    q.ldb = T31;
    expect_invalid(&q, "ldb*(n-1)+k overflows int64");
    q = valid_call(VX_ROW_MAJOR, VX_NO_TRANS, VX_TRANS, 1, T33, 1);
    q.ldb = T31;
    expect_invalid(&q, "ldb*(n-1)+k overflows int64 (row-major B^T)");
    /* ldc * (rows - 1) + cols */
    q = valid_call(VX_ROW_MAJOR, VX_NO_TRANS, VX_NO_TRANS, T33, 1, 1);
    q.ldc = T31;
    expect_invalid(&q, "ldc*(m-1)+n overflows int64");
    q = valid_call(VX_COL_MAJOR, VX_NO_TRANS, VX_NO_TRANS, 1, T33, 1);
    q.ldc = T31;
    expect_invalid(&q, "ldc*(n-1)+m overflows int64 (col-major)");
    /* the element offset fits int64 but its byte offset does not: rows =
     * 2^30 + 1 (past the check's fast path, below 2^30 each), lda = 2^31 */
    q = valid_call(VX_ROW_MAJOR, VX_NO_TRANS, VX_NO_TRANS, ((int64_t)1 << 30) + 1, 1, 1);
    q.lda = T31;
    expect_invalid(&q, "4*(lda*(m-1)+k) overflows int64");
    /* ld itself huge */
    q = valid_call(VX_ROW_MAJOR, VX_NO_TRANS, VX_NO_TRANS, 3, 3, 3);
    q.ldc = INT64_MAX;
    expect_invalid(&q, "ldc = INT64_MAX with 3 rows");
}

/* Empty problems where an operand has no elements accept NULL for it. */
Test(args, empty_operands_accept_null)
{
    call q = valid_call(VX_ROW_MAJOR, VX_NO_TRANS, VX_NO_TRANS, 0, 7, 3);
    q.null_a = 1;
    q.null_c = 1;
    expect_ok(&q, "m = 0: A and C have no elements");
    q = valid_call(VX_COL_MAJOR, VX_NO_TRANS, VX_NO_TRANS, 5, 0, 3);
    q.null_b = 1;
    q.null_c = 1;
    expect_ok(&q, "n = 0: B and C have no elements");
    q = valid_call(VX_ROW_MAJOR, VX_NO_TRANS, VX_NO_TRANS, 5, 7, 0);
    q.null_a = 1;
    q.null_b = 1;
    expect_ok(&q, "k = 0: A and B have no elements");
}

/* Each call's message belongs to its own thread. */
static void *fail_in_thread(void *arg)
{
    int *res = arg;
    res[0] = vx_last_error() != NULL && vx_last_error()[0] == '\0';
    float c[4] = {0};
    vx_status s = dyn_gemm(VX_ROW_MAJOR, VX_NO_TRANS, VX_NO_TRANS, -1, 2, 2, 1.0f, c, 2, c, 2,
                           0.0f, c, 2);
    res[1] = s == VX_ERR_INVALID_ARG && vx_last_error()[0] != '\0';
    return NULL;
}

Test(args, last_error_per_thread)
{
    float c[4] = {0};
    vx_status s = dyn_gemm(VX_ROW_MAJOR, VX_NO_TRANS, VX_NO_TRANS, 2, 2, -5, 1.0f, c, 2, c, 2,
                           0.0f, c, 2);
    cr_assert_eq(s, VX_ERR_INVALID_ARG);
    char mine[512];
    snprintf(mine, sizeof mine, "%s", vx_last_error());
    cr_assert(mine[0] != '\0', "no message after k = -5");
    int res[2] = {0, 0};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, fail_in_thread, res), 0);
    pthread_join(t, NULL);
    cr_assert(res[0], "a new thread sees another thread's error message");
    cr_assert(res[1], "a failed call in a second thread set no message");
    cr_assert_str_eq(vx_last_error(), mine,
                     "this thread's message changed after another thread failed");
}
