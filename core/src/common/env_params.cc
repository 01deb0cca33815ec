#include "common/env_params.h"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "chorus/error.h"
#include "common/logging.h"

extern char** environ;  // POSIX: the process environment

namespace chorus::detail {

namespace {

// A plain decimal number and nothing else: an optional sign, digits, and
// (when `fraction` is allowed) an optional fraction and exponent. strtod and
// strtoll alone would also take "nan", "inf", hex, leading blanks and "+".
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

bool parse_int64(const std::string& text, int64_t* out) {
  if (!is_plain_decimal(text, false)) return false;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), nullptr, 10);
  if (errno != 0) return false;
  *out = v;
  return true;
}

// Overflow gives +-HUGE_VAL, which every range refuses; underflow gives a
// value next to 0, which is harmless.
bool parse_double(const std::string& text, double* out) {
  if (!is_plain_decimal(text, true)) return false;
  *out = std::strtod(text.c_str(), nullptr);
  return true;
}

bool parse_bool(const std::string& text, bool* out) {
  if (text == "1" || text == "true" || text == "yes" || text == "on") *out = true;
  else if (text == "0" || text == "false" || text == "no" || text == "off") *out = false;
  else return false;
  return true;
}

// A whole number in [lo, hi]; the message says the range.
std::string set_int64_in(const std::string& text, int64_t* field, int64_t lo, int64_t hi, const char* unit) {
  int64_t v;
  if (!parse_int64(text, &v) || v < lo || v > hi) {
    const std::string range = hi == INT64_MAX ? ">= " + std::to_string(lo) : "in " + std::to_string(lo) + ".." + std::to_string(hi);
    return "expected a whole number of " + std::string(unit) + " " + range;
  }
  *field = v;
  return "";
}

// A decimal number in [lo, hi] (both whole numbers, written as such in the
// message); NaN, infinities and hex never parse.
std::string set_double_in(const std::string& text, double* field, int64_t lo, int64_t hi, const char* unit) {
  double v;
  if (!parse_double(text, &v) || !(v >= static_cast<double>(lo) && v <= static_cast<double>(hi))) {
    return "expected a decimal number of " + std::string(unit) + " in " + std::to_string(lo) + ".." +
           std::to_string(hi);
  }
  *field = v;
  return "";
}

// A whole number the TCP rendezvous reads itself (comm/tcp/tcp_job_env.cc).
std::string check_whole_number(const std::string& text, RuntimeOptions*) {
  int64_t v;
  return parse_int64(text, &v) && v >= 0 ? "" : "expected a whole number >= 0";
}

// A field's value as the environment would spell it, for check_options: the
// same parser then judges it ("nan", "inf" and anything out of range fail).
std::string as_text(int64_t v) { return std::to_string(v); }
std::string as_text(double v) {
  char text[64];
  std::snprintf(text, sizeof text, "%.17g", v);
  return text;
}

// The documented ranges of the floating-point knobs (docs/tuning.md). They
// keep every conversion to a clock duration (nanoseconds in int64) far from
// overflow.
constexpr int64_t kMaxMicroseconds = 1000000;  // 1 s of spinning
// Holding a burst for fusion: up to the longest cycle (tests hold for 2 s to
// make fusion certain; past 10 s a stall would look like a hang).
constexpr int64_t kMaxFusionWaitMicroseconds = 10000000;
constexpr int64_t kMaxCycleMs = 10000;          // 10 s between polls
constexpr int64_t kMaxStallSeconds = 604800;    // one week

