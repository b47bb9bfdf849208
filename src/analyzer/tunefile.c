/* The tuning file: JSON (read and written with jansson), versioned, with the
 * fingerprint of the machine that measured it.
 *
 *   { "format": "vortex-tune", "version": 2, "created": "2026-11-22T21:00:00Z",
 *     "fingerprint": { "cpu_model": ..., "physical_cores": 2, "l1d_bytes": ...,
 *                      "l2_bytes": ..., "l3_bytes": ..., "avx2_fma": true, "avx512": false },
 *     "l0": { "avx2": [ { "nr": 8, "ap_bp": [[o, p], ...], "as_bp": ..., "as_bs": ... }, ... ],
 *             "avx512": [ ... ] },            rates per m = 1.., ns and ns per k step
 *     "pack_ns": { "a": [unit, strided], "b": [unit, strided], "b_narrow": [in L3, in DRAM] },   ns per float
 *     "bandwidth": { "l2": ..., "l3": ..., "dram": ..., "dram_all": ..., "strided": ...,
 *                    "stride_stream": ..., "stride_tlb": ... (optional) },  bytes per ns
 *     "wake_ns": ..., "wake_warm_ns": ..., "call_ns": ..., "mode_call_ns": [copy A+B, copy B, in place],
 *     "inplace_probe_extra": { "avx512": [family, m, ns], ... } (optional), "packed_probe": { ... }
 *     (optional, the same), "line_share_ns": ..., "line_stream_ns": ..., "region_handoff_ns": ... (optional),
 *     "gemv_rows_ns_per_flop": { "avx512": [2 rows, 3 rows, 4 rows], ... } (optional),
 *     "fetch_next_ratio": { "avx512": time with / without, ... } (optional),
 *     "pack_on_read_ratio": { "avx512": time packed on read / in place, ... } (optional),
 *     "context_ratio": { "avx512": [family 0, family 1, ...], ... } (optional),
 *     "context_tile_ratio": { "avx512": [[m = 1, 2, ... of family 0; 0 = not measured], ...], ... }
 *     (optional),
 *     "l2_alias_ways": ... (optional), "l3_effective_bytes": ... (optional),
 *     "stream_one_tile_ratio": [k = 8, 16, 32] (optional: streamed over plain) }
 *
 * Loading is all or nothing: the whole file is checked into a copy, and only
 * a file that passes every check replaces the defaults. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyzer/tune.h"

static const char *const variant_key[VX_UK_VARIANTS] = { "ap_bp", "as_bp", "as_bs" };
static const char *const isa_key[VX_ISA_COUNT] = { "avx2", "avx512" };

static vx_status say(vx_status s, char *why, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static vx_status say(vx_status s, char *why, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (why && len)
        vsnprintf(why, len, fmt, ap);
    va_end(ap);
    return s;
}

/* v is a finite number in [lo, hi] (integers are accepted as numbers). */
static int finite_in(json_t *v, double lo, double hi, double *out)
{
    if (!json_is_number(v))
        return 0;
    const double x = json_number_value(v);
    if (!isfinite(x) || x < lo || x > hi)
        return 0;
    *out = x;
    return 1;
}

static int get_num(json_t *o, const char *key, double lo, double hi, double *out)
{
    return finite_in(json_object_get(o, key), lo, hi, out);
}

static int num_at(json_t *a, size_t i, double lo, double hi, double *out)
{
    return finite_in(json_array_get(a, i), lo, hi, out);
}

/* The kernel families of an ISA the tuning keeps per-family values for. */
static int tuned_families(vx_isa isa)
{
    const int n = vx_ukernels(isa)->nfamilies;
    return n < VX_TUNE_MAX_FAMILIES ? n : VX_TUNE_MAX_FAMILIES;
}

/* ... and the tiles of family f it keeps per-tile values for (m = 1..). */
static int tuned_tiles(vx_isa isa, int f)
{
    const int n = vx_ukernels(isa)->families[f].mr_max;
    return n < VX_TUNE_MAX_MR ? n : VX_TUNE_MAX_MR;
}

/* a[i]: 0 (not measured) or a number in [lo, hi] */
static int zero_or_num_at(json_t *a, size_t i, double lo, double hi, double *out)
{
    json_t *v = json_array_get(a, i);
    if (json_is_number(v) && json_number_value(v) == 0) {
        *out = 0;
        return 1;
    }
    return finite_in(v, lo, hi, out);
}

/* root[key], an object of entries per ISA, or NULL where absent. Present
 * but not an object: VX_ERR_INVALID_ARG in *s, with the reason. */
