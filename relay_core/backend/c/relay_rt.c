/* Irregular helpers called by generated code (sorting, entropy for unseeded random ops).
 *
 * Compiled once with the system C compiler (cached by content hash) and linked into every
 * generated library. Regular computations are generated as LLVM IR; only what is awkward to
 * express as loop nests lives here. Every function takes a trailing `int32_t nthreads`.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Stable merge sort of index arrays. NaN sorts as the largest value: last ascending, first
 * descending; equal values keep their index order in both directions. */
#define RELAY_ARGSORT(NAME, T, ISNAN)                                                          \
  static int NAME##_before(T a, T b, int desc) {                                               \
    int na = ISNAN(a), nb = ISNAN(b);                                                          \
    if (desc) return (na && !nb) || (!na && !nb && a > b);                                     \
    return (!na && nb) || (!na && !nb && a < b);                                               \
  }                                                                                            \
  /* Whether position i goes after position j: by value, then the higher position. */          \
  static inline int NAME##_after(const T *x, int64_t stride, int64_t i, int64_t j, int desc) { \
    T a = x[i * stride], b = x[j * stride];                                                    \
    if (NAME##_before(a, b, desc)) return 0;                                                   \
    if (NAME##_before(b, a, desc)) return 1;                                                   \
    return i > j;                                                                              \
  }                                                                                            \
  /* Bottom-up merge sort of the n positions in idx by (value, position). `any_order`: idx    \
   * holds them in any order; else ascending, and the stable merge of values keeps that. */    \
  static void NAME##_msort(const T *x, int64_t stride, int64_t *idx, int64_t *tmp, int64_t n, \
                           int desc, int any_order) {                                          \
    for (int64_t w = 1; w < n; w *= 2) {                                                       \
      for (int64_t lo = 0; lo < n; lo += 2 * w) {                                              \
        int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;           \
        int64_t a = lo, b = mid, k = lo;                                                       \
        while (a < mid && b < hi) {                                                            \
          int later = any_order ? NAME##_after(x, stride, idx[a], idx[b], desc)                \
                                : NAME##_before(x[idx[b] * stride], x[idx[a] * stride], desc);  \
          if (later) tmp[k++] = idx[b++];                                                      \
          else tmp[k++] = idx[a++];                                                            \
        }                                                                                      \
        while (a < mid) tmp[k++] = idx[a++];                                                   \
        while (b < hi) tmp[k++] = idx[b++];                                                    \
      }                                                                                        \
      memcpy(idx, tmp, (size_t)n * sizeof(int64_t));                                           \
    }                                                                                          \
  }                                                                                            \
  /* The first k of a row (k well below n): a heap of the k best so far, worst at its root,   \
   * so most elements cost one comparison; then the k sorted */                             \
  static void NAME##_select(const T *x, int64_t stride, int64_t n, int64_t k, int64_t *heap,   \
                            int64_t *tmp, int desc) {                                          \
    for (int64_t i = 0; i < n; i++) {                                                          \
      int64_t c;                                                                               \
      if (i < k) { /* sift up */                                                               \
        c = i;                                                                                 \
        while (c > 0 && NAME##_after(x, stride, i, heap[(c - 1) / 2], desc) == 1) {           \
          heap[c] = heap[(c - 1) / 2];                                                         \
          c = (c - 1) / 2;                                                                     \
        }                                                                                      \
        heap[c] = i;                                                                           \
        continue;                                                                              \
      }                                                                                        \
      if (!NAME##_before(x[i * stride], x[heap[0] * stride], desc)) continue; /* i is worse */ \
      c = 0; /* sift down from the root */                                                     \
      for (;;) {                                                                               \
        int64_t l = 2 * c + 1, r = l + 1, w = c;                                               \
        int64_t wv = i;                                                                        \
        if (l < k && NAME##_after(x, stride, heap[l], wv, desc)) { w = l; wv = heap[l]; }      \
        if (r < k && NAME##_after(x, stride, heap[r], wv, desc)) { w = r; wv = heap[r]; }      \
        if (w == c) break;                                                                     \
        heap[c] = heap[w];                                                                     \
        c = w;                                                                                 \
      }                                                                                        \
      heap[c] = i;                                                                             \
    }                                                                                          \
    NAME##_msort(x, stride, heap, tmp, k, desc, 1); /* then the k in order */                 \
  }                                                                                            \
  /* x: (outer, n, inner) row-major; out: (outer, k, inner) int64 positions of the first k */  \
  void NAME(const T *x, int64_t *out, int64_t outer, int64_t n, int64_t inner, int64_t k,      \
            int32_t desc, int32_t nthreads) {                                                  \
    (void)nthreads;                                                                            \
    if (n == 0 || k == 0) return;                                                              \
    int select = k <= n / 8; /* a few of many (detectors' top 1,000 of a million scores) */  \
    int64_t m = select ? k : n;                                                                \
    int64_t *idx = (int64_t *)malloc(2 * (size_t)m * sizeof(int64_t));                        \
    for (int64_t o = 0; o < outer; o++)                                                        \
      for (int64_t in = 0; in < inner; in++) {                                                 \
        const T *row = x + o * n * inner + in;                                                 \
        if (select) NAME##_select(row, inner, n, k, idx, idx + m, desc);                       \
        else {                                                                                 \
          for (int64_t i = 0; i < n; i++) idx[i] = i;                                          \
          NAME##_msort(row, inner, idx, idx + n, n, desc, 0);                                  \
        }                                                                                      \
        for (int64_t j = 0; j < k; j++) out[(o * k + j) * inner + in] = idx[j];                \
      }                                                                                        \
    free(idx);                                                                                 \
  }

#define RELAY_NOT_NAN(v) 0
#define RELAY_IS_NAN(v) ((v) != (v))

RELAY_ARGSORT(relay_argsort_f32, float, RELAY_IS_NAN)
RELAY_ARGSORT(relay_argsort_f64, double, RELAY_IS_NAN)
RELAY_ARGSORT(relay_argsort_i8, int8_t, RELAY_NOT_NAN)
RELAY_ARGSORT(relay_argsort_i16, int16_t, RELAY_NOT_NAN)
RELAY_ARGSORT(relay_argsort_i32, int32_t, RELAY_NOT_NAN)
RELAY_ARGSORT(relay_argsort_i64, int64_t, RELAY_NOT_NAN)
RELAY_ARGSORT(relay_argsort_u8, uint8_t, RELAY_NOT_NAN)
RELAY_ARGSORT(relay_argsort_u16, uint16_t, RELAY_NOT_NAN)
RELAY_ARGSORT(relay_argsort_u32, uint32_t, RELAY_NOT_NAN)
RELAY_ARGSORT(relay_argsort_u64, uint64_t, RELAY_NOT_NAN)

/* A fresh 64-bit seed per call for random ops without a seed. */
static uint64_t relay_counter = 0;

uint64_t relay_entropy(void) {
  uint64_t c = __atomic_add_fetch(&relay_counter, 0x9E3779B97F4A7C15ull, __ATOMIC_RELAXED);
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  uint64_t z = c ^ ((uint64_t)ts.tv_nsec << 17) ^ (uint64_t)ts.tv_sec;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Profiling (builds with RELAY_PROFILE=1): per-step wall time accumulated in nanoseconds, and
 * for steps of shape-generic builds the run-time batch elements they computed (FLOP counts). */
#define RELAY_PROF_MAX 65536
static double relay_prof_ns[RELAY_PROF_MAX];
static int64_t relay_prof_calls[RELAY_PROF_MAX];
static double relay_prof_units_sum[RELAY_PROF_MAX];
static struct timespec relay_prof_last;

void relay_prof_units(int32_t step, int64_t units) {
  if (step >= 0 && step < RELAY_PROF_MAX) relay_prof_units_sum[step] += (double)units;
}

/* Copies the mean units per call of n steps into out (before relay_prof_read resets them). */
void relay_prof_read_units(double *out, int32_t n) {
  for (int32_t i = 0; i < n && i < RELAY_PROF_MAX; i++)
    out[i] = relay_prof_calls[i] ? relay_prof_units_sum[i] / relay_prof_calls[i] : 0.0;
}

void relay_prof_start(void) { clock_gettime(CLOCK_MONOTONIC, &relay_prof_last); }

void relay_prof_step(int32_t step) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  if (step >= 0 && step < RELAY_PROF_MAX) {
    relay_prof_ns[step] += (now.tv_sec - relay_prof_last.tv_sec) * 1e9 + (now.tv_nsec - relay_prof_last.tv_nsec);
    relay_prof_calls[step] += 1;
  }
  relay_prof_last = now;
}

/* Copies n accumulated step times (ns) into out and resets them. */
void relay_prof_read(double *out, int32_t n) {
  for (int32_t i = 0; i < n && i < RELAY_PROF_MAX; i++) {
    out[i] = relay_prof_calls[i] ? relay_prof_ns[i] / relay_prof_calls[i] : 0.0;
    relay_prof_ns[i] = 0;
    relay_prof_calls[i] = 0;
    relay_prof_units_sum[i] = 0;
  }
}

/* Byte copy (bitcast / reinterpret: the same bytes viewed as another dtype). */
void relay_copy_bytes(const void *src, void *dst, int64_t nbytes, int32_t nthreads) {
  (void)nthreads;
  if (nbytes > 0) memcpy(dst, src, (size_t)nbytes);
}
