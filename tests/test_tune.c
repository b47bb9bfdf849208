/* The tuning file and the active tuning: a saved file loads back with every
 * value, saves are atomic, every kind of damaged or foreign file is refused
 * without touching the caller's struct, the library falls back to its
 * built-in defaults (and still computes correctly) when the file is bad, a
 * good file reaches the cost model, and the default path follows the
 * documented environment variables.
 *
 * Each test gets its own fresh directory (mkdtemp) removed afterwards. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <stdint.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyzer/candidates.h"
#include "analyzer/hw.h"
#include "analyzer/plan.h"
#include "analyzer/select.h"
#include "analyzer/tune.h"
#include "cpu/cpu_levels.h"
#include "cpu/cpu_tune.h"
#include "cpu/gemm.h"
#include "cpu/isa.h"
#include "ref.h"

/* ------------------------------------------------------------------ */
/* Scratch directory                                                   */
/* ------------------------------------------------------------------ */

static char g_dir[512];

static void make_scratch(void)
{
    const char *base = getenv("TMPDIR");
    snprintf(g_dir, sizeof g_dir, "%s/vt-tune-XXXXXX", base && *base ? base : "/tmp");
    cr_assert_not_null(mkdtemp(g_dir), "mkdtemp(%s) failed: %s", g_dir, strerror(errno));
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

/* Runs after a failed assertion too, so a failing test leaves nothing. */
static void remove_scratch(void)
{
    if (g_dir[0])
        nftw(g_dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

TestSuite(tune, .init = make_scratch, .fini = remove_scratch, .timeout = 100.0);

/* g_dir/name */
static void scratch_path(char *buf, size_t len, const char *name)
{
    const int n = snprintf(buf, len, "%s/%s", g_dir, name);
    cr_assert(n > 0 && (size_t)n < len, "scratch path %s/%s does not fit %zu bytes", g_dir, name, len);
}

/* ------------------------------------------------------------------ */
/* File text helpers                                                   */
/* ------------------------------------------------------------------ */

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s: %s", path, strerror(errno));
    cr_assert_eq(fseek(f, 0, SEEK_END), 0);
    const long n = ftell(f);
    cr_assert(n >= 0, "ftell(%s) failed", path);
    rewind(f);
    char *buf = malloc((size_t)n + 1);
    cr_assert_not_null(buf);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n, "short read of %s", path);
    fclose(f);
    buf[n] = 0;
    if (len)
        *len = (size_t)n;
    return buf;
}

static void spit(const char *path, const char *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "cannot create %s: %s", path, strerror(errno));
    cr_assert_eq(fwrite(data, 1, len, f), len, "short write to %s", path);
    cr_assert_eq(fclose(f), 0, "closing %s failed", path);
}

static int in_number(char c)
{
    return (c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-';
}

/* Where `from` occurs in text as a whole token: an end of `from` that is
 * part of a number must not continue into more of a number in the text
 * (so "1" does not match inside "13.75"). */
static const char *find_token(const char *text, const char *from, const char *after)
{
    const size_t n = strlen(from);
    for (const char *p = strstr(after, from); p; p = strstr(p + 1, from)) {
        if (in_number(from[0]) && p > text && in_number(p[-1]))
            continue;
        if (in_number(from[n - 1]) && in_number(p[n]))
            continue;
        return p;
    }
    return NULL;
}

/* A copy of text with its one occurrence of `from` replaced by `to`. Exactly
 * one occurrence is required: the edited file must differ from the good one
 * in exactly one place, so the check that refuses it is the one meant. */
static char *edit(const char *text, const char *from, const char *to)
{
    const char *p = find_token(text, from, text);
    cr_assert_not_null(p, "test setup: \"%s\" is not in the saved file", from);
    cr_assert_null(find_token(text, from, p + 1), "test setup: \"%s\" occurs more than once in the saved file",
                   from);
    const size_t head = (size_t)(p - text), nf = strlen(from), nt = strlen(to), tail = strlen(p + nf);
    char *out = malloc(head + nt + tail + 1);
    cr_assert_not_null(out);
    memcpy(out, text, head);
    memcpy(out + head, to, nt);
    memcpy(out + head + nt, p + nf, tail + 1);
    return out;
}

/* Name of a leftover temporary file in dir ("" if none). */
static void find_tmp_leftover(const char *dir, char *name, size_t len)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "cannot list %s: %s", dir, strerror(errno));
    name[0] = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strstr(e->d_name, ".tmp.")) {
            snprintf(name, len, "%s", e->d_name);
            break;
        }
    closedir(d);
}

/* ------------------------------------------------------------------ */
/* A distinctive tuning                                                */
/* ------------------------------------------------------------------ */

/* One AVX2 rate (family 0, ap_bp, m = 1) and several scalars get values no
 * built-in default produces and that print exactly in the file, so the bad
 * file edits below can find each as text in exactly one place. */
#define MARK_O 11.25f
#define MARK_O_TEXT "11.25"
#define MARK_P 0.3671875f
#define MARK_P_TEXT "0.3671875"
#define BW_L2 123.25
#define BW_L2_TEXT "123.25"
#define BW_DRAM 13.75
#define BW_DRAM_TEXT "13.75"
#define WAKE 4321.5
#define WAKE_TEXT "4321.5"
#define CALL 87.25
#define CALL_TEXT "87.25"
#define CREATED "2031-04-05T06:07:08Z"

/* Defaults with every AVX2 rate replaced by a pattern (offset by `shift`, so
 * two different distinctive tunings can be told apart) and the marked
 * values above. */
static void distinctive(vx_tune *t, double shift)
{
    memset(t, 0, sizeof *t);
    vx_tune_defaults(vx_hw(), t);
    const vx_ukernel_set *set = vx_ukernels(VX_ISA_AVX2);
    for (int f = 0; f < set->nfamilies && f < VX_TUNE_MAX_FAMILIES; f++)
        for (int v = 0; v < VX_UK_VARIANTS; v++)
            for (int m = 1; m <= set->families[f].mr_max && m <= VX_TUNE_MAX_MR; m++)
                t->l0[VX_ISA_AVX2][f][v][m - 1] =
                    (vx_l0_rate){ (float)(shift + 20.0 + 3.0 * f + v + m / 32.0),
                                  (float)(shift / 100.0 + 0.25 + 0.01 * f + 0.001 * v + 0.0001 * m) };
    if (shift == 0) {
        t->l0[VX_ISA_AVX2][0][0][0] = (vx_l0_rate){ MARK_O, MARK_P };
        t->bw_l2 = BW_L2;
        t->bw_dram = BW_DRAM;
        t->wake_ns = WAKE;
        t->call_ns = CALL;
    } else {
        t->bw_l2 = BW_L2 + shift;
        t->bw_dram = BW_DRAM + shift;
        t->wake_ns = WAKE + shift;
        t->call_ns = CALL + shift;
    }
    t->pack_a_ns[0] = 0.0123 + shift / 1000;
    t->pack_a_ns[1] = 0.0456 + shift / 1000;
    t->pack_b_ns[0] = 0.0789 + shift / 1000;
    t->pack_b_ns[1] = 0.321 + shift / 1000;
    t->bw_l3 = 67.5 + shift;
    t->bw_dram_all = 41.5 + shift;
    t->bw_stride_tlb = 2.625 + shift;
    t->line_share_ns = 77.125 + shift;
    t->line_stream_ns = 9.375 + shift;
    t->region_handoff_ns = 111.5 + shift;
    t->l2_alias_ways = 2.75 + shift;
    t->l3_effective_bytes = 77594624.0 + 1048576.0 * shift; /* whole bytes: the file keeps an integer */
    t->packed_probe[VX_ISA_AVX2].fam = 0;
    t->packed_probe[VX_ISA_AVX2].m = 1;
    t->packed_probe[VX_ISA_AVX2].ns = 54321.5 + shift;
    t->inplace_probe[VX_ISA_AVX2].fam = 0;
    t->inplace_probe[VX_ISA_AVX2].m = 1;
    t->inplace_probe[VX_ISA_AVX2].ns = 12345.5 + shift;
    t->gemv_rows_ns[VX_ISA_AVX2][0] = 0.015625 + shift / 1000;
    t->gemv_rows_ns[VX_ISA_AVX2][1] = 0.0234375 + shift / 1000;
    t->gemv_rows_ns[VX_ISA_AVX2][2] = 0.03125 + shift / 1000;
    t->fetch_next_ratio[VX_ISA_AVX512] = 1.0625 + shift / 1000;
    t->pack_on_read_ratio[VX_ISA_AVX512] = 1.046875 + shift / 1000;
    t->pack_on_read_ratio[VX_ISA_AVX2] = 0.796875;
    t->stream_one_tile_ratio[0] = 0.859375 + shift / 1000;
    t->stream_one_tile_ratio[1] = 1.296875;
    t->stream_one_tile_ratio[2] = 1.171875;
    for (int f = 0; f < set->nfamilies && f < VX_TUNE_MAX_FAMILIES; f++)
        t->context_ratio[VX_ISA_AVX2][f] = f == 0 ? 0.6875 + shift / 1000 : 1.0 - f / 64.0;
    /* two tiles told apart (family 0's second, family 1's first), the rest
     * not measured */
    t->context_tile[VX_ISA_AVX2][0][1] = 0.8046875 + shift / 1000;
    if (set->nfamilies > 1)
        t->context_tile[VX_ISA_AVX2][1][0] = 0.5390625;
    snprintf(t->created, sizeof t->created, "%s", shift == 0 ? CREATED : "2032-01-02T03:04:05Z");
}