const std::vector<EnvParam> kParams = {
    {"FUSION_THRESHOLD", "134217728",
     "Largest fused allreduce buffer in bytes; 0 turns tensor fusion off.",
     [](const std::string& t, RuntimeOptions* o) {
       return set_int64_in(t, &o->fusion_threshold_bytes, 0, INT64_MAX, "bytes");
     },
     [](const RuntimeOptions& o) { return as_text(o.fusion_threshold_bytes); }},
    {"FUSION_WAIT_US", "200",
     "Microseconds the coordinator holds ready tensors while others are still arriving, to fuse a burst.",
     [](const std::string& t, RuntimeOptions* o) {
       return set_double_in(t, &o->fusion_wait_us, 0, kMaxFusionWaitMicroseconds, "microseconds");
     },
     [](const RuntimeOptions& o) { return as_text(o.fusion_wait_us); }},
    {"CYCLE_TIME", "1",
     "Longest sleep of the background thread between polls, in milliseconds.",
     [](const std::string& t, RuntimeOptions* o) {
       return set_double_in(t, &o->cycle_time_ms, 0, kMaxCycleMs, "milliseconds");
     },
     [](const RuntimeOptions& o) { return as_text(o.cycle_time_ms); }},
    {"WAKE_ON_ENQUEUE", "1",
     "1: an enqueue wakes the background thread at once; 0: it only wakes every cycle.",
     [](const std::string& t, RuntimeOptions* o) -> std::string {
       return parse_bool(t, &o->wake_on_enqueue) ? "" : "expected 0 or 1";
     }},
    {"SPIN_TIME_US", "50",
     "Microseconds the background thread busy-polls after the last event before it sleeps.",
     [](const std::string& t, RuntimeOptions* o) {
       return set_double_in(t, &o->spin_time_us, 0, kMaxMicroseconds, "microseconds");
     },
     [](const RuntimeOptions& o) { return as_text(o.spin_time_us); }},
    {"PENDING_SPIN_TIME_US", "5000",
     "Microseconds the background thread busy-polls (yielding the core) after the last event while "
     "operations are in flight, before it sleeps.",
     [](const std::string& t, RuntimeOptions* o) {
       return set_double_in(t, &o->pending_spin_time_us, 0, kMaxMicroseconds, "microseconds");
     },
     [](const RuntimeOptions& o) { return as_text(o.pending_spin_time_us); }},
    {"STALL_CHECK_TIME_SECONDS", "60",
     "Warn about tensors that some ranks submitted and others did not after this long; 0 disables.",
     [](const std::string& t, RuntimeOptions* o) {
       return set_double_in(t, &o->stall_check_seconds, 0, kMaxStallSeconds, "seconds");
     },
     [](const RuntimeOptions& o) { return as_text(o.stall_check_seconds); }},
    {"STALL_SHUTDOWN_TIME_SECONDS", "0",
     "Shut down with an error naming the stalled tensors and the missing ranks after this long; 0 disables.",
     [](const std::string& t, RuntimeOptions* o) {
       return set_double_in(t, &o->stall_shutdown_seconds, 0, kMaxStallSeconds, "seconds");
     },
     [](const RuntimeOptions& o) { return as_text(o.stall_shutdown_seconds); }},
    {"CACHE_CAPACITY", "1024",
     "Entries of the response cache (tensors negotiated by key once known everywhere); 0 turns it off.",
     [](const std::string& t, RuntimeOptions* o) {
       return set_int64_in(t, &o->cache_capacity, 0, int64_t{1} << 24, "entries");
     },
     [](const RuntimeOptions& o) { return as_text(o.cache_capacity); }},
    {"ALLREDUCE_ALGO", "auto",
     "auto: shared memory when every rank is on one host (from SHM_THRESHOLD_BYTES), otherwise MPI's "
     "allreduce for small buffers and the pipelined ring from RING_THRESHOLD_BYTES on; ring; mpi; shm.",
     [](const std::string& t, RuntimeOptions* o) -> std::string {
       if (t == "auto") o->allreduce_algorithm = AllreduceAlgorithm::kAuto;
       else if (t == "ring") o->allreduce_algorithm = AllreduceAlgorithm::kRing;
       else if (t == "mpi") o->allreduce_algorithm = AllreduceAlgorithm::kMpi;
       else if (t == "shm") o->allreduce_algorithm = AllreduceAlgorithm::kSharedMemory;
       else return "expected auto, ring, mpi or shm";
       return "";
     }},
    {"RING_THRESHOLD_BYTES", "524288",
     "With ALLREDUCE_ALGO=auto, allreduces of at least this many bytes take the ring.",
     [](const std::string& t, RuntimeOptions* o) {
       return set_int64_in(t, &o->ring_threshold_bytes, 0, INT64_MAX, "bytes");
     },
     [](const RuntimeOptions& o) { return as_text(o.ring_threshold_bytes); }},
    {"RING_SEGMENT_BYTES", "1048576",
     "Bytes per pipelined ring segment (at most 1 GiB).",
     [](const std::string& t, RuntimeOptions* o) {
       return set_int64_in(t, &o->ring_segment_bytes, 1, int64_t{1} << 30, "bytes");
     },
     [](const RuntimeOptions& o) { return as_text(o.ring_segment_bytes); }},
    {"SHM_THRESHOLD_BYTES", "0",
     "With ALLREDUCE_ALGO=auto and every rank on one host, allreduces of at least this many bytes go through "
     "shared memory.",
     [](const std::string& t, RuntimeOptions* o) {
       return set_int64_in(t, &o->shm_threshold_bytes, 0, INT64_MAX, "bytes");
     },
     [](const RuntimeOptions& o) { return as_text(o.shm_threshold_bytes); }},
    {"SHM_BLOCK_BYTES", "1048576",
     "Bytes of each of a rank's two shared-memory staging blocks: a multiple of 64, 4 KiB .. 1 GiB.",
     [](const std::string& t, RuntimeOptions* o) -> std::string {
       std::string error = set_int64_in(t, &o->shm_block_bytes, 4096, int64_t{1} << 30, "bytes");
       if (error.empty() && o->shm_block_bytes % 64 != 0) error = "expected a multiple of 64 bytes";
       return error;
     },
     [](const RuntimeOptions& o) { return as_text(o.shm_block_bytes); }},
    {"SHM_ARENA_BYTES", "17179869184",
     "Address space of each rank's shared-memory arena (allocate_shared_host); memory is used only as tensors are "
     "allocated from it. 0: no arenas.",
     [](const std::string& t, RuntimeOptions* o) {
       return set_int64_in(t, &o->shm_arena_bytes, 0, int64_t{1} << 46, "bytes");
     },
     [](const RuntimeOptions& o) { return as_text(o.shm_arena_bytes); }},
    {"TRANSPORT", "auto",
     "How the ranks reach each other: auto (MPI under an MPI launcher or without rendezvous variables, TCP when "
     "they are set), mpi, or tcp.",
     [](const std::string& t, RuntimeOptions* o) -> std::string {
       if (t == "auto") o->transport = Transport::kAuto;
       else if (t == "mpi") o->transport = Transport::kMpi;
       else if (t == "tcp") o->transport = Transport::kTcp;
       else return "expected auto, mpi or tcp";
       return "";
     }},
    {"RENDEZVOUS_TIMEOUT_SECONDS", "300",
     "TCP: a rendezvous not complete after this long fails on every rank that came, naming the missing ranks.",
     [](const std::string& t, RuntimeOptions* o) {
       return set_double_in(t, &o->rendezvous_timeout_seconds, 1, kMaxStallSeconds, "seconds");
     },
     [](const RuntimeOptions& o) { return as_text(o.rendezvous_timeout_seconds); }},
    {"PEER_TIMEOUT_SECONDS", "30",
     "TCP: a rank whose host stops answering is reported dead after this long (a closed connection at once).",
     [](const std::string& t, RuntimeOptions* o) {
       return set_double_in(t, &o->peer_timeout_seconds, 3, kMaxStallSeconds, "seconds");
     },
     [](const RuntimeOptions& o) { return as_text(o.peer_timeout_seconds); }},
    // The job's shape for the TCP rendezvous, read by comm/tcp/tcp_job_env.cc
    // (which also takes torchrun's and Slurm's names); checked here so a bad
    // value fails early, naming the variable.
    {"RANK", "(unset)", "TCP: this process's rank (else RANK, else SLURM_PROCID).", check_whole_number},
    {"SIZE", "(unset)", "TCP: the number of ranks (else WORLD_SIZE, else SLURM_NTASKS).", check_whole_number},
    {"LOCAL_RANK", "(unset)", "TCP: this process's rank on its host, as the launcher says (else LOCAL_RANK).",
     check_whole_number},
    {"LOCAL_SIZE", "(unset)", "TCP: ranks on this host, as the launcher says (else LOCAL_WORLD_SIZE).",
     check_whole_number},
    {"MASTER_ADDR", "(unset)", "TCP: rank 0's address (else MASTER_ADDR, else the first host of the Slurm job).",
     [](const std::string& t, RuntimeOptions*) -> std::string { return t.empty() ? "expected a host name" : ""; }},
    {"MASTER_PORT", "(unset)", "TCP: the port rank 0 listens at (else MASTER_PORT, else derived from SLURM_JOB_ID).",
     check_whole_number},
    {"JOB_ID", "(unset)", "TCP: the job's name; ranks of another job that reach rank 0's port are refused.",
     [](const std::string&, RuntimeOptions*) -> std::string { return ""; }},
    {"HOST_ID", "(host name and boot id)",
     "TCP: ranks with the same host id share memory; set it to keep network-namespace 'hosts' apart.",
     [](const std::string& t, RuntimeOptions*) -> std::string { return t.empty() ? "expected a name" : ""; }},
    {"TIMELINE", "(off)",
     "Write a Chrome-trace timeline of every tensor to this file (rank r > 0 appends .rank<r>).",
     [](const std::string& t, RuntimeOptions* o) -> std::string {
       o->timeline_path = t;
       return "";
     }},
    {"LOG_LEVEL", "warning", "trace, debug, info, warning, error or fatal.",
     [](const std::string& t, RuntimeOptions* o) -> std::string {
       return parse_log_level(t, &o->log_level) ? "" : "expected trace, debug, info, warning, error or fatal";
     }},
};

}  // namespace