static json_t *isa_object(json_t *root, const char *key, const char *path, char *why, size_t len, vx_status *s)
{
    json_t *o = json_object_get(root, key);
    *s = o && !json_is_object(o) ? say(VX_ERR_INVALID_ARG, why, len, "%s: \"%s\" is not an object", path, key)
                                 : VX_OK;
    return *s == VX_OK ? o : NULL;
}

/* An optional object of one probe's ratio per ISA (time with a driver
 * setting over time without, tune.h): each present ISA's value must lie
 * in [0.1, 10]; absent ones stay as they are (0: not measured). */
static vx_status load_isa_ratios(json_t *root, const char *key, const char *path, char *why, size_t len,
                                 double out[VX_ISA_COUNT])
{
    vx_status s;
    json_t *o = isa_object(root, key, path, why, len, &s);
    for (int isa = 0; o && s == VX_OK && isa < VX_ISA_COUNT; isa++)
        if (json_object_get(o, isa_key[isa]) && !get_num(o, isa_key[isa], 0.1, 10.0, &out[isa]))
            s = say(VX_ERR_INVALID_ARG, why, len, "%s: \"%s\".%s is not a number in [0.1, 10]", path, key,
                    isa_key[isa]);
    return s;
}

/* ... and written: the measured ISAs only. */
static void save_isa_ratios(json_t *root, const char *key, const double in[VX_ISA_COUNT])
{
    json_t *o = json_object();
    for (int isa = 0; isa < VX_ISA_COUNT; isa++)
        if (in[isa] > 0)
            json_object_set_new(o, isa_key[isa], json_real(in[isa]));
    json_object_set_new(root, key, o);
}

/* Sane ranges: wide enough for any real machine, narrow enough that a value
 * outside them is damage, not a measurement. */
#define RATE_O_MAX 1e6   /* ns per micro-kernel call beyond the k loop */
#define RATE_P_MAX 1e4   /* ns per k step */
#define PACK_MAX 1e3     /* ns per float */
#define BW_MIN 1e-2      /* bytes per ns */
#define BW_MAX 1e5
#define FIXED_MAX 1e8    /* ns */
#define L3_EFFECTIVE_MIN 1048576.0 /* bytes: 1 MiB */
#define L3_EFFECTIVE_MAX 1e15

static vx_status check_fingerprint(json_t *fp, const vx_hw_info *hw, char *why, size_t len)
{
    vx_fingerprint me;
    vx_fingerprint_of(hw, &me);
    if (!json_is_object(fp))
        return say(VX_ERR_INVALID_ARG, why, len, "no \"fingerprint\" object");
    const char *model = json_string_value(json_object_get(fp, "cpu_model"));
    double cores, l1, l2, l3;
    json_t *avx2 = json_object_get(fp, "avx2_fma"), *avx512 = json_object_get(fp, "avx512");
    if (!model || !get_num(fp, "physical_cores", 0, 1e6, &cores) || !get_num(fp, "l1d_bytes", 0, 1e15, &l1) ||
        !get_num(fp, "l2_bytes", 0, 1e15, &l2) || !get_num(fp, "l3_bytes", 0, 1e15, &l3) ||
        !json_is_boolean(avx2) || !json_is_boolean(avx512))
        return say(VX_ERR_INVALID_ARG, why, len, "the fingerprint is incomplete or malformed");
    if (strcmp(model, me.cpu_model) != 0)
        return say(VX_ERR_UNSUPPORTED, why, len, "it was measured on another CPU (\"%s\", this is \"%s\")",
                   model, me.cpu_model);
    if ((int64_t)cores != me.physical_cores || (int64_t)l1 != me.l1d_bytes || (int64_t)l2 != me.l2_bytes ||
        (int64_t)l3 != me.l3_bytes || json_is_true(avx2) != !!me.has_avx2_fma ||
        json_is_true(avx512) != !!me.has_avx512)
        return say(VX_ERR_UNSUPPORTED, why, len,
                   "it was measured on another machine (cores, caches or ISA differ: %d cores, L1d %lld, L2 %lld, "
                   "L3 %lld there; %d, %lld, %lld, %lld here)",
                   (int)cores, (long long)l1, (long long)l2, (long long)l3, me.physical_cores,
                   (long long)me.l1d_bytes, (long long)me.l2_bytes, (long long)me.l3_bytes);
    return VX_OK;
}

/* Rates of one ISA: families keyed by nr; a family the kernel table lacks
 * is skipped (the file may come from a build with more families). */
