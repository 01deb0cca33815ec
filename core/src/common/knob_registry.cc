#include "common/knob_registry.h"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cmath>
#include <cstdlib>

namespace chorus::detail {

bool is_plain_decimal(const std::string& text, bool fraction) {
  size_t i = 0;
  auto digits = [&] {
    const size_t from = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
    return i > from;
  };
  if (i < text.size() && text[i] == '-') ++i;
  if (!digits()) return false;
  if (fraction && i < text.size() && text[i] == '.') {
    ++i;
    if (!digits()) return false;
  }
  if (fraction && i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
    if (!digits()) return false;
  }
  return i == text.size();
}

namespace {

// What a knob's apply says about a value that does not fit.
Status expected(const std::string& what) { return Status::invalid_argument("expected " + what); }

// A whole number in the knob's range (and a multiple of its step).
Status parse_whole(const Knob& k, const std::string& text, int64_t* out) {
  errno = 0;
  const long long v = is_plain_decimal(text, false) ? std::strtoll(text.c_str(), nullptr, 10) : 0;
  if (!is_plain_decimal(text, false) || errno != 0 || v < k.lo || v > k.hi) return expected(knob_accepts(k));
  if (v % k.multiple_of != 0) return expected("a multiple of " + std::to_string(k.multiple_of) + " " + k.unit);
  *out = v;
  return Status::ok();
}

// Overflow gives +-HUGE_VAL, which every range refuses; NaN never compares.
Status parse_decimal(const Knob& k, const std::string& text, double* out) {
  const double v = is_plain_decimal(text, true) ? std::strtod(text.c_str(), nullptr) : -HUGE_VAL;
  if (!(v >= static_cast<double>(k.lo) && v <= static_cast<double>(k.hi))) return expected(knob_accepts(k));
  *out = v;
  return Status::ok();
}

bool same_letters(const char* a, const std::string& b) {
  size_t i = 0;
  for (; a[i] != '\0' && i < b.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return a[i] == '\0' && i == b.size();
}

// Rows for a field of RuntimeOptions, with its parser and printer.
template <int64_t RuntimeOptions::*F>
Knob whole(const char* name, const char* def, int64_t lo, int64_t hi, const char* unit, KnobScope scope,
           const char* description, int64_t multiple_of = 1) {
  Knob k{name, def, KnobKind::kWhole, scope, description, lo, hi, multiple_of, unit};
  k.apply = [](const Knob& k, const std::string& t, RuntimeOptions* o) { return parse_whole(k, t, &(o->*F)); };
  k.current = [](const Knob&, const RuntimeOptions& o) { return std::to_string(o.*F); };
  k.value = [](const RuntimeOptions& o) { return o.*F; };
  return k;
}

template <double RuntimeOptions::*F>
Knob decimal(const char* name, const char* def, int64_t lo, int64_t hi, const char* unit, const char* description) {
  Knob k{name, def, KnobKind::kDecimal, KnobScope::kPerRank, description, lo, hi, 1, unit};
  k.apply = [](const Knob& k, const std::string& t, RuntimeOptions* o) { return parse_decimal(k, t, &(o->*F)); };
  k.current = [](const Knob&, const RuntimeOptions& o) {
    char text[64];
    std::snprintf(text, sizeof text, "%.17g", o.*F);
    return std::string(text);
  };
  return k;
}

// On: a whole number > 0 (Horovod's rule, so HOROVOD_AUTOTUNE=2 is on), or
// true / yes / on in any case; off: 0, false / no / off.
Status parse_switch(const std::string& t, bool* out) {
  std::string lower = t;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* on : {"true", "yes", "on"}) {
    if (lower == on) return *out = true, Status::ok();
  }
  for (const char* off : {"false", "no", "off"}) {
    if (lower == off) return *out = false, Status::ok();
  }
  if (!t.empty() && t.size() <= 18 && t.find_first_not_of("0123456789") == std::string::npos) {
    *out = std::stoll(t) > 0;
    return Status::ok();
  }
  return expected("0 or 1 (a whole number > 0 is on; true/false, yes/no, on/off)");
}

template <bool RuntimeOptions::*F>
Knob on_off(const char* name, const char* def, const char* description, KnobScope scope = KnobScope::kPerRank) {
  Knob k{name, def, KnobKind::kSwitch, scope, description};
  k.apply = [](const Knob&, const std::string& t, RuntimeOptions* o) { return parse_switch(t, &(o->*F)); };
  k.current = [](const Knob&, const RuntimeOptions& o) { return std::string(o.*F ? "1" : "0"); };
  k.value = [](const RuntimeOptions& o) { return int64_t{o.*F}; };
  return k;
}

template <class E, E RuntimeOptions::*F, size_t N>
Knob choice(const char* name, const char* def, const KnobChoice (&choices)[N], KnobScope scope,
            const char* description) {
  Knob k{name, def, KnobKind::kChoice, scope, description};
  k.choices = choices;
  k.choice_count = N;
  k.apply = [](const Knob& k, const std::string& t, RuntimeOptions* o) {
    for (size_t i = 0; i < k.choice_count; ++i) {
      if (same_letters(k.choices[i].text, t)) return o->*F = static_cast<E>(k.choices[i].value), Status::ok();
    }
    return expected(knob_accepts(k));
  };
  k.current = [](const Knob& k, const RuntimeOptions& o) { return knob_value_text(k, static_cast<int>(o.*F)); };
  k.value = [](const RuntimeOptions& o) { return static_cast<int64_t>(o.*F); };
  return k;
}

template <std::string RuntimeOptions::*F>
Knob text(const char* name, const char* def, const char* what, const char* flag, const char* description) {
  Knob k{name, def, KnobKind::kText, KnobScope::kPerRank, description, 0, 0, 1, what};
  k.flag = flag;
  k.apply = [](const Knob&, const std::string& t, RuntimeOptions* o) { return o->*F = t, Status::ok(); };
  return k;
}

Knob checked_row(const char* name, const char* def, KnobKind kind, const char* unit, int64_t hi,
                 const char* description);

// Read where it is used (comm/tcp/tcp_backend.cc), so no RuntimeOptions field
// (a program built against 0.2.0's header passes the same struct). Job-wide:
// a rank that expects heartbeats sooner than another sends them would name
// it lost; ranks compare it in milliseconds.
Knob heartbeat_timeout() {
  Knob k = checked_row("HEARTBEAT_TIMEOUT_SECONDS", "30", KnobKind::kDecimal, "seconds", 3600,
                       "TCP: a rank from which nothing arrived for this long is named lost on every other rank, as a "
                       "closed connection is (a stopped process, a frozen host); each rank's background thread sends "
                       "a heartbeat on every link quiet for a quarter of it, so a rank busy or asleep in user code "
                       "stays alive; 10 in elastic jobs unless set; 0: off");
  k.lo = 0;
  k.scope = KnobScope::kJobWide;
  k.value_per_unit = 1000;
  // Unset: the default. An elastic job's unset ranks use 10 s: safe beside a
  // rank set to 30, whose heartbeats (every 7.5 s) still come within 10.
  k.value = [](const RuntimeOptions&) {
    const char* text = std::getenv("CHORUS_HEARTBEAT_TIMEOUT_SECONDS");
    if (text == nullptr) text = std::getenv("HOROVOD_HEARTBEAT_TIMEOUT_SECONDS");
    return static_cast<int64_t>(std::llround((text ? std::strtod(text, nullptr) : 30.0) * 1000));
  };
  return k;
}

// A file path, or Horovod's `DYNAMIC`: no file until the program calls
// start_timeline() (Horovod's own test_torch.py sets it at import).
Knob timeline_file() {
  Knob k = text<&RuntimeOptions::timeline_path>(
      "TIMELINE", "(off)", "a file path", "timeline-filename",
      "write a Chrome trace of every tensor to this file (rank r > 0: `FILE.rank<r>`); "
      "`DYNAMIC` (Horovod's value): none until the program calls `start_timeline()`");
  k.apply = [](const Knob&, const std::string& t, RuntimeOptions* o) {
    o->timeline_path = t == "DYNAMIC" ? std::string() : t;
    return Status::ok();
  };
  return k;
}

Knob with_flag(Knob k, const char* flag, int64_t scale = 1, const char* unit = nullptr) {
  k.flag = flag;
  k.flag_scale = scale;
  k.flag_unit = unit;
  return k;
}

// The TCP transport's proof of membership (docs/security.md). No field of
// RuntimeOptions: rendezvous/tcp_secret.cc reads them where they are used, so
// the secret is never copied with the options; these rows check and document.
Knob checked_row(const char* name, const char* def, KnobKind kind, const char* unit, int64_t hi,
                 const char* description) {
  Knob k{name, def, kind, KnobScope::kPerRank, description, 1, hi, 1, unit};
  if (kind == KnobKind::kText) {
    k.launcher_flag = false;  // a secret, or where it lies: no command line
    k.apply = [](const Knob&, const std::string& t, RuntimeOptions*) {
      return t.empty() ? expected("a value, not an empty one") : Status::ok();
    };
  } else if (kind == KnobKind::kSwitch) {
    k.apply = [](const Knob&, const std::string& t, RuntimeOptions*) {
      bool on = false;
      return parse_switch(t, &on);
    };
  } else if (kind == KnobKind::kWhole) {
    k.apply = [](const Knob& k, const std::string& t, RuntimeOptions*) {
      int64_t v = 0;
      return parse_whole(k, t, &v);
    };
  } else {
    k.apply = [](const Knob& k, const std::string& t, RuntimeOptions*) {
      double v = 0;
      return parse_decimal(k, t, &v);
    };
  }
  return k;
}

std::vector<Knob> security_knobs() {
  return {
      checked_row("SECRET", "(none)", KnobKind::kText, "any text", 0,
                  "TCP: the job's secret, which every connection of the job proves it knows (an HMAC challenge both "
                  "ways, [security.md](security.md)); `chorusrun` makes a random one per job; wins over "
                  "`CHORUS_SECRET_FILE`; no chorusrun flag (a command line is public)"),
      checked_row("SECRET_FILE", "(none)", KnobKind::kText, "a file path", 0,
                  "TCP: a file whose content (one trailing newline dropped) is the job's secret; a file that its "
                  "group or others may read is refused, naming it and its mode"),
      checked_row("REQUIRE_SECRET", "0", KnobKind::kSwitch, "", 0,
                  "TCP: a job of several ranks without a secret fails `init()` on every rank instead of warning on "
                  "rank 0 (over addresses other than loopback) that any process reaching its port can join"),
      checked_row("HANDSHAKE_TIMEOUT_SECONDS", "3", KnobKind::kDecimal, "seconds", 3600,
                  "TCP: an accepted connection that has not proven itself after this long is closed (a stranger, a "
                  "slow one); at most 64 such wait at once, the oldest closed first"),
  };
}

// Set by chorusrun's elastic mode for each worker (docs/elastic.md).
std::vector<Knob> elastic_knobs() {
  Knob grace = checked_row("ELASTIC_JOIN_GRACE_SECONDS", "10", KnobKind::kDecimal, "seconds", 3600,
                           "elastic jobs, read by chorusrun: a worker still in its old world this long after another "
                           "left it (stopped, stuck) is ended and its host blacklisted; through etcd, it is left out "
                           "of the next world");
  grace.launcher_flag = false;  // chorusrun's own setting, from its environment
  Knob budget = checked_row("ELASTIC_HOST_FAILURE_BUDGET", "2", KnobKind::kWhole, "failures", 1000,
                            "elastic jobs, read by chorusrun: a worker that fails while other workers of its host run "
                            "is replaced on that host, up to this many failures of the host within "
                            "`CHORUS_ELASTIC_HOST_FAILURE_WINDOW_SECONDS`; the next one blacklists the host (as a "
                            "failure on a host with no other worker always does); 0: blacklist at once, as Horovod");
  budget.lo = 0;
  budget.launcher_flag = false;
  Knob window = checked_row("ELASTIC_HOST_FAILURE_WINDOW_SECONDS", "60", KnobKind::kDecimal, "seconds", 604800,
                            "elastic jobs, read by chorusrun: the window of `CHORUS_ELASTIC_HOST_FAILURE_BUDGET`");
  window.launcher_flag = false;
  return {
      grace,
      budget,
      window,
      checked_row("ELASTIC_ADDR", "(none)", KnobKind::kText, "host:port", 0,
                  "elastic jobs: where this process reaches its job's rendezvous (chorusrun sets it); set, `init()` "
                  "joins the next world there instead of reading a rank ([elastic.md](elastic.md))"),
      checked_row("ELASTIC_MEMBER", "(none)", KnobKind::kText, "any text", 0,
                  "elastic jobs: this process's name in its job (chorusrun sets it: host, slot and a count)"),
  };
}

// An elastic job without chorusrun, its rendezvous in etcd (docs/elastic.md,
// rendezvous/etcd_rendezvous.h): torchrun's --rdzv-* and --nnodes as variables.
// chorusrun has its own flags for the numbers (--min-np, ...), so none here.
std::vector<Knob> rendezvous_knobs() {
  std::vector<Knob> rows = {
      checked_row("RDZV_BACKEND", "(none)", KnobKind::kText, "etcd", 0,
                  "elastic jobs without chorusrun: `etcd` makes `init()` join a world through etcd (torchrun's "
                  "`--rdzv-backend`); needs `CHORUS_RDZV_ENDPOINT` and `CHORUS_RDZV_ID` "
                  "([elastic.md](elastic.md#without-chorusrun-etcd))"),
      checked_row("RDZV_ENDPOINT", "(none)", KnobKind::kText, "host:port[,...]", 0,
                  "elastic jobs through etcd: etcd's client address, `host`, `host:port` (port 2379 when left out), "
                  "`http://host:port` or `https://host:port` (TLS), or several, comma-separated (the members of an "
                  "etcd cluster: the next is tried when one fails) (torchrun's `--rdzv-endpoint`)"),
      checked_row("RDZV_ID", "(none)", KnobKind::kText, "any text without / or blanks", 0,
                  "elastic jobs through etcd: the job's name; its keys are `/chorus/<id>/...` (torchrun's "
                  "`--rdzv-id`)"),
      checked_row("RDZV_USER", "(none)", KnobKind::kText, "any text", 0,
                  "elastic jobs through etcd: the etcd user to authenticate as (with `CHORUS_RDZV_PASSWORD`), when "
                  "etcd's authentication is on"),
      checked_row("RDZV_PASSWORD", "(none)", KnobKind::kText, "any text", 0,
                  "elastic jobs through etcd: that user's password; no chorusrun flag (a command line is public)"),
      checked_row("RDZV_CA_FILE", "(none)", KnobKind::kText, "a file path", 0,
                  "elastic jobs through etcd, `https://` endpoints: the CA certificate (PEM) that signed etcd's "
                  "server certificate (etcd's `--trusted-ca-file` side); unset: the system's CAs"),
      checked_row("RDZV_CERT_FILE", "(none)", KnobKind::kText, "a file path", 0,
                  "elastic jobs through etcd, `https://` endpoints: this worker's client certificate (PEM), for etcd's "
                  "`--client-cert-auth`; needs `CHORUS_RDZV_KEY_FILE`; an expired one is refused before connecting"),
      checked_row("RDZV_KEY_FILE", "(none)", KnobKind::kText, "a file path", 0,
                  "elastic jobs through etcd: the private key (PEM, not encrypted) of `CHORUS_RDZV_CERT_FILE`"),
      checked_row("ELASTIC_MIN_NP", "1", KnobKind::kWhole, "workers", 1 << 20,
                  "elastic jobs through etcd: fewer workers than this for `CHORUS_ELASTIC_TIMEOUT`: no world forms "
                  "and every waiting worker fails, naming both (chorusrun: `--min-np`)"),
      checked_row("ELASTIC_MAX_NP", "0", KnobKind::kWhole, "workers", 1 << 20,
                  "elastic jobs through etcd: never more workers in a world, the others wait (chorusrun: "
                  "`--max-np`); 0: no limit"),
      checked_row("ELASTIC_TIMEOUT", "600", KnobKind::kDecimal, "seconds", 604800,
                  "elastic jobs: how long fewer than the minimum of workers may wait for a world (through etcd: "
                  "`CHORUS_ELASTIC_MIN_NP`; chorusrun: the default of `--elastic-timeout`, as horovodrun's)"),
  };
  for (Knob& k : rows) k.launcher_flag = false;
  for (Knob& k : rows) {
    if (std::string(k.name) == "ELASTIC_MAX_NP") k.lo = 0;  // 0 is no limit
  }
  return rows;
}

std::string power_text(int64_t v) {
  if (v == INT64_MAX) return "2^63-1";
  for (int b = 20; b < 63; ++b) {
    if (v == int64_t{1} << b) return std::to_string(v) + " (2^" + std::to_string(b) + ")";
  }
  return std::to_string(v);
}


// The ranges keep every conversion to a clock duration (nanoseconds in
// int64) far from overflow.
constexpr int64_t kMaxMicroseconds = 1000000;  // 1 s of spinning
// Holding a burst for fusion: tests hold for 2 s to make fusion certain;
// past 10 s a stall would look like a hang.
constexpr int64_t kMaxFusionWaitMicroseconds = 10000000;
constexpr int64_t kMaxCycleMs = 10000;        // 10 s between polls
constexpr int64_t kMaxStallSeconds = 604800;  // one week
constexpr int64_t kMiB = int64_t{1} << 20;

// The values are the enums' (chorus/options.h).
constexpr KnobChoice kAlgorithms[] = {{"auto", 0}, {"ring", 1}, {"mpi", 2}, {"shm", 3}};
constexpr KnobChoice kTransports[] = {{"auto", 0}, {"mpi", 1}, {"tcp", 2}};
// "mpi": Horovod's HOROVOD_GPU_OPERATIONS=MPI (GPU tensors through the host's path) is staged here.
constexpr KnobChoice kGpuOperations[] = {{"auto", 0}, {"nccl", 1}, {"staged", 2}, {"mpi", 2}};
constexpr KnobChoice kLogLevels[] = {{"trace", 0}, {"debug", 1}, {"info", 2}, {"warning", 3},
                                     {"error", 4}, {"fatal", 5}, {"warn", 3}};

using O = RuntimeOptions;

// Horovod's HOROVOD_STALL_CHECK_DISABLE (horovodrun --no-stall-check): no
// stall warnings and no stall shutdown, whatever the two times say. A
// switch with no field of its own: it zeroes both (after them in the list).
Knob stall_check_disable() {
  Knob k{"STALL_CHECK_DISABLE", "0", KnobKind::kSwitch, KnobScope::kPerRank,
         "1: no stall check at all, neither warnings nor the shutdown, whatever `CHORUS_STALL_CHECK_TIME_SECONDS` "
         "and `CHORUS_STALL_SHUTDOWN_TIME_SECONDS` say (Horovod's `HOROVOD_STALL_CHECK_DISABLE`, chorusrun's "
         "`--no-stall-check`)"};
  k.apply = [](const Knob&, const std::string& t, RuntimeOptions* o) {
    bool off = false;
    const Status s = parse_switch(t, &off);
    if (s.is_ok() && off) o->stall_check_seconds = o->stall_shutdown_seconds = 0;
    return s;
  };
  k.launcher_flag = false;  // chorusrun's --no-stall-check sets it
  return k;
}
constexpr KnobScope kJob = KnobScope::kJobWide, kRank = KnobScope::kPerRank;

// CHORUS_AUTOTUNE and its settings (tuning/autotuner.h), read on rank 0.
std::vector<Knob> autotune_knobs() {
  return {
      on_off<&O::autotune>("AUTOTUNE", "0",
                "1: search the fusion threshold, fusion wait and cycle time on the measured allreduce bytes/s of "
                "the job's first samples, then keep the best; rank 0 decides and every rank applies its choice at "
                "the same response ([tuning.md](tuning.md#autotune)); read on rank 0"),
      text<&O::autotune_log_path>("AUTOTUNE_LOG", "(off)", "a file path", "autotune-log-file",
                "rank 0 writes each autotune trial to this file as CSV (trial, the three settings, the median "
                "bytes/s, the samples) and the final choice"),
      whole<&O::autotune_warmup_samples>("AUTOTUNE_WARMUP_SAMPLES", "3", 0, 1000, "samples", kRank,
                "autotune: samples at the starting settings discarded before the first trial; read on rank 0"),
      whole<&O::autotune_samples_per_trial>("AUTOTUNE_SAMPLES_PER_TRIAL", "3", 1, 1000, "samples", kRank,
                "autotune: samples per trial; a trial scores their median; read on rank 0"),
      decimal<&O::autotune_sample_ms>("AUTOTUNE_SAMPLE_MS", "1000", 0, 600000, "milliseconds",
                "autotune: a sample lasts at least this long (then ends between bursts of tensors, at 4x in any "
                "case) and scores allreduced bytes / elapsed time, the time between steps included; make it several "
                "steps long; read on rank 0")
  };
}

// The background thread: fusion, its cycle, the cache, what it reports.
std::vector<Knob> background_knobs() {
  return {
      with_flag(whole<&O::fusion_threshold_bytes>("FUSION_THRESHOLD", "134217728", 0, INT64_MAX, "bytes", kRank,
                                                  "largest fused allreduce buffer in bytes; 0 turns fusion off"),
                "fusion-threshold-mb", kMiB, "MiB"),
      decimal<&O::fusion_wait_us>(
          "FUSION_WAIT_US", "200", 0, kMaxFusionWaitMicroseconds, "microseconds",
          "the coordinator holds tensors that are ready everywhere this long while other tensors are still "
          "half-submitted, so a burst fuses into one response; a lone tensor goes out at once"),
      with_flag(decimal<&O::cycle_time_ms>("CYCLE_TIME", "1", 0, kMaxCycleMs, "milliseconds",
                                           "longest sleep of the background thread between polls"),
                "cycle-time-ms"),
      on_off<&O::wake_on_enqueue>(
          "WAKE_ON_ENQUEUE", "1",
          "1: an enqueue wakes the background thread at once; 0: only every cycle (Horovod's behaviour)"),
      decimal<&O::spin_time_us>(
          "SPIN_TIME_US", "50", 0, kMaxMicroseconds, "microseconds",
          "the background thread busy-polls this long after the last event before sleeping, when nothing "
          "is in flight"),
      decimal<&O::pending_spin_time_us>(
          "PENDING_SPIN_TIME_US", "5000", 0, kMaxMicroseconds, "microseconds",
          "the same while operations are in flight (an answer from other ranks is due); the polling "
          "yields the core to any runnable thread"),
      whole<&O::cache_capacity>(
          "CACHE_CAPACITY", "1024", 0, int64_t{1} << 24, "entries", kJob,
          "entries of the response cache (tensors negotiated by one bit each once their signature is "
          "cached on every rank); 0 turns it off"),
      timeline_file(),
      on_off<&O::timeline_mark_cycles>(
          "TIMELINE_MARK_CYCLES", "0",
          "with a timeline: mark each cycle of the background thread that did work (an instant event "
          "on a `cycles` row)"),
      with_flag(decimal<&O::stall_check_seconds>(
                    "STALL_CHECK_TIME_SECONDS", "60", 0, kMaxStallSeconds, "seconds",
                    "warn about tensors some ranks submitted and others did not, naming both, when the wait reaches "
                    "this long (and at each multiple); workers warn the same way about a silent rank 0; 0 disables "
                    "([troubleshooting.md](troubleshooting.md))"),
                "stall-check-warning-time-seconds"),
      with_flag(decimal<&O::stall_shutdown_seconds>(
                    "STALL_SHUTDOWN_TIME_SECONDS", "0", 0, kMaxStallSeconds, "seconds",
                    "after this long, end the job with that message and exit code 75, even when a rank "
                    "never answers again ([troubleshooting.md](troubleshooting.md)); 0 disables"),
                "stall-check-shutdown-time-seconds"),
      stall_check_disable(),
      choice<LogLevel, &O::log_level>(
          "LOG_LEVEL", "warning", kLogLevels, kRank,
          "the least severe messages written (`warn` is `warning`); each line is prefixed with the rank"),
  };
}

// How the data moves: algorithms, shared memory, transport, GPUs.
std::vector<Knob> data_plane_knobs() {
  return {
      choice<AllreduceAlgorithm, &O::allreduce_algorithm>(
          "ALLREDUCE_ALGO", "auto", kAlgorithms, kJob,
          "`auto`: shared memory when every rank is on one host (from `CHORUS_SHM_THRESHOLD_BYTES`), "
          "otherwise MPI's own allreduce below `CHORUS_RING_THRESHOLD_BYTES` and the pipelined ring from "
          "there on; `ring`; `mpi`; `shm` (fails at `init()` when the ranks span hosts)"),
      whole<&O::ring_threshold_bytes>("RING_THRESHOLD_BYTES", "524288", 0, INT64_MAX, "bytes", kJob,
                                      "where `auto` switches to the ring (ranks on several hosts)"),
      whole<&O::ring_segment_bytes>("RING_SEGMENT_BYTES", "1048576", 1, int64_t{1} << 30, "bytes", kJob,
                                    "bytes per pipelined ring segment"),
      on_off<&O::hierarchical_allreduce>(
          "HIERARCHICAL_ALLREDUCE", "0",
          "1: allreduces across hosts run in three steps: a reduce-scatter among the ranks of each host, an "
          "allreduce of each rank's shard with the ranks at its place on the other hosts, an allgather inside "
          "the host (host tensors and the staged path: three rings over the peer links; CUDA tensors on NCCL: "
          "ReduceScatter, AllReduce and AllGather on communicators split from the set's), so fewer bytes cross "
          "between hosts; needs every host to hold as many ranks (otherwise rank 0 warns once and the usual "
          "routes run); Adasum keeps its own tree ([tuning.md](tuning.md#hierarchical-allreduce))",
          kJob),
      whole<&O::shm_threshold_bytes>(
          "SHM_THRESHOLD_BYTES", "0", 0, INT64_MAX, "bytes", kJob,
          "with `auto` on one host, allreduces of at least this many bytes go through shared memory (0: "
          "all of them; measured: [performance.md](performance.md))"),
      whole<&O::shm_single_copy_threshold_bytes>(
          "SHM_SINGLE_COPY_THRESHOLD_BYTES", "-1", -1, INT64_MAX, "bytes", kJob,
          "shared-memory allreduces of at least this many bytes read the other ranks' ordinary (non-arena) "
          "memory with `process_vm_readv` and write their outputs with `process_vm_writev` instead of staging "
          "(route `cma`; 0: every shared-memory call; -1: never, the default: slower than staging on the "
          "machine measured, [performance.md](performance.md)); needs the ranks to be allowed to trace each "
          "other (same user, no seccomp filter refusing the calls, Yama `ptrace_scope` 0, or 1: then each "
          "rank lets processes of its user trace it, as Open MPI does); the first such call checks it on "
          "every rank, and if any rank is refused all stage from then on"),
      whole<&O::shm_block_bytes>(
          "SHM_BLOCK_BYTES", "1048576", 4096, int64_t{1} << 30, "bytes", kJob,
          "bytes of each of a rank's two shared-memory staging blocks, at least 64 per rank on the host "
          "(otherwise `auto` goes without shared memory); the segment in `/dev/shm` holds 2 blocks per "
          "rank (2 MiB per rank by default)",
          64),
      whole<&O::shm_arena_bytes>(
          "SHM_ARENA_BYTES", "17179869184", 0, int64_t{1} << 46, "bytes", kJob,
          "address space of each rank's shared-memory arena, where `allocate_shared_host()` places tensors "
          "that the shared-memory allreduce then reduces where they lie (zero-copy); sparse: pages are "
          "reserved in `/dev/shm` only as tensors are allocated (an allocation that cannot reserve them "
          "returns ordinary memory, with one warning); 0 turns arenas off"),
      choice<Transport, &O::transport>(
          "TRANSPORT", "auto", kTransports, kRank,
          "how the ranks reach each other: `auto` (MPI when an MPI launcher started the process or no "
          "rendezvous variables are set; TCP when they are: torchrun's, Slurm's or `CHORUS_MASTER_ADDR`), "
          "`mpi`, or `tcp` ([launcher.md](launcher.md))"),
      choice<GpuOperations, &O::gpu_operations>(
          "GPU_OPERATIONS", "auto", kGpuOperations, kJob,
          "what CUDA tensors' collectives run through: `nccl` (on the device), `staged` (pinned host memory and "
          "the CPU data plane: no NCCL, or several ranks on one GPU), or `auto`: `nccl` where it loads on every "
          "rank, else `staged`"),
      decimal<&O::gpu_op_timeout_seconds>(
          "GPU_OP_TIMEOUT_SECONDS", "600", 0, kMaxStallSeconds, "seconds",
          "a device operation not done after this long fails its tensors and ends the job (in a process set "
          "too); 0: no limit"),
      decimal<&O::rendezvous_timeout_seconds>(
          "RENDEZVOUS_TIMEOUT_SECONDS", "300", 1, kMaxStallSeconds, "seconds",
          "TCP: a rendezvous not complete after this long fails on every rank that came, naming the ranks "
          "that did not"),
      decimal<&O::peer_timeout_seconds>(
          "PEER_TIMEOUT_SECONDS", "30", 3, kMaxStallSeconds, "seconds",
          "TCP: a rank whose host stops answering is reported dead after this long (a closed connection: "
          "at once)"),
      heartbeat_timeout(),
      on_off<&O::tcp_shm_control>(
          "TCP_SHM_CONTROL", "1",
          "TCP with every rank on one host: the control messages (requests to rank 0, its responses) go "
          "through rings in a shared-memory segment instead of loopback TCP (one longer than a ring's free "
          "space still goes over TCP); the connections stay open to tell of lost peers; 0: all over TCP",
          kJob),
  };
}

std::vector<Knob> make_knobs() {
  std::vector<Knob> knobs = background_knobs();
  for (Knob& k : data_plane_knobs()) knobs.push_back(std::move(k));
  for (Knob& k : autotune_knobs()) knobs.push_back(std::move(k));
  for (Knob& k : security_knobs()) knobs.push_back(std::move(k));
  for (Knob& k : elastic_knobs()) knobs.push_back(std::move(k));
  for (Knob& k : rendezvous_knobs()) knobs.push_back(std::move(k));
  return knobs;
}

// "auto, ring, mpi or shm". A repeated value is an alias: accepted, not listed.
std::string choices_text(const Knob& k) {
  std::vector<const char*> listed;
  for (size_t i = 0; i < k.choice_count; ++i) {
    bool alias = false;
    for (size_t j = 0; j < i; ++j) alias = alias || k.choices[j].value == k.choices[i].value;
    if (!alias) listed.push_back(k.choices[i].text);
  }
  std::string out;
  for (size_t i = 0; i < listed.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == listed.size() ? " or " : ", ") + std::string(listed[i]);
  }
  return out;
}

}  // namespace

