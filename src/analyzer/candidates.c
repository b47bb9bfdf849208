#include "analyzer/candidates.h"
#include "analyzer/cost.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

double vx_steady_flops_per_ns(double o, double p, int m, int n)
{
    const double k = 256;
    const double t = o + p * k;
    return t > 0 ? 2.0 * m * n * k / t : 0;
}

double vx_l0_steady_rate(const vx_l0_family *F, int m)
{
    const vx_rate r = F->rate[VX_LOAD_COPY_AB][m - 1];
    return vx_steady_flops_per_ns(r.o, r.p, m, F->n);
}

/* L0: every m of every family that fits the register file and keeps enough
 * accumulators to cover the FMA latency, then measured pruning: tiles within
 * keep_rate_frac of the family's best rate, at most keep_per_family of them
 * spread evenly over m (the largest m and the fastest are always kept; the
 * smaller ones let L2 balance rows across units). */
static int build_l0(const vx_device_desc *d, vx_candidates *c, vx_l0_cand *out)
{
    int n = 0;
    c->l0_enumerated = c->l0_after_regs = c->l0_after_measure = 0;
    for (int f = 0; f < d->nfamilies; f++) {
        const vx_l0_family *F = &d->fam[f];
        const int vecs = F->regs_per_m; /* accumulator registers per row */
        int ok[VX_MAX_TILE_M + 1] = { 0 };
        double best = 0;
        int best_m = 0;
        for (int m = 1; m <= F->m_max && m <= VX_MAX_TILE_M; m++) {
            c->l0_enumerated++;
            if (F->regs_per_m * m + F->regs_fixed > d->reg_limit || m * vecs < d->acc_min)
                continue;
            ok[m] = 1;
            c->l0_after_regs++;
            const double r = vx_l0_steady_rate(F, m);
            if (r > best * 1.0001 || (r >= best * 0.9999 && m > best_m)) {
                best = r;
                best_m = m;
            }
        }
        if (!best_m)
            continue;
        int fast[VX_MAX_TILE_M + 1], nfast = 0;
        for (int m = 1; m <= F->m_max && m <= VX_MAX_TILE_M; m++)
            if (ok[m] && vx_l0_steady_rate(F, m) >= d->keep_rate_frac * best)
                fast[nfast++] = m;
        c->l0_after_measure += nfast;
        int keep[VX_MAX_TILE_M + 1] = { 0 };
        keep[best_m] = 1;
        keep[fast[nfast - 1]] = 1;
        int kept = best_m == fast[nfast - 1] ? 1 : 2;
        /* spread the rest evenly from the largest m down */
        const int want = d->keep_per_family < nfast ? d->keep_per_family : nfast;
        for (int i = 1; kept < want && i < want; i++) {
            const int m = fast[(nfast - 1) - (int)((long)i * (nfast - 1) / (want - 1))];
            if (!keep[m]) {
                keep[m] = 1;
                kept++;
            }
        }
        /* and the largest power of two where it holds three quarters of
         * the registers in accumulators: row counts are often multiples
         * of 8 or 16, and 16x3072x768 ran on 8x48 tiles in 0.85x the time
         * of 9 + 7 rows. Tiles with fewer accumulators (8x32) ran large
         * shapes 3-6 % slower than the spread picks they would have
         * replaced (AMD Zen 5; NOTES.md, sixteenth session). */
        for (int i = nfast - 1; i >= 0; i--)
            if ((fast[i] & (fast[i] - 1)) == 0) {
                if (4 * fast[i] * vecs >= 3 * d->reg_limit)
                    keep[fast[i]] = 1;
                break;
            }
        /* and, where every tile kept is taller, the tallest whose rows
         * the first level holds at any stride (rows a way apart, the
         * worst: its ways, less the slack): the in-place plans take no
         * taller one over such rows of A (cost.h, vx_in_place_a_rows_max;
         * 4096x16x4096 on 10x16 tiles ran in 0.32x the time of 30x16).
         * Among the fast tiles first, else among all that fit the
         * registers: a tune whose L1 rates put 16-wide tiles of 10 rows or
         * fewer under keep_rate_frac of 30 x 16 left that family none (an
         * Intel Xeon guest; NOTES.md, thirty-fourth session). */
        const vx_mem_level *L1 = &d->mem[0];
        const int64_t safe = vx_in_place_a_rows_max(L1->way_bytes, L1->ways, L1->way_bytes, L1->line);
        int have_safe = 0;
        for (int m = 1; m <= safe && m <= F->m_max && m <= VX_MAX_TILE_M; m++)
            have_safe |= keep[m];
        for (int i = nfast - 1; !have_safe && i >= 0; i--)
            if (fast[i] <= safe) {
                keep[fast[i]] = 1;
                have_safe = 1;
            }
        for (int m = safe < F->m_max ? (int)safe : F->m_max; !have_safe && m >= 1; m--)
            if (m <= VX_MAX_TILE_M && ok[m]) {
                keep[m] = 1;
                have_safe = 1;
            }
        for (int m = F->m_max; m >= 1; m--)
            if (m <= VX_MAX_TILE_M && keep[m])
                out[n++] = (vx_l0_cand){ (int16_t)f, (int16_t)m };
    }
    return n;
}

