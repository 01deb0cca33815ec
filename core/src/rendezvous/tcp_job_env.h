#pragma once
// Where this process sits in a job started without MPI, from the
// environment: Chorus's own names (CHORUS_RANK, CHORUS_SIZE,
// CHORUS_LOCAL_RANK, CHORUS_LOCAL_SIZE, CHORUS_MASTER_ADDR,
// CHORUS_MASTER_PORT, CHORUS_JOB_ID), else torchrun's (RANK, WORLD_SIZE,
// LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT,
// TORCHELASTIC_RUN_ID), else Slurm's (SLURM_PROCID, SLURM_NTASKS,
// SLURM_LOCALID, the first host of SLURM_JOB_NODELIST, a port derived from
// SLURM_JOB_ID), field by field. Errors name the variable.

#include <string>

#include "chorus/status.h"

namespace chorus::detail {

struct TcpJobSpec {
  int rank = 0, size = 1;
  int local_rank = -1, local_size = -1;  // what the launcher says; -1: not said
  std::string master_addr;               // empty only for a job of one rank
  int master_port = 0;
  std::string job_id;  // ranks of another job that reach our port are refused
  std::string rank_var, size_var, addr_var, port_var;  // the variables used, for messages
};

/// The spec from the environment. Nothing set at all: a job of one rank.
Status tcp_job_from_environment(TcpJobSpec* out);

/// Whether any variable of a TCP rendezvous is set (CHORUS_MASTER_ADDR,
/// MASTER_ADDR with RANK, or a Slurm step).
bool tcp_rendezvous_requested();

/// Whether torchrun's agent serves its own store on MASTER_PORT
/// (TORCHELASTIC_USE_AGENT_STORE=True): Chorus's rank 0 then listens on
/// MASTER_PORT + 1 (CHORUS_MASTER_PORT still wins).
bool torchrun_agent_holds_master_port();

/// Whether an MPI launcher started this process (mpirun, mpiexec, srun with PMI).
bool started_by_mpi_launcher();

/// The first host of a Slurm node list: "node[03-05,9],gpu1" -> "node03".
std::string first_slurm_host(const std::string& nodelist);

}  // namespace chorus::detail
