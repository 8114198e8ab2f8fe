/* Boxed values for compiled programs with control flow or dynamic shapes.
 *
 * Every value is an RObj: a tensor (shape + data), a tuple, an ADT cell (constructor tag +
 * fields), a closure (code pointer + captured values) or a reference cell. Objects are
 * reference counted; rc < 0 marks borrowed wrappers (inputs, constants) that are never freed
 * by a release. Releasing is iterative, so a list of a million cells does not overflow the
 * stack. Errors raised by generated code (relay_fail) unwind to relay_guarded_call.
 */
#include <setjmp.h>
#include <time.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { K_TENSOR = 0, K_TUPLE = 1, K_ADT = 2, K_CLOSURE = 3, K_REF = 4 };

typedef struct RObj {
  int64_t rc;
  int32_t kind;
  int32_t tag;     /* ADT constructor tag; tensor: item size in bytes */
  int64_t n;       /* tensor: ndim; others: number of fields */
  void *data;      /* tensor data; closure: code pointer */
  int64_t *shape;  /* tensor shape (n values) */
  int32_t owns;    /* tensor owns its data */
  int32_t pad;
  size_t bytes;    /* owned tensor data: bytes allocated */
  struct RObj *base; /* a view: the tensor owning the data (held by the view) */
  struct RObj *fields[];
} RObj;

static void data_free(void *p, size_t bytes);

static RObj *robj_new(int32_t kind, int64_t nfields, int64_t extra_bytes) {
  size_t sz = sizeof(RObj) + (size_t)nfields * sizeof(RObj *) + (size_t)extra_bytes;
  RObj *o = (RObj *)calloc(1, sz);
  if (!o) {
    fprintf(stderr, "relay: out of memory\n");
    abort();
  }
  o->rc = 1;
  o->kind = kind;
  o->n = nfields;
  return o;
}

void relay_retain(RObj *o) {
  if (o && o->rc >= 0) o->rc++;
}

void relay_release(RObj *o) {
  /* iterative: fields whose count drops to zero go on an explicit stack */
  RObj *stack_small[64];
  RObj **stack = stack_small;
  int64_t cap = 64, top = 0;
  if (!o || o->rc < 0) return;
  if (--o->rc > 0) return;
  stack[top++] = o;
  while (top) {
    RObj *x = stack[--top];
    if (x->kind != K_TENSOR) {
      for (int64_t i = 0; i < x->n; i++) {
        RObj *f = x->fields[i];
        if (!f || f->rc < 0) continue;
        if (--f->rc > 0) continue;
        if (top == cap) {
          RObj **bigger = (RObj **)malloc((size_t)cap * 2 * sizeof(RObj *));
          memcpy(bigger, stack, (size_t)top * sizeof(RObj *));
          if (stack != stack_small) free(stack);
          stack = bigger;
          cap *= 2;
        }
        stack[top++] = f;
      }
    } else if (x->owns) {
      data_free(x->data, x->bytes);
    } else if (x->base && --x->base->rc == 0) {
      stack[top++] = x->base; /* the slot x came from is free */
    }
    free(x);
  }
  if (stack != stack_small) free(stack);
}

/* -- tensor data ---------------------------------------------------------------------------
 * The intermediate tensors of a call are allocated and freed again at every call, in the
 * same sizes. Handed back to malloc, large blocks are returned to the kernel (munmap, or
 * brk trimming the heap top) and the next call faults every page in again: a MobileNetV2
 * with a dynamic batch spent a third of its time in page faults, MViTv2 a third (its index
 * grids for slice assignments are 315-630 MB each). Freed blocks of at least CACHE_MIN bytes
 * are kept here (at most CACHE_SLOTS blocks and cache_cap() bytes in total: an eighth of
 * the machine's memory, at least 256 MB and at most 4 GB; the oldest freed go first when
 * full) and handed out again for a request of the same size. MViTv2 frees ~100 large blocks
 * per call: with 64 slots the oldest were gone before their next use. */
