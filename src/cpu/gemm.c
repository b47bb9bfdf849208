#include "cpu/gemm.h"

#include <stdatomic.h>
#include <stdint.h>

#include "cpu/dot.h"
#include "cpu/cpu_levels.h"
#include "cpu/gemv.h"
#include "cpu/pack.h"
#include "cpu/resident.h"
#include "cpu/stream.h"
#include "cpu/threadpool.h"
#include "cpu/ukernel.h"
#include "analyzer/cost.h"
#include "analyzer/hw.h"
#include "status.h"

enum { SLOT_WORK = 0, SLOT_VECTOR = 2 };

/* Floats left between the threads' workspace slices, so that slices of a
 * power-of-two size (a 256 x 16 panel is 16 KiB) do not start a multiple of
 * 16 KiB apart. Measured on AMD Zen 1, 2 threads, 16x2304x768 (each thread
 * one 16 KiB B panel): direct with packing on read 802 -> 737-756 us with
 * 256-4096 floats of pad, pack-B 930 -> 847-873 us; the packed plans'
 * larger slices (80x768x768, 32x3072x768) did not move (NOTES.md,
 * eleventh session). */
enum { SLICE_PAD_FLOATS = 256 };

static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* A plain GEMM's extensions: none. */
static const vx_gemm_ext k_no_ext;

static inline const vx_gemm_ext *ext_of(const vx_gemm_args *g) { return g->ext ? g->ext : &k_no_ext; }

/* Batch items the call runs (a plain GEMM: one). */
static inline int64_t items_of(const vx_gemm_args *g) { return ext_of(g)->batch > 0 ? ext_of(g)->batch : 1; }

/* The bytes of C the call writes, all its items. */
static inline double c_bytes_of(const vx_gemm_args *g)
{
    return (double)g->m * (double)g->n * (double)items_of(g) * sizeof(float);
}

typedef struct {
    const vx_gemm_args *g;
    const vx_gemm_plan *plan;
    const vx_ukernel_family *fam;
    float *ws;          /* the caller's workspace: one slice per thread */
    size_t ws_a, ws_b;  /* floats of A and B buffer in a slice */
    atomic_llong next_cell; /* cells are handed out in order to whichever thread is free */
    int64_t stage_cols;     /* > 0: C is streamed (streams_c) through a stage this wide */
    int c_far;              /* the kernels' c_far (ukernel.h): vx_gemm_c_far */
} job;

/* One batch item's operands (a plain GEMM has the single item 0). */
typedef struct {
    int64_t item;
    const float *a, *b, *bias_row, *bias_col;
    const float *b_panels; /* B packed already (vx_gemm_ext.b_panels), or NULL */
    const float *a_panels; /* A packed already (vx_gemm_ext.a_panels), or NULL */
    float *c;
} item_view;

static int64_t item_off(const vx_gemm_args *g, vx_batch_stride s, int64_t item)
{
    if (item == 0) /* a plain GEMM: no 64-bit divisions (~40 cycles each on Zen 1) per call */
        return 0;
    const int64_t inner = ext_of(g)->batch_inner > 0 ? ext_of(g)->batch_inner : 1;
    return (item / inner) * s.outer + (item % inner) * s.inner;
}

/* A plain GEMM's one item: the operands as given. */
static inline item_view plain_view(const vx_gemm_args *g)
{
    return (item_view){ .item = 0, .a = g->a, .b = g->b, .c = g->c };
}

static item_view view_of(const vx_gemm_args *g, int64_t item)
{
    if (!g->ext)
        return plain_view(g);
    const vx_gemm_ext *x = ext_of(g);
    item_view v;
    v.item = item;
    v.a = g->a ? g->a + item_off(g, x->a_bs, item) : NULL;
    v.b = g->b ? g->b + item_off(g, x->b_bs, item) : NULL;
    v.c = g->c + item_off(g, x->c_bs, item);
    v.bias_row = x->bias_row ? x->bias_row + item_off(g, x->bias_bs, item) : NULL;
    v.bias_col = x->bias_col ? x->bias_col + item_off(g, x->bias_bs, item) : NULL;
    v.b_panels = x->b_panels ? x->b_panels + item * x->b_panels_item : NULL;
    v.a_panels = x->a_panels ? x->a_panels + item_off(g, x->a_panels_bs, item) : NULL;
    return v;
}

/* The fused store for the tile at (i0, j0), or NULL: only the last K block
 * of a problem with an epilogue carries one. */
static const vx_epilogue *epilogue_at(const vx_gemm_args *g, const item_view *v, int last_k,
                                      int64_t i0, int64_t j0, vx_epilogue *buf)
{
    if (!ext_of(g)->epilogue || !last_k)
        return NULL;
    buf->bias_row = v->bias_row ? v->bias_row + i0 : NULL;
    buf->bias_col = v->bias_col ? v->bias_col + j0 : NULL;
    buf->relu = ext_of(g)->relu;
    return buf;
}

static void load_a(const vx_gemm_args *g, const item_view *v, int64_t i0, int64_t mb, int64_t p0, int64_t kb,
                   int mr, float *out)
{
    const vx_gather *gather = ext_of(g)->gather_a;
    if (gather)
        gather->pack(gather, v->item, i0, mb, p0, kb, mr, out);
    else
        vx_pack_a(mb, kb, v->a + i0 * g->a_rs + p0 * g->a_cs, g->a_rs, g->a_cs, mr, out);
}

static void load_b(const vx_gemm_args *g, const item_view *v, int64_t p0, int64_t kb, int64_t j0, int64_t nb,
                   int nr, float *out)
{
    const vx_gather *gather = ext_of(g)->gather_b;
    if (gather)
        gather->pack(gather, v->item, p0, kb, j0, nb, nr, out);
    else
        vx_pack_b(kb, nb, v->b + p0 * g->b_rs + j0 * g->b_cs, g->b_rs, g->b_cs, nr, out);
}

/* Effective L1 block for this problem: no larger than the problem itself. */
static void block_sizes(const vx_gemm_args *g, const vx_gemm_plan *P, int64_t *mc, int64_t *kc, int64_t *nc)
{
    const int64_t mr = P->mr, nr = P->nr;
    const int64_t m_cell = (g->m + P->threads_m - 1) / P->threads_m + mr;
    const int64_t n_cell = (g->n + P->threads_n - 1) / P->threads_n + nr;
    *kc = min64(P->kc, g->k);
    *mc = min64(P->mc, ((m_cell + mr - 1) / mr) * mr);
    *nc = min64(P->nc, ((n_cell + nr - 1) / nr) * nr);
}

/* Balanced split of `total` into `parts` chunks, each a multiple of `unit`
 * except the last: chunk `idx` is [*lo, *hi). */
static void split(int64_t total, int64_t unit, int parts, int idx, int64_t *lo, int64_t *hi)
{
    if (parts == 1) { /* the grid's usual single row or column: no divisions */
        *lo = 0;
        *hi = total;
        return;
    }
    const int64_t units = (total + unit - 1) / unit;
    const int64_t base = units / parts, extra = units % parts;
    const int64_t u0 = idx * base + (idx < extra ? idx : extra);
    const int64_t u1 = u0 + base + (idx < extra ? 1 : 0);
    *lo = min64(u0 * unit, total);
    *hi = min64(u1 * unit, total);
}

static atomic_int g_a_in_place = 1;

void vx_gemm_set_a_in_place(int allow) { atomic_store(&g_a_in_place, allow != 0); }

/* Whether a packed plan reads A's L1 block where it lies instead of copying
 * it: rows with unit stride (a row-major A, not transposed) stream from L2
 * into the strided-A kernels as fast as a packed panel does, and the copy
 * (an mr-row transpose per panel) is saved. Measured on AMD Zen 5, 2
 * threads, alternated in one process: 1024x3072x768 2.2 % faster, 2048^3
 * 1.7 % (NOTES.md, fifteenth session). Only for tiles short enough, whose
 * rows the L1 holds at A's stride, and a k long enough
 * (vx_packed_a_in_place_ok: 16 rows 4 KiB apart ran 1.7x slower in place,
 * k = 45 up to 1.1x). A transposed A keeps its copy: each k step would be
 * a new row of A^T, a leading dimension apart; a gathered one (a
 * convolution's patches) exists only packed. Not where the testing switch
 * says never (vx_gemm_set_a_in_place). */
int vx_gemm_a_rows_in_place_ok(int mr, int64_t k, int64_t a_row_bytes)
{
    const vx_hw_info *hw = vx_hw();
    return vx_packed_a_in_place_ok(mr, k, a_row_bytes, hw->l1d_ways, hw->l1d_ways > 0 ? hw->l1d_bytes / hw->l1d_ways : 0,
                                   hw->line_bytes);
}

static int reads_a_in_place(const vx_gemm_args *g, int mr)
{
    return atomic_load_explicit(&g_a_in_place, memory_order_relaxed) && !ext_of(g)->gather_a && g->a_cs == 1 &&
           vx_gemm_a_rows_in_place_ok(mr, g->k, g->a_rs * (int64_t)sizeof(float));
}

/* Whether B's panels are packed by the first row tile that reads them (the
 * pk kernels) rather than by a copy pass before the kernels: the copy's
 * loads and stores then share the kernel's cycles with the FMAs. Unit-stride
 * rows of a plain B only. AMD Zen 5, 2 threads: the packed path 0.8-1.0 %
 * faster at 1024x3072x768 and 2048^3; pack_b plans 1.2-1.6 % (272x2304x768,
 * 496x768x3072; the AVX2 kernels 1.4-3 %). */
static int packs_b_on_read(const vx_gemm_args *g)
{
    return !ext_of(g)->gather_b && g->b_cs == 1;
}

static int b_fetched_far(const vx_gemm_args *g);

/* The pk kernels for B's rows (ukernel.h): fetching further ahead into L2
 * where the rows alias in L1 or come from DRAM (far: b_fetched_far). */
static const vx_ukernel_pk_fn *pk_kernels(const job *J, int far)
{
    return far ? J->fam->pk_far : J->fam->pk;
}

