/* The C ABI from a plain C program, under mpirun: lifecycle, topology,
 * allreduce and broadcast values, error codes with messages (a mismatch
 * across ranks, bad arguments, unknown handles), process sets, join,
 * shared-host memory, device buffers refused without a GPU, re-init. Exits non-zero
 * on the first failure, naming it. */
#include <chorus/c_api.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

static int g_rank = -1;
static void* g_shared_block = NULL;  /* allocated before shutdown, freed after */

#define CHECK(cond)                                                                     \
  do {                                                                                  \
    if (!(cond)) {                                                                      \
      fprintf(stderr, "[rank %d] %s:%d: check failed: %s (last error: '%s')\n", g_rank, \
              __FILE__, __LINE__, #cond, chorus_last_error());                          \
      exit(1);                                                                          \
    }                                                                                   \
  } while (0)

/* Bad input this rank passed: negotiated, so the call returns 0 and every
   rank's handle fails with a message naming the refusing rank(s) and `text`. */
#define CHECK_REFUSED(call, handle, text)                                  \
  do {                                                                     \
    CHECK((call) == 0);                                                    \
    CHECK(chorus_wait(handle) == CHORUS_ERR_INVALID_ARGUMENT);             \
    CHECK(strstr(chorus_last_error(), "refused on rank") != NULL);         \
    CHECK(strstr(chorus_last_error(), text) != NULL);                      \
  } while (0)

static void test_before_init(void) {
  CHECK(chorus_is_initialized() == 0);
  CHECK(chorus_is_running() == 0);
  CHECK(chorus_rank() == CHORUS_ERR_PRECONDITION);
  CHECK(strstr(chorus_last_error(), "not initialized") != NULL);
  CHECK(chorus_abi_version() == CHORUS_ABI_VERSION);
  CHECK(CHORUS_ABI_VERSION >= 4);
  CHECK(chorus_join() == CHORUS_ERR_PRECONDITION);
  CHECK(chorus_stop_timeline() == 0); /* no timeline: nothing to stop */
  CHECK(chorus_is_homogeneous() == CHORUS_ERR_PRECONDITION);
  CHECK(chorus_mpi_enabled() == 0 && chorus_tcp_enabled() == 0);
  CHECK(chorus_mpi_built() == 0 || chorus_mpi_built() == 1);
  CHECK(chorus_nccl_built() == 0 || (chorus_cuda_built() == 1 && chorus_nccl_built() >= 21800));
}

static void expect_launcher_value(const char* name, int value) {
  const char* text = getenv(name);
  if (text != NULL && atoi(text) != value) {
    fprintf(stderr, "[rank %d] %s=%s, but Chorus says %d\n", g_rank, name, text, value);
    exit(1);
  }
}

static void test_topology(void) {
  int size = chorus_size();
  CHECK(size >= 1);
  CHECK(g_rank >= 0 && g_rank < size);
  CHECK(chorus_local_rank() >= 0 && chorus_local_rank() < chorus_local_size());
  CHECK(chorus_cross_rank() >= 0 && chorus_cross_rank() < chorus_cross_size());
  CHECK(chorus_local_size() * chorus_cross_size() >= size);
  if (chorus_local_size() == size) CHECK(chorus_is_homogeneous() == 1);
  /* One transport carries the job: MPI under mpirun, TCP without it. */
  CHECK(chorus_mpi_enabled() + chorus_tcp_enabled() == 1);
  if (getenv("OMPI_COMM_WORLD_SIZE") == NULL) CHECK(chorus_tcp_enabled() == 1);
  if (chorus_mpi_enabled()) CHECK(chorus_mpi_built() == 1);
  /* The job the launcher started, not a rank alone (mpirun's or torchrun's names). */
  expect_launcher_value("OMPI_COMM_WORLD_SIZE", size);
  expect_launcher_value("OMPI_COMM_WORLD_RANK", g_rank);
  expect_launcher_value("WORLD_SIZE", size);
  expect_launcher_value("RANK", g_rank);
}

static void test_allreduce(void) {
  int size = chorus_size();
  enum { N = 1000 };
  float in[N], out[N];
  int64_t h = 0;
  int i;
  for (i = 0; i < N; ++i) in[i] = (float)(g_rank + i);
  CHECK(chorus_allreduce_async("c.sum", in, out, N, CHORUS_FLOAT32, CHORUS_SUM, 1.0, 1.0, &h) == 0);
  CHECK(chorus_wait(h) == 0);
  for (i = 0; i < N; ++i) CHECK(out[i] == (float)(size * (size - 1) / 2 + size * i));

  /* In place, Average with scale factors, int64. */
  int64_t v[3] = {10 * (g_rank + 1), 20, 30};
  CHECK(chorus_allreduce_async("c.avg", v, v, 3, CHORUS_INT64, CHORUS_AVERAGE, 2.0, 1.0, &h) == 0);
  while (chorus_poll(h) == 0) {
  }
  CHECK(chorus_poll(h) == 1);
  CHECK(chorus_wait(h) == 0);
  CHECK(v[0] == 10 * (size + 1));  /* mean of 20*(r+1) */
  CHECK(v[1] == 40);

  /* Adasum: vectors on disjoint elements add up (orthogonal pairs sum at
     every node of the tree); equal vectors stay as they are. */
  {
    double unit[8] = {0}, same[3] = {1.0, -2.0, 0.5};
    unit[g_rank % 8] = 1.0;
    CHECK(chorus_allreduce_async("c.adasum.unit", unit, unit, 8, CHORUS_FLOAT64, CHORUS_ADASUM, 1.0, 1.0, &h) == 0);
    CHECK(chorus_wait(h) == 0);
    for (i = 0; i < 8; ++i) CHECK(unit[i] == (i < size ? 1.0 : 0.0));
    CHECK(chorus_allreduce_async("c.adasum.same", same, same, 3, CHORUS_FLOAT64, CHORUS_ADASUM, 1.0, 1.0, &h) == 0);
    CHECK(chorus_wait(h) == 0);
    CHECK(same[0] == 1.0 && same[1] == -2.0 && same[2] == 0.5);
  }

  /* Zero elements with NULL pointers. */
  CHECK(chorus_allreduce_async("c.empty", NULL, NULL, 0, CHORUS_FLOAT64, CHORUS_MAX, 1.0, 1.0, &h) == 0);
  CHECK(chorus_wait(h) == 0);
}

static void test_broadcast(void) {
  int size = chorus_size();
  int root = size - 1;
  double buf[5];
  int64_t h = 0;
  int i;
  for (i = 0; i < 5; ++i) buf[i] = g_rank == root ? 3.5 * i : -1.0;
  CHECK(chorus_broadcast_async("c.bcast", buf, 5, CHORUS_FLOAT64, root, &h) == 0);
  CHECK(chorus_wait(h) == 0);
  for (i = 0; i < 5; ++i) CHECK(buf[i] == 3.5 * i);
}

/* The allocation callback: remembers what it handed out. */
struct gathered {
  void* memory;
  int64_t bytes;
  int64_t rows;
};

static void* allocate(void* user, int64_t bytes, const int64_t* shape, int ndim) {
  struct gathered* g = (struct gathered*)user;
  g->memory = malloc(bytes > 0 ? (size_t)bytes : 1);
  g->bytes = bytes;
  g->rows = ndim > 0 ? shape[0] : -1;
  return g->memory;
}

static void* refuse(void* user, int64_t bytes, const int64_t* shape, int ndim) {
  (void)user; (void)bytes; (void)shape; (void)ndim;
  return NULL;
}

static void test_allgather_and_barrier(void) {
  int size = chorus_size();
  int r, k;
  int64_t rows = g_rank + 1, shape[2] = {g_rank + 1, 2}, h = 0, want_rows = 0;
  int32_t in[64];
  struct gathered g = {NULL, 0, 0};
  for (k = 0; k < rows * 2; ++k) in[k] = g_rank * 100 + k;
  CHECK(chorus_allgather_async("c.gather", in, shape, 2, CHORUS_INT32, allocate, &g, &h) == 0);
  CHECK(chorus_wait(h) == 0);
  for (r = 0; r < size; ++r) want_rows += r + 1;
  CHECK(g.rows == want_rows);
  CHECK(g.bytes == want_rows * 2 * 4);
  {
    const int32_t* out = (const int32_t*)g.memory;
    int64_t at = 0;
    for (r = 0; r < size; ++r) {
      for (k = 0; k < (r + 1) * 2; ++k) CHECK(out[at++] == r * 100 + k);
    }
  }
  free(g.memory);

  /* A callback that refuses fails the operation with a message, not a crash. */
  CHECK(chorus_allgather_async("c.gather.refused", in, shape, 2, CHORUS_INT32, refuse, NULL, &h) == 0);
  CHECK(chorus_wait(h) == CHORUS_ERR_INVALID_ARGUMENT);
  CHECK(strstr(chorus_last_error(), "returned NULL") != NULL);
  CHECK_REFUSED(chorus_allgather_async("c.gather.bad", in, shape, 0, CHORUS_INT32, allocate, &g, &h), h,
                "needs a shape of at least one dimension");
  CHECK_REFUSED(chorus_allgather_async("c.gather.bad", in, shape, 2, CHORUS_INT32, NULL, &g, &h), h,
                "the allocation callback is NULL");
  CHECK(chorus_barrier() == 0);
  (void)rows;

  /* Reducescatter: 2*size+1 rows of 1 column; rank r keeps its block. */
  {
    int64_t rs_shape[1];
    int32_t rs_in[64];
    int64_t base, extra, mine, first;
    rs_shape[0] = 2 * size + 1;
    for (k = 0; k < rs_shape[0]; ++k) rs_in[k] = k + g_rank;
    g.memory = NULL;
    CHECK(chorus_reducescatter_async("c.rs", rs_in, rs_shape, 1, CHORUS_INT32, CHORUS_SUM, 1.0, 1.0, allocate, &g, &h) == 0);
    CHECK(chorus_wait(h) == 0);
    base = rs_shape[0] / size;
    extra = rs_shape[0] % size;
    mine = base + (g_rank < extra ? 1 : 0);
    first = g_rank * base + (g_rank < extra ? g_rank : extra);
    CHECK(g.rows == mine);
    for (k = 0; k < mine; ++k) CHECK(((int32_t*)g.memory)[k] == size * (first + k) + size * (size - 1) / 2);
    free(g.memory);
  }
  /* Alltoall: rank i sends 1 row to every rank; received splits are all 1. */
  {
    int64_t a_shape[1], got[16];
    int64_t a_in[16];
    int n;
    a_shape[0] = size;
    for (k = 0; k < size; ++k) a_in[k] = g_rank * 10 + k;
    g.memory = NULL;
    CHECK(chorus_alltoall_async("c.a2a", a_in, a_shape, 1, CHORUS_INT64, NULL, 0, allocate, &g, &h) == 0);
    while (chorus_poll(h) == 0) {
    }
    n = chorus_received_splits(h, got, 16);
    CHECK(n == size);
    for (k = 0; k < n; ++k) CHECK(got[k] == 1);
    CHECK(chorus_received_splits(h, got, 0) == CHORUS_ERR_INVALID_ARGUMENT);
    CHECK(chorus_wait(h) == 0);
    for (k = 0; k < size; ++k) CHECK(((int64_t*)g.memory)[k] == k * 10 + g_rank);
    free(g.memory);
    {
      int64_t bad[1] = {-1};
      CHECK(chorus_alltoall_async("c.a2a.bad", a_in, a_shape, 1, CHORUS_INT64, bad, 1, allocate, &g, &h) == 0);
      CHECK(chorus_wait(h) == CHORUS_ERR_INVALID_ARGUMENT); /* negotiated: every rank's handle fails */
      CHECK(strstr(chorus_last_error(), "refused on rank") != NULL);
    }
    {
      /* A negative split count on rank 0 alone: negotiated, every rank fails. */
      int64_t one[1] = {1};
      CHECK(chorus_alltoall_async("c.a2a.nsplits", a_in, a_shape, 1, CHORUS_INT64, g_rank == 0 ? one : NULL,
                                  g_rank == 0 ? -1 : 0, allocate, &g, &h) == 0);
      CHECK(chorus_wait(h) == CHORUS_ERR_INVALID_ARGUMENT);
      CHECK(strstr(chorus_last_error(), "refused on rank 0") != NULL);
      CHECK(strstr(chorus_last_error(), "nsplits -1 is negative") != NULL);
    }
  }
}

static void test_errors(void) {
  int size = chorus_size();
  int64_t h = 0;
  float a[4] = {1, 2, 3, 4};

  CHECK(chorus_allreduce_async(NULL, a, a, 4, CHORUS_FLOAT32, CHORUS_SUM, 1, 1, &h) == CHORUS_ERR_INVALID_ARGUMENT);
  CHECK(strstr(chorus_last_error(), "name is NULL") != NULL);
  CHECK(chorus_allreduce_async("c.bad", a, a, 4, CHORUS_FLOAT32, CHORUS_SUM, 1, 1, NULL) == CHORUS_ERR_INVALID_ARGUMENT);
  CHECK(strstr(chorus_last_error(), "handle is NULL") != NULL);
  /* Arguments one rank may get wrong alone are negotiated: every rank fails. */
  CHECK_REFUSED(chorus_allreduce_async("c.bad", a, a, -1, CHORUS_FLOAT32, CHORUS_SUM, 1, 1, &h), h, "negative");
  CHECK_REFUSED(chorus_allreduce_async("c.bad", a, a, 4, (chorus_dtype)42, CHORUS_SUM, 1, 1, &h), h,
                "unknown dtype 42 in argument 'dtype'");
  CHECK_REFUSED(chorus_allreduce_async("c.bad", a, a, 4, (chorus_dtype)-1, CHORUS_SUM, 1, 1, &h), h,
                "unknown dtype -1 in argument 'dtype'");
  CHECK_REFUSED(chorus_allreduce_async("c.bad", a, a, 4, CHORUS_FLOAT32, (chorus_reduce_op)42, 1, 1, &h), h,
                "unknown reduce op 42 in argument 'op' (a chorus_reduce_op is 0..5)");
  CHECK_REFUSED(chorus_broadcast_async("c.bad", a, 4, (chorus_dtype)10, 0, &h), h,
                "chorus_broadcast_async('c.bad'): unknown dtype 10");
  {
    int64_t shape[1] = {4};
    CHECK_REFUSED(chorus_reducescatter_async("c.bad", a, shape, 1, CHORUS_FLOAT32, (chorus_reduce_op)6, 1, 1, refuse,
                                             NULL, &h),
                  h, "unknown reduce op 6 in argument 'op'");
    /* Refused by the core: negotiated (another rank may have passed a valid
       op), so the handle fails, on every rank, naming this rank. */
    CHECK(chorus_reducescatter_async("c.bad", a, shape, 1, CHORUS_FLOAT32, CHORUS_ADASUM, 1, 1, refuse, NULL, &h) == 0);
    CHECK(chorus_wait(h) == CHORUS_ERR_INVALID_ARGUMENT);
    CHECK(strstr(chorus_last_error(), "adasum is defined for allreduce only") != NULL);
    CHECK(strstr(chorus_last_error(), "refused on rank") != NULL); /* "rank 0" or "ranks 0, 1, ..." */
    CHECK_REFUSED(chorus_allgather_async("c.bad", a, shape, 1, (chorus_dtype)100, refuse, NULL, &h), h,
                  "unknown dtype 100 in argument 'dtype'");
  }
  /* One rank alone passes a negative count: the others do not wait for it. */
  if (size > 1) {
    CHECK(chorus_allreduce_async("c.one.bad", a, a, g_rank == size - 1 ? -1 : 4, CHORUS_FLOAT32, CHORUS_SUM, 1, 1, &h) == 0);
    CHECK(chorus_wait(h) == CHORUS_ERR_INVALID_ARGUMENT);
    {
      char want[64];
      snprintf(want, sizeof want, "refused on rank %d: ", size - 1);
      CHECK(strstr(chorus_last_error(), want) != NULL);
    }
    CHECK(strstr(chorus_last_error(), "count -1 is negative") != NULL);
    CHECK(chorus_allreduce_async("c.one.bad", a, a, 4, CHORUS_FLOAT32, CHORUS_SUM, 1, 1, &h) == 0);
    CHECK(chorus_wait(h) == 0); /* the name is free again */
  }
  CHECK(chorus_allreduce_async("c.bad", a, a, 4, CHORUS_BOOL, CHORUS_SUM, 1, 1, &h) == 0);
  CHECK(chorus_wait(h) == CHORUS_ERR_INVALID_ARGUMENT);
  CHECK(strstr(chorus_last_error(), "sum is not defined for bool") != NULL);
  /* A root outside the job is negotiated (another rank might name a valid
     one): the handle fails, on every rank. */
  CHECK(chorus_broadcast_async("c.bad.root", a, 4, CHORUS_FLOAT32, size, &h) == 0);
  CHECK(chorus_wait(h) == CHORUS_ERR_INVALID_ARGUMENT);
  CHECK(strstr(chorus_last_error(), "is outside 0..") != NULL);
  CHECK(chorus_wait(987654) == CHORUS_ERR_UNKNOWN_HANDLE);
  CHECK(chorus_poll(987654) == CHORUS_ERR_UNKNOWN_HANDLE);
  CHECK(strstr(chorus_last_error(), "unknown chorus handle 987654") != NULL);

  /* A count mismatch across ranks: an error on every rank, never a hang. */
  if (size > 1) {
    float b[5] = {0};
    CHECK(chorus_allreduce_async("c.mismatch", b, b, g_rank == 0 ? 5 : 4, CHORUS_FLOAT32, CHORUS_SUM, 1, 1, &h) == 0);
    CHECK(chorus_wait(h) == CHORUS_ERR_INVALID_ARGUMENT);
    CHECK(strstr(chorus_last_error(), "'c.mismatch'") != NULL);
    CHECK(strstr(chorus_last_error(), "shape differs") != NULL);
  }
  /* A successful call clears the last error. */
  CHECK(chorus_rank() == g_rank);
  CHECK(chorus_last_error()[0] == '\0');
}

/* Process sets: even and odd ranks in sets of their own, collectives inside
 * each, errors from outside, removal. */
static void test_process_sets(void) {
  int size = chorus_size();
  int even[8], odd[8], n_even = 0, n_odd = 0, r, k;
  int set_even, set_odd = -1, mine, n_mine, members_sum = 0;
  int64_t h = 0;
  for (r = 0; r < size && r < 16; ++r) {
    if (r % 2 == 0) even[n_even++] = r;
    else odd[n_odd++] = r;
  }
  set_even = chorus_add_process_set(even, n_even);
  CHECK(set_even == 1);
  if (n_odd > 0) {
    set_odd = chorus_add_process_set(odd, n_odd);
    CHECK(set_odd == 2);
  }
  mine = g_rank % 2 == 0 ? set_even : set_odd;
  n_mine = g_rank % 2 == 0 ? n_even : n_odd;
  CHECK(chorus_process_set_size(mine) == n_mine);
  CHECK(chorus_process_set_rank(mine) == g_rank / 2);
  for (r = g_rank % 2; r < size; r += 2) members_sum += r;
  {
    int32_t v[4] = {g_rank, g_rank, g_rank, 1};
    CHECK(chorus_allreduce_async_in_set(mine, "c.ps.sum", v, v, 4, CHORUS_INT32, CHORUS_SUM, 1.0, 1.0, &h) == 0);
    CHECK(chorus_wait(h) == 0);
    CHECK(v[0] == members_sum && v[3] == n_mine);
  }
  {
    double b[3];
    int root = g_rank % 2; /* the set's lowest global rank */
    for (k = 0; k < 3; ++k) b[k] = g_rank == root ? 1.5 * k : -1.0;
    CHECK(chorus_broadcast_async_in_set(mine, "c.ps.bcast", b, 3, CHORUS_FLOAT64, root, &h) == 0);
    CHECK(chorus_wait(h) == 0);
    for (k = 0; k < 3; ++k) CHECK(b[k] == 1.5 * k);
  }
  {
    int64_t shape[1] = {1};
    int64_t in[1];
    struct gathered g = {NULL, 0, 0};
    in[0] = g_rank;
    CHECK(chorus_allgather_async_in_set(mine, "c.ps.gather", in, shape, 1, CHORUS_INT64, allocate, &g, &h) == 0);
    CHECK(chorus_wait(h) == 0);
    CHECK(g.rows == n_mine);
    for (k = 0; k < n_mine; ++k) CHECK(((int64_t*)g.memory)[k] == g_rank % 2 + 2 * k);
    free(g.memory);
  }
  CHECK(chorus_barrier_in_set(mine) == 0);
  /* From outside the set: an error on this rank, naming the set and the rank. */
  if (set_odd > 0) {
    int other = g_rank % 2 == 0 ? set_odd : set_even;
    float x = 1;
    CHECK(chorus_allreduce_async_in_set(other, "c.ps.outside", &x, &x, 1, CHORUS_FLOAT32, CHORUS_SUM, 1, 1, &h) ==
          CHORUS_ERR_INVALID_ARGUMENT);
    CHECK(strstr(chorus_last_error(), "is not a member of process set") != NULL);
    CHECK(chorus_process_set_rank(other) == CHORUS_ERR_INVALID_ARGUMENT);
  }
  CHECK(chorus_barrier_in_set(42) == CHORUS_ERR_INVALID_ARGUMENT);
  CHECK(strstr(chorus_last_error(), "process set 42 is not registered") != NULL);
  CHECK(chorus_add_process_set(even, 0) == CHORUS_ERR_INVALID_ARGUMENT);
  {
    /* NULL ranks on rank 0 alone: the registration (collective) fails on every rank. */
    int all[1] = {0};
    CHECK(chorus_add_process_set(g_rank == 0 ? NULL : all, 1) == CHORUS_ERR_INVALID_ARGUMENT);
    CHECK(strstr(chorus_last_error(), g_rank == 0 ? "ranks is NULL" : "rank -1 is outside") != NULL);
  }
  CHECK(chorus_remove_process_set(0) == CHORUS_ERR_INVALID_ARGUMENT);
  CHECK(chorus_remove_process_set(set_even) == 0);
  if (set_odd > 0) CHECK(chorus_remove_process_set(set_odd) == 0);
  CHECK(chorus_process_set_size(set_even) == CHORUS_ERR_INVALID_ARGUMENT);
  CHECK(chorus_process_set_size(0) == size);
  (void)odd;
}

/* Join: every rank but the last joins at once; the last one runs an
 * allreduce first, which completes only once the others joined (they take
 * part with zeros), so it joins last, and every rank hears so. */
static void test_join(void) {
  int size = chorus_size();
  int last = size - 1, joined_last, lowest = 0, highest = 0;
  int64_t h = 0;
  if (g_rank == last) {
    float x[2] = {3.0f, 1.0f};
    CHECK(chorus_allreduce_async("c.join.sum", x, x, 2, CHORUS_FLOAT32, CHORUS_SUM, 1, 1, &h) == 0);
    CHECK(chorus_wait(h) == 0);
    CHECK(x[0] == 3.0f && x[1] == 1.0f); /* the joined ranks added zeros */
  }
  joined_last = chorus_join();
  CHECK(joined_last == last);
  /* Collectives work again after everyone joined. */
  lowest = highest = joined_last;
  CHECK(chorus_allreduce_async("c.join.min", &lowest, &lowest, 1, CHORUS_INT32, CHORUS_MIN, 1, 1, &h) == 0);
  CHECK(chorus_wait(h) == 0);
  CHECK(chorus_allreduce_async("c.join.max", &highest, &highest, 1, CHORUS_INT32, CHORUS_MAX, 1, 1, &h) == 0);
  CHECK(chorus_wait(h) == 0);
  CHECK(lowest == last && highest == last);
}

/* Shared-host memory: a fused pair of allreduces on blocks from every
 * rank's arena is reduced right (zero-copy when the job has arenas); the
 * blocks outlive shutdown until freed; bad pointers are refused. */
static void test_shared_host(void) {
  const int size = chorus_size();
  void* a = NULL;
  void* b = NULL;
  int64_t ha = 0, hb = 0, i;
  const int64_t n = 1 << 16;
  CHECK(chorus_allocate_shared_host(n * 4, &a) == 0 && a != NULL);
  CHECK(chorus_allocate_shared_host(n * 4, &b) == 0 && b != NULL);
  CHECK(((uintptr_t)a % 64) == 0);
  CHECK(chorus_in_shared_host(a, n * 4) == 0 || chorus_in_shared_host(a, n * 4) == 1);
  for (i = 0; i < n; ++i) {
    ((float*)a)[i] = (float)(g_rank + i % 7);
    ((float*)b)[i] = (float)(2 * g_rank);
  }
  CHECK(chorus_allreduce_async("c.shared.a", a, a, n, CHORUS_FLOAT32, CHORUS_SUM, 1.0, 1.0, &ha) == 0);
  CHECK(chorus_allreduce_async("c.shared.b", b, b, n, CHORUS_FLOAT32, CHORUS_SUM, 1.0, 1.0, &hb) == 0);
  CHECK(chorus_wait(ha) == 0 && chorus_wait(hb) == 0);
  for (i = 0; i < n; ++i) {
    CHECK(((float*)a)[i] == (float)(size * (size - 1) / 2 + size * (i % 7)));
    CHECK(((float*)b)[i] == (float)(size * (size - 1)));
  }
  CHECK(chorus_free_shared_host(a) == 0);
  CHECK(chorus_free_shared_host(a) == CHORUS_ERR_INVALID_ARGUMENT);  /* twice */
  CHECK(strstr(chorus_last_error(), "chorus_allocate_shared_host") != NULL);
  { int local = 0; CHECK(chorus_free_shared_host(&local) == CHORUS_ERR_INVALID_ARGUMENT); }  /* not ours */
  CHECK(chorus_free_shared_host(NULL) == 0);
  CHECK(chorus_allocate_shared_host(-1, &a) == CHORUS_ERR_INVALID_ARGUMENT);
  CHECK(strstr(chorus_last_error(), "-1") != NULL);
  CHECK(chorus_allocate_shared_host(8, NULL) == CHORUS_ERR_INVALID_ARGUMENT);
  /* `b` is freed after shutdown below: it stays valid until then. */
  g_shared_block = b;
}

/* Device buffers (ABI 6). Without GPU support in the build, or without a
 * usable CUDA device (this test's machines), the call itself fails with a
 * message naming the tensor and why; with a GPU, a zero-length allreduce on
 * the default stream completes. */
static void test_device_buffers(void) {
  int64_t h = 0;
  int64_t shape[1] = {2};
  int rc = chorus_allreduce_async_on_device(0, "c.gpu", NULL, NULL, 0, CHORUS_FLOAT32, CHORUS_SUM, 1, 1, 0, NULL, &h);
  CHECK(rc == CHORUS_OK); /* a device this rank cannot use is negotiated: the handle fails */
  rc = chorus_wait(h);
  if (rc != CHORUS_OK) {
    CHECK(rc == CHORUS_ERR_INVALID_ARGUMENT);
    CHECK(strstr(chorus_last_error(), "allreduce of tensor 'c.gpu'") != NULL);
    CHECK(strstr(chorus_last_error(), "CUDA device 0") != NULL);
    CHECK(strstr(chorus_last_error(), "no GPU support") != NULL ||
          strstr(chorus_last_error(), "no usable CUDA device") != NULL);
  }
  CHECK_REFUSED(
      chorus_allreduce_async_on_device(0, "c.gpu", NULL, NULL, 0, CHORUS_FLOAT32, CHORUS_SUM, 1, 1, -1, NULL, &h), h,
      "device -1 is not a CUDA device index");
  CHECK_REFUSED(chorus_broadcast_async_on_device(0, "c.gpu", NULL, 2, CHORUS_FLOAT32, 0, 0, NULL, &h), h,
                "chorus_broadcast_async_on_device('c.gpu'): buffer is NULL");
  CHECK_REFUSED(chorus_allgather_async_on_device(0, "c.gpu", NULL, shape, 1, CHORUS_FLOAT32, 0, NULL, NULL, NULL, &h), h,
                "the allocation callback is NULL");
  CHECK_REFUSED(
      chorus_alltoall_async_on_device(0, "c.gpu", NULL, shape, 1, CHORUS_FLOAT32, NULL, 1, 0, NULL, refuse, NULL, &h),
      h, "input is NULL");
  {
    int64_t out = 0;
    CHECK_REFUSED(chorus_reducescatter_async_on_device(0, "c.gpu", &h, shape, 1, CHORUS_FLOAT32, (chorus_reduce_op)7, 1,
                                                       1, 0, NULL, refuse, NULL, &out),
                  out, "unknown reduce op 7");
  }
}

/* Grouped allgather (rank r: r + 1 rows of int32, 1 row of float64) and
 * grouped reducescatter (Sum of 2 * size + 1 rows): one allocation per
 * member with its own user data; a bad member starts nothing. */
static void test_grouped(void) {
  int size = chorus_size();
  int r, k;
  int32_t a[16];
  double b[1] = {g_rank * 0.5};
  int64_t shape_a[1] = {g_rank + 1}, shape_b[2] = {1, 1}, handles[2] = {0, 0}, want = 0;
  const char* names[2] = {"c.grouped.a", "c.grouped.b"};
  const void* inputs[2] = {a, b};
  const int64_t* shapes[2] = {shape_a, shape_b};
  int ndims[2] = {1, 2};
  chorus_dtype dtypes[2] = {CHORUS_INT32, CHORUS_FLOAT64};
  struct gathered ga = {NULL, 0, 0}, gb = {NULL, 0, 0};
  void* users[2] = {&ga, &gb};
  for (k = 0; k <= g_rank; ++k) a[k] = g_rank * 10 + k;
  CHECK(chorus_grouped_allgather_async(0, 2, names, inputs, shapes, ndims, dtypes, allocate, users, handles) == 0);
  CHECK(chorus_wait(handles[1]) == 0);
  CHECK(chorus_poll(handles[0]) == 1); /* completed together */
  CHECK(chorus_wait(handles[0]) == 0);
  for (r = 0; r < size; ++r) want += r + 1;
  CHECK(ga.rows == want && gb.rows == size);
  {
    int64_t at = 0;
    for (r = 0; r < size; ++r) {
      for (k = 0; k <= r; ++k) CHECK(((int32_t*)ga.memory)[at++] == r * 10 + k);
      CHECK(((double*)gb.memory)[r] == r * 0.5);
    }
  }
  free(ga.memory);
  free(gb.memory);

  {
    int32_t rs[16];
    int64_t rs_shape[1] = {2 * size + 1}, h[1] = {0}, mine, first;
    const char* rs_names[1] = {"c.grouped.rs"};
    const void* rs_inputs[1] = {rs};
    const int64_t* rs_shapes[1] = {rs_shape};
    int rs_ndims[1] = {1};
    chorus_dtype rs_dtypes[1] = {CHORUS_INT32};
    void* rs_users[1] = {&ga};
    for (k = 0; k < rs_shape[0]; ++k) rs[k] = k + g_rank;
    CHECK(chorus_grouped_reducescatter_async(0, 1, rs_names, rs_inputs, rs_shapes, rs_ndims, rs_dtypes, CHORUS_SUM, 1.0,
                                             1.0, allocate, rs_users, h) == 0);
    CHECK(chorus_wait(h[0]) == 0);
    mine = rs_shape[0] / size + (g_rank < rs_shape[0] % size ? 1 : 0);
    first = g_rank * (rs_shape[0] / size) + (g_rank < rs_shape[0] % size ? g_rank : rs_shape[0] % size);
    CHECK(ga.rows == mine);
    for (k = 0; k < mine; ++k) CHECK(((int32_t*)ga.memory)[k] == size * (first + k) + size * (size - 1) / 2);
    free(ga.memory);
  }

  /* Member 1 with no dimensions: the group is refused, naming the member,
     on every rank. */
  ndims[1] = 0;
  CHECK(chorus_grouped_allgather_async(0, 2, names, inputs, shapes, ndims, dtypes, allocate, users, handles) == 0);
  CHECK(chorus_wait(handles[0]) == CHORUS_ERR_INVALID_ARGUMENT);
  CHECK(strstr(chorus_last_error(), "member 1('c.grouped.b'): needs a shape of at least one dimension") != NULL);
  CHECK(chorus_wait(handles[1]) == CHORUS_ERR_INVALID_ARGUMENT);
  CHECK(chorus_grouped_allgather_async(0, 0, names, inputs, shapes, ndims, dtypes, allocate, users, handles) ==
        CHORUS_ERR_INVALID_ARGUMENT);
  CHECK(chorus_barrier() == 0);
}

/* ABI 13: grouped allreduce (in and out of place, mixed dtypes), a front
   end's refusal of one rank's call, and a wait that gives up and waits again. */
static void test_abi13(void) {
  int size = chorus_size();
  int k;
  float f[3] = {1, 2, 3}, f_out[3] = {0, 0, 0};
  int64_t i64[2] = {g_rank, 10};
  const char* names[2] = {"c.gar.f", "c.gar.i"};
  const void* inputs[2] = {f, i64};
  void* outputs[2] = {f_out, i64};
  int64_t shape_f[1] = {3}, shape_i[2] = {1, 2}, handles[2] = {0, 0}, h = 0;
  const int64_t* shapes[2] = {shape_f, shape_i};
  int ndims[2] = {1, 2};
  chorus_dtype dtypes[2] = {CHORUS_FLOAT32, CHORUS_INT64};
  CHECK(chorus_grouped_allreduce_async(0, 2, names, inputs, outputs, shapes, ndims, dtypes, CHORUS_SUM, 1.0, 1.0,
                                       handles) == 0);
  CHECK(chorus_wait(handles[0]) == 0 && chorus_wait(handles[1]) == 0);
  for (k = 0; k < 3; ++k) CHECK(f_out[k] == (float)((k + 1) * size) && f[k] == (float)(k + 1));
  CHECK(i64[0] == (int64_t)size * (size - 1) / 2 && i64[1] == 10 * size);
  /* A member's bad dtype on the last rank: every rank's group fails. */
  if (g_rank == size - 1) dtypes[1] = (chorus_dtype)42;
  CHECK(chorus_grouped_allreduce_async(0, 2, names, inputs, outputs, shapes, ndims, dtypes, CHORUS_SUM, 1.0, 1.0,
                                       handles) == 0);
  CHECK(chorus_wait(handles[0]) == CHORUS_ERR_INVALID_ARGUMENT);
  CHECK(strstr(chorus_last_error(), "unknown dtype 42") != NULL);
  CHECK(chorus_wait(handles[1]) == CHORUS_ERR_INVALID_ARGUMENT);
  CHECK(chorus_grouped_allreduce_async(0, 0, names, inputs, outputs, shapes, ndims, dtypes, CHORUS_SUM, 1.0, 1.0,
                                       handles) == CHORUS_ERR_INVALID_ARGUMENT);
  /* The shaped allreduce: (6,) on rank 0 against (2, 3) elsewhere fails on every rank, naming both. */
  {
    float six[6] = {1, 1, 1, 1, 1, 1};
    int64_t flat[1] = {6}, square[2] = {2, 3};
    CHECK(chorus_allreduce_shaped_async(0, "c.shaped", six, six, flat, 1, CHORUS_FLOAT32, CHORUS_SUM, 1.0, 1.0, -1,
                                        NULL, &h) == 0);
    CHECK(chorus_wait(h) == 0 && six[5] == (float)size);
    CHECK(chorus_allreduce_shaped_async(0, "c.shaped", six, six, g_rank == 0 ? flat : square, g_rank == 0 ? 1 : 2,
                                        CHORUS_FLOAT32, CHORUS_SUM, 1.0, 1.0, -1, NULL, &h) == 0);
    CHECK(chorus_wait(h) == (size > 1 ? CHORUS_ERR_INVALID_ARGUMENT : 0));
    if (size > 1) CHECK(strstr(chorus_last_error(), "[6] on rank 0") != NULL);
    CHECK(chorus_allreduce_shaped_async(0, "c.scalar", six, six, NULL, 0, CHORUS_FLOAT32, CHORUS_MAX, 1.0, 1.0, -1,
                                        NULL, &h) == 0);
    CHECK(chorus_wait(h) == 0);
  }

  /* Rank 0 refuses its call (a front end's own check): the others' allreduce
     of that name fails too, naming rank 0 and the reason. */
  if (g_rank == 0) {
    CHECK(chorus_refuse_async(0, CHORUS_COLLECTIVE_ALLREDUCE, "c.refused", "tensor is not contiguous", &h) == 0);
  } else {
    CHECK(chorus_allreduce_async("c.refused", f, f, 3, CHORUS_FLOAT32, CHORUS_SUM, 1.0, 1.0, &h) == 0);
  }
  CHECK(chorus_wait(h) == CHORUS_ERR_INVALID_ARGUMENT);
  CHECK(strstr(chorus_last_error(), "tensor is not contiguous") != NULL);
  CHECK(strstr(chorus_last_error(), "refused on rank") != NULL);
  CHECK(chorus_refuse_async(0, (chorus_collective)9, "c.refused2", "x", &h) == CHORUS_ERR_INVALID_ARGUMENT);
  if (g_rank == 0) {
    CHECK(chorus_refuse_group_async(0, CHORUS_COLLECTIVE_ALLREDUCE, 2, names, "wrong device", handles) == 0);
  } else {
    dtypes[1] = CHORUS_INT64;
    CHECK(chorus_grouped_allreduce_async(0, 2, names, inputs, outputs, shapes, ndims, dtypes, CHORUS_SUM, 1.0, 1.0,
                                         handles) == 0);
  }
  CHECK(chorus_wait(handles[0]) == CHORUS_ERR_INVALID_ARGUMENT && chorus_wait(handles[1]) == CHORUS_ERR_INVALID_ARGUMENT);
  CHECK(strstr(chorus_last_error(), "wrong device") != NULL);

  /* The last rank comes late: a short wait gives up, the handle stays. */
  if (g_rank != size - 1) {
    CHECK(chorus_allreduce_async("c.late", f, f, 3, CHORUS_FLOAT32, CHORUS_SUM, 1.0, 1.0, &h) == 0);
    if (size > 1) {
      CHECK(chorus_wait_timeout(h, 0.01) == CHORUS_ERR_TIMEOUT);
      CHECK(chorus_poll(h) == 0);
    }
    CHECK(chorus_barrier() == 0);
  } else {
    CHECK(chorus_barrier() == 0);
    CHECK(chorus_allreduce_async("c.late", f, f, 3, CHORUS_FLOAT32, CHORUS_SUM, 1.0, 1.0, &h) == 0);
  }
  CHECK(chorus_wait_timeout(h, -1.0) == CHORUS_ERR_INVALID_ARGUMENT);
  CHECK(chorus_wait_completed(h, 30.0) == 1);
  CHECK(chorus_poll(h) == 1); /* kept */
  CHECK(chorus_wait_timeout(h, 30.0) == 0);
  CHECK(chorus_wait_timeout(h, 1.0) == CHORUS_ERR_UNKNOWN_HANDLE); /* released */
  CHECK(chorus_wait_completed(h, 1.0) == CHORUS_ERR_UNKNOWN_HANDLE);
  for (k = 0; k < 3; ++k) CHECK(f[k] == (float)((k + 1) * size));
}

/* Completion callbacks (ABI 16): one registered while pending runs once,
 * on the background thread, and may release its handle; one registered
 * after completion runs at once, on this thread. */
static atomic_int g_done_calls, g_done_rc;
static atomic_llong g_done_handle;

static void record_done(void* user_data, int64_t handle) {
  atomic_store(&g_done_rc, chorus_wait(handle)); /* returns at once, releases */
  atomic_store(&g_done_handle, (long long)handle);
  atomic_fetch_add((atomic_int*)user_data, 1);
}

static void test_on_complete(void) {
  const int size = chorus_size();
  float f[2] = {1, 2};
  int64_t h = 0;
  int spins = 0;
  atomic_store(&g_done_calls, 0);
  /* The last rank calls after a barrier: the others register while pending. */
  if (g_rank == size - 1) CHECK(chorus_barrier() == 0);
  CHECK(chorus_allreduce_async("c.callback", f, f, 2, CHORUS_FLOAT32, CHORUS_SUM, 1.0, 1.0, &h) == 0);
  CHECK(chorus_on_complete(h, NULL, NULL) == CHORUS_ERR_INVALID_ARGUMENT);
  CHECK(chorus_on_complete(h, record_done, (void*)&g_done_calls) == 0);
  if (g_rank != size - 1) CHECK(chorus_barrier() == 0);
  while (atomic_load(&g_done_calls) == 0 && spins++ < 30000) {
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
  CHECK(atomic_load(&g_done_calls) == 1 && atomic_load(&g_done_rc) == 0 && atomic_load(&g_done_handle) == h);
  CHECK(chorus_poll(h) == CHORUS_ERR_UNKNOWN_HANDLE); /* the callback released it */
  CHECK(f[0] == (float)size && f[1] == (float)(2 * size));
  CHECK(chorus_on_complete(h, record_done, (void*)&g_done_calls) == CHORUS_ERR_UNKNOWN_HANDLE);

  CHECK(chorus_allreduce_async("c.callback.late", f, f, 2, CHORUS_FLOAT32, CHORUS_SUM, 1.0, 1.0, &h) == 0);
  CHECK(chorus_wait_completed(h, 30.0) == 1);
  CHECK(chorus_on_complete(h, record_done, (void*)&g_done_calls) == 0);
  CHECK(atomic_load(&g_done_calls) == 2 && atomic_load(&g_done_rc) == 0); /* ran at once */
}

/* Timeline control (ABI 8): one at a time, a stop ends a valid file. */
static void test_timeline(void) {
  char path[64], file[96];
  FILE* f;
  char tail[8] = {0};
  float x[4] = {1, 2, 3, 4};
  int64_t h = 0;
  snprintf(path, sizeof path, "c_api_timeline_%d.json", g_rank); /* ranks may share a directory */
  snprintf(file, sizeof file, g_rank == 0 ? "%s" : "%s.rank%d", path, g_rank);
  CHECK(chorus_start_timeline(NULL, 0) == CHORUS_ERR_INVALID_ARGUMENT);
  CHECK(chorus_start_timeline(path, 1) == 0);
  CHECK(chorus_start_timeline(path, 0) == CHORUS_ERR_PRECONDITION);
  CHECK(strstr(chorus_last_error(), "already being written") != NULL);
  CHECK(chorus_allreduce_async("c.traced", x, x, 4, CHORUS_FLOAT32, CHORUS_SUM, 1.0, 1.0, &h) == 0);
  CHECK(chorus_wait(h) == 0);
  CHECK(chorus_stop_timeline() == 1);
  CHECK(chorus_stop_timeline() == 0);
  f = fopen(file, "rb");
  CHECK(f != NULL);
  CHECK(fseek(f, -4, SEEK_END) == 0 && fread(tail, 1, 4, f) == 4);
  fclose(f);
  remove(file);
  CHECK(strcmp(tail, "{}]\n") == 0);
}

/* A rendezvous held by this process (ABI 17, 18): bad arguments named; with
 * no member it forms nothing and waits. (Members: test/ray's elastic tests.) */
static void test_rendezvous(void) {
  chorus_rendezvous* r = NULL;
  CHECK(chorus_rendezvous_start("127.0.0.1", "job", "s", 0, 0, 1, 1, "min_workers", NULL, &r) ==
        CHORUS_ERR_INVALID_ARGUMENT);
  CHECK(strstr(chorus_last_error(), "min_workers must be >= 1") != NULL);
  CHECK(chorus_rendezvous_start("127.0.0.1", "job", "s", 3, 2, 1, 1, NULL, NULL, &r) == CHORUS_ERR_INVALID_ARGUMENT);
  CHECK(chorus_rendezvous_start(NULL, "job", "s", 1, 0, 1, 1, NULL, NULL, &r) == CHORUS_ERR_INVALID_ARGUMENT);
  CHECK(chorus_rendezvous_start("127.0.0.1", "job", "s", 1, 0, 1, 1, NULL, NULL, NULL) == CHORUS_ERR_INVALID_ARGUMENT);
  CHECK(chorus_rendezvous_port(NULL) == CHORUS_ERR_INVALID_ARGUMENT);
  CHECK(chorus_rendezvous_start("127.0.0.1", "job", "s", 2, 0, 0.05, 1, "min_workers", "timeout_s", &r) == 0);
  CHECK(chorus_rendezvous_port(r) > 0);
  CHECK(chorus_rendezvous_expect(r, "") == CHORUS_ERR_INVALID_ARGUMENT);
  CHECK(chorus_rendezvous_hosts_changed(r, 4) == CHORUS_ERR_INVALID_ARGUMENT);
  CHECK(chorus_rendezvous_expect(r, "worker-1") == 0);
  CHECK(chorus_rendezvous_gone(r, "worker-1") == 0);
  int64_t formed = -1;
  int late = -1;
  CHECK(chorus_rendezvous_run_for(r, 0.01, NULL, &late) == CHORUS_ERR_INVALID_ARGUMENT);
  CHECK(chorus_rendezvous_run_for(r, 0.1, &formed, &late) == 0 && formed == 0 && late == 0);
  CHECK(chorus_rendezvous_run_for(r, -1, &formed, &late) == CHORUS_ERR_INVALID_ARGUMENT);
  CHECK(strstr(chorus_last_error(), "0 to 3600 seconds") != NULL);
  CHECK(chorus_rendezvous_late(r, 0) == NULL);
  /* ABI 18: a member in no world cannot finish a step: end it now (0). */
  CHECK(chorus_rendezvous_retire(r, NULL) == CHORUS_ERR_INVALID_ARGUMENT);
  CHECK(chorus_rendezvous_retire(NULL, "worker-2") == CHORUS_ERR_INVALID_ARGUMENT);
  CHECK(chorus_rendezvous_expect(r, "worker-2") == 0);
  CHECK(chorus_rendezvous_retire(r, "worker-2") == 0);
  CHECK(chorus_rendezvous_left_count(r) == 0 && chorus_rendezvous_left(r, 0) == NULL);
  CHECK(chorus_rendezvous_left_count(NULL) == 0);
  chorus_rendezvous_stop(r);
  chorus_rendezvous_stop(NULL);
}

int main(void) {
  test_before_init();
  test_rendezvous();
  CHECK(chorus_init() == 0);
  CHECK(chorus_is_initialized() == 1);
  CHECK(chorus_is_running() == 1);
  g_rank = chorus_rank();
  test_topology();
  test_allreduce();
  test_broadcast();
  test_allgather_and_barrier();
  test_grouped();
  test_abi13();
  test_on_complete();
  test_errors();
  test_device_buffers();
  test_process_sets();
  test_join();
  test_shared_host();
  test_timeline();

  CHECK(chorus_shutdown() == 0);
  CHECK(chorus_is_initialized() == 0);
  CHECK(chorus_is_running() == 0);
  ((float*)g_shared_block)[0] = 1.0f;  /* still valid after shutdown */
  CHECK(chorus_free_shared_host(g_shared_block) == 0);
  { void* p = NULL; CHECK(chorus_allocate_shared_host(8, &p) == CHORUS_ERR_PRECONDITION); }
  int64_t h = 0;
  float x = 1;
  CHECK(chorus_allreduce_async("c.after", &x, &x, 1, CHORUS_FLOAT32, CHORUS_SUM, 1, 1, &h) == CHORUS_ERR_PRECONDITION);

  CHECK(chorus_init() == 0); /* re-init after shutdown */
  CHECK(chorus_rank() == g_rank);
  test_allreduce();
  CHECK(chorus_shutdown() == 0);
  printf("c_api: all checks passed\n");
  return 0;
}