const std::vector<EnvParam>& env_params() { return kParams; }

std::optional<std::string> read_env(const std::string& name, std::string* source) {
  for (const char* prefix : {"CHORUS_", "HOROVOD_"}) {
    const std::string var = prefix + name;
    if (const char* value = std::getenv(var.c_str())) {
      if (source) *source = var;
      return std::string(value);
    }
  }
  return std::nullopt;
}

std::vector<std::string> unknown_chorus_variables() {
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry(*e);
    if (entry.rfind("CHORUS_", 0) != 0) continue;
    const std::string name = entry.substr(7, entry.find('=') - 7);
    if (name.rfind("BUILD_", 0) == 0 || name.rfind("TEST_", 0) == 0) continue;
    bool known = false;
    for (const EnvParam& p : kParams) known = known || name == p.name;
    if (!known) out.push_back("CHORUS_" + name);
  }
  return out;
}

Status options_from_environment(RuntimeOptions* options) {
  for (const EnvParam& p : kParams) {
    std::string var;
    auto value = read_env(p.name, &var);
    if (!value) continue;
    std::string error = p.apply(*value, options);
    if (!error.empty()) {
      return Status::invalid_argument(var + "='" + *value + "' is not valid: " + error);
    }
  }
  // The stall shutdown needs the check that notices the stall.
  if (options->stall_shutdown_seconds > 0 &&
      (options->stall_check_seconds == 0 || options->stall_check_seconds > options->stall_shutdown_seconds)) {
    options->stall_check_seconds = options->stall_shutdown_seconds;
  }
  return Status::ok();
}

Status check_options(const RuntimeOptions& options) {
  for (const EnvParam& p : kParams) {
    if (p.current == nullptr) continue;
    const std::string text = p.current(options);
    RuntimeOptions scratch;
    const std::string error = p.apply(text, &scratch);
    if (!error.empty()) {
      return Status::invalid_argument("RuntimeOptions: the value for CHORUS_" + std::string(p.name) + " is " + text +
                                      ": " + error);
    }
  }
  return Status::ok();
}

}  // namespace chorus::detail

namespace chorus {

RuntimeOptions RuntimeOptions::from_environment() {
  RuntimeOptions options;
  throw_if_error(detail::options_from_environment(&options));
  return options;
}

}  // namespace chorus