static vx_status read_l0(json_t *arr, vx_isa isa, vx_tune *t, char *why, size_t len)
{
    if (!json_is_array(arr))
        return say(VX_ERR_INVALID_ARG, why, len, "\"l0.%s\" is not an array", isa_key[isa]);
    const vx_ukernel_set *set = vx_ukernels(isa);
    size_t i;
    json_t *fam;
    json_array_foreach(arr, i, fam) {
        double nr;
        if (!json_is_object(fam) || !get_num(fam, "nr", 1, 4096, &nr))
            return say(VX_ERR_INVALID_ARG, why, len, "l0.%s[%zu] has no valid \"nr\"", isa_key[isa], i);
        int f = -1;
        for (int j = 0; j < set->nfamilies && j < VX_TUNE_MAX_FAMILIES; j++)
            if (set->families[j].nr == (int)nr)
                f = j;
        if (f < 0)
            continue;
        for (int v = 0; v < VX_UK_VARIANTS; v++) {
            json_t *rates = json_object_get(fam, variant_key[v]);
            if (!rates)
                continue;
            if (!json_is_array(rates) || json_array_size(rates) > VX_TUNE_MAX_MR)
                return say(VX_ERR_INVALID_ARG, why, len, "l0.%s nr=%d %s is not an array of at most %d rates",
                           isa_key[isa], (int)nr, variant_key[v], VX_TUNE_MAX_MR);
            size_t m;
            json_t *r;
            json_array_foreach(rates, m, r) {
                double o, p;
                if (!json_is_array(r) || json_array_size(r) != 2 || !num_at(r, 0, 0, RATE_O_MAX, &o) ||
                    !num_at(r, 1, 1e-6, RATE_P_MAX, &p))
                    return say(VX_ERR_INVALID_ARG, why, len,
                               "l0.%s nr=%d %s[%zu] is not [overhead_ns, ns_per_k] within [0, %g] x [1e-6, %g]",
                               isa_key[isa], (int)nr, variant_key[v], m, RATE_O_MAX, RATE_P_MAX);
                if ((int)m < set->families[f].mr_max)
                    t->l0[isa][f][v][m] = (vx_l0_rate){ (float)o, (float)p };
            }
        }
    }
    return VX_OK;
}

static int get_pair(json_t *o, const char *key, double lo, double hi, double out[2])
{
    json_t *a = json_object_get(o, key);
    return json_is_array(a) && json_array_size(a) == 2 && num_at(a, 0, lo, hi, &out[0]) &&
           num_at(a, 1, lo, hi, &out[1]);
}