/* The file holds 7 significant digits. */
static int close_rel(double want, double got)
{
    return fabs(want - got) <= 1e-6 * fmax(fabs(want), fabs(got));
}

/* A probe per ISA came back whole. */
static void expect_same_probes(const char *what, const char *name, const vx_tune_probe *want, const vx_tune_probe *got)
{
    for (int isa = 0; isa < VX_ISA_COUNT; isa++)
        cr_assert(want[isa].fam == got[isa].fam && want[isa].m == got[isa].m && close_rel(want[isa].ns, got[isa].ns),
                  "%s: %s[%d]: expected {%d, %d, %g}, found {%d, %d, %g}", what, name, isa, want[isa].fam,
                  want[isa].m, want[isa].ns, got[isa].fam, got[isa].m, got[isa].ns);
}

/* Every value the file carries must have come back (`what` names the
 * comparison in messages). */
static void expect_same_values(const vx_tune *want, const vx_tune *got, const char *what)
{
    for (int isa = 0; isa < VX_ISA_COUNT; isa++) {
        const vx_ukernel_set *set = vx_ukernels((vx_isa)isa);
        for (int f = 0; f < set->nfamilies && f < VX_TUNE_MAX_FAMILIES; f++)
            for (int v = 0; v < VX_UK_VARIANTS; v++)
                for (int m = 1; m <= set->families[f].mr_max && m <= VX_TUNE_MAX_MR; m++) {
                    const vx_l0_rate w = want->l0[isa][f][v][m - 1], g = got->l0[isa][f][v][m - 1];
                    cr_assert(close_rel(w.overhead_ns, g.overhead_ns) && close_rel(w.ns_per_k, g.ns_per_k),
                              "%s: l0 %s nr=%d variant %d m=%d: expected {%.9g, %.9g}, found {%.9g, %.9g}", what,
                              set->name, set->families[f].nr, v, m, w.overhead_ns, w.ns_per_k, g.overhead_ns,
                              g.ns_per_k);
                }
    }
    const struct {
        const char *name;
        double want, got;
    } s[] = {
        { "pack_a_ns[0]", want->pack_a_ns[0], got->pack_a_ns[0] },
        { "pack_a_ns[1]", want->pack_a_ns[1], got->pack_a_ns[1] },
        { "pack_b_ns[0]", want->pack_b_ns[0], got->pack_b_ns[0] },
        { "pack_b_ns[1]", want->pack_b_ns[1], got->pack_b_ns[1] },
        { "bw_l2", want->bw_l2, got->bw_l2 },
        { "bw_l3", want->bw_l3, got->bw_l3 },
        { "bw_dram", want->bw_dram, got->bw_dram },
        { "bw_dram_all", want->bw_dram_all, got->bw_dram_all },
        { "bw_stride_tlb", want->bw_stride_tlb, got->bw_stride_tlb },
        { "wake_ns", want->wake_ns, got->wake_ns },
        { "call_ns", want->call_ns, got->call_ns },
        { "line_share_ns", want->line_share_ns, got->line_share_ns },
        { "line_stream_ns", want->line_stream_ns, got->line_stream_ns },
        { "region_handoff_ns", want->region_handoff_ns, got->region_handoff_ns },
        { "l2_alias_ways", want->l2_alias_ways, got->l2_alias_ways },
        { "l3_effective_bytes", want->l3_effective_bytes, got->l3_effective_bytes },
    };
    for (size_t i = 0; i < sizeof s / sizeof s[0]; i++)
        cr_assert(close_rel(s[i].want, s[i].got), "%s: %s: expected %.9g, found %.9g", what, s[i].name, s[i].want,
                  s[i].got);
    for (int isa = 0; isa < VX_ISA_COUNT; isa++)
        for (int r = 0; r < VX_TUNE_GEMV_ROWS; r++)
            cr_assert(close_rel(want->gemv_rows_ns[isa][r], got->gemv_rows_ns[isa][r]),
                      "%s: gemv_rows_ns_per_flop[%d][%d]: expected %.9g, found %.9g", what, isa, r,
                      want->gemv_rows_ns[isa][r], got->gemv_rows_ns[isa][r]);
    for (int isa = 0; isa < VX_ISA_COUNT; isa++)
        for (int f = 0; f < VX_TUNE_MAX_FAMILIES; f++)
            cr_assert(close_rel(want->context_ratio[isa][f], got->context_ratio[isa][f]),
                      "%s: context_ratio[%d][%d]: expected %.9g, found %.9g", what, isa, f,
                      want->context_ratio[isa][f], got->context_ratio[isa][f]);
    for (int isa = 0; isa < VX_ISA_COUNT; isa++)
        for (int f = 0; f < VX_TUNE_MAX_FAMILIES; f++)
            for (int m = 0; m < VX_TUNE_MAX_MR; m++)
                cr_assert(close_rel(want->context_tile[isa][f][m], got->context_tile[isa][f][m]),
                          "%s: context_tile_ratio[%d][%d][%d]: expected %.9g, found %.9g", what, isa, f, m,
                          want->context_tile[isa][f][m], got->context_tile[isa][f][m]);
    for (int isa = 0; isa < VX_ISA_COUNT; isa++)
        cr_assert(close_rel(want->fetch_next_ratio[isa], got->fetch_next_ratio[isa]),
                  "%s: fetch_next_ratio[%d]: expected %.9g, found %.9g", what, isa, want->fetch_next_ratio[isa],
                  got->fetch_next_ratio[isa]);
    for (int isa = 0; isa < VX_ISA_COUNT; isa++)
        cr_assert(close_rel(want->pack_on_read_ratio[isa], got->pack_on_read_ratio[isa]),
                  "%s: pack_on_read_ratio[%d]: expected %.9g, found %.9g", what, isa, want->pack_on_read_ratio[isa],
                  got->pack_on_read_ratio[isa]);
    for (int i = 0; i < VX_TUNE_STREAM_DEPTHS; i++)
        cr_assert(close_rel(want->stream_one_tile_ratio[i], got->stream_one_tile_ratio[i]),
                  "%s: stream_one_tile_ratio[%d]: expected %.9g, found %.9g", what, i, want->stream_one_tile_ratio[i],
                  got->stream_one_tile_ratio[i]);
    expect_same_probes(what, "packed_probe", want->packed_probe, got->packed_probe);
    expect_same_probes(what, "inplace_probe", want->inplace_probe, got->inplace_probe);
    cr_assert_str_eq(got->created, want->created, "%s: created: expected \"%s\", found \"%s\"", what,
                     want->created, got->created);
    cr_assert_eq(got->version, VX_TUNE_VERSION, "%s: version: expected %d, found %d", what, VX_TUNE_VERSION,
                 got->version);
    cr_assert(memcmp(&got->fp, &want->fp, sizeof got->fp) == 0,
              "%s: the fingerprint changed (cpu_model \"%s\" -> \"%s\", cores %d -> %d)", what, want->fp.cpu_model,
              got->fp.cpu_model, want->fp.physical_cores, got->fp.physical_cores);
}

static void save_ok(const char *path, const vx_tune *t)
{
    char why[512] = "";
    const vx_status s = vx_tune_save(path, t, why, sizeof why);
    cr_assert_eq(s, VX_OK, "vx_tune_save(%s): expected VX_OK, found %s (%s)", path, vx_status_string(s), why);
}

/* Load into fresh defaults; the load must succeed. */
static void load_ok(const char *path, vx_tune *t)
{
    char why[512] = "";
    memset(t, 0, sizeof *t);
    vx_tune_defaults(vx_hw(), t);
    const vx_status s = vx_tune_load(path, vx_hw(), t, why, sizeof why);
    cr_assert_eq(s, VX_OK, "vx_tune_load(%s): expected VX_OK, found %s (%s)", path, vx_status_string(s), why);
}

/* ------------------------------------------------------------------ */
/* Save and load                                                       */
/* ------------------------------------------------------------------ */

Test(tune, round_trip_keeps_every_value)
{
    vx_tune saved, loaded;
    distinctive(&saved, 0);
    /* two directory levels that do not exist yet: save must create both */
    char dir[600], path[700];
    scratch_path(dir, sizeof dir, "sub/dir");
    snprintf(path, sizeof path, "%s/tune.json", dir);
    struct stat st;
    cr_assert(stat(dir, &st) != 0, "test setup: %s exists already", dir);
    save_ok(path, &saved);
    cr_assert(stat(path, &st) == 0 && S_ISREG(st.st_mode), "expected a regular file at %s after saving", path);

    load_ok(path, &loaded);
    expect_same_values(&saved, &loaded, "round trip");
    cr_assert_eq(loaded.measured, 1, "measured: expected 1 after loading a file, found %d", loaded.measured);
    /* the marked rate in particular (the one the edits below damage) */
    cr_assert(close_rel(loaded.l0[VX_ISA_AVX2][0][0][0].overhead_ns, MARK_O) &&
                  close_rel(loaded.l0[VX_ISA_AVX2][0][0][0].ns_per_k, MARK_P),
              "avx2 family 0 ap_bp m=1: expected {%g, %g}, found {%g, %g}", MARK_O, MARK_P,
              loaded.l0[VX_ISA_AVX2][0][0][0].overhead_ns, loaded.l0[VX_ISA_AVX2][0][0][0].ns_per_k);

    char left[256];
    find_tmp_leftover(dir, left, sizeof left);
    cr_assert_str_empty(left, "expected no temporary file left in %s after saving, found %s", dir, left);
}