const std::vector<Knob>& knobs() {
  static const std::vector<Knob> all = make_knobs();
  return all;
}

std::string knob_accepts(const Knob& k) {
  switch (k.kind) {
    case KnobKind::kWhole:
    case KnobKind::kDecimal: {
      std::string out = k.kind == KnobKind::kWhole ? "a whole number of " : "a decimal number of ";
      out += k.unit;
      out += k.hi == INT64_MAX ? " >= " + std::to_string(k.lo) : " in " + std::to_string(k.lo) + ".." + power_text(k.hi);
      if (k.multiple_of > 1) out += ", a multiple of " + std::to_string(k.multiple_of);
      return out;
    }
    case KnobKind::kSwitch: return "0 or 1 (also true/false, yes/no, on/off)";
    case KnobKind::kChoice: return choices_text(k);
    case KnobKind::kText: return k.unit;
  }
  return "";
}

std::string knob_value_text(const Knob& k, int64_t value) {
  for (size_t i = 0; i < k.choice_count; ++i) {
    if (k.choices[i].value == value) return k.choices[i].text;
  }
  if (k.value_per_unit != 1) {
    char text[64];
    std::snprintf(text, sizeof text, "%g", static_cast<double>(value) / static_cast<double>(k.value_per_unit));
    return text;
  }
  return std::to_string(value);
}

const Knob* find_knob(const std::string& name) {
  for (const Knob& k : knobs()) {
    if (name == k.name) return &k;
  }
  return nullptr;
}

}  // namespace chorus::detail