/* Whether a packed plan walks C by rows: row tiles outside, column tiles
 * inside, over strips of B's panels that fit a quarter of L2, instead of
 * each column tile down all row tiles. Down a column tile every kernel
 * call fetches one piece of each of its rows, rows apart; with one k block
 * the calls are too short to wait for them, and pieces more than a page
 * apart are fetched on demand (the prefetchers stop at pages). Along rows
 * the pieces of each row follow each other, which the prefetchers stream.
 * Only where C is not in L2 already (beyond a unit's L2, all items
 * counted): there the strips only add re-reads of B's panels from L2
 * (108x1600x20 on 10 x 16, C 0.7 MB: 0.8x the time by rows). On 2 AMD Zen 4
 * cores (NOTES.md, twenty-eighth session), NCHW 1x1 convolutions of 12
 * images of 40x40, c -> 108 (108 x 1600 x c per image, 10 x 16 tiles):
 * c = 20 2208 -> 487 us, c = 64 2243 -> 1644, c = 128 3205 -> 2914;
 * 4096x4096x8 4140 -> 2904 us, 1000x1000x16 375 -> 183; NHWC, and k of
 * 256 and more, within 2 %. Strips of all of B's block: 512x4096x64
 * (19 x 16, 1 MB of B) 0.91x the time; in a quarter of L2, 1.00x.
 * What the walk saves per call is the wait for its rows' pieces, which a
 * call of k steps covers more the longer k; what it costs is B's panel
 * read again from L2 for every row tile (kb x nr floats a call, against
 * mr x nr / 16 lines of C it no longer waits for): so it pays while k is
 * short for the tile's height. Measured, k / mr: 10 x 16 at k = 20, 64,
 * 128 (2, 6.4, 12.8) the gains above; 4 x 32 at k = 4 (NCHW 7x4x88x88
 * -> 44, 1) 2.0-2.4x faster; 10 x 16 at k = 256 (25.6) 1.01-1.03x; 4 x 64
 * at k = 128 (32) 0.94-0.97x, at k = 256 (64, NHWC 3x256x14x14 -> 1024)
 * 0.84x. Hence k at most ROWS_WALK_K_PER_ROW rows of the tile, and at
 * most ROWS_WALK_K_MAX (c = 512, 2048: no gain). */
enum { ROWS_WALK_K_PER_ROW = 16, ROWS_WALK_K_MAX = 256 };

/* A unit's L2 in bytes (1 MiB where the query found none). */
static int64_t unit_l2_bytes(void) { return vx_hw()->l2_bytes > 0 ? vx_hw()->l2_bytes : (int64_t)1 << 20; }

static int walks_rows(const vx_gemm_args *g, const vx_gemm_plan *P, int64_t kc)
{
    if (kc < g->k || g->k > ROWS_WALK_K_MAX || g->k > (int64_t)ROWS_WALK_K_PER_ROW * P->mr)
        return 0;
    return c_bytes_of(g) / (double)(P->threads > 1 ? P->threads : 1) > (double)unit_l2_bytes();
}

/* walks_rows's strip: the columns whose panels of kb rows fill a quarter
 * of L2, whole tiles, one at least. */
static int64_t rows_strip_cols(int64_t kb, int nr)
{
    const int64_t cols = unit_l2_bytes() / 4 / (kb * (int64_t)sizeof(float)) / nr * nr;
    return cols > nr ? cols : nr;
}

/* The next panel's rows of B, fetched into L2 while this panel's row tiles
 * run, a share by each tile's kernel (the fetch kernels): the pk kernel
 * that packs the panel then reads them from L2. Without, its own fetches
 * (16 rows ahead, into L1) wait on L3 or DRAM: 4 x 64 over 768 rows of B
 * 9 KiB apart took 14 us more than a plain tile (about 14 GB/s, what the
 * L1's misses in flight carry at that latency) against 1.2 us more with
 * the rows in L2. */
typedef struct {
    const float *b;    /* the next panel's first row, at its first column */
    int64_t b_rs, row_bytes;
    int64_t rows, tiles, tile, row; /* rows to fetch, over `tiles` calls */
} next_panel_fetch;

static atomic_int g_fetch_next = 1;

void vx_gemm_set_fetch_next(int mode) { atomic_store(&g_fetch_next, mode < 0 ? 0 : mode > 2 ? 2 : mode); }

/* Whether a job's cells fetch the next panel (next_panel_fetch) over k
 * blocks of kb rows and `cols` columns of B: where the block is larger
 * than half of L2 (within it, the rows are there already), with tiles of
 * two vectors a row or more. The fetches take load slots, which tiles of
 * one vector a row (a broadcast load per FMA) are short of. Against the
 * kernels without them, in one process (two AMD Zen 4 cores): 8 x 16
 * ran 272x2304x768 4 % slower, 1517x3267x174 3-5 %, 98x590x163 (B in L2)
 * 4 %; 8 x 48 and 6 x 64 within 1 %; the BERT layers 0.994-0.996 of the
 * time (geomean, three runs), 80x768x3072 0.94-0.97. The AVX2 kernels
 * (VORTEX_ISA=avx2 on that host) read 0.99-1.03 of the time over the BERT
 * layers in three runs, a loss as likely as a gain: they go without. An
 * Intel Xeon guest lost 2-13 % with them (cpu_tune.c, fetch_probe): the
 * tune decides. */
static int fetches_next_panel(const job *J, int64_t kb, int64_t cols)
{
    if (J->plan->isa != VX_ISA_AVX512 || J->fam->nr < 2 * vx_ukernels(J->plan->isa)->vec_floats ||
        (double)kb * (double)cols * sizeof(float) <= (double)unit_l2_bytes() / 2.0)
        return 0;
    /* and where the tune found that they pay (cpu_tune.c, fetch_probe),
     * unless told to fetch regardless */
    if (atomic_load_explicit(&g_fetch_next, memory_order_relaxed) == 2)
        return 1;
    const vx_cpu_model *M = vx_cpu_model_get(J->plan->isa);
    return !M || M->fetch_next;
}

/* The panel of B's rows [p0, p0 + rows), columns [col0, col0 + cols), to
 * fetch over `tiles` kernel calls (none where !on). */
static void next_panel_fetch_init(next_panel_fetch *f, const vx_gemm_args *g, const item_view *v, int on,
                                  int64_t p0, int64_t rows, int64_t col0, int64_t cols, int64_t tiles)
{
    const int fetching = on && atomic_load_explicit(&g_fetch_next, memory_order_relaxed) && g->b_cs == 1 &&
                         rows > 0 && cols > 0 && tiles > 0;
    f->rows = fetching ? rows : 0;
    f->b = fetching ? v->b + p0 * g->b_rs + col0 : v->b;
    f->b_rs = g->b_rs;
    f->row_bytes = cols * (int64_t)sizeof(float);
    f->tiles = tiles;
    f->tile = 0;
    f->row = 0;
}

/* The rows the next tile's kernel fetches (from *first on): an even share,
 * at most one per four of its kb steps (the kernel's pace). */
static int64_t next_panel_share(next_panel_fetch *f, int64_t kb, const float **first)
{
    if (f->row >= f->rows)
        return 0;
    int64_t end = (f->rows * ++f->tile + f->tiles - 1) / f->tiles;
    if (end - f->row > kb / 4)
        end = f->row + kb / 4;
    if (end > f->rows)
        end = f->rows;
    *first = f->b + f->row * f->b_rs;
    const int64_t n = end - f->row;
    f->row = end;
    return n;
}

/* Fetch the rows [i0, i0 + rows) of A's k block into the cache: the
 * streamed loop reads A from DRAM with no store stream beside it, and the
 * hardware's prefetchers then left the kernels waiting for A where each
 * row's part is a few lines (2449029x47x32, one AMD Zen 5 core, C not
 * written at all: 55 ms; A fetched two row blocks ahead: 33; the loop
 * before, writing C: 44), and wherever A is transposed, its k block read
 * as k columns a leading dimension apart (716847x16x200 TN on 2 cores: 77
 * -> 29 ms). Longer rows fetched so (into L1) cost more than they saved
 * (1569960x16x200: 43 ms, 31 without, 33 before; NOTES.md, twentieth
 * session): those go to L2 (fetches_a_far). */
enum { FETCH_AHEAD = 2 }; /* row blocks ahead */

static int fetches_a(const vx_gemm_args *g, int64_t kb)
{
    return g->a_cs != 1 || kb * (int64_t)sizeof(float) <= 4 * 64;
}

/* Where a loop fetches A's rows ahead: not at all, into L1 (fetches_a) or
 * into L2 (fetches_a_far). */
typedef enum { A_FETCH_NONE, A_FETCH_L1, A_FETCH_L2 } a_fetch;

/* Always inlined: a prefetch reads and writes nothing GCC tracks, so a
 * helper of prefetches alone is a "const" call whose calls it deletes
 * wherever it does not inline the helper first (GCC 12: every fetch gone
 * at -O1 and -O2, and at -O3 once this one took the branch below). */
static inline __attribute__((always_inline)) void fetch_a_rows(const vx_gemm_args *g, const float *a, int64_t rows, int64_t k, a_fetch into)
{
    const int64_t along = g->a_cs == 1 ? k : rows, runs = g->a_cs == 1 ? rows : k;
    const int64_t step = g->a_cs == 1 ? g->a_rs : g->a_cs;
    for (int64_t r = 0; r < runs; r++) { /* a run: a row of the block, or a column where A is transposed */
        const char *run = (const char *)(a + r * step);
        for (int64_t o = 0; o < along * (int64_t)sizeof(float); o += 64) {
            if (into == A_FETCH_L2)
                __builtin_prefetch(run + o, 0, 2);
            else
                __builtin_prefetch(run + o, 0, 3);
        }
    }
}

/* Rows of a plain A (unit stride along k) longer than fetches_a's four
 * lines, read in place from far beyond the second level: the kernels walk
 * a tile's rows side by side, a float of each per k step, and the hardware
 * prefetchers left them waiting for A. Fetched FETCH_AHEAD row tiles ahead
 * into L2 (prefetcht1), where L1 would hold them beside B's panel: 14 x 32
 * tiles over 169343x32x128 (A 87 MB) on 2 AMD Zen 4 cores, the kernels
 * alone, 13.2 ms -> 9.5 (into L1: 12.3; oneDNN runs the GEMM in 9.5); one
 * core over A of 21.5 MB 2.12 -> 1.57 cycles an FMA, 7.2 MB 1.34 -> 1.26,
 * while A of 2.2 MB (in L3) ran 2 % slower fetched. Hence blocks over
 * A_FAR_L2S second levels only. The GNN suite's calls with k = 100..256
 * then ran 1.1-1.8x faster (169343x16x128 0.74-0.85x of oneDNN -> 1.26-
 * 1.29x), while rows of 500-600 floats, which the prefetchers follow on
 * their own, lost 5-12 % (a tile's hundreds of fetches at once): rows of
 * at most A_FAR_MAX_LINES lines only (NOTES.md, thirty-ninth session). */