/* Save a distinctive tuning, take `key` out of the file (renamed to one
 * nobody reads), and load it back into *loaded; *saved gets what was saved. */
static void load_without(const char *key, vx_tune *saved, vx_tune *loaded)
{
    distinctive(saved, 0);
    char path[600], quoted[64];
    scratch_path(path, sizeof path, "older.json");
    save_ok(path, saved);
    size_t n;
    char *text = slurp(path, &n);
    snprintf(quoted, sizeof quoted, "\"%s\"", key);
    cr_assert_not_null(strstr(text, quoted), "the saved file has no %s", quoted);
    char *older = edit(text, quoted, "\"not_read\"");
    spit(path, older, strlen(older));
    free(older);
    free(text);
    load_ok(path, loaded);
}

/* load_without(key): the value the key held (the double at offset
 * `missing` of vx_tune) keeps its default, and another (at `kept`) comes
 * from the file. */
static void expect_default_without(const char *key, size_t missing, const char *missing_name, size_t kept,
                                   const char *kept_name)
{
    vx_tune saved, loaded, defaults;
    load_without(key, &saved, &loaded);
    memset(&defaults, 0, sizeof defaults);
    vx_tune_defaults(vx_hw(), &defaults);
#define FIELD(t, off) (*(const double *)((const char *)&(t) + (off)))
    cr_assert(close_rel(FIELD(loaded, missing), FIELD(defaults, missing)), "%s: expected the default %g, found %g",
              missing_name, FIELD(defaults, missing), FIELD(loaded, missing));
    cr_assert(close_rel(FIELD(loaded, kept), FIELD(saved, kept)), "%s: expected %g from the file, found %g",
              kept_name, FIELD(saved, kept), FIELD(loaded, kept));
#undef FIELD
}

/* "stride_tlb" came after version 2 files were written: a file without it
 * loads and keeps the default for it, every other value from the file. */
Test(tune, a_file_without_stride_tlb_keeps_its_default)
{
    expect_default_without("stride_tlb", offsetof(vx_tune, bw_stride_tlb), "bw_stride_tlb",
                           offsetof(vx_tune, bw_dram_all), "bw_dram_all");
}

/* "line_stream_ns" came later still: likewise. */
Test(tune, a_file_without_line_stream_keeps_its_default)
{
    expect_default_without("line_stream_ns", offsetof(vx_tune, line_stream_ns), "line_stream_ns",
                           offsetof(vx_tune, line_share_ns), "line_share_ns");
}

/* The few-row kernel's rates came later still: a file without them loads
 * with none measured (0: the analyzer estimates them), the rest from the
 * file. */
Test(tune, a_file_without_the_few_row_rates_has_none)
{
    vx_tune saved, loaded;
    load_without("gemv_rows_ns_per_flop", &saved, &loaded);
    for (int isa = 0; isa < VX_ISA_COUNT; isa++)
        for (int r = 0; r < VX_TUNE_GEMV_ROWS; r++)
            cr_assert_eq(loaded.gemv_rows_ns[isa][r], 0.0, "gemv_rows_ns_per_flop[%d][%d]: expected 0, found %g",
                         isa, r, loaded.gemv_rows_ns[isa][r]);
    cr_assert(close_rel(loaded.line_share_ns, saved.line_share_ns), "line_share_ns: expected %g from the file, "
              "found %g", saved.line_share_ns, loaded.line_share_ns);
}

/* The next-panel fetch probe came later too: a file without it loads with
 * none measured (0: the driver fetches). */
Test(tune, a_file_without_the_fetch_probe_has_none)
{
    vx_tune saved, loaded;
    load_without("fetch_next_ratio", &saved, &loaded);
    for (int isa = 0; isa < VX_ISA_COUNT; isa++)
        cr_assert_eq(loaded.fetch_next_ratio[isa], 0.0, "fetch_next_ratio[%d]: expected 0, found %g", isa,
                     loaded.fetch_next_ratio[isa]);
    cr_assert(close_rel(loaded.line_share_ns, saved.line_share_ns), "line_share_ns: expected %g from the file, "
              "found %g", saved.line_share_ns, loaded.line_share_ns);
}

/* ... and the pack-on-read probe: none measured (0: direct plans pack B's
 * panels on their first read by the row rule alone). */
Test(tune, a_file_without_the_pack_on_read_probe_has_none)
{
    vx_tune saved, loaded;
    load_without("pack_on_read_ratio", &saved, &loaded);
    for (int isa = 0; isa < VX_ISA_COUNT; isa++) {
        cr_assert_eq(loaded.pack_on_read_ratio[isa], 0.0, "pack_on_read_ratio[%d]: expected 0, found %g", isa,
                     loaded.pack_on_read_ratio[isa]);
        cr_assert(vx_tune_packs_near_on_read(&loaded, isa), "no probe on ISA %d: expected the panels packed", isa);
    }
    cr_assert(!vx_tune_packs_near_on_read(&saved, VX_ISA_AVX512) && vx_tune_packs_near_on_read(&saved, VX_ISA_AVX2),
              "measured 1.05 (AVX-512) and 0.78 (AVX2): expected packing off and on");
    cr_assert(close_rel(loaded.fetch_next_ratio[VX_ISA_AVX512], saved.fetch_next_ratio[VX_ISA_AVX512]),
              "fetch_next_ratio: expected %g from the file, found %g", saved.fetch_next_ratio[VX_ISA_AVX512],
              loaded.fetch_next_ratio[VX_ISA_AVX512]);
}

/* ... and the stream probe: none measured (0: the driver's built-in bound). */
Test(tune, a_file_without_the_stream_probe_has_none)
{
    vx_tune saved, loaded;
    load_without("stream_one_tile_ratio", &saved, &loaded);
    for (int i = 0; i < VX_TUNE_STREAM_DEPTHS; i++)
        cr_assert_eq(loaded.stream_one_tile_ratio[i], 0.0, "stream_one_tile_ratio[%d]: expected 0, found %g", i,
                     loaded.stream_one_tile_ratio[i]);
    cr_assert_eq(vx_tune_stream_one_tile_k_max(&loaded), -1,
                 "no probe: expected -1 (the driver's built-in bound), found %d",
                 vx_tune_stream_one_tile_k_max(&loaded));
    cr_assert(close_rel(loaded.fetch_next_ratio[VX_ISA_AVX512], saved.fetch_next_ratio[VX_ISA_AVX512]),
              "fetch_next_ratio: expected %g from the file, found %g", saved.fetch_next_ratio[VX_ISA_AVX512],
              loaded.fetch_next_ratio[VX_ISA_AVX512]);
}

/* ... and the context probe: none measured (0: the L1 rates stand). */
Test(tune, a_file_without_the_context_probe_has_none)
{
    vx_tune saved, loaded;
    load_without("context_ratio", &saved, &loaded);
    for (int isa = 0; isa < VX_ISA_COUNT; isa++)
        for (int f = 0; f < VX_TUNE_MAX_FAMILIES; f++)
            cr_assert_eq(loaded.context_ratio[isa][f], 0.0, "context_ratio[%d][%d]: expected 0, found %g", isa, f,
                         loaded.context_ratio[isa][f]);
    cr_assert(close_rel(loaded.fetch_next_ratio[VX_ISA_AVX512], saved.fetch_next_ratio[VX_ISA_AVX512]),
              "fetch_next_ratio: expected %g from the file, found %g", saved.fetch_next_ratio[VX_ISA_AVX512],
              loaded.fetch_next_ratio[VX_ISA_AVX512]);
}

/* ... and the context probe tile by tile: none measured (0: the families'
 * ratios stand), the families' kept. */
Test(tune, a_file_without_the_tiles_context_has_none)
{
    vx_tune saved, loaded;
    load_without("context_tile_ratio", &saved, &loaded);
    for (int isa = 0; isa < VX_ISA_COUNT; isa++)
        for (int f = 0; f < VX_TUNE_MAX_FAMILIES; f++)
            for (int m = 0; m < VX_TUNE_MAX_MR; m++)
                cr_assert_eq(loaded.context_tile[isa][f][m], 0.0,
                             "context_tile_ratio[%d][%d][%d]: expected 0, found %g", isa, f, m,
                             loaded.context_tile[isa][f][m]);
    cr_assert(close_rel(loaded.context_ratio[VX_ISA_AVX2][0], saved.context_ratio[VX_ISA_AVX2][0]),
              "context_ratio: expected %g from the file, found %g", saved.context_ratio[VX_ISA_AVX2][0],
              loaded.context_ratio[VX_ISA_AVX2][0]);
}

/* ... and the alias probe: none measured (0: the model counts half of
 * L2's ways for rows far apart). */
