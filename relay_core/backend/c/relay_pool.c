/* The thread pool that runs parallel regions of generated code (replaces libgomp).
 *
 *   relay_parallel(fn, ctx, nthreads, nshards)
 *
 * runs `fn(ctx, task, nshards, worker)` on the calling thread (worker 0) and on up to
 * nthreads - 1 pool workers (worker 1 ..). The loop is cut into `nshards` shards (more than
 * threads); each participant takes shards one at a time with `relay_task_next(task)` until it
 * returns -1, so a thread that is descheduled or not yet awake only delays the shard it holds:
 * the caller never waits for a worker that has not taken a shard. `worker` is unique among the
 * threads running one region (for per-thread scratch), in [0, nthreads).
 *
 * Design:
 * - one pool per shared library (static state), workers created lazily, up to 63;
 * - one region at a time per pool: a call made while the pool is busy (another thread's region,
 *   or a region inside a region) runs all its shards inline on the calling thread;
 * - shards are dealt in contiguous blocks, one per participant (worker w owns block w); a
 *   participant takes its own block's shards first, in order, then takes what is left of the
 *   others' (block w+1, w+2, ...). Consecutive regions over the same data (the steps of a
 *   recurrence reading one weight matrix) so give each thread the same part as before, still in
 *   its own core's cache, while a thread that is late still only delays the shard it holds;
 * - each block's next shard, its end and the region's generation share one 64-bit word (a
 *   cache line of its own; at most RELAY_MAX_SHARDS shards); a participant claims a shard with
 *   a compare-and-swap that checks the generation, so a late worker never touches a finished
 *   region (it reads fn/ctx, and the CAS proves they belonged to a live region: a word holds
 *   its block's end, so a count read from the next region cannot make a finished block look
 *   unfinished);
 * - workers wait for a region spinning for RELAY_SPIN_US microseconds, then sleep on a futex;
 *   the caller waits for shards still held by workers the same way. Knobs (read when the pool
 *   starts): RELAY_WAIT_POLICY=passive (no spinning) | spin (spin 100 ms) | unset (spin
 *   RELAY_DEFAULT_SPIN_US); RELAY_SPIN_US=<n> overrides both, relay_pool_set_spin_us() at
 *   run time. Spinning long hurts on a busy machine (a BERT-like encoder at load 16 on 2
 *   cores: 31-37 ms with no spin, 42-48 ms with 500 us). 100 us, measured in one process
 *   with the setting alternated per round against onnxruntime (2026-12-04, Xeon, 2 vCPUs):
 *   quiet, SqueezeNet / MobileNetV2 / ResNet-18 at batch 1 took 0.95 / 0.94 / 0.98 of their
 *   time with 20 us (the serial gaps of small single-threaded steps put the worker to sleep
 *   before the next region, and this VM wakes an idle vCPU in 3 us to 2.5 ms); with two
 *   processes spinning on the cores, SqueezeNet 0.91, a BERT-base encoder 1.06. Idle workers
 *   exit after RELAY_IDLE_EXIT_MS and are recreated on demand;
 * - after fork() the child starts with no workers.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

typedef void (*relay_task_fn)(void *ctx, void *task, int64_t nshards, int64_t worker);

typedef struct {
  int pooled;     /* claims go through the pool's block words (else: next / n below) */
  int held;       /* a claimed shard is not finished yet */
  uint32_t gen;   /* the region's generation */
  int32_t nblk;   /* blocks (participants) of the region */
  int32_t blk;    /* the block claimed from now (starts at the participant's own) */
  int32_t left;   /* blocks not yet found empty, the current one included */
  int64_t first;  /* a shard claimed before fn was called (-1: none) */
  int64_t next, n;
} relay_task;

#define RELAY_MAX_WORKERS 63
#define RELAY_MAX_SHARDS 0xffff /* a block word's shard fields are 16 bits */
#define RELAY_DEFAULT_SPIN_US 100
#define RELAY_IDLE_EXIT_MS 5000

typedef struct {
  _Atomic uint32_t seq;      /* bumped to call this worker to a region (futex word) */
  uint32_t seen0;            /* seq when the worker was created (its first region bumps it) */
  _Atomic int32_t sleeping;  /* waiting in the futex */
  _Atomic int32_t alive;
} relay_worker;

typedef struct {
  _Alignas(64) _Atomic uint64_t word; /* generation << 32 | end << 16 | next shard */
} relay_block;

static struct {
  _Atomic uint64_t word;  /* generation << 32: the current region's */
  _Atomic uint32_t done;  /* shards finished in the current region (futex word) */
  _Atomic int32_t caller_sleeping;
  _Atomic(relay_task_fn) fn;
  _Atomic(void *) ctx;
  _Atomic int64_t n;
  _Atomic int32_t nthreads;
  atomic_flag busy;
  uint32_t gen;
  pthread_mutex_t grow;
  _Atomic int started;
  _Atomic int64_t spin_ns;
  relay_worker w[RELAY_MAX_WORKERS + 1];
  relay_block blk[RELAY_MAX_WORKERS + 1];
} P = {.busy = ATOMIC_FLAG_INIT, .grow = PTHREAD_MUTEX_INITIALIZER};

