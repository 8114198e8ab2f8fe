/* Data-dependent selections called by generated code: unique and non-maximum suppression.
 *
 * Both write a fixed-size int64 `info` array whose first element is the number of results
 * (the caller reads it to size the outputs) followed by the results; generated code then
 * gathers the values. Every function takes a trailing `int32_t nthreads` (unused: these run
 * on small inputs).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int (*relay_le_fn)(int64_t a, int64_t b, const void *ctx);

/* Stable bottom-up merge sort of idx[0..n) by le(a, b) ("a may come before b"). */
static void relay_msort(int64_t *idx, int64_t *tmp, int64_t n, relay_le_fn le, const void *ctx) {
  for (int64_t w = 1; w < n; w *= 2) {
    for (int64_t lo = 0; lo < n; lo += 2 * w) {
      int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
      int64_t a = lo, b = mid, k = lo;
      while (a < mid && b < hi) {
        if (le(idx[a], idx[b], ctx)) tmp[k++] = idx[a++];
        else tmp[k++] = idx[b++];
      }
      while (a < mid) tmp[k++] = idx[a++];
      while (b < hi) tmp[k++] = idx[b++];
    }
    memcpy(idx, tmp, (size_t)n * sizeof(int64_t));
  }
}

static int relay_first_le(int64_t a, int64_t b, const void *ctx) {
  const int64_t *first = (const int64_t *)ctx;
  return first[a] <= first[b];
}

/* unique: n items of L keys each (row-major), compared lexicographically (NaN equals NaN and
 * sorts after numbers). info (1 + 3n): [G, first[n], inverse[n], counts[n]] with groups in
 * sorted order, or in order of first occurrence when !keep_sorted (ONNX Unique). */