vx_status vx_tune_load(const char *path, const vx_hw_info *hw, vx_tune *t, char *why, size_t len)
{
    json_error_t err;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &err);
    if (!root) {
        if (access(path, F_OK) != 0)
            return say(VX_ERR_INVALID_ARG, why, len, "no tuning file at %s", path);
        return say(VX_ERR_INVALID_ARG, why, len, "%s is not valid JSON (line %d: %s)", path, err.line, err.text);
    }
    vx_status s = VX_OK;
    vx_tune n = *t; /* checked into a copy: all or nothing */
    double x;
    const char *format = json_string_value(json_object_get(root, "format"));
    if (!json_is_object(root) || !format || strcmp(format, "vortex-tune") != 0) {
        s = say(VX_ERR_INVALID_ARG, why, len, "%s is not a Vortex tuning file", path);
        goto out;
    }
    json_t *jv = json_object_get(root, "version");
    if (!json_is_integer(jv) || json_integer_value(jv) != VX_TUNE_VERSION) {
        char found[32] = "no version";
        if (json_is_integer(jv))
            snprintf(found, sizeof found, "version %lld", (long long)json_integer_value(jv));
        s = say(VX_ERR_UNSUPPORTED, why, len, "%s has %s, this library reads format version %d", path, found,
                VX_TUNE_VERSION);
        goto out;
    }
    char fwhy[400];
    if ((s = check_fingerprint(json_object_get(root, "fingerprint"), hw, fwhy, sizeof fwhy)) != VX_OK) {
        say(s, why, len, "%s: %s", path, fwhy);
        goto out;
    }
    const char *created = json_string_value(json_object_get(root, "created"));
    snprintf(n.created, sizeof n.created, "%s", created ? created : "");

    json_t *l0 = isa_object(root, "l0", path, why, len, &s);
    if (s != VX_OK)
        goto out;
    for (int isa = 0; l0 && isa < VX_ISA_COUNT; isa++) {
        json_t *arr = json_object_get(l0, isa_key[isa]);
        if (arr && (s = read_l0(arr, (vx_isa)isa, &n, fwhy, sizeof fwhy)) != VX_OK) {
            say(s, why, len, "%s: %s", path, fwhy);
            goto out;
        }
    }
    json_t *pack = json_object_get(root, "pack_ns");
    if (pack && (!get_pair(pack, "a", 1e-6, PACK_MAX, n.pack_a_ns) || !get_pair(pack, "b", 1e-6, PACK_MAX, n.pack_b_ns) ||
                 !get_pair(pack, "b_narrow", 1e-6, PACK_MAX, n.pack_b_narrow_ns))) {
        s = say(VX_ERR_INVALID_ARG, why, len,
                "%s: \"pack_ns\" needs \"a\", \"b\" and \"b_narrow\", two numbers each in [1e-6, %g]", path,
                PACK_MAX);
        goto out;
    }
    json_t *bw = json_object_get(root, "bandwidth");
    if (bw && (!get_num(bw, "l2", BW_MIN, BW_MAX, &n.bw_l2) || !get_num(bw, "l3", BW_MIN, BW_MAX, &n.bw_l3) ||
               !get_num(bw, "dram", BW_MIN, BW_MAX, &n.bw_dram) ||
               !get_num(bw, "dram_all", BW_MIN, BW_MAX, &n.bw_dram_all) ||
               !get_num(bw, "strided", BW_MIN, BW_MAX, &n.bw_strided) ||
               !get_num(bw, "stride_stream", BW_MIN, BW_MAX, &n.bw_stride_stream))) {
        s = say(VX_ERR_INVALID_ARG, why, len,
                "%s: \"bandwidth\" needs l2, l3, dram, dram_all, strided and stride_stream in [%g, %g] bytes per ns", path, BW_MIN, BW_MAX);
        goto out;
    }
    /* added after version 2 files were written: optional, the default stays */
    if (bw && json_object_get(bw, "stride_tlb") && !get_num(bw, "stride_tlb", BW_MIN, BW_MAX, &n.bw_stride_tlb)) {
        s = say(VX_ERR_INVALID_ARG, why, len, "%s: \"bandwidth\".stride_tlb is not a number in [%g, %g] bytes per ns",
                path, BW_MIN, BW_MAX);
        goto out;
    }
    /* added after version 2 files were written: optional, absent = not measured */
    for (int which = 0; which < 2; which++) {
        const char *key = which ? "packed_probe" : "inplace_probe_extra";
        json_t *probe = isa_object(root, key, path, why, len, &s);
        if (s != VX_OK)
            goto out;
        for (int isa = 0; probe && isa < VX_ISA_COUNT; isa++) {
            json_t *e = json_object_get(probe, isa_key[isa]);
            if (!e)
                continue;
            const vx_ukernel_set *set = vx_ukernels((vx_isa)isa);
            double f, m, ns;
            if (!json_is_array(e) || json_array_size(e) != 3 || !num_at(e, 0, 0, set->nfamilies - 1, &f) ||
                f != (int)f || !num_at(e, 2, 0, FIXED_MAX, &ns) ||
                !num_at(e, 1, 1, set->families[(int)f].mr_max, &m) || m != (int)m) {
                s = say(VX_ERR_INVALID_ARG, why, len,
                        "%s: \"%s\".%s is not [family, m, ns] with a family of %d, m within its tile "
                        "and ns in [0, %g]",
                        path, key, isa_key[isa], set->nfamilies, FIXED_MAX);
                goto out;
            }
            (which ? n.packed_probe : n.inplace_probe)[isa] = (vx_tune_probe){ (int)f, (int)m, ns };
        }
    }
    /* added after version 2 files were written: optional, absent = not measured */
    json_t *rows = isa_object(root, "gemv_rows_ns_per_flop", path, why, len, &s);
    if (s != VX_OK)
        goto out;
    for (int isa = 0; rows && isa < VX_ISA_COUNT; isa++) {
        json_t *e = json_object_get(rows, isa_key[isa]);
        if (!e)
            continue;
        int ok = json_is_array(e) && json_array_size(e) == VX_TUNE_GEMV_ROWS;
        for (int r = 0; ok && r < VX_TUNE_GEMV_ROWS; r++)
            ok = num_at(e, (size_t)r, 1e-4, 10.0, &n.gemv_rows_ns[isa][r]);
        if (!ok) {
            s = say(VX_ERR_INVALID_ARG, why, len,
                    "%s: \"gemv_rows_ns_per_flop\".%s is not [2 rows, 3 rows, 4 rows], each in [1e-4, 10] ns",
                    path, isa_key[isa]);
            goto out;
        }
    }
    /* added after version 2 files were written: optional, absent = not measured */
    if ((s = load_isa_ratios(root, "fetch_next_ratio", path, why, len, n.fetch_next_ratio)) != VX_OK ||
        (s = load_isa_ratios(root, "pack_on_read_ratio", path, why, len, n.pack_on_read_ratio)) != VX_OK)
        goto out;
    /* added after version 2 files were written: optional, absent = not measured */
    json_t *context = isa_object(root, "context_ratio", path, why, len, &s);
    if (s != VX_OK)
        goto out;
    for (int isa = 0; context && isa < VX_ISA_COUNT; isa++) {
        json_t *e = json_object_get(context, isa_key[isa]);
        if (!e)
            continue;
        const int nf = tuned_families((vx_isa)isa);
        int ok = json_is_array(e) && json_array_size(e) == (size_t)nf;
        for (int f = 0; ok && f < nf; f++)
            ok = num_at(e, (size_t)f, 0.1, 1.0, &n.context_ratio[isa][f]);
        if (!ok) {
            s = say(VX_ERR_INVALID_ARG, why, len,
                    "%s: \"context_ratio\".%s is not one number in [0.1, 1] for each of its %d families", path,
                    isa_key[isa], nf);
            goto out;
        }
    }
    /* added after version 2 files were written: optional, absent = not measured */
    json_t *tiles = isa_object(root, "context_tile_ratio", path, why, len, &s);
    if (s != VX_OK)
        goto out;
    for (int isa = 0; tiles && isa < VX_ISA_COUNT; isa++) {
        json_t *e = json_object_get(tiles, isa_key[isa]);
        if (!e)
            continue;
        const int nf = tuned_families((vx_isa)isa);
        int ok = json_is_array(e) && json_array_size(e) == (size_t)nf;
        for (int f = 0; ok && f < nf; f++) {
            json_t *row = json_array_get(e, (size_t)f);
            const int nm = tuned_tiles((vx_isa)isa, f);
            ok = json_is_array(row) && json_array_size(row) == (size_t)nm;
            for (int m = 0; ok && m < nm; m++)
                ok = zero_or_num_at(row, (size_t)m, 0.1, 1.0, &n.context_tile[isa][f][m]);
        }
        if (!ok) {
            s = say(VX_ERR_INVALID_ARG, why, len,
                    "%s: \"context_tile_ratio\".%s is not, for each of its %d families, one number per tile "
                    "height (0, or in [0.1, 1])",
                    path, isa_key[isa], nf);
            goto out;
        }
    }
    /* added after version 2 files were written: optional, absent = not measured */
    if (json_object_get(root, "l2_alias_ways") && !get_num(root, "l2_alias_ways", 1.0, 64.0, &n.l2_alias_ways)) {
        s = say(VX_ERR_INVALID_ARG, why, len, "%s: \"l2_alias_ways\" is not a number in [1, 64]", path);
        goto out;
    }
    /* added after version 2 files were written: optional, absent = as reported */
    if (json_object_get(root, "l3_effective_bytes") &&
        !get_num(root, "l3_effective_bytes", L3_EFFECTIVE_MIN, L3_EFFECTIVE_MAX, &n.l3_effective_bytes)) {
        s = say(VX_ERR_INVALID_ARG, why, len, "%s: \"l3_effective_bytes\" is not a number in [%g, %g]", path,
                L3_EFFECTIVE_MIN, L3_EFFECTIVE_MAX);
        goto out;
    }
    /* added after version 2 files were written: optional, absent = not measured */
    json_t *stream = json_object_get(root, "stream_one_tile_ratio");
    int stream_ok = !stream || (json_is_array(stream) && json_array_size(stream) == VX_TUNE_STREAM_DEPTHS);
    for (int i = 0; stream && stream_ok && i < VX_TUNE_STREAM_DEPTHS; i++)
        stream_ok = num_at(stream, (size_t)i, 0.1, 10.0, &n.stream_one_tile_ratio[i]);
    if (!stream_ok) {
        s = say(VX_ERR_INVALID_ARG, why, len,
                "%s: \"stream_one_tile_ratio\" is not [k = 8, 16, 32], each in [0.1, 10]", path);
        goto out;
    }
    /* added after version 2 files were written: optional; a file without
     * the pool's hand-off reading turns the run-time class off (0) */
    n.region_handoff_ns = 0;
    static const char *const optional[] = { "line_share_ns", "line_stream_ns", "region_handoff_ns" };
    double *optional_out[] = { &n.line_share_ns, &n.line_stream_ns, &n.region_handoff_ns };
    for (int i = 0; i < 3; i++) {
        if (!json_object_get(root, optional[i]))
            continue;
        if (!get_num(root, optional[i], 0, FIXED_MAX, &x)) {
            s = say(VX_ERR_INVALID_ARG, why, len, "%s: \"%s\" is not a number in [0, %g]", path, optional[i],
                    FIXED_MAX);
            goto out;
        }
        *optional_out[i] = x;
    }
    static const char *const fixed[] = { "wake_ns", "wake_warm_ns", "call_ns", "mode_call_ns",
                                        "mode_call_ns", "mode_call_ns" };
    double *fixed_out[] = { &n.wake_ns, &n.wake_warm_ns, &n.call_ns };
    for (int i = 0; i < 3; i++) {
        if (!json_object_get(root, fixed[i]))
            continue;
        if (!get_num(root, fixed[i], 0, FIXED_MAX, &x)) {
            s = say(VX_ERR_INVALID_ARG, why, len, "%s: \"%s\" is not a number in [0, %g]", path, fixed[i], FIXED_MAX);
            goto out;
        }
        *fixed_out[i] = x;
    }
    json_t *mc = json_object_get(root, "mode_call_ns");
    if (mc) {
        double v[3];
        if (!json_is_array(mc) || json_array_size(mc) != 3 || !num_at(mc, 0, 0, FIXED_MAX, &v[0]) ||
            !num_at(mc, 1, 0, FIXED_MAX, &v[1]) || !num_at(mc, 2, 0, FIXED_MAX, &v[2])) {
            s = say(VX_ERR_INVALID_ARG, why, len, "%s: \"mode_call_ns\" is not three numbers in [0, %g]", path,
                    FIXED_MAX);
            goto out;
        }
        memcpy(n.mode_call_ns, v, sizeof v);
    }
    n.measured = 1;
    *t = n;