enum { CACHE_SLOTS = 256 };
#define CACHE_MIN ((size_t)64 << 10)
static size_t cache_cap(void) {
  static size_t cap;
  if (!cap) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    size_t c = pages > 0 && page > 0 ? (size_t)pages * (size_t)page / 8 : 0;
    size_t lo = (size_t)256 << 20, hi = (size_t)4 << 30;
    cap = c < lo ? lo : c > hi ? hi : c;
  }
  return cap;
}
#define CACHE_BYTES cache_cap()
static struct {
  void *p;
  size_t bytes;
} cache[CACHE_SLOTS];
static int cache_n;       /* entries in use: cache[0..cache_n), oldest first */
static size_t cache_sum;  /* their bytes */
static volatile int cache_lock;

static inline void relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

static void lock_cache(void) {
  while (__atomic_exchange_n(&cache_lock, 1, __ATOMIC_ACQUIRE))
    while (__atomic_load_n(&cache_lock, __ATOMIC_RELAXED)) relax();
}
static void unlock_cache(void) { __atomic_store_n(&cache_lock, 0, __ATOMIC_RELEASE); }

static void *data_alloc(size_t bytes) {
  if (bytes >= CACHE_MIN) {
    void *p = NULL;
    lock_cache();
    for (int i = cache_n - 1; i >= 0; i--) {
      if (cache[i].bytes == bytes) {
        p = cache[i].p;
        cache_sum -= bytes;
        memmove(&cache[i], &cache[i + 1], (size_t)(cache_n - 1 - i) * sizeof cache[0]);
        cache_n--;
        break;
      }
    }
    unlock_cache();
    if (p) return p;
  }
  void *p = aligned_alloc(64, bytes);
  if (!p) {
    fprintf(stderr, "relay: out of memory (%zu bytes)\n", bytes);
    abort();
  }
  return p;
}

static void data_free(void *p, size_t bytes) {
  if (bytes < CACHE_MIN || bytes > CACHE_BYTES) {
    free(p);
    return;
  }
  void *evict[CACHE_SLOTS];
  int ne = 0;
  lock_cache();
  while (cache_n && (cache_n == CACHE_SLOTS || cache_sum + bytes > CACHE_BYTES)) {
    evict[ne++] = cache[0].p;
    cache_sum -= cache[0].bytes;
    memmove(&cache[0], &cache[1], (size_t)(cache_n - 1) * sizeof cache[0]);
    cache_n--;
  }
  cache[cache_n].p = p;
  cache[cache_n].bytes = bytes;
  cache_n++;
  cache_sum += bytes;
  unlock_cache();
  for (int i = 0; i < ne; i++) free(evict[i]);
}

/* Scratch buffers of generated kernels (stages a fused group materialises, sized at run time)
 * come from the same blocks: MViTv2's index grids faulted 2 GB of pages in at every call. */
void *relay_scratch_alloc(int64_t bytes) { return data_alloc((size_t)bytes); }
void relay_scratch_free(void *p, int64_t bytes) { data_free(p, (size_t)bytes); }

/* the library unloaded: hand the kept blocks back */
__attribute__((destructor)) static void drop_cache(void) {
  for (int i = 0; i < cache_n; i++) free(cache[i].p);
  cache_n = 0;
  cache_sum = 0;
}

/* -- tensors ---------------------------------------------------------------------------- */
RObj *relay_tensor_new(int64_t ndim, const int64_t *shape, int64_t itemsize) {
  RObj *o = robj_new(K_TENSOR, 0, ndim * (int64_t)sizeof(int64_t));
  o->n = ndim;
  o->tag = (int32_t)itemsize;
  o->shape = (int64_t *)(o->fields);
  int64_t count = 1;
  for (int64_t i = 0; i < ndim; i++) {
    if (shape[i] < 0) {
      fprintf(stderr, "relay: negative dimension %lld\n", (long long)shape[i]);
      abort();
    }
    o->shape[i] = shape[i];
    count *= shape[i];
  }
  size_t bytes = (size_t)(count * itemsize + 63) / 64 * 64;
  if (!bytes) bytes = 64;
  o->data = data_alloc(bytes);
  o->bytes = bytes;
  o->owns = 1;
  return o;
}

