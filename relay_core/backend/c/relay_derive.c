/* Constants an artifact does not store: computed once, when a module is loaded, from the
 * constants it stores (docs/c_abi.md, `relay_prepare`).
 *
 * Some kernels read a weight in a layout larger than the weight itself (Winograd F(2x2, 3x3)
 * reads the 16 transformed 4x4 positions of every 3x3 filter: 16/9 of its bytes). weights.bin
 * keeps the original; the library's `relay_prepare` fills the constant table and computes these
 * derived constants into a buffer the caller provides. The compiler emits
 *
 *   int32_t relay_prepare(const void *weights, void *derived, void **constants, int32_t nth)
 *   { return relay_prepare_desc(DESC, weights, derived, constants, nth); }
 *
 * with DESC a constant table describing every constant slot (RELAY_DESC_* below). The
 * transforms here compute the same bytes as the kernels' numpy prepacks (checked bit for bit
 * by tests/backend/test_derived_constants.py).
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef void (*relay_task_fn)(void *ctx, void *task, int64_t nshards, int64_t worker);
void relay_parallel(relay_task_fn fn, void *ctx, int32_t nthreads, int64_t nshards);
int64_t relay_task_next(void *task);

/* desc[0] = RELAY_DESC_VERSION, desc[1] = number of slots, then one record per slot:
 * {kind, offset, source slot, routine, params[RELAY_DESC_PARAMS]}.
 * kind 0: stored, at weights + offset; kind 1: derived, at derived + offset, computed by
 * `routine` from the (stored) source slot. */
#define RELAY_DESC_VERSION 1
#define RELAY_DESC_PARAMS 8
#define RELAY_DESC_RECORD (4 + RELAY_DESC_PARAMS)

enum { RELAY_SLOT_STORED = 0, RELAY_SLOT_DERIVED = 1 };
enum { RELAY_DERIVE_WINOGRAD_F23 = 1 };

/* Winograd F(2x2, 3x3) weight transform U_xi = (G g G^T)[a][b], xi = 4a + b, of 3x3 filters
 * g[o][c] read at w[o*so + c*sc + i*sh + j*sw], in double as g G^T then G (g G^T) (G's entries
 * are 0, +-1/2, 1: every product is exact, and so are the sums unless a filter's values span
 * more than ~2^28), rounded to float32 and stored
 *   layout 0: 16 blocks of O x C, each as MR-row A panels (for each panel of mr <= MR rows,
 *             its C x mr transpose)              params {0, MR, O, C, so, sc, sh, sw}
 *   layout 1: 16 blocks of ceil(O/NR) NR-column B panels of U_xi^T (C x NR each, zero past O)
 *                                                params {1, NR, O, C, so, sc, sh, sw}
 * One shard is one panel. */
typedef struct {
  const float *w;
  float *dst;
  const int64_t *p;
} wino_job;

#define WINO_CB 16 /* input channels per chunk of a panel */

/* u[xi * us + i] for filters i < n of g[k * gs + i] (k = 3 * row + column), four filters at a
 * time in double vectors (the same IEEE operations, in the same order, as one at a time);
 * lanes up to n rounded up to 4 are written too. */
typedef float v4f __attribute__((vector_size(16)));
typedef double v4d __attribute__((vector_size(32)));

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
static void wino_block(const float *g, int64_t gs, float *u, int64_t us, int64_t n) {
  for (int64_t i = 0; i < n; i += 4) {
    v4d t[3][4];
    for (int r = 0; r < 3; r++) { /* t = g G^T */
      v4f f0, f1, f2;
      memcpy(&f0, g + (3 * r) * gs + i, sizeof f0);
      memcpy(&f1, g + (3 * r + 1) * gs + i, sizeof f1);
      memcpy(&f2, g + (3 * r + 2) * gs + i, sizeof f2);
      v4d w0 = __builtin_convertvector(f0, v4d), w1 = __builtin_convertvector(f1, v4d);
      v4d w2 = __builtin_convertvector(f2, v4d);
      t[r][0] = w0;
      t[r][1] = 0.5 * w0 + 0.5 * w1 + 0.5 * w2;
      t[r][2] = 0.5 * w0 + -0.5 * w1 + 0.5 * w2;
      t[r][3] = w2;
    }
    for (int b = 0; b < 4; b++) { /* u = G t */
      v4f r0 = __builtin_convertvector(t[0][b], v4f);
      v4f r1 = __builtin_convertvector(0.5 * t[0][b] + 0.5 * t[1][b] + 0.5 * t[2][b], v4f);
      v4f r2 = __builtin_convertvector(0.5 * t[0][b] + -0.5 * t[1][b] + 0.5 * t[2][b], v4f);
      v4f r3 = __builtin_convertvector(t[2][b], v4f);
      memcpy(u + b * us + i, &r0, sizeof r0);
      memcpy(u + (4 + b) * us + i, &r1, sizeof r1);
      memcpy(u + (8 + b) * us + i, &r2, sizeof r2);
      memcpy(u + (12 + b) * us + i, &r3, sizeof r3);
    }
  }
}

/* One panel: chunks of WINO_CB input channels are read row by row (each filter row of the
 * weights is contiguous in the usual layouts), transformed in a scratch, and each of the 16
 * blocks' part written as one contiguous run (the 16 blocks are O * C floats apart: writing
 * them element by element thrashed the caches). */