static __thread int relay_in_region;

static void futex_wait(_Atomic uint32_t *addr, uint32_t val, const struct timespec *timeout) {
  syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAIT_PRIVATE, val, timeout, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *addr, int n) {
  syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Spin until *addr != val, for at most spin_ns; returns 1 when it changed. */
static int spin_while(_Atomic uint32_t *addr, uint32_t val) {
  if (P.spin_ns <= 0) return atomic_load(addr) != val;
  int64_t t0 = now_ns();
  for (;;) {
    for (int k = 0; k < 64; k++) {
      if (atomic_load_explicit(addr, memory_order_acquire) != val) return 1;
      cpu_relax();
    }
    if (now_ns() - t0 > P.spin_ns) return atomic_load(addr) != val;
  }
}

/* Block i of n shards among k participants: [i * n / k, (i + 1) * n / k). */
static inline int64_t block_start(int64_t i, int64_t n, int64_t k) { return i * n / k; }

/* Claims the next shard of generation t->gen for task t: from its current block while that has
 * shards, then from the following blocks; -1 when none is left. A block's word holds its own
 * end, so a late worker that read another region's shard count or block count still only claims
 * a shard of a region that is not over (every shard of a finished region was claimed). */
static int64_t claim(relay_task *t) {
  while (t->left > 0) {
    relay_block *bk = &P.blk[t->blk];
    uint64_t w = atomic_load(&bk->word);
    for (;;) {
      if ((uint32_t)(w >> 32) != t->gen) return -1; /* the region is over */
      if ((w & 0xffffu) >= ((w >> 16) & 0xffffu)) break;
      if (atomic_compare_exchange_weak(&bk->word, &w, w + 1)) return (int64_t)(w & 0xffffu);
    }
    t->blk = t->blk + 1 == t->nblk ? 0 : t->blk + 1;
    t->left--;
  }
  return -1;
}

static void finish_shard(int64_t n) {
  uint32_t d = atomic_fetch_add(&P.done, 1) + 1;
  if (d == (uint32_t)n && atomic_load(&P.caller_sleeping)) futex_wake(&P.done, 1);
}

int64_t relay_task_next(void *task) {
  relay_task *t = (relay_task *)task;
  if (!t->pooled) return t->next < t->n ? t->next++ : -1;
  if (t->held) {
    t->held = 0;
    finish_shard(t->n);
  }
  int64_t s = t->first;
  if (s >= 0) {
    t->first = -1;
  } else {
    s = claim(t);
  }
  t->held = s >= 0;
  return s;
}

/* A worker called to a region: claims a first shard (which proves fn / ctx are the live
 * region's), then runs fn, which claims the rest. */
static void join_region(int64_t id) {
  uint64_t w = atomic_load(&P.word);
  relay_task_fn fn = atomic_load(&P.fn);
  void *ctx = atomic_load(&P.ctx);
  int64_t n = atomic_load(&P.n);
  int32_t k = atomic_load(&P.nthreads);
  if (id >= k) return;
  uint32_t gen = (uint32_t)(w >> 32);
  relay_task t = {1, 0, gen, k, (int32_t)id, k, -1, 0, n};
  int64_t s = claim(&t);
  if (s < 0) return;
  t.first = s;
  fn(ctx, &t, n, id);
  if (t.held) finish_shard(n); /* fn stopped before asking for another shard */
}

static void *worker_main(void *arg) {
  int64_t id = (int64_t)(intptr_t)arg;
  relay_worker *me = &P.w[id];
  relay_in_region = 1; /* regions started inside a shard run inline */
  uint32_t seen = me->seen0; /* the region that created this worker is one to join */
  for (;;) {
    if (!spin_while(&me->seq, seen)) {
      struct timespec idle = {RELAY_IDLE_EXIT_MS / 1000, (RELAY_IDLE_EXIT_MS % 1000) * 1000000L};
      for (;;) {
        atomic_store(&me->sleeping, 1);
        int64_t t0 = now_ns();
        if (atomic_load(&me->seq) == seen) futex_wait(&me->seq, seen, &idle);
        atomic_store(&me->sleeping, 0);
        if (atomic_load(&me->seq) != seen) break;
        if (now_ns() - t0 >= (int64_t)RELAY_IDLE_EXIT_MS * 1000000) {
          /* idle: exit (the next region starts a new worker). A region published meanwhile
           * simply runs without this worker. */
          pthread_mutex_lock(&P.grow);
          int stay = atomic_load(&me->seq) != seen;
          if (!stay) atomic_store(&me->alive, 0);
          pthread_mutex_unlock(&P.grow);
          if (!stay) return NULL;
          break;
        }
      }
    }
    seen = atomic_load(&me->seq);
    join_region(id);
  }
}

static void after_fork_child(void) {
  for (int i = 0; i <= RELAY_MAX_WORKERS; i++) {
    atomic_store(&P.w[i].alive, 0);
    atomic_store(&P.w[i].sleeping, 0);
  }
  atomic_flag_clear(&P.busy);
  pthread_mutex_init(&P.grow, NULL);
}

static void pool_init(void) {
  const char *pol = getenv("RELAY_WAIT_POLICY");
  int64_t us = RELAY_DEFAULT_SPIN_US;
  if (pol && (!strcmp(pol, "passive") || !strcmp(pol, "PASSIVE"))) us = 0;
  if (pol && (!strcmp(pol, "spin") || !strcmp(pol, "SPIN") || !strcmp(pol, "active"))) us = 100000;
  const char *s = getenv("RELAY_SPIN_US");
  if (s && *s) us = atoll(s);
  P.spin_ns = us < 0 ? 0 : us * 1000;
  pthread_atfork(NULL, NULL, after_fork_child);
  P.started = 1;
}

/* Makes sure workers 1 .. k are running (best effort: a worker that cannot be created is
 * simply missing from the regions). */
static void ensure_workers(int k) {
  if (k > RELAY_MAX_WORKERS) k = RELAY_MAX_WORKERS;
  int missing = !P.started;
  for (int i = 1; i <= k && !missing; i++) missing = !atomic_load(&P.w[i].alive);
  if (!missing) return;
  pthread_mutex_lock(&P.grow);
  if (!P.started) pool_init();
  for (int i = 1; i <= k; i++) {
    if (atomic_load(&P.w[i].alive)) continue;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 8 << 20);
    pthread_t th;
    P.w[i].seen0 = atomic_load(&P.w[i].seq);
    if (pthread_create(&th, &attr, worker_main, (void *)(intptr_t)i) == 0)
      atomic_store(&P.w[i].alive, 1);
    pthread_attr_destroy(&attr);
  }
  pthread_mutex_unlock(&P.grow);
}

