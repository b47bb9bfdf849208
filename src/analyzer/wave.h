/* The wave model for devices that run a kernel as waves of blocks (GPUs), in
 * the analyzer's device-neutral terms: a backend names its units (SMs), how
 * many blocks of each L1 candidate one unit holds, and one full wave's time as
 * a function of K (measured by vortex-install-tune, or its defaults). At call
 * time every candidate and split-K factor is priced:
 *
 *   time = full waves x wave(K/s) + partial wave + split-K reduction + launch
 *
 * The split-K reduction is a second launch over the partial sums, or, for a
 * candidate that reduces inside the kernel (fixup), the partial sums' traffic
 * plus the last slice's serial pass.
 *   waves = ceil(blocks / (resident x units)), blocks = tiles(M) x tiles(N) x s
 *
 * Padding enters through the tile ceilings, idle units through the waves. */
#ifndef VX_ANALYZER_WAVE_H
#define VX_ANALYZER_WAVE_H

#include <stdint.h>

typedef struct {
    int bm, bn, bk;     /* L1 tile */
    int resident;       /* blocks one unit runs at once (0: cannot run) */
    float o_ns, p_ns;   /* one full wave over a K range of length K: o + p*K ns */
    int fixup;          /* split-K slices are added inside the kernel (no second launch) */
    int max_splits;     /* most split-K slices this candidate runs (0: the device's max_splits) */
    int min_splits;     /* fewest (0 or 1: any): a split-only variant of another candidate */
} vx_wave_cand;

typedef struct {
    int units;                 /* SMs */
    double launch_ns;          /* one more kernel launch on the stream */
    double split_fixed_ns;     /* a split-K call's workspace and reduction set-up */
    double reduce_bytes_per_ns;/* the reduction's streaming rate */
    double fixup_ns;           /* an in-kernel reduction's serial tail (the last slice's pass) */
    int c_bytes;               /* bytes of one C element */
    int beta_reads_c;          /* the reduction reads C too */
    int max_splits;
} vx_wave_device;

typedef struct {
    int cand, splits;
    double ns;
} vx_wave_choice;

/* Predicted ns for candidate c with the K loop split s ways (s >= 1);
 * a negative value when the split leaves a slice empty. */
double vx_wave_time(const vx_wave_device *d, const vx_wave_cand *c, int64_t m, int64_t n, int64_t k, int s);

/* K per split slice: ceil(k / s) rounded up to whole BK tiles. */
int64_t vx_wave_k_per_split(const vx_wave_cand *c, int64_t k, int s);

/* Prices every candidate with eligible[i] != 0 (NULL: all) and every split
 * up to d->max_splits; writes the best max_out choices, cheapest first, and
 * returns how many. */
int vx_wave_rank(const vx_wave_device *d, const vx_wave_cand *cands, const unsigned char *eligible, int ncand,
                 int64_t m, int64_t n, int64_t k, vx_wave_choice *out, int max_out);

#endif