Test(tune, a_file_without_the_alias_probe_has_none)
{
    vx_tune saved, loaded;
    load_without("l2_alias_ways", &saved, &loaded);
    cr_assert_eq(loaded.l2_alias_ways, 0.0, "l2_alias_ways: expected 0, found %g", loaded.l2_alias_ways);
    cr_assert(close_rel(loaded.region_handoff_ns, saved.region_handoff_ns),
              "region_handoff_ns: expected %g from the file, found %g", saved.region_handoff_ns,
              loaded.region_handoff_ns);
}

/* ... and the L3 capacity probe: none (0: the L3 as reported). */
Test(tune, a_file_without_the_capacity_probe_has_none)
{
    vx_tune saved, loaded;
    load_without("l3_effective_bytes", &saved, &loaded);
    cr_assert_eq(loaded.l3_effective_bytes, 0.0, "l3_effective_bytes: expected 0, found %g",
                 loaded.l3_effective_bytes);
    cr_assert(close_rel(loaded.l2_alias_ways, saved.l2_alias_ways), "l2_alias_ways: expected %g from the file, found %g",
              saved.l2_alias_ways, loaded.l2_alias_ways);
}

/* ... and a file without the pool's hand-off reading turns the run-time
 * class off (0), whatever the defaults say: its wake_warm_ns was timed
 * as an empty region, against which no reading compares. */
Test(tune, a_file_without_the_handoff_reading_has_none)
{
    vx_tune saved, loaded;
    load_without("region_handoff_ns", &saved, &loaded);
    cr_assert_eq(loaded.region_handoff_ns, 0.0, "region_handoff_ns: expected 0, found %g", loaded.region_handoff_ns);
}

Test(tune, resave_replaces_the_file)
{
    vx_tune first, second, loaded;
    distinctive(&first, 0);
    distinctive(&second, 5);
    char path[600];
    scratch_path(path, sizeof path, "tune.json");
    save_ok(path, &first);
    load_ok(path, &loaded);
    expect_same_values(&first, &loaded, "first save");

    save_ok(path, &second);
    load_ok(path, &loaded);
    expect_same_values(&second, &loaded, "second save over the first");

    char left[256];
    find_tmp_leftover(g_dir, left, sizeof left);
    cr_assert_str_empty(left, "expected no temporary file left in %s after two saves, found %s", g_dir, left);
}

/* "A failure leaves any existing file intact": a tuning the file cannot
 * represent (NaN has no JSON form) must be refused without touching the
 * file already there. */
Test(tune, failed_save_keeps_the_old_file)
{
    vx_tune good, bad, loaded;
    distinctive(&good, 0);
    distinctive(&bad, 5);
    bad.bw_l2 = NAN;
    char path[600], why[512] = "";
    scratch_path(path, sizeof path, "tune.json");
    save_ok(path, &good);
    size_t n0, n1;
    char *before = slurp(path, &n0);

    const vx_status s = vx_tune_save(path, &bad, why, sizeof why);
    cr_assert_neq(s, VX_OK, "saving a tuning with bw_l2 = NaN: expected an error, found VX_OK");
    cr_assert_str_not_empty(why, "saving a tuning with bw_l2 = NaN failed (%s) without a reason", vx_status_string(s));
    char *after = slurp(path, &n1);
    cr_assert(n0 == n1 && memcmp(before, after, n0) == 0,
              "the failed save changed %s (%zu bytes before, %zu after)", path, n0, n1);
    load_ok(path, &loaded);
    expect_same_values(&good, &loaded, "file after a failed save");
    char left[256];
    find_tmp_leftover(g_dir, left, sizeof left);
    cr_assert_str_empty(left, "expected no temporary file left after a failed save, found %s", left);
    free(before);
    free(after);
}

/* A non-finite value is a bad measurement, not a lack of memory: the
 * reason must point at the data (vortex-install-tune prints it to the
 * user, who would otherwise hunt for a memory problem). */
Test(tune, failed_save_names_the_real_reason)
{
    /* every kind of value the file carries, the last of a list included
     * (mode_call_ns[2] once named no value: a read past the names) */
    static const struct {
        const char *field, *named;
    } cases[] = { { "bw_l2", "bw_l2" },
                  { "mode_call_ns[2]", "mode_call_ns" },
                  { "packed_probe ns", "probe" },
                  { "line_share_ns", "line_share_ns" },
                  { "line_stream_ns", "line_stream_ns" },
                  { "region_handoff_ns", "region_handoff_ns" },
                  { "gemv_rows_ns_per_flop[avx2][1]", "gemv_rows_ns_per_flop" },
                  { "fetch_next_ratio[avx512]", "fetch_next_ratio" },
                  { "pack_on_read_ratio[avx2]", "pack_on_read_ratio" },
                  { "context_ratio[avx2][0]", "context_ratio" },
                  { "l2_alias_ways", "l2_alias_ways" },
                  { "l3_effective_bytes", "l3_effective_bytes" },
                  { "context_tile_ratio[avx2][0][1]", "context_tile_ratio" },
                  { "stream_one_tile_ratio[1]", "stream_one_tile_ratio" } };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        vx_tune bad;
        distinctive(&bad, 0);
        double *field[] = { &bad.bw_l2, &bad.mode_call_ns[2], &bad.packed_probe[VX_ISA_AVX2].ns,
                            &bad.line_share_ns, &bad.line_stream_ns, &bad.region_handoff_ns,
                            &bad.gemv_rows_ns[VX_ISA_AVX2][1], &bad.fetch_next_ratio[VX_ISA_AVX512],
                            &bad.pack_on_read_ratio[VX_ISA_AVX2],
                            &bad.context_ratio[VX_ISA_AVX2][0], &bad.l2_alias_ways, &bad.l3_effective_bytes,
                            &bad.context_tile[VX_ISA_AVX2][0][1], &bad.stream_one_tile_ratio[1] };
        *field[i] = i % 2 ? INFINITY : NAN;
        char path[600], why[512] = "";
        scratch_path(path, sizeof path, "tune.json");
        const vx_status s = vx_tune_save(path, &bad, why, sizeof why);
        cr_assert_neq(s, VX_OK, "saving a tuning with %s non-finite: expected an error, found VX_OK", cases[i].field);
        cr_assert(s != VX_ERR_NO_MEMORY && strstr(why, cases[i].named) != NULL,
                  "saving a tuning with %s non-finite: expected an error naming \"%s\", found %s (\"%s\")",
                  cases[i].field, cases[i].named, vx_status_string(s), why);
    }
}

/* ------------------------------------------------------------------ */
/* Bad files                                                           */
/* ------------------------------------------------------------------ */

/* Loading `path` must fail with `expect` (VX_OK here: any error will do),
 * say why, and leave *t exactly as it was (a fresh defaults struct). */
static void expect_refused(const char *what, const char *path, vx_status expect)
{
    vx_tune t, before;
    memset(&t, 0, sizeof t);
    vx_tune_defaults(vx_hw(), &t);
    memcpy(&before, &t, sizeof t);
    /* the reason goes into the middle of a larger buffer: nothing may be
     * written outside the length given */
    char buf[600];
    memset(buf, 'x', sizeof buf);
    char *why = buf + 32;
    why[0] = 0;
    const size_t whylen = 512;

    const vx_status s = vx_tune_load(path, vx_hw(), &t, why, whylen);
    cr_assert_neq(s, VX_OK, "%s: expected vx_tune_load to refuse the file, found VX_OK", what);
    if (expect != VX_OK)
        cr_assert_eq(s, expect, "%s: expected %s, found %s (%s)", what, vx_status_string(expect),
                     vx_status_string(s), why);
    cr_assert(memchr(why, 0, whylen) != NULL, "%s: the reason is not terminated within %zu bytes", what, whylen);
    cr_assert_str_not_empty(why, "%s: refused (%s) without a reason", what, vx_status_string(s));
    for (size_t i = 0; i < 32; i++)
        cr_assert_eq(buf[i], 'x', "%s: the reason was written before its buffer", what);
    for (size_t i = 32 + whylen; i < sizeof buf; i++)
        cr_assert_eq(buf[i], 'x', "%s: the reason was written past its %zu bytes", what, whylen);
    cr_assert(memcmp(&t, &before, sizeof t) == 0,
              "%s: the refused file (%s) changed the struct (bw_l2 %g -> %g, wake_ns %g -> %g, measured %d -> %d, "
              "avx2 rate {%g, %g} -> {%g, %g})",
              what, why, before.bw_l2, t.bw_l2, before.wake_ns, t.wake_ns, before.measured, t.measured,
              before.l0[0][0][0][0].overhead_ns, before.l0[0][0][0][0].ns_per_k, t.l0[0][0][0][0].overhead_ns,
              t.l0[0][0][0][0].ns_per_k);
}

/* Writes the good text with one edit and expects it refused. */
static void expect_edit_refused(const char *good, const char *what, const char *from, const char *to,
                                vx_status expect)
{
    char path[600];
    scratch_path(path, sizeof path, "bad.json");
    char *text = edit(good, from, to);
    spit(path, text, strlen(text));
    free(text);
    expect_refused(what, path, expect);
}

