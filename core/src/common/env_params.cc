#include "common/env_params.h"

#include <cstdlib>

#include "chorus/error.h"

extern char** environ;  // POSIX: the process environment

namespace chorus::detail {

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

Status number_from_environment(const char* name, double fallback, double* out) {
  *out = fallback;
  std::string source;  // CHORUS_<name>, or the HOROVOD_ fallback that was set
  const std::optional<std::string> text = read_env(name, &source);
  if (!text) return Status::ok();
  const Knob* k = find_knob(name);
  RuntimeOptions ignored;
  Status s = k ? k->apply(*k, *text, &ignored) : Status::ok();
  if (!s.is_ok()) return Status::invalid_argument(source + "='" + *text + "': " + s.message());
  *out = std::strtod(text->c_str(), nullptr);
  return Status::ok();
}

namespace {
// The job's shape for the TCP rendezvous: read and checked, naming the
// variable, by rendezvous/tcp_job_env.cc and tcp_rendezvous.cc (which also
// take torchrun's and Slurm's names), not knobs: chorusrun sets them.
bool is_job_variable(const std::string& name) {
  for (const char* v : {"RANK", "SIZE", "LOCAL_RANK", "LOCAL_SIZE", "MASTER_ADDR", "MASTER_PORT", "JOB_ID", "HOST_ID"}) {
    if (name == v) return true;
  }
  return false;
}

// Read by the Python package (python/chorus) and the scripts, not by the library.
bool is_package_variable(const std::string& name) {
  for (const char* v :
       {"LIBRARY", "TENSORFLOW_LIBRARY", "JAX_LIBRARY", "PYTHON_PREBUILT", "PYTHON_CTYPES_ONLY", "VENV"}) {
    if (name == v) return true;
  }
  return false;
}
}  // namespace

std::vector<std::string> unread_horovod_variables() {
  // Horovod's run-time variables that change what Horovod does and that
  // Chorus has no counterpart for (docs/tuning.md, "Horovod's variables").
  static const char* const kUnread[] = {"HIERARCHICAL_ALLGATHER",
                                        "TORUS_ALLREDUCE",
                                        "THREAD_AFFINITY",
                                        "MPI_THREADS_DISABLE",
                                        "ENABLE_XLA_OPS",
                                        "NUM_NCCL_STREAMS",
                                        "GLOO_TIMEOUT_SECONDS",
                                        "START_TIMEOUT",
                                        "CPU_OPERATIONS",
                                        "CONTROLLER",
                                        "BATCH_D2D_MEMCOPIES",
                                        "DISABLE_GROUP_FUSION",
                                        "ENABLE_ASYNC_COMPLETION",
                                        "ADASUM_MPI_CHUNK_SIZE",
                                        "AUTOTUNE_STEPS_PER_SAMPLE",
                                        "AUTOTUNE_BAYES_OPT_MAX_SAMPLES",
                                        "AUTOTUNE_GAUSSIAN_PROCESS_NOISE",
                                        "GLOO_IFACE",
                                        "LOG_HIDE_TIME"};
  std::vector<std::string> out;
  for (const char* name : kUnread) {
    const std::string variable = std::string("HOROVOD_") + name;
    if (std::getenv(variable.c_str()) != nullptr) out.push_back(variable);
  }
  return out;
}

std::vector<std::string> unknown_chorus_variables() {
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry(*e);
    if (entry.rfind("CHORUS_", 0) != 0) continue;
    const std::string name = entry.substr(7, entry.find('=') - 7);
    if (name.rfind("BUILD_", 0) == 0 || name.rfind("TEST_", 0) == 0) continue;
    if (find_knob(name) == nullptr && !is_job_variable(name) && !is_package_variable(name)) {
      out.push_back("CHORUS_" + name);
    }
  }
  return out;
}

Status options_from_environment(RuntimeOptions* options) {
  for (const Knob& k : knobs()) {
    std::string var;
    auto value = read_env(k.name, &var);
    if (!value) continue;
    const Status fits = k.apply(k, *value, options);
    if (!fits.is_ok()) {
      return Status::invalid_argument(var + "='" + *value + "' is not valid: " + fits.message());
    }
  }
  settle_stall_times(options);
  return Status::ok();
}

// The stall shutdown needs the check that notices the stall.
void settle_stall_times(RuntimeOptions* options) {
  if (options->stall_shutdown_seconds > 0 &&
      (options->stall_check_seconds == 0 || options->stall_check_seconds > options->stall_shutdown_seconds)) {
    options->stall_check_seconds = options->stall_shutdown_seconds;
  }
}

Status check_options(const RuntimeOptions& options) {
  for (const Knob& k : knobs()) {
    if (k.current == nullptr) continue;
    const std::string text = k.current(k, options);
    RuntimeOptions scratch;
    const Status fits = k.apply(k, text, &scratch);
    if (!fits.is_ok()) {
      return Status::invalid_argument("RuntimeOptions: the value for " + k.variable() + " is " + text + ": " +
                                      fits.message());
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