out:
    json_decref(root);
    return s;
}

static json_t *pair(double a, double b) { return json_pack("[f, f]", a, b); }

static json_t *to_json(const vx_tune *t)
{
    json_t *l0 = json_object();
    for (int isa = 0; isa < VX_ISA_COUNT; isa++) {
        const vx_ukernel_set *set = vx_ukernels((vx_isa)isa);
        json_t *fams = json_array();
        for (int f = 0; f < set->nfamilies && f < VX_TUNE_MAX_FAMILIES; f++) {
            json_t *fam = json_pack("{s:i}", "nr", set->families[f].nr);
            for (int v = 0; v < VX_UK_VARIANTS; v++) {
                json_t *rates = json_array();
                for (int m = 1; m <= set->families[f].mr_max && m <= VX_TUNE_MAX_MR; m++) {
                    const vx_l0_rate r = t->l0[isa][f][v][m - 1];
                    json_array_append_new(rates, pair(r.overhead_ns, r.ns_per_k));
                }
                json_object_set_new(fam, variant_key[v], rates);
            }
            json_array_append_new(fams, fam);
        }
        json_object_set_new(l0, isa_key[isa], fams);
    }
    const vx_fingerprint *fp = &t->fp;
    return json_pack("{s:s, s:i, s:s, s:{s:s, s:i, s:I, s:I, s:I, s:b, s:b}, s:o, s:{s:o, s:o, s:o}, "
                     "s:{s:f, s:f, s:f, s:f, s:f, s:f, s:f}, s:f, s:f, s:f}",
                     "format", "vortex-tune", "version", t->version, "created", t->created, "fingerprint",
                     "cpu_model", fp->cpu_model, "physical_cores", fp->physical_cores, "l1d_bytes",
                     (json_int_t)fp->l1d_bytes, "l2_bytes", (json_int_t)fp->l2_bytes, "l3_bytes",
                     (json_int_t)fp->l3_bytes, "avx2_fma", fp->has_avx2_fma, "avx512", fp->has_avx512, "l0", l0,
                     "pack_ns", "a", pair(t->pack_a_ns[0], t->pack_a_ns[1]), "b",
                     pair(t->pack_b_ns[0], t->pack_b_ns[1]), "b_narrow", pair(t->pack_b_narrow_ns[0], t->pack_b_narrow_ns[1]), "bandwidth", "l2", t->bw_l2, "l3", t->bw_l3, "dram",
                     t->bw_dram, "dram_all", t->bw_dram_all, "strided", t->bw_strided, "stride_stream", t->bw_stride_stream, "stride_tlb", t->bw_stride_tlb, "wake_ns", t->wake_ns, "wake_warm_ns", t->wake_warm_ns, "call_ns", t->call_ns);
}