Test(tune, every_bad_file_is_refused_cleanly)
{
    vx_tune t;
    distinctive(&t, 0);
    char good_path[600], path[600];
    scratch_path(good_path, sizeof good_path, "good.json");
    scratch_path(path, sizeof path, "bad.json");
    save_ok(good_path, &t);
    size_t n;
    char *good = slurp(good_path, &n);
    /* the control: the unedited file loads, so each refusal below is caused
     * by its one edit */
    vx_tune control;
    load_ok(good_path, &control);

    spit(path, "", 0);
    expect_refused("empty file", path, VX_ERR_INVALID_ARG);

    spit(path, good, n / 2);
    expect_refused("file cut at half its length", path, VX_ERR_INVALID_ARG);

    {
        char junk[3000];
        vt_rng r;
        vt_rng_seed(&r, 42);
        for (size_t i = 0; i < sizeof junk; i++)
            junk[i] = (char)(vt_rng_next(&r) >> 56);
        spit(path, junk, sizeof junk);
        expect_refused("garbage bytes", path, VX_ERR_INVALID_ARG);
    }

    const char *not_object = "[1, 2, 3]\n";
    spit(path, not_object, strlen(not_object));
    expect_refused("JSON array instead of an object", path, VX_ERR_INVALID_ARG);

    {
        /* a whole good file, but one level down inside an array */
        char *wrapped = malloc(n + 4);
        cr_assert_not_null(wrapped);
        snprintf(wrapped, n + 4, "[%s]", good);
        spit(path, wrapped, strlen(wrapped));
        free(wrapped);
        expect_refused("good file wrapped in an array", path, VX_ERR_INVALID_ARG);
    }

    expect_edit_refused(good, "wrong format name", "\"vortex-tune\"", "\"vortex-tuna\"", VX_ERR_INVALID_ARG);
    {
        char from[64], newer[64], older[64];
        snprintf(from, sizeof from, "\"version\": %d", VX_TUNE_VERSION);
        snprintf(newer, sizeof newer, "\"version\": %d", 999);
        snprintf(older, sizeof older, "\"version\": %d", VX_TUNE_VERSION - 1);
        expect_edit_refused(good, "version 999", from, newer, VX_ERR_UNSUPPORTED);
        expect_edit_refused(good, "an older version", from, older, VX_ERR_UNSUPPORTED);
    }
    expect_edit_refused(good, "another cpu_model", "\"cpu_model\": \"", "\"cpu_model\": \"Other ",
                        VX_ERR_UNSUPPORTED);
    {
        char from[64], to[64];
        snprintf(from, sizeof from, "\"physical_cores\": %d", vx_hw()->physical_cores);
        snprintf(to, sizeof to, "\"physical_cores\": %d", vx_hw()->physical_cores + 1);
        expect_edit_refused(good, "another core count", from, to, VX_ERR_UNSUPPORTED);
    }
    expect_edit_refused(good, "rate ns_per_k 1e300", MARK_P_TEXT, "1e300", VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "rate ns_per_k 1e400 (overflows a double)", MARK_P_TEXT, "1e400", VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "rate overhead 1e300", MARK_O_TEXT, "1e300", VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "rate overhead negative", MARK_O_TEXT, "-" MARK_O_TEXT, VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "bandwidth l2 1e300", BW_L2_TEXT, "1e300", VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "negative DRAM bandwidth", BW_DRAM_TEXT, "-" BW_DRAM_TEXT, VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "rate written as the bare token NaN", MARK_P_TEXT, "NaN", VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "rate written as the bare token Infinity", MARK_P_TEXT, "Infinity",
                        VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "rate given as a string", MARK_P_TEXT, "\"" MARK_P_TEXT "\"", VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "negative wake_ns", WAKE_TEXT, "-" WAKE_TEXT, VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "stride_tlb 1e300", "2.625", "1e300", VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "stride_tlb given as a string", "2.625", "\"2.625\"", VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "line_share_ns negative", "77.125", "-77.125", VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "line_share_ns 1e300", "77.125", "1e300", VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "line_stream_ns negative", "9.375", "-9.375", VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "line_stream_ns given as a string", "9.375", "\"9.375\"", VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "region_handoff_ns negative", "111.5", "-111.5", VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "packed_probe ns negative", "54321.5", "-54321.5", VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "a few-row rate negative", "0.0234375", "-0.0234375", VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "a few-row rate 1e300", "0.0234375", "1e300", VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "few-row rates missing one", "0.0234375,", "", VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "packed_probe m beyond the family's tile", "1,\n   54321.5", "99,\n   54321.5",
                        VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "inplace_probe ns 1e300", "12345.5", "1e300", VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "inplace_probe ns negative", "12345.5", "-12345.5", VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "inplace_probe ns given as a string", "12345.5", "\"12345.5\"", VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "inplace_probe m beyond the family's tile", "1,\n   12345.5", "99,\n   12345.5",
                        VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "inplace_probe family beyond the table", "0,\n   1,\n   12345.5",
                        "99,\n   1,\n   12345.5", VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "fetch_next_ratio 0", "1.0625", "0", VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "fetch_next_ratio 1e300", "1.0625", "1e300", VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "fetch_next_ratio given as a string", "1.0625", "\"1.0625\"", VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "fetch_next_ratio not an object", "\"fetch_next_ratio\": {", "\"fetch_next_ratio\": [{",
                        VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "pack_on_read_ratio 0", "1.046875", "0", VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "pack_on_read_ratio 1e300", "1.046875", "1e300", VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "pack_on_read_ratio given as a string", "0.796875", "\"0.796875\"", VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "pack_on_read_ratio not an object", "\"pack_on_read_ratio\": {",
                        "\"pack_on_read_ratio\": [{", VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "stream_one_tile_ratio 0", "0.859375", "0", VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "stream_one_tile_ratio 1e300", "0.859375", "1e300", VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "stream_one_tile_ratio missing a depth", "1.296875,", "", VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "stream_one_tile_ratio given as a string", "0.859375", "\"0.859375\"",
                        VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "stream_one_tile_ratio not an array", "\"stream_one_tile_ratio\": [",
                        "\"stream_one_tile_ratio\": {\"a\": [", VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "context_ratio above 1", "0.6875", "1.5", VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "context_ratio 0", "0.6875", "0", VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "context_ratio missing a family", "0.6875,", "", VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "context_ratio given as a string", "0.6875", "\"0.6875\"", VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "a tile's context above 1", "0.8046875", "1.5", VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "a tile's context negative", "0.8046875", "-0.8046875", VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "a tile's context under 0.1", "0.8046875", "0.01", VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "a tile's context given as a string", "0.8046875", "\"0.8046875\"",
                        VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "a family's tiles one short", "0.8046875,", "", VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "context_tile_ratio not an object", "\"context_tile_ratio\": {",
                        "\"context_tile_ratio\": [{", VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "l2_alias_ways under 1", "2.75", "0.5", VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "l2_alias_ways above 64", "2.75", "65", VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "l2_alias_ways given as a string", "2.75", "\"2.75\"", VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "l3_effective_bytes under 1 MiB", "77594624", "4096", VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "l3_effective_bytes negative", "77594624", "-77594624", VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "l3_effective_bytes 1e300", "77594624", "1e300", VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "l3_effective_bytes given as a string", "77594624", "\"77594624\"",
                        VX_ERR_INVALID_ARG);
    expect_edit_refused(good, "call_ns given twice", CALL_TEXT, CALL_TEXT ", \"call_ns\": 1.5", VX_ERR_INVALID_ARG);

    scratch_path(path, sizeof path, "no-such-file.json");
    expect_refused("missing file", path, VX_ERR_INVALID_ARG);
    expect_refused("a directory as the path", g_dir, VX_ERR_INVALID_ARG);
    free(good);
}

/* ------------------------------------------------------------------ */
/* The active tuning                                                   */
/* ------------------------------------------------------------------ */

Test(tune, active_falls_back_and_picks_up_a_good_file)
{
    /* a garbage file: the library must run on its built-in defaults */
    char bad[600], good[600];
    scratch_path(bad, sizeof bad, "garbage.json");
    const char *junk = "\x01\xfe this is not { a tuning file";
    spit(bad, junk, strlen(junk));
    cr_assert_eq(setenv("VORTEX_TUNE_FILE", bad, 1), 0);
    vx_tune_reset();
    vx_cpu_model_reset();

    vx_tune defaults;
    memset(&defaults, 0, sizeof defaults);
    vx_tune_defaults(vx_hw(), &defaults);
    const vx_tune *a = vx_tune_active();
    cr_assert_not_null(a, "vx_tune_active returned NULL");
    cr_assert_eq(a->measured, 0, "measured: expected 0 with a garbage file, found %d", a->measured);
    cr_assert(memcmp(a, &defaults, sizeof defaults) == 0,
              "with a garbage file the active tuning must equal the built-in defaults (bw_l2 %g vs %g, wake_ns %g "
              "vs %g)",
              a->bw_l2, defaults.bw_l2, a->wake_ns, defaults.wake_ns);
    /* the source names the fallback and the reason load gives for the file */
    const char *src = vx_tune_source();
    char why[512] = "";
    vx_tune scratch = defaults;
    cr_assert_neq(vx_tune_load(bad, vx_hw(), &scratch, why, sizeof why), VX_OK);
    cr_assert(strncmp(src, "built-in defaults", strlen("built-in defaults")) == 0,
              "source: expected \"built-in defaults (...)\", found \"%s\"", src);
    cr_assert(strstr(src, why) != NULL, "source: expected it to mention the reason \"%s\", found \"%s\"", why, src);
    /* and GEMM still computes the right thing on the fallback model */
    vt_case c = vt_case_make(37, 45, 300);
    c.tag = "garbage tuning file";
    vt_check(&c);

    /* a good file with distinctive values: the library must pick it up */
    vx_tune t;
    distinctive(&t, 0);
    scratch_path(good, sizeof good, "good/tune.json");
    save_ok(good, &t);
    cr_assert_eq(setenv("VORTEX_TUNE_FILE", good, 1), 0);
    vx_tune_reset();
    vx_cpu_model_reset(); /* the model rebuilds from the new tuning */
    a = vx_tune_active();
    cr_assert_eq(a->measured, 1, "measured: expected 1 with a good file, found %d", a->measured);
    expect_same_values(&t, a, "active tuning from a good file");
    src = vx_tune_source();
    cr_assert_str_eq(src, good, "source: expected the file's path \"%s\", found \"%s\"", good, src);

    const vx_cpu_model *M = vx_cpu_model_get(VX_ISA_AVX2);
    cr_assert_not_null(M, "no AVX2 model");
    const vx_l0_rate want = a->l0[VX_ISA_AVX2][0][0][0];
    const float got_o = M->desc.fam[0].rate[0][0].o, got_p = M->desc.fam[0].rate[0][0].p;
    cr_assert(got_o == want.overhead_ns && got_p == want.ns_per_k,
              "AVX2 model family 0 mode 0 m=1: expected the loaded rate {%g, %g}, found {%g, %g}", want.overhead_ns,
              want.ns_per_k, got_o, got_p);
    cr_assert(close_rel(got_o, MARK_O) && close_rel(got_p, MARK_P),
              "AVX2 model family 0 mode 0 m=1: expected the file's {%g, %g}, found {%g, %g}", MARK_O, MARK_P, got_o,
              got_p);
    c.tag = "distinctive tuning file";
    vt_check(&c);
}