enum { A_FAR_L2S = 4, A_FAR_MAX_LINES = 16 };

static int fetches_a_far(const vx_gemm_args *g, int64_t rows, int64_t kb)
{
    const int64_t row_bytes = kb * (int64_t)sizeof(float);
    return g->a_cs == 1 && !ext_of(g)->gather_a && row_bytes > 4 * 64 && row_bytes <= A_FAR_MAX_LINES * 64 &&
           (double)rows * (double)kb * sizeof(float) > A_FAR_L2S * (double)unit_l2_bytes();
}

/* The row tile FETCH_AHEAD tiles after the one at row i0 (of m1) of the k
 * block whose row 0 is at a_k, fetched as `into` says. */
static inline __attribute__((always_inline)) void fetch_a_ahead(const vx_gemm_args *g, const float *a_k, int64_t i0, int64_t m1, int mr, int64_t kb,
                                 a_fetch into)
{
    const int64_t ahead = i0 + FETCH_AHEAD * (int64_t)mr;
    if (into != A_FETCH_NONE && ahead < m1)
        fetch_a_rows(g, a_k + ahead * g->a_rs, min64(mr, m1 - ahead), kb, into);
}

/* Packed path on C[m0:m1, n0:n1]: Goto-style loops jc / pc / ic / jr / ir
 * (ic / strip / ir / jr where walks_rows). Each B micro-panel (kc x nr) is
 * reused by every A panel of the L2-resident A block before the next one
 * is touched. B's block is packed by the first
 * row block's first row tile as it reads each panel (packs_b_on_read), else
 * copied first; A's block is read in place (reads_a_in_place), else copied
 * into ap, its panels mr x kb apart. */
static void run_packed(const job *J, const item_view *v, float *ap, float *bp, int64_t m0, int64_t m1,
                       int64_t n0, int64_t n1)
{
    const vx_gemm_args *g = J->g;
    const vx_gemm_plan *P = J->plan;
    const int mr = P->mr, nr = P->nr;
    int64_t mc, kc, nc;
    block_sizes(g, P, &mc, &kc, &nc);
    /* A packed already: its panels, mr * k apart, read where they are (the
     * panel of row i0, a multiple of mr, at i0 * k; its k block at pc * mm);
     * row blocks must then start on panels (a testing override may set any
     * mc) */
    const float *a_pre = mc % mr == 0 ? v->a_panels : NULL;
    const int a_in_place = !a_pre && reads_a_in_place(g, mr), b_on_read = packs_b_on_read(g);
    const vx_ukernel_fn *kern = J->fam->kern[a_in_place ? VX_UK_AS_BP : VX_UK_AP_BP];
    const vx_ukernel_fetch_fn *kern_fetch = J->fam->fetch[a_in_place ? VX_UK_AS_BP : VX_UK_AP_BP];
    const vx_ukernel_pk_fn *kern_pk = b_on_read ? pk_kernels(J, b_fetched_far(g)) : NULL;
    /* A's strides for the kernels: in place, the matrix's; packed, the
     * packed kernels take none */
    const int64_t a_rs = a_in_place ? g->a_rs : 0, a_cs = a_in_place ? g->a_cs : 0;
    vx_epilogue epb;
    /* One row block, B packed as it is read: no panel of B is read again
     * after its row tiles, so each goes to the same buffer (hot in L1/L2)
     * instead of its place in a kc x nc block: 80x2304x768 (9x48, one
     * block) 567 -> 555 us, as fast as the direct plan; 80-160 rows 0.7-1.4 %
     * faster (AMD Zen 5, 2 threads). A B copied first (transposed, or a
     * convolution's gathered patches) keeps its block copy: gathering it
     * panel by panel ran an NCHW 3x3 convolution of 216225 pixels 1.5x
     * slower. */
    const int by_rows = walks_rows(g, P, kc);
    /* A read in place and B packed as it is read: the row block bounds no
     * copy of A, and more than one would read B's packed block (kc x nc, MBs,
     * beyond L2) again per block instead of packing each panel into one
     * buffer kept hot (one_block). So the cell's rows are one block where
     * their k block fits the unit's L2; beyond it, every panel would read
     * all of A's block from further out, which costs more than B's re-reads
     * where panels are narrow. Two AMD Zen 4 cores, 4 x 64 on 1 x 2, mc = 84
     * against one block, in one process: 272x2304x768 (A's block 0.8 MB)
     * 4467 -> 4323 us (oneDNN 4340), 272x3072x768 1.4 % faster; BERT's T17
     * qkv and ffn_up 3 % nearer oneDNN; without the L2 limit AVX2's 4 x 24
     * ran 1600-2048-row layers 8-10 % slower (NOTES.md, twenty-ninth
     * session). */
    if (a_in_place && b_on_read && !by_rows &&
        (double)(m1 - m0) * (double)kc * sizeof(float) <= (double)unit_l2_bytes())
        mc = m1 - m0;
    const int one_block = !by_rows && b_on_read && m1 - m0 <= mc;
    /* A transposed B (strided along n: no pk kernel reads it) is copied
     * panel by panel as the first row block reaches each panel, not as one
     * kc x nc block first: the panel is then still in L2 for the row tiles
     * that follow, where the block (MBs) had gone out to L3 before its
     * first panel was read. BERT's qkv layers NT (dietcode), Intel Xeon
     * guest, 2 threads, builds alternated in one window: 448x2304x768
     * 281/286 -> 291/293 GFLOP/s, 208x2304x768 259/262 -> 266/274,
     * 1024x3072x1024 288/283 -> 291/287 (NOTES.md, thirty-sixth session).
     * Gathered B (a convolution's patches) keeps the block copy (see
     * above). */
    const int b_by_panel = !b_on_read && !by_rows && !ext_of(g)->gather_b;
    /* A read in place from far: its rows fetched ahead as the first column
     * panel of each row block walks them (the others re-read the block
     * from L2) */
    const a_fetch fetch_far = a_in_place && fetches_a_far(g, m1 - m0, kc) ? A_FETCH_L2 : A_FETCH_NONE;
    for (int64_t jc = n0; jc < n1; jc += nc) {
        const int64_t nb = min64(nc, n1 - jc);
        for (int64_t pc = 0; pc < g->k; pc += kc) {
            const int64_t kb = min64(kc, g->k - pc);
            const float beta = pc == 0 ? g->beta : 1.0f;
            const int last_k = pc + kb >= g->k;
            if (!b_on_read && !b_by_panel)
                load_b(g, v, pc, kb, jc, nb, nr, bp);
            for (int64_t ic = m0; ic < m1; ic += mc) {
                const int64_t mb = min64(mc, m1 - ic);
                const float *ablk = a_in_place ? v->a + ic * g->a_rs + pc * g->a_cs
                                    : a_pre      ? a_pre + ic * g->k + pc * min64(mr, mb)
                                                 : ap;
                if (!a_in_place && !a_pre)
                    load_a(g, v, ic, mb, pc, kb, mr, ap);
                if (by_rows) { /* walks_rows: row tiles outside, over strips of B's panels */
                    const int64_t strip = min64(nb, rows_strip_cols(kb, nr));
                    for (int64_t j0 = 0; j0 < nb; j0 += strip)
                        for (int64_t ir = 0; ir < mb; ir += mr) {
                            const int64_t mm = min64(mr, mb - ir);
                            if (j0 == 0)
                                fetch_a_ahead(g, v->a + pc * g->a_cs, ic + ir, m1, mr, kb, fetch_far);
                            const float *apan = a_in_place ? ablk + ir * g->a_rs
                                                : a_pre    ? a_pre + (ic + ir) * g->k + pc * mm
                                                           : ap + ir * kb;
                            for (int64_t jr = j0; jr < min64(nb, j0 + strip); jr += nr) {
                                const int64_t nn = min64(nr, nb - jr);
                                float *bpan = bp + jr * kb, *cc = v->c + (ic + ir) * g->c_rs + jc + jr;
                                const vx_epilogue *ep = epilogue_at(g, v, last_k, ic + ir, jc + jr, &epb);
                                if (b_on_read && ic == m0 && ir == 0) /* the strip's first row tile packs */
                                    kern_pk[mm - 1](kb, apan, a_in_place ? a_rs : 1, a_in_place ? a_cs : mm,
                                                    v->b + pc * g->b_rs + jc + jr, g->b_rs, cc, g->c_rs, nn,
                                                    g->alpha, beta, ep, J->c_far, bpan);
                                else
                                    kern[mm - 1](kb, apan, a_rs, a_cs, bpan, nr, cc, g->c_rs, nn, g->alpha, beta,
                                                 ep, J->c_far);
                            }
                        }
                    continue;
                }
                for (int64_t jr = 0; jr < nb; jr += nr) {
                    const int64_t nn = min64(nr, nb - jr);
                    float *bpan = one_block ? bp : bp + jr * kb;
                    float *cc = v->c + ic * g->c_rs + jc + jr;
                    int64_t ir = 0;
                    if (b_by_panel && ic == m0)
                        load_b(g, v, pc, kb, jc + jr, nn, nr, bpan);
                    if (b_on_read && ic == m0) { /* this tile leaves the panel packed in bpan */
                        const int64_t mm = min64(mr, mb);
                        /* the pk kernels read A strided: a packed panel of mm
                         * rows is A with strides (1, mm) */
                        kern_pk[mm - 1](kb, ablk, a_in_place ? a_rs : 1, a_in_place ? a_cs : mm,
                                        v->b + pc * g->b_rs + jc + jr, g->b_rs, cc, g->c_rs, nn, g->alpha, beta,
                                        epilogue_at(g, v, last_k, ic, jc + jr, &epb), J->c_far, bpan);
                        ir = mm;
                    }
                    /* the panel the next pk call packs: the next one of
                     * this block, else (one block) the next k block's or
                     * column block's first */
                    next_panel_fetch nf;
                    const int64_t tiles = (mb - ir + mr - 1) / mr;
                    const int fetching = b_on_read && ic == m0 && fetches_next_panel(J, kb, nb);
                    if (jr + nr < nb)
                        next_panel_fetch_init(&nf, g, v, fetching, pc, kb, jc + jr + nr, min64(nr, nb - jr - nr),
                                              tiles);
                    else if (pc + kb < g->k)
                        next_panel_fetch_init(&nf, g, v, fetching && one_block, pc + kb, min64(kc, g->k - pc - kb),
                                              jc, min64(nr, nb), tiles);
                    else
                        next_panel_fetch_init(&nf, g, v, fetching && one_block, 0, min64(kc, g->k), jc + nb,
                                              min64(nr, n1 - jc - nb), tiles);
                    for (; ir < mb; ir += mr) {
                        const int64_t mm = min64(mr, mb - ir);
                        if (jr == 0)
                            fetch_a_ahead(g, v->a + pc * g->a_cs, ic + ir, m1, mr, kb, fetch_far);
                        const float *fetch_from = NULL;
                        const int64_t fetch_rows = next_panel_share(&nf, kb, &fetch_from);
                        /* a packed panel starts mr * kb floats after the last (packed
                         * already: mr * k, its k block at pc * mm) */
                        const float *apan = a_in_place ? ablk + ir * g->a_rs
                                            : a_pre    ? a_pre + (ic + ir) * g->k + pc * mm
                                                       : ap + ir * kb;
                        const vx_epilogue *ep = epilogue_at(g, v, last_k, ic + ir, jc + jr, &epb);
                        if (fetch_rows > 0)
                            kern_fetch[mm - 1](kb, apan, a_rs, a_cs, bpan, nr, cc + ir * g->c_rs, g->c_rs, nn,
                                               g->alpha, beta, ep, J->c_far, fetch_from, nf.b_rs, fetch_rows,
                                               nf.row_bytes);
                        else
                            kern[mm - 1](kb, apan, a_rs, a_cs, bpan, nr, cc + ir * g->c_rs, g->c_rs, nn, g->alpha,
                                         beta, ep, J->c_far);
                    }
                }
            }
        }
    }
}