void relay_parallel(relay_task_fn fn, void *ctx, int32_t nthreads, int64_t nshards) {
  if (nshards > RELAY_MAX_SHARDS) nshards = RELAY_MAX_SHARDS;
  if (nthreads <= 1 || nshards <= 1 || relay_in_region || atomic_flag_test_and_set(&P.busy)) {
    relay_task t = {0, 0, 0, 1, 0, 1, -1, 0, 1}; /* inline: the whole loop as one shard */
    fn(ctx, &t, 1, 0);
    return;
  }
  int nw = nthreads - 1;
  if (nw > RELAY_MAX_WORKERS) nw = RELAY_MAX_WORKERS;
  ensure_workers(nw);
  atomic_store(&P.fn, fn);
  atomic_store(&P.ctx, ctx);
  atomic_store(&P.n, nshards);
  atomic_store(&P.done, 0);
  uint32_t gen = ++P.gen;
  int k = nw + 1;
  if (nshards < k) k = (int)nshards; /* every block holds a shard */
  for (int i = 0; i < k; i++)
    atomic_store(&P.blk[i].word, (uint64_t)gen << 32 |
                                     (uint64_t)block_start(i + 1, nshards, k) << 16 |
                                     (uint64_t)block_start(i, nshards, k));
  atomic_store(&P.nthreads, k);
  atomic_store(&P.word, (uint64_t)gen << 32);
  for (int i = 1; i <= nw; i++) {
    atomic_fetch_add(&P.w[i].seq, 1);
    if (atomic_load(&P.w[i].sleeping)) futex_wake(&P.w[i].seq, 1);
  }
  relay_in_region = 1;
  relay_task t = {1, 0, gen, k, 0, k, -1, 0, nshards};
  fn(ctx, &t, nshards, 0);
  if (t.held) finish_shard(nshards);
  relay_in_region = 0;
  /* wait for the shards other threads still hold */
  uint32_t d = atomic_load(&P.done);
  while (d != (uint32_t)nshards) {
    if (!spin_while(&P.done, d)) {
      atomic_store(&P.caller_sleeping, 1);
      d = atomic_load(&P.done);
      if (d != (uint32_t)nshards) futex_wait(&P.done, d, NULL);
      atomic_store(&P.caller_sleeping, 0);
    }
    d = atomic_load(&P.done);
  }
  atomic_flag_clear(&P.busy);
}

/* Sets how long workers (and a caller waiting for shards) spin before sleeping, in
 * microseconds (0: sleep at once); returns the previous value. For A/B measurements in one
 * process and for hosts that know their load better than the default. */
int64_t relay_pool_set_spin_us(int64_t us) {
  pthread_mutex_lock(&P.grow);
  if (!P.started) pool_init();
  pthread_mutex_unlock(&P.grow);
  int64_t old = P.spin_ns / 1000;
  P.spin_ns = us < 0 ? 0 : us * 1000;
  return old;
}

/* The number of pool workers alive (tests). */
int32_t relay_pool_workers(void) {
  int32_t k = 0;
  for (int i = 1; i <= RELAY_MAX_WORKERS; i++) k += atomic_load(&P.w[i].alive);
  return k;
}