/* Save t as scratch file `name`, make it the active tuning (a fresh
 * model built from it on the next vx_cpu_model_get) and check that it was
 * taken; `what` names the case in a failure. */
static void activate(const vx_tune *t, const char *name, const char *what)
{
    char path[600];
    scratch_path(path, sizeof path, name);
    save_ok(path, t);
    cr_assert_eq(setenv("VORTEX_TUNE_FILE", path, 1), 0);
    vx_tune_reset();
    vx_cpu_model_reset();
    cr_assert_eq(vx_tune_active()->measured, 1, "%s: the file was not taken", what);
}

/* The CPU model fetches the next panel where the file's probe found that
 * the fetches pay (time with them below the time without), or where the
 * file has no probe; not where they cost. */
Test(tune, the_fetch_probe_decides_the_next_panel_fetches)
{
    static const struct {
        double ratio;
        int fetch;
    } cases[] = { { 1.0625, 0 }, { 0.9375, 1 }, { 0.0, 1 } };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        vx_tune t;
        distinctive(&t, 0);
        t.fetch_next_ratio[VX_ISA_AVX512] = cases[i].ratio;
        activate(&t, i == 0 ? "fetch0.json" : i == 1 ? "fetch1.json" : "fetch2.json", "fetch_next_ratio");
        const vx_cpu_model *M = vx_cpu_model_get(VX_ISA_AVX512);
        cr_assert_not_null(M, "no AVX-512 model");
        cr_assert_eq(M->fetch_next, cases[i].fetch, "fetch_next_ratio %g: expected fetch_next %d, found %d",
                     cases[i].ratio, cases[i].fetch, M->fetch_next);
    }
}

/* The stream probe sets the deepest k at which the driver streams a C of
 * one column of tiles (gemm.c, streams_c), and the model prices the same:
 * the deepest probe depth at which streaming ran faster, 0 where it lost
 * at every depth, the built-in bound without the probe. */
Test(tune, the_stream_probe_bounds_one_tile_streaming)
{
    static const struct {
        double r[3];
        int k_max;
    } cases[] = { { { 1.25, 1.5, 1.375 }, 0 },
                  { { 0.875, 1.5, 1.375 }, 8 },
                  { { 0.875, 0.9375, 1.125 }, 16 },
                  { { 1.125, 1.25, 0.9375 }, 32 },
                  { { 0, 0, 0 }, VX_GEMM_STREAM_ONE_TILE_K_MAX } };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        vx_tune t;
        distinctive(&t, 0);
        for (int q = 0; q < VX_TUNE_STREAM_DEPTHS; q++)
            t.stream_one_tile_ratio[q] = cases[i].r[q];
        char name[32];
        snprintf(name, sizeof name, "stream%zu.json", i);
        activate(&t, name, "stream_one_tile_ratio");
        const vx_cpu_model *M = vx_cpu_model_get(VX_ISA_AVX2);
        cr_assert_not_null(M, "no AVX2 model");
        cr_assert_eq(vx_gemm_stream_one_tile_k_max(), cases[i].k_max, "ratios %g %g %g: the driver's bound %d, expected %d",
                     cases[i].r[0], cases[i].r[1], cases[i].r[2], vx_gemm_stream_one_tile_k_max(), cases[i].k_max);
        cr_assert_eq(M->desc.stream_one_tile_k_max, cases[i].k_max, "ratios %g %g %g: the model's bound %lld, expected %d",
                     cases[i].r[0], cases[i].r[1], cases[i].r[2], (long long)M->desc.stream_one_tile_k_max,
                     cases[i].k_max);
    }
    vx_gemm_set_stream_one_tile_k_max(-1);
}

/* The model takes a family's context ratio from the file (0.6875 for
 * family 0 here; 1 without the probe, and for ratios within the probe's
 * spread of 1: family 1 at 63/64), its L1 rates as they are. */
Test(tune, the_context_probe_sets_the_family_context)
{
    for (int with = 0; with < 2; with++) {
        vx_tune t;
        distinctive(&t, 0);
        if (!with)
            memset(t.context_ratio, 0, sizeof t.context_ratio);
        activate(&t, with ? "context1.json" : "context0.json", "context_ratio");
        const vx_cpu_model *M = vx_cpu_model_get(VX_ISA_AVX2);
        cr_assert_not_null(M, "no AVX2 model");
        const double want = with ? 0.6875 : 1.0;
        cr_assert(close_rel(M->desc.fam[0].context, want), "%s: family 0 context: expected %g, found %g",
                  with ? "context ratio 0.6875" : "no context probe", want, M->desc.fam[0].context);
        if (M->desc.nfamilies > 1)
            cr_assert_eq(M->desc.fam[1].context, 1.0, "family 1 at %g in the file: expected context 1, found %g",
                         t.context_ratio[VX_ISA_AVX2][1], M->desc.fam[1].context);
        cr_assert(close_rel(M->desc.fam[0].rate[0][0].p, MARK_P), "family 0 m=1 ns per k step: expected %g, found %g",
                  MARK_P, M->desc.fam[0].rate[0][0].p);
    }
}

/* The model takes the tiles' context ratios from the file on the
 * families' level: divided by the geomean, over the families, of the ratio
 * of each one's measured tile fastest in L1 to the family's context (one
 * tile measured per family here: family 0's second at 0.8046875 against
 * 0.6875, family 1's first at 0.5390625 against 1), 0 for the tiles not
 * measured, from k = 256 on; without the tiles, none. */
Test(tune, the_context_probe_sets_the_tiles_context)
{
    for (int with = 0; with < 2; with++) {
        vx_tune t;
        distinctive(&t, 0);
        if (!with)
            memset(t.context_tile, 0, sizeof t.context_tile);
        activate(&t, with ? "tiles1.json" : "tiles0.json", "context_tile_ratio");
        const vx_cpu_model *M = vx_cpu_model_get(VX_ISA_AVX2);
        cr_assert_not_null(M, "no AVX2 model");
        const vx_device_desc *d = &M->desc;
        const int two = d->nfamilies > 1;
        const double level = two ? sqrt(0.8046875 / d->fam[0].context * 0.5390625 / d->fam[1].context)
                                 : 0.8046875 / d->fam[0].context;
        const double want = with ? 0.8046875 / level : 0.0;
        cr_assert(close_rel(d->fam[0].context_m[1], want), "%s: family 0 tile 2: expected %g, found %g",
                  with ? "measured" : "not measured", want, d->fam[0].context_m[1]);
        if (two)
            cr_assert(close_rel(d->fam[1].context_m[0], with ? 0.5390625 / level : 0.0),
                      "family 1 tile 1: expected %g, found %g", with ? 0.5390625 / level : 0.0,
                      d->fam[1].context_m[0]);
        cr_assert_eq(d->fam[0].context_m[0], 0.0, "family 0 tile 1, not measured: expected 0, found %g",
                     d->fam[0].context_m[0]);
        for (int f = 0; f < d->nfamilies; f++)
            cr_assert_eq(d->fam[f].context_min_k, with ? 256 : 0, "family %d: tiles' ratios from k = %lld, expected %d",
                         f, (long long)d->fam[f].context_min_k, with ? 256 : 0);
    }
}

/* Tiles of fewer than three vectors a row (a broadcast for every one or
 * two FMAs) are held, over n of 768 or more, at most 0.97 of the wide
 * tiles' median context ratio (cpu_levels.c, narrow_tiles_capped), which a
 * probe reading them all alike does not show; over fewer columns, and
 * where the probe measured them further behind, their own ratio stands.
 * Every tile of the active ISA measured, all alike (1.0), then the narrow
 * ones at 0.9; the scales the search takes (levels.h, vx_l0_scale_of). */