#define RELAY_UNIQUE(NAME, T)                                                                  \
  typedef struct { const T *k; int64_t L; } NAME##_ctx;                                        \
  static int NAME##_cmp(const T *a, const T *b, int64_t L) {                                   \
    for (int64_t j = 0; j < L; j++) {                                                          \
      T x = a[j], y = b[j];                                                                    \
      int xn = x != x, yn = y != y;                                                            \
      if (xn || yn) {                                                                          \
        if (xn && yn) continue;                                                                \
        return xn ? 1 : -1;                                                                    \
      }                                                                                        \
      if (x < y) return -1;                                                                    \
      if (x > y) return 1;                                                                     \
    }                                                                                          \
    return 0;                                                                                  \
  }                                                                                            \
  static int NAME##_le(int64_t a, int64_t b, const void *c) {                                  \
    const NAME##_ctx *ctx = (const NAME##_ctx *)c;                                             \
    return NAME##_cmp(ctx->k + a * ctx->L, ctx->k + b * ctx->L, ctx->L) <= 0;                  \
  }                                                                                            \
  void NAME(const T *keys, int64_t *info, int64_t n, int64_t L, int32_t keep_sorted,           \
            int32_t nthreads) {                                                                \
    (void)nthreads;                                                                            \
    int64_t *first = info + 1, *inv = info + 1 + n, *counts = info + 1 + 2 * n, g = 0;         \
    info[0] = 0;                                                                               \
    if (n == 0) return;                                                                        \
    int64_t *perm = (int64_t *)malloc(4 * (size_t)n * sizeof(int64_t)), *tmp = perm + n;       \
    NAME##_ctx ctx = {keys, L};                                                                \
    for (int64_t i = 0; i < n; i++) perm[i] = i;                                               \
    relay_msort(perm, tmp, n, NAME##_le, &ctx);                                                \
    for (int64_t s = 0; s < n; s++) {                                                          \
      if (s == 0 || NAME##_cmp(keys + perm[s - 1] * L, keys + perm[s] * L, L) != 0) {          \
        first[g] = perm[s];                                                                    \
        counts[g++] = 0;                                                                       \
      }                                                                                        \
      counts[g - 1]++;                                                                         \
      inv[perm[s]] = g - 1;                                                                    \
    }                                                                                          \
    if (!keep_sorted) {                                                                        \
      int64_t *order = perm, *rank = perm + 2 * n, *buf = perm + 3 * n;                        \
      for (int64_t i = 0; i < g; i++) order[i] = i;                                            \
      relay_msort(order, tmp, g, relay_first_le, first);                                       \
      for (int64_t r = 0; r < g; r++) rank[order[r]] = r;                                      \
      for (int64_t r = 0; r < g; r++) buf[r] = first[order[r]];                                \
      memcpy(first, buf, (size_t)g * sizeof(int64_t));                                         \
      for (int64_t r = 0; r < g; r++) buf[r] = counts[order[r]];                               \
      memcpy(counts, buf, (size_t)g * sizeof(int64_t));                                        \
      for (int64_t i = 0; i < n; i++) inv[i] = rank[inv[i]];                                   \
    }                                                                                          \
    info[0] = g;                                                                               \
    free(perm);                                                                                \
  }

RELAY_UNIQUE(relay_unique_f64, double)
RELAY_UNIQUE(relay_unique_i64, int64_t)

/* Greedy per-class non-maximum suppression (ONNX NonMaxSuppression). boxes (B, N, 4), scores
 * (B, C, N); max_out, iou and score thresholds are 0-d tensors; info (1 + 3 B C N): [K, rows
 * of (batch, class, box)]. Thresholds compare in T like the reference; the score threshold
 * applies when has_score. */
#define RELAY_NMS(NAME, T)                                                                     \
  typedef struct { const T *s; } NAME##_ctx;                                                   \
  static int NAME##_le(int64_t a, int64_t b, const void *c) {                                  \
    const T *s = ((const NAME##_ctx *)c)->s;                                                   \
    return !(s[b] > s[a]);                                                                     \
  }                                                                                            \
  static void NAME##_corners(const T *b, int center, T *o) {                                   \
    if (center) {                                                                              \
      T hw = b[2] / 2, hh = b[3] / 2;                                                          \
      o[0] = b[0] - hw; o[1] = b[0] + hw; o[2] = b[1] - hh; o[3] = b[1] + hh;                  \
    } else {                                                                                   \
      o[0] = b[1] < b[3] ? b[1] : b[3]; o[1] = b[1] < b[3] ? b[3] : b[1];                      \
      o[2] = b[0] < b[2] ? b[0] : b[2]; o[3] = b[0] < b[2] ? b[2] : b[0];                      \
    }                                                                                          \
  }                                                                                            \
  /* Whether candidate c (corners x0 x1 y0 y1, area ca) is suppressed by one of the n kept    \
   * boxes (structure of arrays: k[0..3] corners, k[4] areas); the division only for boxes    \
   * that overlap, so far-apart boxes cost a few comparisons. */                               \
  static int NAME##_suppressed(const T *c, T ca, T *const *k, int64_t n, T iou) {              \
    const T *kx0 = k[0], *kx1 = k[1], *ky0 = k[2], *ky1 = k[3], *ka = k[4];                    \
    for (int64_t q = 0; q < n; q++) {                                                          \
      T ix0 = c[0] > kx0[q] ? c[0] : kx0[q], ix1 = c[1] < kx1[q] ? c[1] : kx1[q];              \
      T iy0 = c[2] > ky0[q] ? c[2] : ky0[q], iy1 = c[3] < ky1[q] ? c[3] : ky1[q];              \
      if (!(ix1 > ix0 && iy1 > iy0)) continue;                                                 \
      T inter = (ix1 - ix0) * (iy1 - iy0), uni = ca + ka[q] - inter;                           \
      if (inter > 0 && ca > 0 && ka[q] > 0 && uni > 0 && inter / uni > iou) return 1;          \
    }                                                                                          \
    return 0;                                                                                  \
  }                                                                                            \
  void NAME(const T *boxes, const T *scores, const int64_t *max_out_p, const T *iou_p,         \
            const T *score_p, int64_t *info, int64_t B, int64_t C, int64_t N, int32_t has_score, \
            int32_t center, int32_t nthreads) {                                                \
    (void)nthreads;                                                                            \
    T iou = *iou_p, score_t = *score_p;                                                        \
    int64_t max_out = *max_out_p;                                                              \
    int64_t k = 0;                                                                             \
    info[0] = 0;                                                                               \
    if (N == 0 || max_out <= 0) return;                                                        \
    int64_t *idx = (int64_t *)malloc(2 * (size_t)N * sizeof(int64_t)), *tmp = idx + N;         \
    T *corners = (T *)malloc(10 * (size_t)N * sizeof(T)), *area = corners + 4 * N;             \
    T *kept[5];                                                                                \
    for (int j = 0; j < 5; j++) kept[j] = corners + (5 + j) * N;                               \
    for (int64_t b = 0; b < B; b++) {                                                          \
      for (int64_t i = 0; i < N; i++) {                                                        \
        T *o = corners + 4 * i;                                                                \
        NAME##_corners(boxes + (b * N + i) * 4, center, o);                                    \
        area[i] = (o[1] - o[0]) * (o[3] - o[2]);                                               \
      }                                                                                        \
      for (int64_t c = 0; c < C; c++) {                                                        \
        const T *s = scores + (b * C + c) * N;                                                 \
        int64_t m = 0, nk = 0;                                                                 \
        for (int64_t i = 0; i < N; i++)                                                        \
          if (!has_score || s[i] > score_t) idx[m++] = i;                                      \
        NAME##_ctx ctx = {s};                                                                  \
        relay_msort(idx, tmp, m, NAME##_le, &ctx);                                             \
        for (int64_t j = 0; j < m && nk < max_out; j++) {                                      \
          int64_t cand = idx[j];                                                               \
          const T *cc = corners + 4 * cand;                                                    \
          if (NAME##_suppressed(cc, area[cand], kept, nk, iou)) continue;                      \
          for (int q = 0; q < 4; q++) kept[q][nk] = cc[q];                                     \
          kept[4][nk++] = area[cand];                                                          \
          info[1 + 3 * k] = b;                                                                 \
          info[2 + 3 * k] = c;                                                                 \
          info[3 + 3 * k] = cand;                                                              \
          k++;                                                                                 \
        }                                                                                      \
      }                                                                                        \
    }                                                                                          \
    info[0] = k;                                                                               \
    free(idx);                                                                                 \
    free(corners);                                                                             \
  }

RELAY_NMS(relay_nms_f32, float)
RELAY_NMS(relay_nms_f64, double)