/* L1 for one L0 tile: kc multiples of k_step whose L0 slices fit cap_slice;
 * copied blocks: mc a multiple of m0 filling each fraction of cap_a, nc a
 * multiple of n0 filling fill_b of cap_b; in-place modes cover the whole
 * cell, so only kc varies. Written load mode by load mode (kc ascending
 * within each); mode_first[mode] gets where each mode's run starts and
 * mode_first[VX_LOAD_MODES] the count, so the search can skip a whole mode. */
static int build_l1(const vx_device_desc *d, const vx_l0_cand *t, int idx, vx_l1_cand *out, int *mode_first)
{
    const vx_l0_family *F = &d->fam[t->fam];
    const int64_t eb = d->elem_bytes, m0 = t->m, n0 = F->n;
    int n = 0;
    for (int mode = 0; mode < VX_LOAD_MODES; mode++) {
        mode_first[mode] = n;
        if (!F->modes_ok[mode])
            continue;
        for (int i = 0; i < d->nkc; i++) {
            const int64_t kc = (int64_t)d->k_step * d->kc_mult[i];
            if ((m0 + n0) * kc * eb > d->cap_slice)
                continue;
            if (mode != VX_LOAD_COPY_AB) {
                out[n++] = (vx_l1_cand){ (int16_t)idx, (int8_t)mode, (int8_t)i, 0, 0, (int32_t)kc };
                continue;
            }
            int64_t nc = (int64_t)(d->fill_b * (double)d->cap_b) / (kc * eb) / n0 * n0;
            if (nc > d->nc_max)
                nc = d->nc_max / n0 * n0;
            if (nc < n0)
                continue;
            int64_t last_mc = 0;
            for (int j = 0; j < d->nfill_a; j++) {
                const int64_t mc = (int64_t)(d->fill_a[j] * (double)d->cap_a) / (kc * eb) / m0 * m0;
                if (mc < m0 || mc == last_mc)
                    continue;
                last_mc = mc;
                out[n++] = (vx_l1_cand){ (int16_t)idx, VX_LOAD_COPY_AB, (int8_t)i, (int32_t)mc, (int32_t)nc,
                                         (int32_t)kc };
            }
        }
    }
    mode_first[VX_LOAD_MODES] = n;
    return n;
}

/* The least time per row per k step, and per call, that a column tile of
 * an m-row L0 tile can take in any load mode: rows of a cell run as tiles of
 * m rows and a shorter last one, so the minima run over heights 1..m. */
static vx_l0_floor l0_floor(const vx_l0_family *F, int m)
{
    vx_l0_floor least = { INFINITY, INFINITY };
    for (int mode = 0; mode < VX_LOAD_MODES; mode++)
        for (int r = 1; r <= m && F->modes_ok[mode]; r++) {
            const vx_rate t = F->rate[mode][r - 1];
            least.p_per_row = fmin(least.p_per_row, (double)t.p / r);
            least.o = fmin(least.o, (double)t.o);
        }
    if (!(least.p_per_row < INFINITY))
        least = (vx_l0_floor){ 0, 0 };
    least.o = fmax(least.o, 0.0);
    return least;
}

/* L2: every factorisation tm x tn of each thread count t = 1, 2, 4, ...
 * and the unit count itself. */
static int build_l2(int units, vx_l2_cand *out, int cap)
{
    int n = 0;
    for (int t = 1; t <= units; t = t * 2 > units && t != units ? units : t * 2) {
        for (int tm = 1; tm <= t && n < cap; tm++)
            if (t % tm == 0)
                out[n++] = (vx_l2_cand){ (int16_t)tm, (int16_t)(t / tm) };
        if (t == units)
            break;
    }
    return n;
}

