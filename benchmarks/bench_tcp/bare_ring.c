/* What a two-rank ring allreduce can reach between two hosts with no runtime
 * at all, for scripts/bench_tcp.sh: float sums over one TCP connection (the
 * socket options Chorus's mesh uses), 256 KiB segments, each received
 * segment reduced at once and, in the second half, sent back as soon as it
 * is reduced. Two designs:
 *   poll     one thread, non-blocking, sending and receiving as the socket
 *            takes them (as Chorus's mesh does);
 *   threads  a sender thread with blocking sends, this thread receiving and
 *            reducing (send and receive copies on two cores).
 * Checks every result; prints the median and the best busbw (= bytes / time
 * for two ranks).
 *   bare_ring server|client ADDR PORT BYTES ITERS poll|threads          */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define SEGMENT (256 * 1024)

static int fd, me;
static size_t half;                  /* bytes of each rank's half */
static char *buffer, *mine, *other;  /* mine: the half this rank reduces */
static float *scratch;
static size_t reduced;               /* bytes of `mine` reduced (threads) */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t more = PTHREAD_COND_INITIALIZER;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
static void die(const char *what) { perror(what); exit(1); }
static void send_all(const char *p, size_t n) {
  for (ssize_t k; n > 0; p += k, n -= (size_t)k) {
    if ((k = send(fd, p, n, 0)) < 0) die("send");
  }
}
static void recv_all(char *p, size_t n) {
  for (ssize_t k; n > 0; p += k, n -= (size_t)k) {
    if ((k = recv(fd, p, n, 0)) <= 0) die("recv");
  }
}
static void reduce(char *into, const float *from, size_t bytes) {
  float *d = (float *)into;
  for (size_t i = 0; i < bytes / 4; ++i) d[i] += from[i];
}
static size_t segment_at(size_t off) { return half - off < SEGMENT ? half - off : SEGMENT; }

static void *sender(void *unused) {
  (void)unused;
  send_all(other, half);  /* the other rank's half of this rank's data */
  for (size_t off = 0; off < half; off += SEGMENT) {
    pthread_mutex_lock(&mu);
    while (reduced < off + segment_at(off)) pthread_cond_wait(&more, &mu);
    pthread_mutex_unlock(&mu);
    send_all(mine + off, segment_at(off));  /* this rank's reduced half */
  }
  return NULL;
}

static void ring_threads(void) {
  pthread_t t;
  reduced = 0;
  if (pthread_create(&t, NULL, sender, NULL) != 0) die("pthread_create");
  for (size_t off = 0; off < half; off += SEGMENT) {
    recv_all((char *)scratch, segment_at(off));
    reduce(mine + off, scratch, segment_at(off));
    pthread_mutex_lock(&mu);
    reduced = off + segment_at(off);
    pthread_cond_signal(&more);
    pthread_mutex_unlock(&mu);
  }
  recv_all(other, half);
  pthread_join(t, NULL);
}

static void ring_poll(void) {
  size_t sent = 0, got = 0, done = 0, in_segment = 0;  /* sent, got: of 2 * half */
  fcntl(fd, F_SETFL, O_NONBLOCK);
  while (sent < 2 * half || got < 2 * half) {
    const int can_send = sent < half || (sent < 2 * half && sent - half < done);
    struct pollfd p = {fd, (short)((can_send ? POLLOUT : 0) | (got < 2 * half ? POLLIN : 0)), 0};
    poll(&p, 1, -1);
    if (p.revents & POLLOUT) {
      const char *from = sent < half ? other + sent : mine + (sent - half);
      size_t n = sent < half ? half - sent : done - (sent - half);
      ssize_t k = send(fd, from, n < SEGMENT ? n : SEGMENT, 0);
      if (k < 0 && errno != EAGAIN) die("send");
      if (k > 0) sent += (size_t)k;
    }
    if (p.revents & POLLIN) {
      if (got < half) {  /* into the scratch segment, reduced once whole */
        const size_t n = segment_at(done);
        ssize_t k = recv(fd, (char *)scratch + in_segment, n - in_segment, 0);
        if (k == 0 || (k < 0 && errno != EAGAIN)) die("recv");
        if (k > 0) got += (size_t)k, in_segment += (size_t)k;
        if (in_segment == n) reduce(mine + done, scratch, n), done += n, in_segment = 0;
      } else {
        ssize_t k = recv(fd, other + (got - half), 2 * half - got, 0);
        if (k == 0 || (k < 0 && errno != EAGAIN)) die("recv");
        if (k > 0) got += (size_t)k;
      }
    }
  }
  fcntl(fd, F_SETFL, 0);
}

static int by_value(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  if (argc != 7) {
    fprintf(stderr, "usage: bare_ring server|client ADDR PORT BYTES ITERS poll|threads\n");
    return 2;
  }
  me = strcmp(argv[1], "server") == 0 ? 0 : 1;
  const size_t bytes = strtoull(argv[4], NULL, 10) / 8 * 8;
  const int iters = atoi(argv[5]), threads = strcmp(argv[6], "threads") == 0;
  struct sockaddr_in a = {0};
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)atoi(argv[3]));
  inet_pton(AF_INET, argv[2], &a.sin_addr);
  const int one = 1, window = 4 << 20;
  if (me == 0) {
    int l = socket(AF_INET, SOCK_STREAM, 0);
    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(l, (struct sockaddr *)&a, sizeof a) != 0 || listen(l, 1) != 0) die("listen");
    if ((fd = accept(l, NULL, NULL)) < 0) die("accept");
  } else {
    for (int tries = 0;; ++tries) {
      fd = socket(AF_INET, SOCK_STREAM, 0);
      if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) break;
      if (tries > 500) die("connect");
      close(fd);
      usleep(10000);
    }
  }
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &window, sizeof window);
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &window, sizeof window);
  half = bytes / 2;
  buffer = aligned_alloc(4096, bytes);
  scratch = aligned_alloc(4096, SEGMENT);
  mine = buffer + (me ? half : 0);
  other = buffer + (me ? 0 : half);
  double *times = calloc((size_t)iters, sizeof(double));
  for (int it = 0; it < iters; ++it) {
    float *f = (float *)buffer;
    for (size_t i = 0; i < bytes / 4; ++i) f[i] = (float)(me + 1 + i % 7);
    char token = 1;  /* both ranks start together */
    send_all(&token, 1);
    recv_all(&token, 1);
    const double t = now();
    if (threads) ring_threads(); else ring_poll();
    times[it] = now() - t;
    for (size_t i = 0; i < bytes / 4; ++i) {
      if (f[i] != (float)(3 + 2 * (i % 7))) {
        fprintf(stderr, "bare_ring: wrong sum at %zu: %f\n", i, f[i]);
        return 1;
      }
    }
  }
  qsort(times, (size_t)iters, sizeof(double), by_value);
  if (me == 0) {
    printf("bare ring %s %zu: median busbw %.3f GB/s, best %.3f\n", argv[6], bytes,
           bytes / times[iters / 2] / 1e9, bytes / times[0] / 1e9);
  }
  return 0;
}
