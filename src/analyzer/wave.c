/* The wave model (wave.h). */
#include "analyzer/wave.h"

int64_t vx_wave_k_per_split(const vx_wave_cand *c, int64_t k, int s)
{
    const int64_t per = (k + s - 1) / s;
    return (per + c->bk - 1) / c->bk * c->bk;
}

double vx_wave_time(const vx_wave_device *d, const vx_wave_cand *c, int64_t m, int64_t n, int64_t k, int s)
{
    if (c->resident <= 0 || d->units <= 0 || s < 1)
        return -1.0;
    const int64_t kps = vx_wave_k_per_split(c, k, s);
    if (s > 1 && kps * (s - 1) >= k)
        return -1.0; /* the last slice would be empty */
    const int64_t tiles = ((m + c->bm - 1) / c->bm) * ((n + c->bn - 1) / c->bn);
    const int64_t blocks = tiles * s;
    const int64_t per_wave = (int64_t)c->resident * d->units;
    const int64_t full = blocks / per_wave, rest = blocks % per_wave;
    const double wave = c->o_ns + c->p_ns * (double)kps;
    double t = (double)full * wave;
    if (rest) {
        /* A partial wave puts fewer blocks on each unit; they run faster than
         * in a full one, but a lone block is latency-bound, so the credit is
         * at most half. */
        const int64_t depth = (rest + d->units - 1) / d->units;
        t += wave * (0.5 + 0.5 * (double)depth / (double)c->resident);
    }
    if (s > 1 && c->fixup) {
        /* each slice writes its partial tile, the last one reads them all */
        const double bytes = 8.0 * (double)s * (double)tiles * c->bm * c->bn;
        t += d->fixup_ns + bytes / d->reduce_bytes_per_ns;
    } else if (s > 1) {
        const double bytes = 8.0 * (double)s * (double)m * (double)n +
                             (double)d->c_bytes * (double)m * (double)n * (d->beta_reads_c ? 2.0 : 1.0);
        t += d->launch_ns + d->split_fixed_ns + bytes / d->reduce_bytes_per_ns;
    }
    return t + d->launch_ns;
}

int vx_wave_rank(const vx_wave_device *d, const vx_wave_cand *cands, const unsigned char *eligible, int ncand,
                 int64_t m, int64_t n, int64_t k, vx_wave_choice *out, int max_out)
{
    static const int split_list[] = {1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32};
    int nout = 0;
    for (int i = 0; i < ncand; i++) {
        if (eligible && !eligible[i])
            continue;
        for (unsigned j = 0; j < sizeof split_list / sizeof split_list[0]; j++) {
            const int s = split_list[j];
            if (s > d->max_splits || (cands[i].max_splits > 0 && s > cands[i].max_splits) ||
                (s > 1 && k < 2 * (int64_t)s * cands[i].bk))
                break;
            if (s < cands[i].min_splits)
                continue;
            const double t = vx_wave_time(d, &cands[i], m, n, k, s);
            if (t < 0)
                continue;
            /* insertion into the sorted top list */
            int pos = nout;
            while (pos > 0 && out[pos - 1].ns > t)
                pos--;
            if (pos >= max_out)
                continue;
            if (nout < max_out)
                nout++;
            for (int q = nout - 1; q > pos; q--)
                out[q] = out[q - 1];
            out[pos] = (vx_wave_choice){i, s, t};
        }
    }
    return nout;
}