Test(tune, narrow_tiles_sit_below_the_wide_ones_over_wide_b)
{
    const vx_isa isa = (vx_isa)vx_active_isa();
    const vx_ukernel_set *set = vx_ukernels(isa);
    for (int behind = 0; behind < 2; behind++) {
        vx_tune t = *vx_tune_active();
        int narrow = 0, wide = 0;
        for (int f = 0; f < set->nfamilies && f < VX_TUNE_MAX_FAMILIES; f++) {
            const int is_narrow = set->families[f].nr < 3 * set->vec_floats;
            narrow += is_narrow;
            wide += !is_narrow;
            t.context_ratio[isa][f] = 1.0;
            for (int m = 0; m < set->families[f].mr_max && m < VX_TUNE_MAX_MR; m++)
                t.context_tile[isa][f][m] = is_narrow && behind ? 0.9 : 1.0;
        }
        cr_assert(narrow > 0 && wide > 0, "expected narrow and wide families, found %d and %d", narrow, wide);
        activate(&t, behind ? "narrow1.json" : "narrow0.json", "context_tile_ratio");
        const vx_cpu_model *M = vx_cpu_model_get(isa);
        cr_assert_not_null(M, "no model");
        const vx_device_desc *d = &M->desc;
        double wide_scale = 0;
        for (int f = 0; f < d->nfamilies; f++)
            if (d->fam[f].n >= 3 * set->vec_floats)
                for (int m = 1; m <= d->fam[f].m_max && m <= VX_TUNE_MAX_MR; m++) {
                    const vx_l0_scale X = vx_l0_scale_of(&d->fam[f], m);
                    if (wide_scale == 0)
                        wide_scale = X.tile;
                    cr_assert(close_rel(X.tile, wide_scale) && X.wide_min_n == INT64_MAX,
                              "%d x %d: wide tiles measured alike, expected scale %g and no cap, found %g from n = %lld",
                              m, d->fam[f].n, wide_scale, X.tile, (long long)X.wide_min_n);
                }
        cr_assert(wide_scale > 0, "no wide tile's context scale");
        for (int f = 0; f < d->nfamilies; f++)
            if (d->fam[f].n < 3 * set->vec_floats)
                for (int m = 1; m <= d->fam[f].m_max && m <= VX_TUNE_MAX_MR; m++) {
                    const vx_l0_scale X = vx_l0_scale_of(&d->fam[f], m);
                    const double own = behind ? 1.0 / 0.9 : 1.0, over_wide_b = behind ? 1.0 / 0.9 : 1.0 / 0.97;
                    cr_assert(close_rel(X.tile / wide_scale, own),
                              "%d x %d, measured %s the wide tiles, few columns: expected %g of their scale, found %g",
                              m, d->fam[f].n, behind ? "0.9 of" : "alike with", own, X.tile / wide_scale);
                    cr_assert(close_rel(X.tile_wide / wide_scale, over_wide_b),
                              "%d x %d, measured %s the wide tiles, wide B: expected %g of their scale, found %g", m,
                              d->fam[f].n, behind ? "0.9 of" : "alike with", over_wide_b, X.tile_wide / wide_scale);
                    cr_assert(behind || X.wide_min_n == 768, "%d x %d: capped from n = %lld, expected 768", m,
                              d->fam[f].n, (long long)X.wide_min_n);
                }
    }
}

/* Tiles' ratios above 1 (on the families' level) lower a plan's price
 * under the floors worked out at the L1 rates: the search's floors allow
 * for them, and branch and bound keeps finding the exhaustive ranking's
 * cheapest plan. Every tile of the active ISA measured, at 0.7-1.0 in the
 * file, 0.7-1.2 or so on the families' level. Which tiles those are above
 * 1 depends on which of each family is fastest in L1 (cpu_levels.c,
 * tile_context_level levels them by those), and that comes from the
 * installed tune: so each family's fastest tile is put at 0.7 and another
 * at 1.0, and some tile is above 1 whatever the tune. */
Test(tune, tiles_context_above_one_keeps_the_search_exact)
{
    vx_tune t = *vx_tune_active();
    const vx_isa isa = (vx_isa)vx_active_isa();
    const vx_ukernel_set *set = vx_ukernels(isa);
    uint64_t seed = 12345;
    for (int f = 0; f < set->nfamilies && f < VX_TUNE_MAX_FAMILIES; f++) {
        t.context_ratio[isa][f] = 1.0 - 0.05 * f;
        for (int m = 0; m < set->families[f].mr_max && m < VX_TUNE_MAX_MR; m++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            t.context_tile[isa][f][m] = 0.7 + 0.3 * (double)(seed >> 40) / (double)(1ull << 24);
        }
    }
    activate(&t, "tiles_search.json", "context_tile_ratio");
    const vx_cpu_model *M = vx_cpu_model_get(isa);
    cr_assert_not_null(M, "no model");
    for (int f = 0; f < M->desc.nfamilies && f < VX_TUNE_MAX_FAMILIES; f++) {
        int fastest = 0, other = 0;
        for (int m = 1; m <= M->desc.fam[f].m_max && m <= VX_TUNE_MAX_MR; m++)
            if (M->desc.fam[f].context_m[m - 1] > 0 &&
                (!fastest || vx_l0_steady_rate(&M->desc.fam[f], m) > vx_l0_steady_rate(&M->desc.fam[f], fastest)))
                fastest = m;
        for (int m = 1; m <= M->desc.fam[f].m_max && m <= VX_TUNE_MAX_MR; m++)
            if (M->desc.fam[f].context_m[m - 1] > 0 && m != fastest)
                other = m;
        if (fastest)
            t.context_tile[isa][f][fastest - 1] = 0.7;
        if (other)
            t.context_tile[isa][f][other - 1] = 1.0;
    }
    activate(&t, "tiles_search2.json", "context_tile_ratio");
    M = vx_cpu_model_get(isa);
    cr_assert_not_null(M, "no model");
    double most = 0;
    for (int f = 0; f < M->desc.nfamilies; f++)
        for (int m = 0; m < M->desc.fam[f].m_max; m++)
            most = fmax(most, M->desc.fam[f].context_m[m]);
    cr_assert(most > 1.0, "expected some tile above 1 on the families' level, the most %g", most);
    static const int64_t dims[] = { 1, 17, 97, 256, 513, 1000, 3072 };
    enum { N = sizeof dims / sizeof dims[0], MAX = 8192 };
    vx_priced_plan *all = malloc(sizeof *all * MAX);
    cr_assert_not_null(all);
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j += 2)
            for (int l = 2; l < N; l++) {
                const vx_gemm_shape s = { .m = dims[i], .n = dims[j], .k = dims[l], .b_unit_stride = 1,
                                          .a_unit_stride = 1 };
                vx_priced_plan one;
                cr_assert_eq(vx_gemm_rank(&s, isa, 2, &one, 1), 1);
                const int n = vx_gemm_rank(&s, isa, 2, all, MAX);
                cr_assert(n >= 1 && fabs(one.predicted_ns - all[0].predicted_ns) <= 1e-9 * all[0].predicted_ns,
                          "%lldx%lldx%lld: the search found %.3f ns, the exhaustive ranking %.3f",
                          (long long)s.m, (long long)s.n, (long long)s.k, one.predicted_ns, all[0].predicted_ns);
            }
    free(all);
}

/* The model's data TLB: the hardware's where the CPU lists one, else
 * hw.h's fallback (a guest may hide CPUID leaf 0x18; k blocks of rows a
 * page or more apart still miss its TLB). Never none. */
Test(tune, the_model_has_a_tlb_where_the_cpu_lists_none)
{
    const vx_hw_info *hw = vx_hw();
    const vx_cpu_model *M = vx_cpu_model_get(VX_ISA_AVX2);
    cr_assert_not_null(M, "no AVX2 model");
    const int known = hw->tlb_4k_ways > 0 && hw->tlb_4k_sets > 0;
    const int ways = known ? hw->tlb_4k_ways : VX_TLB_FALLBACK_WAYS;
    const int sets = known ? hw->tlb_4k_sets : VX_TLB_FALLBACK_SETS;
    cr_assert(M->desc.tlb_ways == ways && M->desc.tlb_sets == sets,
              "the CPU lists %d ways x %d sets: expected the model's TLB %d x %d, found %d x %d", hw->tlb_4k_ways,
              hw->tlb_4k_sets, ways, sets, M->desc.tlb_ways, M->desc.tlb_sets);
}

/* The model's L2 keeps far-apart rows in the ways the alias probe measured
 * (levels.h, alias_ways) where that is fewer than half its ways (the count
 * without the probe): 1 way here (a 2-way L2 or wider), 0 (half) for 64
 * ways measured and without the probe. */
Test(tune, the_alias_probe_sets_the_l2_ways_kept)
{
    static const struct {
        double measured;
        int want;
    } cases[] = { { 1.5, 1 }, { 64.0, 0 }, { 0.0, 0 } };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        vx_tune t;
        distinctive(&t, 0);
        t.l2_alias_ways = cases[i].measured;
        activate(&t, i == 0 ? "alias0.json" : i == 1 ? "alias1.json" : "alias2.json", "l2_alias_ways");
        const vx_cpu_model *M = vx_cpu_model_get(VX_ISA_AVX2);
        cr_assert_not_null(M, "no AVX2 model");
        const int want = vx_hw()->l2_ways >= 4 ? cases[i].want : 0;
        cr_assert_eq(M->desc.mem[1].alias_ways, want, "l2_alias_ways %g, a %d-way L2: expected %d ways kept, found %d",
                     cases[i].measured, vx_hw()->l2_ways, want, M->desc.mem[1].alias_ways);
    }
}