int vx_candidates_build(const vx_device_desc *d, vx_candidates *c)
{
    memset(c, 0, sizeof *c);
    vx_l0_cand l0[VX_MAX_L0_FAMILIES * VX_MAX_TILE_M];
    const int n0 = build_l0(d, c, l0);
    const int per_l0 = d->nkc * (VX_LOAD_MODES - 1 + d->nfill_a);
    c->l0 = malloc(sizeof *c->l0 * (size_t)(n0 ? n0 : 1));
    c->l1 = malloc(sizeof *c->l1 * (size_t)(n0 * per_l0 + 1));
    c->l1_first = malloc(sizeof(int) * (size_t)(n0 + 1));
    c->l1_count = malloc(sizeof(int) * (size_t)(n0 + 1));
    const int max2 = 4096;
    c->l2 = malloc(sizeof *c->l2 * max2);
    c->l0_floor = malloc(sizeof *c->l0_floor * (size_t)(n0 ? n0 : 1));
    c->l1_mode_first = malloc(sizeof(int) * (size_t)(n0 ? n0 : 1) * (VX_LOAD_MODES + 1));
    c->l0_scale = malloc(sizeof *c->l0_scale * (size_t)(n0 ? n0 : 1));
    if (!c->l0 || !c->l1 || !c->l1_first || !c->l1_count || !c->l2 || !c->l0_floor || !c->l1_mode_first ||
        !c->l0_scale) {
        vx_candidates_free(c);
        return -1;
    }
    memcpy(c->l0, l0, sizeof *l0 * (size_t)n0);
    c->n0 = n0;
    for (int i = 0; i < n0; i++) {
        c->l0_floor[i] = l0_floor(&d->fam[l0[i].fam], l0[i].m);
        c->l0_scale[i] = vx_l0_scale_of(&d->fam[l0[i].fam], l0[i].m);
    }
    for (int i = 0; i < n0; i++) {
        c->l1_first[i] = c->n1;
        int *runs = c->l1_mode_first + (size_t)i * (VX_LOAD_MODES + 1);
        c->l1_count[i] = build_l1(d, &l0[i], i, c->l1 + c->n1, runs);
        for (int mode = 0; mode <= VX_LOAD_MODES; mode++)
            runs[mode] += c->n1;
        c->n1 += c->l1_count[i];
    }
    c->n2 = build_l2(d->units > 0 ? d->units : 1, c->l2, max2);
    return 0;
}

void vx_candidates_free(vx_candidates *c)
{
    free(c->l0);
    free(c->l1);
    free(c->l1_first);
    free(c->l1_count);
    free(c->l2);
    free(c->l0_floor);
    free(c->l1_mode_first);
    free(c->l0_scale);
    memset(c, 0, sizeof *c);
}

void vx_candidates_report(const vx_device_desc *d, const vx_candidates *c, FILE *f)
{
    static const char *modes[] = { "copy A+B", "copy B", "in place" };
    fprintf(f, "%s candidates:\n", d->name);
    fprintf(f, "  L0 register tiles: %d enumerated, %d fit %d registers with >= %d accumulators, "
               "%d within %.0f%% of their family's measured best, %d kept\n",
            c->l0_enumerated, c->l0_after_regs, d->reg_limit, d->acc_min, c->l0_after_measure,
            100 * d->keep_rate_frac, c->n0);
    fprintf(f, "    kept:");
    for (int i = 0; i < c->n0; i++)
        fprintf(f, " %dx%d", c->l0[i].m, d->fam[c->l0[i].fam].n);
    fprintf(f, "\n");
    int per_mode[VX_LOAD_MODES] = { 0 };
    for (int i = 0; i < c->n1; i++)
        per_mode[c->l1[i].mode]++;
    fprintf(f, "  L1 blocks (multiples of an L0 tile): %d (%s %d, %s %d, %s %d)\n", c->n1, modes[0],
            per_mode[0], modes[1], per_mode[1], modes[2], per_mode[2]);
    fprintf(f, "  L2 grids over %d unit(s): %d\n", d->units, c->n2);
    fprintf(f, "  plans (L2 x L1): %lld\n", (long long)c->n2 * c->n1);
}