/* A tensor over memory someone else owns (inputs, constants); never freed by release. */
RObj *relay_tensor_wrap(void *data, int64_t ndim, const int64_t *shape, int64_t itemsize) {
  RObj *o = robj_new(K_TENSOR, 0, ndim * (int64_t)sizeof(int64_t));
  o->n = ndim;
  o->tag = (int32_t)itemsize;
  o->shape = (int64_t *)(o->fields);
  for (int64_t i = 0; i < ndim; i++) o->shape[i] = shape[i];
  o->data = data;
  o->owns = 0;
  return o;
}

void relay_wrap_free(RObj *o) { free(o); }

static RObj *own_tensor(RObj *o) {
  if (o->rc >= 0) {
    relay_retain(o);
    return o;
  }
  RObj *c = relay_tensor_new(o->n, o->shape, o->tag);
  int64_t count = 1;
  for (int64_t i = 0; i < o->n; i++) count *= o->shape[i];
  memcpy(c->data, o->data, (size_t)(count * o->tag));
  return c;
}

/* An owned reference for a caller that outlives the call: borrowed tensors (constants, which
   die with the call) are copied, also inside tuples and ADT cells. The last field of a cell
   (a list's tail) is followed in a loop, so long lists need no deep recursion. */
RObj *relay_own(RObj *o) {
  if (o->kind == K_TENSOR) return own_tensor(o);
  if (o->kind != K_TUPLE && o->kind != K_ADT) {
    relay_retain(o);
    return o;
  }
  RObj *head = NULL, *prev = NULL;
  int64_t prev_slot = 0;
  while (o && (o->kind == K_TUPLE || o->kind == K_ADT)) {
    RObj *c = robj_new(o->kind, o->n, 0);
    c->tag = o->tag;
    for (int64_t i = 0; i + 1 < o->n; i++) c->fields[i] = relay_own(o->fields[i]);
    if (prev) prev->fields[prev_slot] = c;
    else head = c;
    if (o->n == 0) return head;
    prev = c;
    prev_slot = o->n - 1;
    o = o->fields[o->n - 1];
  }
  prev->fields[prev_slot] = o ? relay_own(o) : NULL;
  return head;
}
void relay_make_borrowed(RObj *o) { o->rc = -1; }

void *relay_data(RObj *o) { return o->data; }
int64_t relay_dim(RObj *o, int64_t i) { return o->shape[i]; }
int64_t relay_ndim(RObj *o) { return o->n; }
int64_t *relay_shape(RObj *o) { return o->shape; }
int64_t relay_kind(RObj *o) { return o->kind; }
int64_t relay_itemsize(RObj *o) { return o->tag; }

/* -- tuples, ADT cells, closures, references -------------------------------------------- */
RObj *relay_tuple_new(int64_t n) { return robj_new(K_TUPLE, n, 0); }
RObj *relay_adt_new(int32_t tag, int64_t n) {
  RObj *o = robj_new(K_ADT, n, 0);
  o->tag = tag;
  return o;
}
RObj *relay_closure_new(void *fn, int64_t n) {
  RObj *o = robj_new(K_CLOSURE, n, 0);
  o->data = fn;
  return o;
}
RObj *relay_ref_new(RObj *v) {
  RObj *o = robj_new(K_REF, 1, 0);
  o->fields[0] = v; /* steals */
  return o;
}
void *relay_closure_fn(RObj *o) { return o->data; }
int32_t relay_tag(RObj *o) { return o->tag; }
/* borrowed */
RObj *relay_field(RObj *o, int64_t i) { return o->fields[i]; }
/* steals v */
void relay_set_field(RObj *o, int64_t i, RObj *v) { o->fields[i] = v; }
/* steals v, releases the old value */
void relay_ref_write(RObj *o, RObj *v) {
  RObj *old = o->fields[0];
  o->fields[0] = v;
  relay_release(old);
}

/* -- errors ------------------------------------------------------------------------------- */
static __thread jmp_buf *relay_jmp;
static __thread char relay_msg[512];

void relay_fail(const char *msg) {
  snprintf(relay_msg, sizeof relay_msg, "%s", msg);
  if (relay_jmp) longjmp(*relay_jmp, 1);
  fprintf(stderr, "relay: %s\n", msg);
  abort();
}

/* `src`'s bytes seen with another shape and item size (reshape and other view ops of the
   general path): the same data, no copy; the view holds the tensor owning it. A borrowed
   tensor (an input or constant, which dies with the call) is copied instead. */