/* Whether a direct plan on AVX2 copies its last, partial column panel:
 * AVX2 has no cheap masked load (vmaskmovps costs ~3 cycles more than a
 * load on AMD Zen 1), and the ragged kernels mask one vector per k step,
 * so a copy of the edge panel per k block (zero-padded, read by every row
 * tile) pays off only once enough row tiles read it. Measured, 1 thread:
 * two row tiles run faster masked (5x18x92 with 4x24: 1.50 us vs 1.63
 * copied; 4x18x48 with 3x24: 0.79 vs 0.88), three or more faster copied
 * (13x20x64 with 3x24: 2.40 vs 1.89; 30x10x12 with 4x16: 1.04 vs 0.84).
 * AVX-512 masks loads for free. `rows`: the rows of the cell (or, to
 * size the workspace, of the whole problem, which no cell exceeds). */
enum { EDGE_COPY_MIN_ROW_TILES = 3 };

static int copies_edge_panel(const vx_gemm_plan *P, const vx_gemm_args *g, int64_t rows)
{
    return P->path == VX_PATH_DIRECT && P->isa == VX_ISA_AVX2 &&
           rows > (EDGE_COPY_MIN_ROW_TILES - 1) * (int64_t)P->mr && g->n % P->nr != 0;
}

/* Whether a direct plan packs B's panels as its first row tile reads them
 * (the pk kernels, ukernel.h): the row tiles below the first then read the
 * panel packed, from L1, instead of B's rows, a leading dimension apart.
 * That pays with four row tiles or more: 24-32 x 768-2304 x 768-3072 ran
 * 4-13 % faster (8 of 8 alternations), while with two or three tiles (8, 13
 * and 16 rows) the first tile's extra stores cost more than the others
 * saved (4-10 % slower). AMD Zen 1, 2 threads, B hot in L3; NOTES.md,
 * eleventh session. `rows`: as for copies_edge_panel.
 *
 * Where B's rows lie closer than a page, the tune decides (tune.h,
 * pack_on_read_ratio): AMD Zen 4's AVX-512 kernels re-read such rows in
 * place from L2 as fast as a packed panel (0.28 ns a 16-wide FMA either
 * way, 8 x 48 over 768 rows), and the pk tile's extra stores cost it 15 %
 * in L1; the 57 suite plans that pack on read over 192-1000 columns ran
 * 0.968 of the time without (1 and 2 threads, forced plans alternated;
 * 47x768x3072 0.90, none slower than 1.006). Rows a page apart or more
 * (1024-8192 columns) ran the same either way (131 plans, 0.94-1.06).
 * The AVX2 kernels on that host ran 80x768x768 1.28x the time in place
 * (NOTES.md, forty-fourth session). */
enum { PK_MIN_ROW_TILES = 4 };

static atomic_int g_pack_on_read = 1;

void vx_gemm_set_pack_on_read(int mode) { atomic_store(&g_pack_on_read, mode < 0 ? 0 : mode > 2 ? 2 : mode); }

static int packs_on_read(const vx_gemm_plan *P, const vx_gemm_args *g, int64_t rows)
{
    const int mode = atomic_load_explicit(&g_pack_on_read, memory_order_relaxed);
    if (!mode || P->path != VX_PATH_DIRECT || rows <= (PK_MIN_ROW_TILES - 1) * (int64_t)P->mr)
        return 0;
    if (mode == 2)
        return 1;
    const vx_cpu_model *M = vx_cpu_model_get(P->isa);
    return !M || M->pack_near_on_read || g->b_rs * (int64_t)sizeof(float) >= M->desc.page_bytes;
}

/* Whether B's rows, b_rs floats apart, fall in so few L1 sets that the
 * rows the in-place kernels fetch ahead (16, gen_ukernels.py) evict each
 * other and the rows in use: addresses way_bytes apart share a set, so
 * such rows use way_bytes / gcd(stride, way_bytes) sets of `ways` lines
 * each. Those calls take the kernels that fetch into L2 (ukernel.h,
 * bs_far). Measured on AMD Zen 5 (48 KiB 12-way L1: 4 KiB per way), 2
 * threads, B from L3, both kernels alternated in one process: rows a
 * multiple of 4 KiB apart (12 rows held) ran 0.88-0.92x the time with
 * the L2 kernels (16x3072x768 236 -> 207 us, 16x4096x1024, 5x3072x768,
 * 32x4096x512 0.97x; 8x3072x768 0.99-1.05x); 2 and 6 KiB apart (24 rows)
 * no different (0.99-1.02x); 3 and 9 KiB apart (48 rows) 1.07-1.08x
 * slower (NOTES.md, fourteenth session). */
enum { FAR_MIN_L1_ROWS = 24 };

static int b_rows_alias_in_l1(int64_t b_rs)
{
    /* rows 1 KiB apart or closer use at least 32 sets of any L1 of 32 KiB
     * or more: not far; and the small calls, which have such rows, skip
     * the division below */
    if (b_rs <= 256)
        return 0;
    const vx_hw_info *hw = vx_hw();
    if (hw->l1d_ways <= 0 || hw->line_bytes <= 0 || hw->l1d_bytes <= 0)
        return 0;
    return vx_rows_held(b_rs * (int64_t)sizeof(float), hw->l1d_ways, hw->l1d_bytes / hw->l1d_ways,
                        hw->line_bytes) < FAR_MIN_L1_ROWS;
}

/* Whether the in-place kernels fetch B's rows with the far kernels: rows
 * that alias in L1 (above), or a B larger than the last-level cache, whose
 * rows come from DRAM on every call, each through a TLB miss where they lie
 * a page or more apart: 16 rows fetched ahead into L1 left the kernels
 * waiting (66x4057x3535, B 57 MB, 6x64 tiles on 2 AMD Zen 5 cores: 5.2-5.8
 * ms, 4.7-4.8 with the far kernels; NOTES.md, eighteenth session). */
static int b_fetched_far(const vx_gemm_args *g)
{
    const int64_t last = vx_gemm_last_level_bytes();
    return b_rows_alias_in_l1(g->b_rs) ||
           (last > 0 && (double)g->k * (double)g->n * (double)sizeof(float) > (double)last);
}

/* In-place paths on C[m0:m1, n0:n1]: A is read where it lies; B is either
 * read in place (unit-stride rows) or packed one kc x nr block at a time.
 * K is blocked (the plan's kc) and is the outer loop: one k block of B's
 * rows is used across every column panel before the next block, and every
 * row block of A passes over each panel. A's k block stays in cache across
 * the panels, and B's rows of the block, a leading dimension apart, are
 * walked panel after panel while their pages are still in the TLB. Panels
 * outside k blocks walked all of K per panel: 1.1-1.3x slower where B is
 * wide (16x1000x4096, 8x768x3072, 32x4096x1024; NOTES.md), no different
 * elsewhere. C's tiles are loaded and stored once per k block either way.
 * A direct plan over several row tiles packs each panel as its first tile
 * reads it (packs_on_read); the other tiles read that copy. */