static int wino_panel(const wino_job *jb, int64_t pan) {
  const int64_t *p = jb->p;
  int64_t layout = p[0], tile = p[1], O = p[2], C = p[3];
  int64_t so = p[4], sc = p[5], sh = p[6], sw = p[7];
  int64_t o0 = pan * tile;
  int64_t rows = O - o0 < tile ? O - o0 : tile;
  /* U_xi[o0 + i][c] goes to dst + xi * block + start + c * step + i */
  int64_t npan = (O + tile - 1) / tile;
  int64_t block = layout == 0 ? O * C : npan * C * tile;
  int64_t start = layout == 0 ? o0 * C : pan * C * tile;
  int64_t step = layout == 0 ? rows : tile;
  int64_t gs = (step + 3) / 4 * 4;           /* a filter tap's lanes */
  int64_t us = WINO_CB * step + 4;           /* a block's part of the chunk (+ spill lanes) */
  float *g = (float *)calloc((size_t)(WINO_CB * 9 * gs + 16 * us), sizeof(float));
  if (!g) return 1;
  float *u = g + WINO_CB * 9 * gs; /* lanes past `rows` of g stay 0: B panels' zero padding */
  for (int64_t c0 = 0; c0 < C; c0 += WINO_CB) {
    int64_t cb = C - c0 < WINO_CB ? C - c0 : WINO_CB;
    for (int64_t i = 0; i < rows; i++) {
      const float *f = jb->w + (o0 + i) * so + c0 * sc;
      if (sh == 3 && sw == 1) { /* OIHW: a filter's 9 taps are contiguous */
        for (int64_t c = 0; c < cb; c++)
          for (int k = 0; k < 9; k++) g[(c * 9 + k) * gs + i] = f[c * sc + k];
      } else {
        for (int64_t c = 0; c < cb; c++)
          for (int k = 0; k < 9; k++)
            g[(c * 9 + k) * gs + i] = f[c * sc + (k / 3) * sh + (k % 3) * sw];
      }
    }
    for (int64_t c = 0; c < cb; c++) wino_block(g + c * 9 * gs, gs, u + c * step, us, step);
    for (int xi = 0; xi < 16; xi++)
      memcpy(jb->dst + xi * block + start + c0 * step, u + xi * us,
             (size_t)(cb * step) * sizeof(float));
  }
  free(g);
  return 0;
}

static int64_t wino_panels(const int64_t *p) { return (p[2] + p[1] - 1) / p[1]; }

/* One region over every derived constant: shards are (constant, panel) pairs. */
typedef struct {
  const int64_t *desc;
  const int64_t *slot;   /* the derived slots' indices */
  const int64_t *first;  /* first shard of each, and the total at [n] */
  int64_t n;
  void **constants;
  _Atomic int failed;
} derive_ctx;

static void derive_unit(const derive_ctx *cx, int64_t u) {
  int64_t lo = 0, hi = cx->n; /* the constant whose units hold u */
  while (hi - lo > 1) {
    int64_t mid = (lo + hi) / 2;
    if (cx->first[mid] <= u) lo = mid; else hi = mid;
  }
  const int64_t *r = cx->desc + 2 + cx->slot[lo] * RELAY_DESC_RECORD;
  wino_job jb = {(const float *)cx->constants[r[2]], (float *)cx->constants[cx->slot[lo]], r + 4};
  if (r[3] == RELAY_DERIVE_WINOGRAD_F23 && wino_panel(&jb, u - cx->first[lo]))
    atomic_store(&cx->failed, 1); /* out of memory */
}

/* Shard s of nshards covers units [s * total / nshards, (s + 1) * total / nshards): the pool
 * runs the region inline as one shard when it is busy or given one thread. */
static void derive_task(void *ctxp, void *task, int64_t nshards, int64_t worker) {
  (void)worker;
  derive_ctx *cx = (derive_ctx *)ctxp;
  int64_t total = cx->first[cx->n], s;
  while ((s = relay_task_next(task)) >= 0)
    for (int64_t u = s * total / nshards; u < (s + 1) * total / nshards; u++) derive_unit(cx, u);
}

int32_t relay_prepare_desc(const int64_t *desc, const void *weights, void *derived,
                           void **constants, int32_t nthreads) {
  if (desc[0] != RELAY_DESC_VERSION) return 2;
  int64_t n = desc[1], nd = 0;
  for (int64_t k = 0; k < n; k++) {
    const int64_t *r = desc + 2 + k * RELAY_DESC_RECORD;
    if (r[0] == RELAY_SLOT_DERIVED) {
      constants[k] = (char *)derived + r[1];
      nd++;
    } else {
      constants[k] = (char *)weights + r[1];
    }
  }
  if (!nd) return 0;
  int64_t *slot = (int64_t *)malloc((size_t)(2 * nd + 1) * sizeof(int64_t));
  if (!slot) return 4;
  int64_t *first = slot + nd, j = 0, total = 0;
  for (int64_t k = 0; k < n; k++) {
    const int64_t *r = desc + 2 + k * RELAY_DESC_RECORD;
    if (r[0] != RELAY_SLOT_DERIVED) continue;
    if (r[3] != RELAY_DERIVE_WINOGRAD_F23) {
      free(slot);
      return 3;
    }
    slot[j] = k;
    first[j++] = total;
    total += wino_panels(r + 4);
  }
  first[nd] = total;
  derive_ctx cx = {desc, slot, first, nd, constants, 0};
  relay_parallel(derive_task, &cx, nthreads, total);
  free(slot);
  return atomic_load(&cx.failed) ? 4 : 0;
}