RObj *relay_tensor_view(RObj *src, int64_t ndim, const int64_t *shape, int64_t itemsize) {
  int64_t count = 1, have = src->tag;
  for (int64_t i = 0; i < ndim; i++) count *= shape[i];
  for (int64_t i = 0; i < src->n; i++) have *= src->shape[i];
  if (count * itemsize != have) {
    char buf[160];
    snprintf(buf, sizeof buf, "reshape: %lld bytes cannot be viewed as %lld elements of %lld bytes",
             (long long)have, (long long)count, (long long)itemsize);
    relay_fail(buf);
  }
  RObj *root = src->base ? src->base : src;
  if (root->rc < 0) {
    RObj *c = relay_tensor_new(ndim, shape, itemsize);
    memcpy(c->data, src->data, (size_t)have);
    return c;
  }
  RObj *o = robj_new(K_TENSOR, 0, ndim * (int64_t)sizeof(int64_t));
  o->n = ndim;
  o->tag = (int32_t)itemsize;
  o->shape = (int64_t *)(o->fields);
  for (int64_t i = 0; i < ndim; i++) o->shape[i] = shape[i];
  o->data = src->data;
  o->owns = 0;
  o->base = root;
  relay_retain(root);
  return o;
}

/* A shape check: fail with `msg` unless a == b. */
void relay_check_dim(int64_t a, int64_t b, const char *msg) {
  if (a != b) {
    char buf[400];
    snprintf(buf, sizeof buf, "%s (%lld vs %lld)", msg, (long long)a, (long long)b);
    relay_fail(buf);
  }
}

const char *relay_last_error(void) { return relay_msg; }

/* An index outside its axis, met by generated code (which then reads element 0 instead, so
 * nothing out of bounds is touched). Under relay_guarded_call it fails at once; otherwise the
 * first one is kept for relay_error_pending, which the static entry asks after each step. */
static __thread int relay_pending;

void relay_index_error(int64_t v, int64_t n) {
  char buf[200];
  if (relay_pending) return;
  snprintf(buf, sizeof buf, "index %lld is out of range for an axis of size %lld", (long long)v,
           (long long)n);
  if (relay_jmp) relay_fail(buf);
  snprintf(relay_msg, sizeof relay_msg, "%s", buf);
  relay_pending = 1;
}

/* Loop budget of the calls made on this thread: generated code ticks once per loop iteration
 * (a jump back) and per function call; past max_iterations or the deadline it fails. */
static __thread int64_t relay_ticks, relay_max_ticks;
static __thread double relay_deadline;

static double relay_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* max_iterations <= 0: unbounded; seconds <= 0: no deadline. Counts restart at each call. */
void relay_set_budget(int64_t max_iterations, double seconds) {
  relay_ticks = 0;
  relay_max_ticks = max_iterations;
  relay_deadline = seconds > 0 ? relay_now() + seconds : 0;
}

void relay_tick(void) {
  char buf[200];
  relay_ticks++;
  if (relay_max_ticks > 0 && relay_ticks > relay_max_ticks) {
    snprintf(buf, sizeof buf,
             "limit: the model made more than %lld loop iterations / calls (max_iterations)",
             (long long)relay_max_ticks);
    relay_fail(buf);
  }
  if (relay_deadline > 0 && relay_now() > relay_deadline) relay_fail("limit: the model ran past its timeout");
}

/* 1 if an error was met since the last ask (message in relay_last_error), then cleared. */
int32_t relay_error_pending(void) {
  int32_t r = relay_pending;
  relay_pending = 0;
  return r;
}

typedef int32_t (*relay_entry_fn)(RObj **, RObj **, void *const *, int32_t);

/* Runs a generated entry; returns 0, or 1 with the message in relay_last_error(). */
int32_t relay_guarded_call(relay_entry_fn fn, RObj **ins, RObj **outs, void *const *consts,
                           int32_t nthreads) {
  jmp_buf here;
  jmp_buf *saved = relay_jmp;
  relay_jmp = &here;
  relay_msg[0] = 0;
  if (setjmp(here)) {
    relay_jmp = saved;
    return 1;
  }
  int32_t rc = fn(ins, outs, consts, nthreads);
  relay_jmp = saved;
  return rc;
}