static void run_inplace(const job *J, const item_view *v, float *bp, int64_t m0, int64_t m1, int64_t n0,
                        int64_t n1, int pack_b)
{
    const vx_gemm_args *g = J->g;
    const int mr = J->plan->mr, nr = J->plan->nr;
    const int64_t kc = min64(J->plan->kc, g->k);
    const int on_read = pack_b ? packs_b_on_read(g) : packs_on_read(J->plan, g, m1 - m0);
    const int copy_edge = !pack_b && !on_read && copies_edge_panel(J->plan, g, m1 - m0);
    const vx_ukernel_fn *kern_bp = J->fam->kern[VX_UK_AS_BP];
    const int far = b_fetched_far(g);
    const vx_ukernel_fn *kern_bs = far ? J->fam->bs_far : J->fam->kern[VX_UK_AS_BS];
    const vx_ukernel_pk_fn *kern_pk = pk_kernels(J, far);
    /* A transposed, its k block k columns a leading dimension apart, from
     * beyond the L2: fetched ahead (fetch_a_rows; 716847x32x32 TN with beta
     * = 1 on 2 AMD Zen 5 cores: 17 -> 5.5 ms, 20000x32x32 0.18 -> 0.12; an
     * A block within the L2, 4096x64x64, 0.090 -> 0.099: not fetched) */
    const a_fetch fetch = g->a_cs != 1 && (double)(m1 - m0) * (double)kc * sizeof(float) > vx_hw()->l2_bytes / 2.0
                              ? A_FETCH_L1
                          : fetches_a_far(g, m1 - m0, kc) ? A_FETCH_L2
                                                          : A_FETCH_NONE;
    vx_epilogue epb;
    for (int64_t pc = 0; pc < g->k; pc += kc) {
        const int64_t kb = min64(kc, g->k - pc);
        const float beta = pc == 0 ? g->beta : 1.0f;
        const int last_k = pc + kb >= g->k;
        const float *apan = v->a + pc * g->a_cs;
        for (int64_t j0 = n0; j0 < n1; j0 += nr) {
            const int64_t nn = min64(nr, n1 - j0);
            const float *bin = v->b + pc * g->b_rs + j0 * g->b_cs;
            int64_t i0 = m0;
            if (on_read) { /* the first row tile reads B in place and leaves its packed panel in bp */
                const int64_t mm = min64(mr, m1 - i0);
                kern_pk[mm - 1](kb, apan + i0 * g->a_rs, g->a_rs, g->a_cs, bin, g->b_rs,
                                   v->c + i0 * g->c_rs + j0, g->c_rs, nn, g->alpha, beta,
                                   epilogue_at(g, v, last_k, i0, j0, &epb), J->c_far, bp);
                i0 += mm;
            }
            const int copied = pack_b || on_read || (copy_edge && nn < nr);
            /* packed already: the panel's k block in place (cells start on panels) */
            const float *pre = pack_b && v->b_panels ? v->b_panels + (j0 / nr * g->k + pc) * nr : NULL;
            const float *bpan = pre ? pre : copied ? bp : bin;
            const int64_t b_rs = copied ? nr : g->b_rs;
            const vx_ukernel_fn *kern = copied ? kern_bp : kern_bs;
            if (copied && !on_read && !pre)
                load_b(g, v, pc, kb, j0, nn, nr, bp);
            /* on_read: the panel the next pk call packs (next_panel_fetch) */
            next_panel_fetch nf;
            const int64_t tiles = (m1 - i0 + mr - 1) / mr;
            const int fetching = on_read && fetches_next_panel(J, kb, n1 - n0);
            if (j0 + nr < n1)
                next_panel_fetch_init(&nf, g, v, fetching, pc, kb, j0 + nr, min64(nr, n1 - j0 - nr), tiles);
            else
                next_panel_fetch_init(&nf, g, v, fetching, pc + kb, min64(kc, g->k - pc - kb), n0,
                                      min64(nr, n1 - n0), tiles);
            for (; i0 < m1; i0 += mr) {
                const int64_t mm = min64(mr, m1 - i0);
                fetch_a_ahead(g, apan, i0, m1, mr, kb, fetch);
                const vx_epilogue *ep = epilogue_at(g, v, last_k, i0, j0, &epb);
                const float *fetch_from = NULL;
                const int64_t fetch_rows = copied ? next_panel_share(&nf, kb, &fetch_from) : 0;
                if (fetch_rows > 0)
                    J->fam->fetch[VX_UK_AS_BP][mm - 1](kb, apan + i0 * g->a_rs, g->a_rs, g->a_cs, bpan, b_rs,
                                                       v->c + i0 * g->c_rs + j0, g->c_rs, nn, g->alpha, beta, ep,
                                                       J->c_far, fetch_from, nf.b_rs, fetch_rows, nf.row_bytes);
                else
                    kern[mm - 1](kb, apan + i0 * g->a_rs, g->a_rs, g->a_cs, bpan, b_rs, v->c + i0 * g->c_rs + j0,
                                 g->c_rs, nn, g->alpha, beta, ep, J->c_far);
            }
        }
    }
}

/* C streamed past the caches (stream.h) where it is written once (one k
 * block and beta = 0, so no tile reads it) and is twice the last-level
 * cache or more, which it would only pass through (a C just past it kept
 * part of itself there with plain stores: 132534x112x64, C 59 MB against a
 * 32 MB L3, ran 4.6 ms plain and 5.3 streamed). Row blocks are the
 * outer loop, so A is read once and C written in order: each row block's
 * tiles go to a stage in L1 of at most STAGE_FLOATS, whose rows are then
 * streamed to C. Where C's rows are contiguous (a cell of whole rows, ldc =
 * n) a cell's C is one range; else each row's part is one, and where those
 * parts do not start and end on a line, the tiles store to C plainly (a
 * part line at both ends of every row held the streamed stores behind its
 * read from DRAM). Every row block walks the cell's B: in-place plans only,
 * with the cell's k x n_c of B in half the L2 (a pack-B plan packs it once).
 * 716847x100x16 on 2 AMD Zen 5 cores: 16-20 ms before (A read once per
 * column tile, C's lines fetched, half of each, per tile), 9 with this;
 * NOTES.md, twentieth session. */
enum { STAGE_FLOATS = 4096 }; /* each half: 16 KiB, a third of a 48 KiB L1 */

/* The bytes of C from which calls stream it; -1 until first asked. Every
 * call with beta = 0 on an in-place plan reads it: one load (vx_hw()'s
 * pthread_once a call cost the small suite 7 %). */
static atomic_llong g_stream_min = -1;
static atomic_int g_stream_set; /* vx_gemm_set_stream_bytes gave a size */
/* vx_gemm_set_last_level_bytes's size, or the hardware query's once read;
 * -1 until then. Every call reads it (vx_gemm_c_far), hence not vx_hw()
 * each time. */
static atomic_llong g_last_level = -1;

int64_t vx_gemm_last_level_bytes(void)
{
    int64_t last = atomic_load_explicit(&g_last_level, memory_order_relaxed);
    if (last < 0) {
        const vx_hw_info *hw = vx_hw();
        last = hw->l3_bytes > 0 ? hw->l3_bytes : hw->l2_bytes > 0 ? hw->l2_bytes : 0;
        atomic_store_explicit(&g_last_level, last, memory_order_relaxed);
    }
    return last;
}

static int64_t default_stream_min(void)
{
    const int64_t last = vx_gemm_last_level_bytes();
    return last > 0 ? 2 * last : INT64_MAX;
}

void vx_gemm_set_stream_bytes(int64_t bytes)
{
    atomic_store(&g_stream_set, bytes >= 0);
    atomic_store(&g_stream_min, bytes < 0 ? default_stream_min() : bytes);
}

void vx_gemm_set_last_level_bytes(int64_t bytes)
{
    atomic_store(&g_last_level, bytes > 0 ? bytes : -1);
    if (!atomic_load(&g_stream_set)) /* a testing size stays */
        atomic_store(&g_stream_min, default_stream_min());
}

int64_t vx_gemm_stream_c_min(void)
{
    int64_t t = atomic_load_explicit(&g_stream_min, memory_order_relaxed);
    if (t < 0) {
        t = default_stream_min();
        atomic_store_explicit(&g_stream_min, t, memory_order_relaxed);
    }
    return t;
}

int64_t vx_gemm_stream_b_max(void) { return vx_hw()->l2_bytes > 0 ? vx_hw()->l2_bytes / 2 : 0; }

static atomic_int g_one_tile_k_max = VX_GEMM_STREAM_ONE_TILE_K_MAX;

int vx_gemm_stream_one_tile_k_max(void) { return atomic_load_explicit(&g_one_tile_k_max, memory_order_relaxed); }

void vx_gemm_set_stream_one_tile_k_max(int k)
{
    atomic_store(&g_one_tile_k_max, k < 0 ? VX_GEMM_STREAM_ONE_TILE_K_MAX : k);
}

/* Whether the kernels are told C's tiles come from beyond the caches
 * (ukernel.h, c_far): C more than the last level holds. Within it, a tile
 * of whole rows written and not read is not fetched on entry (the models'
 * plans on 13752-132534 x 32 x 32 ran 4-5 % faster); past it, it is
 * (716847x32x32, 92 MB of C, ran 7 % slower unfetched). */
int vx_gemm_c_far(double c_bytes)
{
    const int64_t last = vx_gemm_last_level_bytes();
    return last > 0 && c_bytes > (double)last;
}

/* Whether the call writes a C that goes past the caches when streamed: C
 * written, not read (beta = 0), of at least stream_c_min bytes. */
static int c_past_caches(const vx_gemm_args *g)
{
    return g->beta == 0.0f && c_bytes_of(g) >= (double)vx_gemm_stream_c_min();
}

/* The columns of C a cell of the plan's grid spans, rounded up to tiles. */
static int64_t cell_cols_of(const vx_gemm_args *g, const vx_gemm_plan *P)
{
    const int64_t units = (g->n + P->nr - 1) / P->nr;
    return (units + P->threads_n - 1) / P->threads_n * P->nr;
}

/* A cell of one column tile already runs in row-block order; streaming it
 * then only saves C's fetch, which pays where C's traffic is the larger
 * part: short k. 2449029x47 on 8x48 tiles, 2 AMD Zen 5 cores, streamed and
 * not alternated: k = 16 0.65x the time in one window and 1.19x in another
 * (the host's DRAM is shared), k = 32 0.89-0.94x, k = 64 1.0-1.1x, k =
 * 128 1.03-1.18x (the kernels near their peak, the stage's copy on top);
 * 2449029x16x16, 716847x32x32, 1569960x16x16: 0.6-0.8x. Hence
 * VX_GEMM_STREAM_ONE_TILE_K_MAX (gemm.h), which the model prices too. On
 * 2 AMD Zen 4 cores such cells ran slower streamed at every k: 716847x32x32
 * 1.31-1.55x oneDNN's time streamed, 1.09-1.13x not; 2449029x47x16
 * 1.31x against 0.92-0.96x. The tune measures it (tune.h,
 * stream_one_tile_ratio), and where streaming loses the bound drops to 0
 * (NOTES.md, fortieth session). */
static int streams_c(const vx_gemm_args *g, const vx_gemm_plan *P)
{
    if (P->path == VX_PATH_PACKED || P->kc < g->k || !c_past_caches(g))
        return 0;
    const int64_t cols = cell_cols_of(g, P);
    if (cols <= P->nr && g->k > vx_gemm_stream_one_tile_k_max())
        return 0;
    return (double)g->k * (double)cols * sizeof(float) <= (double)vx_gemm_stream_b_max();
}

/* The stage's width: the cell's columns rounded up to the tile, at most
 * what fits STAGE_FLOATS in whole tiles (one tile at least). */
static int64_t stage_cols_of(const vx_gemm_args *g, const vx_gemm_plan *P)
{
    const int64_t nr = P->nr, cell = cell_cols_of(g, P);
    const int64_t fit = STAGE_FLOATS / P->mr / nr * nr;
    const int64_t cap = fit > nr ? fit : nr;
    return cell < cap ? cell : cap;
}