/* The capacity probe's L3 (tune.h, l3_effective_bytes) sets the driver's
 * last level (gemm.c: C streamed from twice it, the model pricing the
 * same) where it is less than the hardware query's L3, and only there;
 * the model's memory levels keep the reported L3. Without the probe, or
 * with one at or above the reported size, the driver takes the reported
 * L3 (its L2 where there is none). A testing stream size set beforehand
 * stays. */
Test(tune, the_capacity_probe_sets_the_driver_last_level)
{
    const vx_hw_info *hw = vx_hw();
    const int64_t reported = hw->l3_bytes > 0 ? hw->l3_bytes : hw->l2_bytes;
    const double half = hw->l3_bytes >= 4 * 1048576 ? (double)(hw->l3_bytes / 2 / 1048576 * 1048576) : 0.0;
    const struct {
        double measured;
        int64_t want;
    } cases[] = { { half, half > 0 ? (int64_t)half : reported },
                  { (double)(hw->l3_bytes > 0 ? hw->l3_bytes : 1048576) * 2.0, reported },
                  { 0.0, reported } };
    int64_t levels_l3 = -1;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        vx_tune t;
        distinctive(&t, 0);
        t.l3_effective_bytes = cases[i].measured;
        activate(&t, i == 0 ? "l3eff0.json" : i == 1 ? "l3eff1.json" : "l3eff2.json", "l3_effective_bytes");
        const vx_cpu_model *M = vx_cpu_model_get(VX_ISA_AVX2);
        cr_assert_not_null(M, "no AVX2 model");
        cr_assert_eq(vx_gemm_last_level_bytes(), cases[i].want,
                     "l3_effective_bytes %g (L3 reported %lld): expected a last level of %lld, found %lld",
                     cases[i].measured, (long long)hw->l3_bytes, (long long)cases[i].want,
                     (long long)vx_gemm_last_level_bytes());
        cr_assert_eq(M->desc.stream_c_min, 2 * cases[i].want,
                     "l3_effective_bytes %g: the model streams C from %lld bytes, the driver from %lld",
                     cases[i].measured, (long long)M->desc.stream_c_min, (long long)(2 * cases[i].want));
        /* the kernels' c_far follows it (the driver keeps the bound
         * between calls and must drop it when the last level moves) */
        const double level = (double)cases[i].want;
        cr_assert(!vx_gemm_c_far(0.9 * level) && vx_gemm_c_far(1.1 * level),
                  "l3_effective_bytes %g: C of 0.9x / 1.1x the last level %lld read far %d / %d",
                  cases[i].measured, (long long)cases[i].want, vx_gemm_c_far(0.9 * level),
                  vx_gemm_c_far(1.1 * level));
        /* the memory levels do not move with it */
        const int64_t l3_level = M->desc.nmem >= 2 ? M->desc.mem[M->desc.nmem - 2].bytes : 0;
        if (levels_l3 < 0)
            levels_l3 = l3_level;
        cr_assert_eq(l3_level, levels_l3, "l3_effective_bytes %g: the level before DRAM holds %lld, before %lld",
                     cases[i].measured, (long long)l3_level, (long long)levels_l3);
    }
    /* a testing size survives the model being built again */
    vx_gemm_set_stream_bytes(12345);
    vx_tune_reset();
    vx_cpu_model_reset();
    cr_assert_not_null(vx_cpu_model_get(VX_ISA_AVX2));
    cr_assert_eq(vx_gemm_stream_c_min(), 12345, "the testing stream size became %lld",
                 (long long)vx_gemm_stream_c_min());
    vx_gemm_set_stream_bytes(-1);
    cr_assert_eq(vx_gemm_stream_c_min(), 2 * reported, "restored: expected %lld, found %lld",
                 (long long)(2 * reported), (long long)vx_gemm_stream_c_min());
}

/* ------------------------------------------------------------------ */
/* Default path                                                        */
/* ------------------------------------------------------------------ */

static void expect_path(const char *what, int want_ok, const char *want)
{
    char buf[1024];
    memset(buf, 'x', sizeof buf);
    const int ok = vx_tune_default_path(buf, sizeof buf);
    cr_assert_eq(ok, want_ok, "%s: expected vx_tune_default_path to return %d, found %d (\"%.200s\")", what, want_ok,
                 ok, buf);
    cr_assert_str_eq(buf, want, "%s: expected \"%s\", found \"%.200s\"", what, want, buf);
}

Test(tune, default_path_follows_the_environment)
{
    cr_assert_eq(setenv("VORTEX_TUNE_FILE", "/opt/t/my-tune.json", 1), 0);
    cr_assert_eq(setenv("XDG_CACHE_HOME", "/xdg/cache", 1), 0);
    cr_assert_eq(setenv("HOME", "/home/someone", 1), 0);
    expect_path("VORTEX_TUNE_FILE set", 1, "/opt/t/my-tune.json");

    unsetenv("VORTEX_TUNE_FILE");
    expect_path("XDG_CACHE_HOME and HOME set", 1, "/xdg/cache/vortex/tune.json");
    /* an empty variable counts as unset */
    cr_assert_eq(setenv("VORTEX_TUNE_FILE", "", 1), 0);
    expect_path("VORTEX_TUNE_FILE empty", 1, "/xdg/cache/vortex/tune.json");

    unsetenv("XDG_CACHE_HOME");
    expect_path("only HOME set", 1, "/home/someone/.cache/vortex/tune.json");

    unsetenv("HOME");
    unsetenv("VORTEX_TUNE_FILE");
    expect_path("none set", 0, "");

    /* a path that does not fit the buffer is not formed, not truncated */
    cr_assert_eq(setenv("HOME", "/home/someone", 1), 0);
    char small[8];
    memset(small, 'x', sizeof small);
    const int ok = vx_tune_default_path(small, sizeof small);
    cr_assert(ok == 0 && small[0] == 0,
              "8-byte buffer: expected 0 and \"\" for /home/someone/.cache/vortex/tune.json, found %d and \"%.8s\"",
              ok, small);
}

/* A kernel's per-call cost comes from the short calls, its per-step cost
 * from the long ones: a line through all of them let one noisy long point
 * swing the intercept. Here the long points carry +-3% noise that moves a
 * plain least-squares intercept by tens of ns; the call fit still returns
 * the short calls' cost to within the noise they carry themselves. */
Test(tune, call_fit_takes_o_from_the_short_calls)
{
    const double o_true = 25.0, p_true = 3.5;
    const double x[5] = { 4, 12, 32, 128, 384 };
    const double noise[5] = { 0.0, 0.5, 1.03, 0.97, 1.03 };
    double y[5];
    for (int i = 0; i < 5; i++)
        y[i] = i < 2 ? o_true + p_true * x[i] + noise[i] : (o_true + p_true * x[i]) * noise[i];
    double o_line, p_line, o, p;
    vx_tune_fit_line(x, y, 5, &o_line, &p_line);
    vx_tune_fit_call(x, y, 5, 2, &o, &p);
    cr_expect(fabs(o_line - o_true) > 5.0, "the plain line was expected to miss o (got %g)", o_line);
    cr_expect(fabs(p - p_true) < 0.1 * p_true, "slope %g, want about %g", p, p_true);
    cr_expect(fabs(o - o_true) < 2.0, "call cost %g, want about %g", o, o_true);
    /* noise only adds time: a slow short call does not raise o above the fast one */
    y[1] += 40.0;
    vx_tune_fit_call(x, y, 5, 2, &o, &p);
    cr_expect(fabs(o - o_true) < 2.0, "call cost %g after a slow short call, want about %g", o, o_true);
    /* never negative */
    for (int i = 0; i < 2; i++)
        y[i] = 0.5 * p_true * x[i];
    vx_tune_fit_call(x, y, 5, 2, &o, &p);
    cr_expect(o == 0.0, "call cost %g, want 0 when short calls run under the slope", o);
}

/* The L3 probes read half a core's share of L3, but never more than eight
 * L2s: a guest told of a 480 MiB L3 (240 MiB a core, 2 MiB L2) read DRAM
 * through a 120 MiB probe, and the model priced L3 at DRAM's rate. */
Test(tune, l3_probe_stays_within_eight_l2s)
{
    const int64_t MiB = 1 << 20;
    cr_expect_eq(vx_cpu_tune_l3_probe_bytes(16 * MiB, 1 * MiB), 8 * MiB, "AMD Zen 4 guest: half its share");
    cr_expect_eq(vx_cpu_tune_l3_probe_bytes(240 * MiB, 2 * MiB), 16 * MiB, "a huge reported L3: eight L2s");
    cr_expect_eq(vx_cpu_tune_l3_probe_bytes(4 * MiB, 512 * 1024), 2 * MiB, "small share: half of it");
    cr_expect_eq(vx_cpu_tune_l3_probe_bytes(64 * MiB, 0), 32 * MiB, "unknown L2: no bound");
}
