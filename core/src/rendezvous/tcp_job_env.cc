#include "rendezvous/tcp_job_env.h"

#include <cctype>
#include <cstdlib>
#include <initializer_list>

#include "common/env_params.h"

namespace chorus::detail {

namespace {

// The first of `names` that is set: its value, and its name in `*var`.
// CHORUS_ names go through read_env (HOROVOD_ fallback, as every knob).
bool first_set(std::initializer_list<const char*> names, std::string* value, std::string* var) {
  for (const char* name : names) {
    const std::string n(name);
    if (n.rfind("CHORUS_", 0) == 0) {
      std::string source;
      if (auto v = read_env(n.substr(7), &source)) {
        *value = *v;
        *var = source;
        return true;
      }
    } else if (const char* v = std::getenv(name)) {
      *value = v;
      *var = n;
      return true;
    }
  }
  return false;
}

// A whole number in [lo, hi] or an error naming the variable.
Status parse_in(const std::string& var, const std::string& text, long lo, long hi, int* out) {
  char* end = nullptr;
  const long v = text.empty() ? -1 : std::strtol(text.c_str(), &end, 10);
  if (text.empty() || end == nullptr || *end != '\0' || v < lo || v > hi) {
    return Status::invalid_argument(var + "='" + text + "' is not valid: expected a whole number in " +
                                    std::to_string(lo) + ".." + std::to_string(hi));
  }
  *out = static_cast<int>(v);
  return Status::ok();
}

Status read_int(std::initializer_list<const char*> names, long lo, long hi, int* out, std::string* var) {
  std::string text;
  if (!first_set(names, &text, var)) return Status::ok();
  return parse_in(*var, text, lo, hi, out);
}

// Slurm gives no port: one derived from the job id, the same on every
// rank of the job and different for jobs that share a host.
void slurm_defaults(TcpJobSpec* spec) {
  std::string nodes, var;
  if (spec->master_addr.empty() && first_set({"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST"}, &nodes, &var)) {
    spec->master_addr = first_slurm_host(nodes);
    spec->addr_var = var;
  }
  std::string job;
  if (spec->master_port == 0 && first_set({"SLURM_JOB_ID"}, &job, &var)) {
    spec->master_port = 20000 + static_cast<int>(std::strtoul(job.c_str(), nullptr, 10) % 30000);
    spec->port_var = "SLURM_JOB_ID (port derived from it)";
  }
}

}  // namespace

std::string first_slurm_host(const std::string& nodelist) {
  const size_t stop = nodelist.find_first_of(",[");
  if (stop == std::string::npos || nodelist[stop] == ',') return nodelist.substr(0, stop);
  // prefix[range,...]: the first number of the first range, zero padding kept.
  const size_t end = nodelist.find_first_of(",-]", stop + 1);
  return nodelist.substr(0, stop) + nodelist.substr(stop + 1, end == std::string::npos ? std::string::npos : end - stop - 1);
}

bool tcp_rendezvous_requested() {
  std::string value, var;
  return first_set({"CHORUS_MASTER_ADDR", "MASTER_ADDR", "SLURM_PROCID"}, &value, &var);
}

// torchrun's agent (static rendezvous, its default) serves its TCPStore on
// MASTER_PORT itself and tells its workers so with this variable; rank 0
// cannot listen there.
bool torchrun_agent_holds_master_port() {
  const char* v = std::getenv("TORCHELASTIC_USE_AGENT_STORE");
  if (v == nullptr) return false;
  std::string s(v);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s == "true" || s == "1";
}

bool started_by_mpi_launcher() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  return false;
}

Status tcp_job_from_environment(TcpJobSpec* out) {
  TcpJobSpec spec;
  constexpr long kMaxRanks = 1 << 20;
  Status s = read_int({"CHORUS_SIZE", "WORLD_SIZE", "SLURM_NTASKS"}, 1, kMaxRanks, &spec.size, &spec.size_var);
  if (s.is_ok()) s = read_int({"CHORUS_RANK", "RANK", "SLURM_PROCID"}, 0, kMaxRanks, &spec.rank, &spec.rank_var);
  std::string ignored;
  if (s.is_ok()) s = read_int({"CHORUS_LOCAL_RANK", "LOCAL_RANK", "SLURM_LOCALID"}, 0, kMaxRanks, &spec.local_rank, &ignored);
  if (s.is_ok()) s = read_int({"CHORUS_LOCAL_SIZE", "LOCAL_WORLD_SIZE"}, 1, kMaxRanks, &spec.local_size, &ignored);
  if (s.is_ok()) s = read_int({"CHORUS_MASTER_PORT", "MASTER_PORT"}, 1, 65535, &spec.master_port, &spec.port_var);
  if (!s.is_ok()) return s;
  if (spec.port_var == "MASTER_PORT" && torchrun_agent_holds_master_port()) {
    if (spec.master_port == 65535) {
      return Status::invalid_argument("MASTER_PORT=65535 is torchrun's store, and Chorus listens on the port after it: "
                                      "set CHORUS_MASTER_PORT to a free port");
    }
    spec.master_port += 1;
    spec.port_var = "MASTER_PORT + 1 (torchrun's agent store holds MASTER_PORT)";
  }
  first_set({"CHORUS_MASTER_ADDR", "MASTER_ADDR"}, &spec.master_addr, &spec.addr_var);
  std::string job_var, step;
  first_set({"CHORUS_JOB_ID", "TORCHELASTIC_RUN_ID", "SLURM_JOB_ID"}, &spec.job_id, &job_var);
  // Two steps of one Slurm job are two jobs (and meet at the same derived port).
  if (job_var == "SLURM_JOB_ID" && first_set({"SLURM_STEP_ID"}, &step, &ignored)) spec.job_id += "." + step;
  slurm_defaults(&spec);
  if (spec.size > 1 && spec.rank_var.empty()) {
    return Status::invalid_argument(spec.size_var + "=" + std::to_string(spec.size) +
                                    " but no rank is set (CHORUS_RANK, RANK or SLURM_PROCID)");
  }
  if (!spec.rank_var.empty() && spec.size_var.empty()) {
    return Status::invalid_argument(spec.rank_var + " is set but no job size (CHORUS_SIZE, WORLD_SIZE or SLURM_NTASKS)");
  }
  if (spec.rank >= spec.size) {
    return Status::invalid_argument(spec.rank_var + "=" + std::to_string(spec.rank) + " is out of range for " +
                                    spec.size_var + "=" + std::to_string(spec.size) + " (ranks are 0.." +
                                    std::to_string(spec.size - 1) + ")");
  }
  if (spec.size > 1 && spec.master_addr.empty()) {
    return Status::invalid_argument("a job of " + std::to_string(spec.size) +
                                    " ranks needs rank 0's address: set CHORUS_MASTER_ADDR or MASTER_ADDR");
  }
  if (spec.size > 1 && spec.master_port == 0) {
    return Status::invalid_argument("a job of " + std::to_string(spec.size) +
                                    " ranks needs rank 0's port: set CHORUS_MASTER_PORT or MASTER_PORT");
  }
  *out = std::move(spec);
  return Status::ok();
}

}  // namespace chorus::detail