/* A row block's part of C in the stage, waiting to be streamed out. */
typedef struct {
    const float *stage;
    int64_t i0, c0, mm, cw;
} staged_block;

static void stream_out(const job *J, const item_view *v, vx_stream *out, int whole_rows, const staged_block *b)
{
    if (whole_rows) {
        vx_stream_put(out, b->stage, b->mm * b->cw);
        return;
    }
    for (int64_t r = 0; r < b->mm; r++) { /* every row's part is whole lines */
        vx_stream_begin(out, v->c + (b->i0 + r) * J->g->c_rs + b->c0, J->plan->isa);
        vx_stream_put(out, b->stage + r * b->cw, b->cw);
    }
}

/* The streamed form of run_inplace (see streams_c). The stage has two
 * halves: a block goes out while the next is computed into the other one.
 * Read back at once, the block's loads straddled the tiles' stores still in
 * flight and waited for them (2449029x47x32 on 2 AMD Zen 5 cores, A fetched
 * ahead: 31 ms, 20 one block later; 22 unstreamed; NOTES.md, twentieth
 * session). */
static void run_streamed(const job *J, const item_view *v, float *stage, float *bp, int64_t m0, int64_t m1,
                         int64_t n0, int64_t n1, int pack_b)
{
    const vx_gemm_args *g = J->g;
    const int mr = J->plan->mr, nr = J->plan->nr;
    const int64_t kb = g->k, sc = J->stage_cols, half = (int64_t)mr * sc;
    const vx_ukernel_fn *kern = pack_b ? J->fam->kern[VX_UK_AS_BP]
                                       : (b_fetched_far(g) ? J->fam->bs_far : J->fam->kern[VX_UK_AS_BS]);
    const int64_t lf = 64 / (int64_t)sizeof(float); /* floats in a line */
    const int whole_rows = g->c_rs == n1 - n0 && n1 - n0 <= sc;
    const int lined = ((uintptr_t)v->c & 63) == 0 && g->c_rs % lf == 0 && n0 % lf == 0 &&
                      (n1 - n0) % lf == 0 && sc % lf == 0;
    const int staged = whole_rows || lined;
    const a_fetch fetch = fetches_a(g, kb) ? A_FETCH_L1 : fetches_a_far(g, m1 - m0, kb) ? A_FETCH_L2 : A_FETCH_NONE;
    /* every panel of the cell, once: panel q at bp + q * kb * nr (packed
     * already: the same layout, from the cell's first panel; kb is all of k) */
    const float *panels = pack_b && v->b_panels ? v->b_panels + n0 / nr * kb * nr : bp;
    if (pack_b && !v->b_panels)
        load_b(g, v, 0, kb, n0, n1 - n0, nr, bp);
    vx_stream out;
    if (whole_rows)
        vx_stream_begin(&out, v->c + m0 * g->c_rs + n0, J->plan->isa);
    staged_block pending = { NULL, 0, 0, 0, 0 };
    int turn = 0;
    vx_epilogue epb;
    for (int64_t i0 = m0; i0 < m1; i0 += mr) {
        const int64_t mm = min64(mr, m1 - i0);
        const float *arow = v->a + i0 * g->a_rs;
        fetch_a_ahead(g, v->a, i0, m1, mr, kb, fetch);
        for (int64_t c0 = n0; c0 < n1; c0 += sc) {
            const int64_t cw = min64(sc, n1 - c0);
            float *c = staged ? stage + turn * half : v->c + i0 * g->c_rs + c0;
            const int64_t c_rs = staged ? cw : g->c_rs;
            for (int64_t j0 = c0; j0 < c0 + cw; j0 += nr) {
                const int64_t nn = min64(nr, c0 + cw - j0);
                const float *b = pack_b ? panels + (j0 - n0) / nr * kb * nr : v->b + j0 * g->b_cs;
                kern[mm - 1](kb, arow, g->a_rs, g->a_cs, b, pack_b ? nr : g->b_rs, c + (j0 - c0), c_rs, nn,
                             g->alpha, 0.0f, epilogue_at(g, v, 1, i0, j0, &epb), !staged && J->c_far);
            }
            if (staged) {
                if (pending.stage)
                    stream_out(J, v, &out, whole_rows, &pending);
                pending = (staged_block){ c, i0, c0, mm, cw };
                turn ^= 1;
            }
        }
    }
    if (pending.stage)
        stream_out(J, v, &out, whole_rows, &pending);
    if (whole_rows)
        vx_stream_end(&out);
    if (staged)
        vx_stream_fence();
}

/* One thread's share: whichever grid cells are still unclaimed when it asks
 * (a thread slowed by anything, a busy core or a stolen vCPU, simply takes
 * fewer). Each thread packs into its own workspace slice. */
static void task(void *ctx, int tid, int nthreads)
{
    job *J = ctx;
    const vx_gemm_plan *P = J->plan;
    const int grid = P->threads_m * P->threads_n;
    const int64_t cells = (int64_t)grid * items_of(J->g);
    float *ap = J->ws + (size_t)tid * (J->ws_a + J->ws_b + SLICE_PAD_FLOATS);
    float *bp = ap + J->ws_a;
    for (int64_t cell = -1; (cell = vx_pool_claim(&J->next_cell, cell, 1, nthreads)) < cells;) {
        /* A one-cell grid (most small calls) skips the divisions. */
        const int64_t item = grid == 1 ? cell : cell / grid;
        const int rest = grid == 1 ? 0 : (int)(cell % grid);
        const int ti = P->threads_n == 1 ? rest : rest / P->threads_n;
        const int tj = P->threads_n == 1 ? 0 : rest % P->threads_n;
        int64_t m0, m1, n0, n1;
        split(J->g->m, P->mr, P->threads_m, ti, &m0, &m1);
        split(J->g->n, P->nr, P->threads_n, tj, &n0, &n1);
        if (m0 >= m1 || n0 >= n1)
            continue;
        const item_view v = view_of(J->g, item);
        if (J->stage_cols > 0) {
            run_streamed(J, &v, ap, bp, m0, m1, n0, n1, P->path != VX_PATH_DIRECT);
            continue;
        }
        switch (P->path) {
        case VX_PATH_DIRECT: run_inplace(J, &v, bp, m0, m1, n0, n1, 0); break;
        case VX_PATH_PACK_B: run_inplace(J, &v, bp, m0, m1, n0, n1, 1); break;
        default: run_packed(J, &v, ap, bp, m0, m1, n0, n1); break;
        }
    }
}

/* ---- the matrix-vector path (m == 1 or n == 1) ---------------------------- */

/* The call as one of gemv.h's two forms: an output vector y of len elements
 * (stride incy), a matrix read in place, a vector x of k elements. */
typedef struct {
    const vx_gemm_args *g;
    const vx_gemv_kernels *K;
    int dot;                 /* dot form (matrix rows along k), else axpy */
    int64_t len;
    int64_t ldm, incx, incy; /* matrix row stride; x and y strides */
    int x_is_a;              /* x comes from A (m == 1), else from B */
    int rows;                /* output rows at once: 1, or m (2..rows_max, axpy form, x_is_a) */
    int64_t pass_floats;     /* the few-row kernel's pass bound (gemv.h): L1's share where the
                                matrix is in the caches, else 0 */
    int64_t chunk, chunks;   /* output elements per cell, cells per item */
    float *xbuf;             /* dot form with a strided x: contiguous copies, k per item */
    atomic_llong next_cell;
    /* K split (axpy forms, one item): slice q takes the matrix's rows
     * [q * kslice, (q + 1) * kslice) and leaves its partial sums, rows x len,
     * at part + q * part_stride (rows part_rs apart) */
    int kslices;
    int64_t kslice, part_rs, part_stride;
    float *part;
    atomic_int slices_done;
    atomic_ullong slices_claimed; /* bit q: slice q taken (so at most 64 slices) */
} gemv_job;

/* Fill the form for g; 0 when neither form fits its strides. */
static int gemv_form(const vx_gemm_args *g, gemv_job *J, const vx_gemv_kernels *K)
{
    if (ext_of(g)->gather_a || ext_of(g)->gather_b)
        return 0;
    J->rows = 1;
    if (g->m != 1 && g->n != 1) {
        /* A few rows of C: each row's axpy form, B's unit-stride rows read once for all */
        if (g->m > K->rows_max || g->b_cs != 1)
            return 0;
        J->rows = (int)g->m;
        J->len = g->n;
        J->incy = 1;
        J->x_is_a = 1;
        J->incx = g->a_cs;
        J->dot = 0;
        J->ldm = g->b_rs;
        return 1;
    }
    if (g->n == 1) { /* y = C's column, the matrix is A, x is B's column */
        J->len = g->m;
        J->incy = g->c_rs;
        J->x_is_a = 0;
        J->incx = g->b_rs;
        if (g->a_cs == 1) {
            J->dot = 1;
            J->ldm = g->a_rs;
        } else if (g->a_rs == 1) {
            J->dot = 0;
            J->ldm = g->a_cs;
        } else {
            return 0;
        }
    } else { /* m == 1: y = C's row, the matrix is B, x is A's row */
        J->len = g->n;
        J->incy = 1;
        J->x_is_a = 1;
        J->incx = g->a_cs;
        if (g->b_cs == 1) {
            J->dot = 0;
            J->ldm = g->b_rs;
        } else if (g->b_rs == 1) {
            J->dot = 1;
            J->ldm = g->b_cs;
        } else {
            return 0;
        }
    }
    return 1;
}

/* The store of output row r (0 unless a few-row form) of item view v, y
 * starting at element lo: the bias along y is per element, the one along
 * the unit dimension a scalar (per row of C in the few-row form). */
static vx_gemv_store row_store(const gemv_job *J, const item_view *v, int64_t lo, int r)
{
    const vx_gemm_args *g = J->g;
    const float *bias_y = J->x_is_a ? v->bias_col : v->bias_row;
    const float *bias_1 = J->x_is_a ? v->bias_row : v->bias_col;
    const int ep = ext_of(g)->epilogue;
    return (vx_gemv_store){ g->alpha, g->beta, ep && bias_y ? bias_y + lo : NULL, ep && bias_1 ? bias_1[r] : 0.0f,
                            ep && ext_of(g)->relu };
}