/* A probe per ISA, { "avx512": [family, m, ns], ... }: the measured ones. */
static json_t *probes_json(const vx_tune_probe *probe)
{
    json_t *o = json_object();
    for (int isa = 0; isa < VX_ISA_COUNT; isa++)
        if (probe[isa].ns > 0)
            json_object_set_new(o, isa_key[isa], json_pack("[i, i, f]", probe[isa].fam, probe[isa].m, probe[isa].ns));
    return o;
}

/* mkdir -p of path's directory. */
static int make_parent(const char *path)
{
    char dir[1024];
    if (snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir)
        return -1;
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return 0;
    *slash = 0;
    for (char *p = dir + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(dir, 0755) != 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    return mkdir(dir, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

/* The name of a value JSON cannot hold (NaN, infinity), or NULL. */
static const char *non_finite(const vx_tune *t)
{
    for (int isa = 0; isa < VX_ISA_COUNT; isa++)
        for (int f = 0; f < VX_TUNE_MAX_FAMILIES; f++)
            for (int v = 0; v < VX_UK_VARIANTS; v++)
                for (int m = 0; m < VX_TUNE_MAX_MR; m++)
                    if (!isfinite(t->l0[isa][f][v][m].overhead_ns) || !isfinite(t->l0[isa][f][v][m].ns_per_k))
                        return "an L0 rate";
    const double *d[] = { &t->pack_a_ns[0], &t->pack_a_ns[1], &t->pack_b_ns[0], &t->pack_b_ns[1], &t->bw_l2,
                          &t->bw_l3, &t->bw_dram, &t->bw_dram_all, &t->bw_strided, &t->bw_stride_stream, &t->bw_stride_tlb, &t->pack_b_narrow_ns[0], &t->pack_b_narrow_ns[1], &t->wake_ns, &t->wake_warm_ns, &t->call_ns, &t->mode_call_ns[0],
                          &t->mode_call_ns[1], &t->mode_call_ns[2] };
    static const char *const name[] = { "pack_a_ns", "pack_a_ns", "pack_b_ns", "pack_b_ns", "bw_l2",
                                        "bw_l3", "bw_dram", "bw_dram_all", "bw_strided", "bw_stride_stream", "bw_stride_tlb", "pack_b_narrow_ns", "pack_b_narrow_ns", "wake_ns", "wake_warm_ns", "call_ns", "mode_call_ns", "mode_call_ns", "mode_call_ns" };
    _Static_assert(sizeof d / sizeof d[0] == sizeof name / sizeof name[0], "a name for every value");
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++)
        if (!isfinite(*d[i]))
            return name[i];
    for (int isa = 0; isa < VX_ISA_COUNT; isa++)
        if (!isfinite(t->inplace_probe[isa].ns) || !isfinite(t->packed_probe[isa].ns))
            return "a probe's time";
    if (!isfinite(t->line_share_ns))
        return "line_share_ns";
    if (!isfinite(t->line_stream_ns))
        return "line_stream_ns";
    if (!isfinite(t->region_handoff_ns))
        return "region_handoff_ns";
    if (!isfinite(t->l2_alias_ways))
        return "l2_alias_ways";
    if (!isfinite(t->l3_effective_bytes))
        return "l3_effective_bytes";
    for (int i = 0; i < VX_TUNE_STREAM_DEPTHS; i++)
        if (!isfinite(t->stream_one_tile_ratio[i]))
            return "stream_one_tile_ratio";
    for (int isa = 0; isa < VX_ISA_COUNT; isa++)
        for (int r = 0; r < VX_TUNE_GEMV_ROWS; r++)
            if (!isfinite(t->gemv_rows_ns[isa][r]))
                return "gemv_rows_ns_per_flop";
    for (int isa = 0; isa < VX_ISA_COUNT; isa++)
        if (!isfinite(t->fetch_next_ratio[isa]))
            return "fetch_next_ratio";
    for (int isa = 0; isa < VX_ISA_COUNT; isa++)
        if (!isfinite(t->pack_on_read_ratio[isa]))
            return "pack_on_read_ratio";
    for (int isa = 0; isa < VX_ISA_COUNT; isa++)
        for (int f = 0; f < VX_TUNE_MAX_FAMILIES; f++)
            if (!isfinite(t->context_ratio[isa][f]))
                return "context_ratio";
    for (int isa = 0; isa < VX_ISA_COUNT; isa++)
        for (int f = 0; f < VX_TUNE_MAX_FAMILIES; f++)
            for (int m = 0; m < VX_TUNE_MAX_MR; m++)
                if (!isfinite(t->context_tile[isa][f][m]))
                    return "context_tile_ratio";
    return NULL;
}

vx_status vx_tune_save(const char *path, const vx_tune *t, char *why, size_t len)
{
    if (!path || !*path)
        return say(VX_ERR_INVALID_ARG, why, len, "no path to write the tuning file to");
    const char *bad_value = non_finite(t);
    if (bad_value)
        return say(VX_ERR_INVALID_ARG, why, len, "not writing %s: %s is not a finite number", path, bad_value);
    if (make_parent(path) != 0)
        return say(VX_ERR_INVALID_ARG, why, len, "cannot create the directory of %s: %s", path, strerror(errno));
    char tmp[1100];
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid()) >= (int)sizeof tmp)
        return say(VX_ERR_INVALID_ARG, why, len, "path too long: %s", path);
    json_t *root = to_json(t);
    if (root)
        json_object_set_new(root, "mode_call_ns",
                            json_pack("[f, f, f]", t->mode_call_ns[0], t->mode_call_ns[1], t->mode_call_ns[2]));
    if (root) {
        json_object_set_new(root, "inplace_probe_extra", probes_json(t->inplace_probe));
        json_object_set_new(root, "packed_probe", probes_json(t->packed_probe));
        json_object_set_new(root, "line_share_ns", json_real(t->line_share_ns));
        json_object_set_new(root, "line_stream_ns", json_real(t->line_stream_ns));
        json_object_set_new(root, "region_handoff_ns", json_real(t->region_handoff_ns));
        if (t->l2_alias_ways > 0)
            json_object_set_new(root, "l2_alias_ways", json_real(t->l2_alias_ways));
        if (t->l3_effective_bytes > 0)
            json_object_set_new(root, "l3_effective_bytes", json_integer((json_int_t)t->l3_effective_bytes));
        json_t *stream = json_array();
        for (int i = 0; i < VX_TUNE_STREAM_DEPTHS && t->stream_one_tile_ratio[i] > 0; i++)
            json_array_append_new(stream, json_real(t->stream_one_tile_ratio[i]));
        if (json_array_size(stream) == VX_TUNE_STREAM_DEPTHS) /* measured at every depth */
            json_object_set_new(root, "stream_one_tile_ratio", stream);
        else
            json_decref(stream);
        json_t *rows = json_object();
        for (int isa = 0; isa < VX_ISA_COUNT; isa++)
            if (t->gemv_rows_ns[isa][0] > 0)
                json_object_set_new(rows, isa_key[isa],
                                    json_pack("[f, f, f]", t->gemv_rows_ns[isa][0], t->gemv_rows_ns[isa][1],
                                              t->gemv_rows_ns[isa][2]));
        json_object_set_new(root, "gemv_rows_ns_per_flop", rows);
        save_isa_ratios(root, "fetch_next_ratio", t->fetch_next_ratio);
        save_isa_ratios(root, "pack_on_read_ratio", t->pack_on_read_ratio);
        json_t *context = json_object();
        for (int isa = 0; isa < VX_ISA_COUNT; isa++) {
            const int nf = tuned_families((vx_isa)isa);
            int all = nf > 0;
            for (int f = 0; f < nf; f++)
                all = all && t->context_ratio[isa][f] > 0;
            if (!all)
                continue;
            json_t *a = json_array();
            for (int f = 0; f < nf; f++)
                json_array_append_new(a, json_real(t->context_ratio[isa][f]));
            json_object_set_new(context, isa_key[isa], a);
        }
        json_object_set_new(root, "context_ratio", context);
        json_t *tiles = json_object();
        for (int isa = 0; isa < VX_ISA_COUNT; isa++) {
            const int nf = tuned_families((vx_isa)isa);
            int any = 0;
            for (int f = 0; f < nf; f++)
                for (int m = 0; m < tuned_tiles((vx_isa)isa, f); m++)
                    any |= t->context_tile[isa][f][m] > 0;
            if (!any)
                continue;
            json_t *a = json_array();
            for (int f = 0; f < nf; f++) {
                json_t *row = json_array();
                for (int m = 0; m < tuned_tiles((vx_isa)isa, f); m++)
                    json_array_append_new(row, json_real(t->context_tile[isa][f][m]));
                json_array_append_new(a, row);
            }
            json_object_set_new(tiles, isa_key[isa], a);
        }
        json_object_set_new(root, "context_tile_ratio", tiles);
    }
    if (!root)
        return say(VX_ERR_NO_MEMORY, why, len, "out of memory building the tuning file");
    /* The GPU backend keeps its measurements under "cuda" in the same file
     * (src/cuda/cuda_tune.cu): a CPU re-tune carries them over. */
    json_t *old = json_load_file(path, 0, NULL);
    if (old && json_is_array(json_object_get(old, "cuda")))
        json_object_set(root, "cuda", json_object_get(old, "cuda"));
    json_decref(old);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        json_decref(root);
        return say(VX_ERR_INVALID_ARG, why, len, "cannot write %s: %s", tmp, strerror(errno));
    }
    int bad = json_dumpf(root, f, JSON_INDENT(1) | JSON_REAL_PRECISION(7)) != 0;
    bad |= fputc('\n', f) == EOF;
    bad |= fflush(f) != 0 || fsync(fileno(f)) != 0;
    bad |= fclose(f) != 0;
    json_decref(root);
    if (bad || rename(tmp, path) != 0) {
        const int e = errno;
        unlink(tmp);
        return say(VX_ERR_INVALID_ARG, why, len, "cannot write %s: %s", path, strerror(e));
    }
    return VX_OK;
}
