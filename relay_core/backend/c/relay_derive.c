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
 * g[o][c] read at w[o*so + c*sc + i*sh + j*sw], in double (G's entries are 0, +-1/2, 1: every
 * product is exact), rounded to float32 and stored
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

static void wino_u(const float *g, int64_t sh, int64_t sw, double u[16]) {
  double t[3][4];
  for (int i = 0; i < 3; i++) { /* t = g G^T */
    double w0 = g[i * sh], w1 = g[i * sh + sw], w2 = g[i * sh + 2 * sw];
    t[i][0] = w0;
    t[i][1] = 0.5 * w0 + 0.5 * w1 + 0.5 * w2;
    t[i][2] = 0.5 * w0 + -0.5 * w1 + 0.5 * w2;
    t[i][3] = w2;
  }
  for (int b = 0; b < 4; b++) { /* u = G t */
    u[b] = t[0][b];
    u[4 + b] = 0.5 * t[0][b] + 0.5 * t[1][b] + 0.5 * t[2][b];
    u[8 + b] = 0.5 * t[0][b] + -0.5 * t[1][b] + 0.5 * t[2][b];
    u[12 + b] = t[2][b];
  }
}

static void wino_panel(const wino_job *jb, int64_t pan) {
  const int64_t *p = jb->p;
  int64_t layout = p[0], tile = p[1], O = p[2], C = p[3];
  int64_t so = p[4], sc = p[5], sh = p[6], sw = p[7];
  int64_t o0 = pan * tile;
  int64_t rows = O - o0 < tile ? O - o0 : tile;
  double u[16];
  if (layout == 0) { /* block xi at xi*O*C; panel at o0*C; element (c, i) at c*rows + i */
    for (int64_t c = 0; c < C; c++)
      for (int64_t i = 0; i < rows; i++) {
        wino_u(jb->w + (o0 + i) * so + c * sc, sh, sw, u);
        float *d = jb->dst + o0 * C + c * rows + i;
        for (int xi = 0; xi < 16; xi++) d[xi * O * C] = (float)u[xi];
      }
  } else { /* block xi at xi*npan*C*NR; panel at pan*C*NR; element (c, j) at c*NR + j */
    int64_t npan = (O + tile - 1) / tile;
    for (int64_t c = 0; c < C; c++) {
      float *d = jb->dst + pan * C * tile + c * tile;
      for (int64_t j = 0; j < tile; j++) {
        if (j < rows) {
          wino_u(jb->w + (o0 + j) * so + c * sc, sh, sw, u);
        } else {
          memset(u, 0, sizeof u);
        }
        for (int xi = 0; xi < 16; xi++) d[xi * npan * C * tile + j] = (float)u[xi];
      }
    }
  }
}

static int64_t wino_panels(const int64_t *p) { return (p[2] + p[1] - 1) / p[1]; }

/* One region over every derived constant: shards are (constant, panel) pairs. */
typedef struct {
  const int64_t *desc;
  const int64_t *slot;   /* the derived slots' indices */
  const int64_t *first;  /* first shard of each, and the total at [n] */
  int64_t n;
  void **constants;
} derive_ctx;

static void derive_unit(const derive_ctx *cx, int64_t u) {
  int64_t lo = 0, hi = cx->n; /* the constant whose units hold u */
  while (hi - lo > 1) {
    int64_t mid = (lo + hi) / 2;
    if (cx->first[mid] <= u) lo = mid; else hi = mid;
  }
  const int64_t *r = cx->desc + 2 + cx->slot[lo] * RELAY_DESC_RECORD;
  wino_job jb = {(const float *)cx->constants[r[2]], (float *)cx->constants[cx->slot[lo]], r + 4};
  if (r[3] == RELAY_DERIVE_WINOGRAD_F23) wino_panel(&jb, u - cx->first[lo]);
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
  derive_ctx cx = {desc, slot, first, nd, constants};
  relay_parallel(derive_task, &cx, nthreads, total);
  free(slot);
  return 0;
}