/* Claims slice q of a k split: 1 for the one thread that gets it. */
static inline int claim_slice(gemv_job *J, int q)
{
    const unsigned long long bit = 1ull << q;
    return !(atomic_fetch_or_explicit(&J->slices_claimed, bit, memory_order_relaxed) & bit);
}

/* The split over k. Each thread first takes the slice of its home
 * (threadpool.h), so each slice is read by the same core call after call
 * (1x1000x2048, two threads on AMD Zen 1: 33 GB/s by thread number with the
 * caller wandering between the cores, 67 by home), then any slice still
 * unclaimed: a caller whose worker wakes late (~28 us from sleep) runs the
 * worker's slice itself instead of waiting. Whichever thread ends the last
 * slice sums the partials and stores y (acquire-release on the count: it
 * sees every other slice's sums). */
static void gemv_ksplit_task(gemv_job *J, int tid, int nthreads)
{
    const vx_gemm_args *g = J->g;
    const item_view v = view_of(g, 0);
    const float *mat = J->x_is_a ? v.b : v.a;
    const float *x = J->x_is_a ? v.a : v.b;
    vx_gemv_store plain[VX_GEMV_ROWS_MAX]; /* the partial sums as they are */
    for (int r = 0; r < VX_GEMV_ROWS_MAX; r++)
        plain[r] = (vx_gemv_store){ 1.0f, 0.0f, NULL, 0.0f, 0 };
    const int home = vx_pool_home(tid, nthreads) % J->kslices;
    for (int i = 0; i < J->kslices; i++) {
        const int q = (home + i) % J->kslices;
        if (!claim_slice(J, q))
            continue;
        const int64_t k0 = q * J->kslice, kl = min64(J->kslice, g->k - k0);
        float *part = J->part + q * J->part_stride;
        if (J->rows > 1)
            J->K->axpy_rows(J->rows, J->len, kl, mat + k0 * J->ldm, J->ldm, x + k0 * J->incx, g->a_rs, J->incx, part,
                            J->part_rs, plain, J->pass_floats);
        else
            J->K->axpy(J->len, kl, mat + k0 * J->ldm, J->ldm, x + k0 * J->incx, J->incx, part, 1, plain);
        if (atomic_fetch_add_explicit(&J->slices_done, 1, memory_order_acq_rel) != J->kslices - 1)
            continue;
        for (int r = 0; r < J->rows; r++) {
            const vx_gemv_store st = row_store(J, &v, 0, r);
            J->K->sum_store(J->kslices, J->part + r * J->part_rs, J->part_stride, J->len, v.c + r * g->c_rs,
                            J->incy, &st);
        }
    }
}

static void gemv_task(void *ctx, int tid, int nthreads)
{
    gemv_job *J = ctx;
    const vx_gemm_args *g = J->g;
    const int64_t cells = J->chunks * items_of(g);
    if (J->kslices > 1) {
        gemv_ksplit_task(J, tid, nthreads);
        return;
    }
    for (int64_t cell = -1; (cell = vx_pool_claim(&J->next_cell, cell, 1, nthreads)) < cells;) {
        const int64_t item = J->chunks == 1 ? cell : cell / J->chunks;
        const int64_t lo = J->chunks == 1 ? 0 : (cell % J->chunks) * J->chunk;
        const int64_t n = min64(J->chunk, J->len - lo);
        if (n <= 0)
            continue;
        const item_view v = view_of(g, item);
        const float *mat = J->x_is_a ? v.b : v.a;
        const float *x = J->x_is_a ? v.a : v.b;
        float *y = v.c + lo * J->incy;
        if (J->rows > 1) {
            vx_gemv_store rs[VX_GEMV_ROWS_MAX];
            for (int i = 0; i < J->rows; i++)
                rs[i] = row_store(J, &v, lo, i);
            J->K->axpy_rows(J->rows, n, g->k, mat + lo, J->ldm, x, g->a_rs, J->incx, y, g->c_rs, rs,
                            J->pass_floats);
        } else {
            const vx_gemv_store st = row_store(J, &v, lo, 0);
            if (J->dot) {
                const float *xc = J->xbuf ? J->xbuf + item * g->k : x;
                J->K->dot(n, g->k, mat + lo * J->ldm, J->ldm, xc, y, J->incy, &st);
            } else {
                J->K->axpy(n, g->k, mat + lo, J->ldm, x, J->incx, y, J->incy, &st);
            }
        }
    }
}

/* Whether splitting k among the threads beats splitting y (gemv.h,
 * VX_GEMV_KSPLIT_LEN; the analyzer prices the same rule). */
/* The few-row kernel's pass bound (gemm.h): 3/4 of L1 where the matrix,
 * k rows of len floats, fits the last-level cache (its passes then read it
 * from a cache, and the partial sums are worth keeping in L1); 0 for a
 * matrix from DRAM, whose passes want long runs of each row. */
int64_t vx_gemv_pass_floats(int64_t len, int64_t k)
{
    const vx_hw_info *hw = vx_hw();
    const int64_t last = vx_gemm_last_level_bytes();
    if (hw->l1d_bytes <= 0 || last <= 0 || (double)len * (double)k * sizeof(float) > (double)last)
        return 0;
    return hw->l1d_bytes / 4 * 3 / (int64_t)sizeof(float);
}

static int ksplit_pays(int64_t len, int64_t k, int rows, int threads)
{
    return vx_gemv_ksplit_rule(VX_GEMV_KSPLIT_LEN, VX_GEMV_KSPLIT_K_PER_ROW, len, k, rows, threads);
}

/* Splits y over the threads in multiples of the kernel's step, or k where
 * ksplit_pays; a dot form with a strided x reads a contiguous copy of it (k
 * floats per item). */
static vx_status run_gemv(const vx_gemm_args *g, const vx_gemm_plan *plan, gemv_job *J, int *threads_used)
{
    const int64_t items = items_of(g);
    J->K = vx_gemv_kernels_for(plan->isa);
    const int64_t unit = J->dot ? J->K->dot_rows : J->K->axpy_cols;
    const int threads = plan->threads < 1 ? 1 : plan->threads;
    J->pass_floats = J->rows > 1 ? vx_gemv_pass_floats(J->len, g->k) : 0;
    J->kslices = 1;
    if (threads == 1) { /* one chunk: none of the three 64-bit divisions (~40 cycles each on Zen 1) */
        J->chunk = J->len;
        J->chunks = 1;
    } else if (!J->dot && items == 1 && ksplit_pays(J->len, g->k, J->rows, threads)) {
        /* The matrix's rows split among the threads: each streams one
         * contiguous range (1x768x3072, B 9.4 MB, repeated, two threads on
         * AMD Zen 1: 25 GB/s split by columns, 94 by k). */
        const int most = threads < 64 ? threads : 64;
        J->kslice = (g->k + most - 1) / most;
        J->kslices = (int)((g->k + J->kslice - 1) / J->kslice); /* none empty */
        J->part_rs = (J->len + 15) / 16 * 16;
        J->part_stride = J->rows * J->part_rs;
        J->chunk = J->len;
        J->chunks = 1;
        if (!(J->part = vx_scratch(SLOT_VECTOR, (size_t)(J->kslices * J->part_stride))))
            return vx_fail(VX_ERR_NO_MEMORY, "dyn_gemm: out of memory for %lld floats of partial sums",
                           (long long)(J->kslices * J->part_stride));
        atomic_init(&J->slices_done, 0);
        atomic_init(&J->slices_claimed, 0);
    } else {
        const int64_t per = (J->len + threads - 1) / threads;
        J->chunk = (per + unit - 1) / unit * unit;
        J->chunks = (J->len + J->chunk - 1) / J->chunk;
    }
    J->xbuf = NULL;
    if (J->dot && J->incx != 1) {
        if (!(J->xbuf = vx_scratch(SLOT_VECTOR, (size_t)(items * g->k))))
            return vx_fail(VX_ERR_NO_MEMORY, "dyn_gemm: out of memory for a %lld-float vector copy",
                           (long long)(items * g->k));
        for (int64_t it = 0; it < items; it++) {
            const item_view v = view_of(g, it);
            const float *x = J->x_is_a ? v.a : v.b;
            for (int64_t p = 0; p < g->k; p++)
                J->xbuf[it * g->k + p] = x[p * J->incx];
        }
    }
    atomic_init(&J->next_cell, 0);
    const int64_t cells = J->kslices > 1 ? J->kslices : J->chunks * items;
    const int t = cells < threads ? (int)cells : threads;
    const int used = t > 1 ? vx_pool_run(gemv_task, J, t) : (gemv_task(J, 0, 1), 1);
    if (threads_used)
        *threads_used = used;
    return VX_OK;
}

/* ---- the dot-form path (B stored transposed) ------------------------------ */

/* A plain GEMM both of whose operands run along k (cpu/dot.h): A's rows
 * (a_cs == 1) and B's columns (b_rs == 1). Each unit takes a run of C's
 * column tiles; per k block and row block it passes every row tile over
 * each column tile, whose B^T rows then stay in L1 for the row tiles
 * after the first. */
typedef struct {
    const vx_gemm_args *g;
    const vx_dot_set *D;
    int64_t kb, mc, col_tiles;
} dot_job;

static void dot_task(void *ctx, int tid, int nthreads)
{
    const dot_job *J = ctx;
    const vx_gemm_args *g = J->g;
    const int mr = J->D->mr, nr = J->D->nr;
    vx_epilogue epb;
    /* the pool may run fewer threads than asked (busy with another call):
     * the share follows the count it ran */
    const int64_t t0 = J->col_tiles * tid / nthreads, t1 = J->col_tiles * (tid + 1) / nthreads;
    for (int64_t item = 0; item < items_of(g); item++) {
        const item_view v = view_of(g, item);
        for (int64_t pc = 0; pc < g->k; pc += J->kb) {
            const int64_t kb = min64(J->kb, g->k - pc);
            const float beta = pc == 0 ? g->beta : 1.0f;
            const int last_k = pc + kb >= g->k;
            for (int64_t ic = 0; ic < g->m; ic += J->mc) {
                const int64_t i_end = min64(ic + J->mc, g->m);
                for (int64_t t = t0; t < t1; t++) {
                    const int64_t j0 = t * nr;
                    const int n = (int)min64(nr, g->n - j0);
                    const float *bt = v.b + j0 * g->b_cs + pc;
                    for (int64_t i0 = ic; i0 < i_end; i0 += mr) {
                        const int m = (int)min64(mr, i_end - i0);
                        J->D->fn[m - 1][n - 1](kb, v.a + i0 * g->a_rs + pc, g->a_rs, bt, g->b_cs,
                                               v.c + i0 * g->c_rs + j0, g->c_rs, g->alpha, beta,
                                               epilogue_at(g, &v, last_k, i0, j0, &epb));
                    }
                }
            }
        }
    }
}

/* Whether the call's operands take the dot form: A's rows and B's columns
 * along k, in place (no gathered operand). */
static int dot_form(const vx_gemm_args *g)
{
    return g->a_cs == 1 && g->b_rs == 1 && g->k >= 1 && !ext_of(g)->gather_a && !ext_of(g)->gather_b;
}

static vx_status run_dot(const vx_gemm_args *g, const vx_gemm_plan *plan, int *threads_used)
{
    dot_job J;
    J.g = g;
    J.D = vx_dot_kernels(plan->isa);
    J.kb = plan->kc >= 1 ? min64(plan->kc, g->k) : g->k;
    J.mc = plan->mc >= J.D->mr ? plan->mc / J.D->mr * J.D->mr : g->m;
    J.col_tiles = (g->n + J.D->nr - 1) / J.D->nr;
    const int threads = plan->threads < 1 ? 1 : plan->threads;
    const int units = J.col_tiles < threads ? (int)J.col_tiles : threads;
    const int used = units > 1 ? vx_pool_run(dot_task, &J, units) : (dot_task(&J, 0, 1), 1);
    if (threads_used)
        *threads_used = used;
    return VX_OK;
}

/* The B-resident path (cpu/resident.h): each thread takes a run of rows,
 * VX_RESIDENT_ROW_UNIT rows at a time, and one kernel call walks them. */

typedef struct {
    const vx_gemm_args *g;
    vx_resident_fn fn;
    int stream; /* C written past the caches (resident_streams) */
} resident_job;

static void resident_task(void *ctx, int tid, int nthreads)
{
    const resident_job *J = ctx;
    const vx_gemm_args *g = J->g;
    int64_t lo, hi;
    split(g->m, VX_RESIDENT_ROW_UNIT, nthreads, tid, &lo, &hi);
    if (hi > lo)
        J->fn(hi - lo, g->a + lo * g->a_rs, g->a_rs, g->b, g->b_rs, g->c + lo * g->c_rs, g->c_rs, g->n, g->alpha,
              g->beta, J->stream);
}

/* Whether the resident kernels write C past the caches: the call's C is
 * as large as the tile plans stream (streams_c: beta = 0, C over
 * stream_c_min), and its stores fill whole lines in order, which the
 * kernels' streamed stores then leave to DRAM with no read first: rows of
 * whole vectors (n = V lanes) that are whole lines on a line, or rows that
 * follow each other (ldc = n) from a line. The threads' runs start at
 * multiples of VX_RESIDENT_ROW_UNIT rows, on a line too. 2449029x16x16 on
 * 2 AMD Zen 4 cores: plain stores 10.0-11.5 ms, streamed 6.9-8.1; the
 * 10 x 16 tile plan with C staged and streamed 12.3-15.4, oneDNN 10-12
 * (NOTES.md, fortieth session). */
static int resident_streams(const vx_gemm_args *g, const vx_resident_set *R)
{
    const int64_t w = R->vec_floats, lf = 64 / (int64_t)sizeof(float);
    if (!c_past_caches(g) || g->n % w != 0 || ((uintptr_t)g->c & 63) != 0)
        return 0;
    return g->c_rs == g->n ? (VX_RESIDENT_ROW_UNIT * g->n) % lf == 0 : g->n % lf == 0 && g->c_rs % lf == 0;
}

/* The operands the resident kernels take: a plain call (no batch, gather
 * or epilogue) with A's rows and B's rows unit-stride, B small enough. */
static vx_resident_fn resident_form(const vx_gemm_args *g, vx_isa isa)
{
    if (g->ext || g->a_cs != 1 || g->b_cs != 1)
        return NULL;
    return vx_resident_for(vx_resident_kernels(isa), g->n, g->k);
}

static vx_status run_resident(const vx_gemm_args *g, const vx_gemm_plan *plan, vx_resident_fn fn,
                              int *threads_used)
{
    const resident_job J = { g, fn, resident_streams(g, vx_resident_kernels(plan->isa)) };
    const int64_t units = (g->m + VX_RESIDENT_ROW_UNIT - 1) / VX_RESIDENT_ROW_UNIT;
    const int threads = plan->threads < 1 ? 1 : plan->threads < units ? plan->threads : (int)units;
    const int used = threads > 1 ? vx_pool_run(resident_task, (void *)&J, threads) : (resident_task((void *)&J, 0, 1), 1);
    if (threads_used)
        *threads_used = used;
    return VX_OK;
}

vx_status vx_cpu_gemm(const vx_gemm_args *g, const vx_gemm_plan *plan_in, int *threads_used)
{
    vx_gemm_plan fixed;
    const vx_gemm_plan *plan = plan_in;
    if (plan->path == VX_PATH_DOT && dot_form(g))
        return run_dot(g, plan, threads_used);
    if (plan->path == VX_PATH_RESIDENT) {
        const vx_resident_fn fn = resident_form(g, plan->isa);
        if (fn)
            return run_resident(g, plan, fn, threads_used);
    }
    if (plan->path == VX_PATH_GEMV) {
        gemv_job V; /* every field is set by gemv_form and run_gemv (zeroing it cost a `rep stos`) */
        V.g = g;
        if (gemv_form(g, &V, vx_gemv_kernels_for(plan->isa)))
            return run_gemv(g, plan, &V, threads_used);
    }
    if (plan->path == VX_PATH_GEMV || plan->path == VX_PATH_DOT || plan->path == VX_PATH_RESIDENT) {
        /* Strides none of these forms takes: the GEMM plan it carries. */
        fixed = *plan;
        fixed.path = plan->fallback != VX_PATH_AUTO && plan->fallback != VX_PATH_GEMV &&
                             plan->fallback != VX_PATH_DOT && plan->fallback != VX_PATH_RESIDENT
                         ? plan->fallback
                         : VX_PATH_PACKED;
        if (plan->path == VX_PATH_DOT) { /* its kc and mc were the dot blocks */
            fixed.mc = fixed.mr * 16;
            fixed.nc = fixed.nr * 16;
        }
        if (fixed.path == VX_PATH_PACKED && (fixed.mc < fixed.mr || fixed.nc < fixed.nr)) {
            fixed.mc = fixed.mr * 16;
            fixed.nc = fixed.nr * 16;
        }
        if (fixed.path == VX_PATH_DIRECT && (g->b_cs != 1 || ext_of(g)->gather_b))
            fixed.path = VX_PATH_PACK_B;
        if (ext_of(g)->gather_a)
            fixed.path = VX_PATH_PACKED;
        plan = &fixed;
    }
    const vx_ukernel_set *set = vx_ukernels(plan->isa);
    if (plan->family < 0 || plan->family >= set->nfamilies || plan->mr < 1 ||
        plan->mr > set->families[plan->family].mr_max)
        return vx_fail(VX_ERR_INTERNAL, "dyn_gemm: invalid plan (family %d, mr %d)", plan->family, plan->mr);
    if (plan->path == VX_PATH_DIRECT && (g->b_cs != 1 || ext_of(g)->gather_b))
        return vx_fail(VX_ERR_INTERNAL, "dyn_gemm: direct plan needs unit-stride B rows in place");
    if (plan->path != VX_PATH_PACKED && ext_of(g)->gather_a)
        return vx_fail(VX_ERR_INTERNAL, "dyn_gemm: a gathered A needs the packed plan");
    job J = { g, plan, &set->families[plan->family], NULL, 0, 0, 0, 0, vx_gemm_c_far(c_bytes_of(g)) };
    const int64_t cells = (int64_t)plan->threads_m * plan->threads_n * items_of(g);
    const int threads = plan->threads < 1 ? 1 : plan->threads < cells ? plan->threads : (int)cells;
    /* All packing memory is taken before anything is written, so running out
     * of it leaves C untouched. 16 floats of slack keep slices 64-byte aligned. */
    if (streams_c(g, plan)) {
        J.stage_cols = stage_cols_of(g, plan);
        J.ws_a = (size_t)(2 * plan->mr * J.stage_cols + 15) & ~(size_t)15; /* two halves */
        if (plan->path != VX_PATH_DIRECT) /* the cell's B, packed once */
            J.ws_b = (size_t)(g->k * cell_cols_of(g, plan) + 15) & ~(size_t)15;
    } else if (plan->path == VX_PATH_PACKED) {
        int64_t mc, kc, nc;
        block_sizes(g, plan, &mc, &kc, &nc);
        J.ws_a = (size_t)(mc * kc + 15) & ~(size_t)15;
        J.ws_b = (size_t)(kc * nc + 15) & ~(size_t)15;
    } else if (plan->path == VX_PATH_PACK_B || copies_edge_panel(plan, g, g->m) || packs_on_read(plan, g, g->m)) {
        J.ws_b = (size_t)(min64(plan->kc, g->k) * plan->nr + 15) & ~(size_t)15;
    }
    const size_t ws_floats = (size_t)threads * (J.ws_a + J.ws_b + SLICE_PAD_FLOATS);
    if (J.ws_a + J.ws_b > 0 && !(J.ws = vx_scratch(SLOT_WORK, ws_floats)))
        return vx_fail(VX_ERR_NO_MEMORY, "dyn_gemm: out of memory for %zu bytes of packing buffers",
                       ws_floats * sizeof(float));
    if (threads == 1 && cells == 1 && !g->ext && plan->path != VX_PATH_PACKED && !J.stage_cols) {
        /* The common small call: one thread, one cell, operands in place;
         * straight to the loop over tiles (no cell hand-out, split or view:
         * 7x16x11 227 -> 209 ns on AMD Zen 1). */
        const item_view v = plain_view(g);
        run_inplace(&J, &v, J.ws, 0, g->m, 0, g->n, plan->path == VX_PATH_PACK_B);
        if (threads_used)
            *threads_used = 1;
        return VX_OK;
    }
    int used = threads > 1 ? vx_pool_run(task, &J, threads) : (task(&J, 0, 1), 1);
    if (threads_used)
        *threads_used = used;
    return VX_OK;
}
