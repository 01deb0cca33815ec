#pragma once
// chorusrun --tcp: the job without mpirun. From what the user asked to one
// command per rank: local ranks run the program directly, remote ones
// through an agent (ssh by default, --agent for another, e.g. one that
// enters a container); every rank gets the TCP rendezvous's variables
// (torchrun's names), the job's secret (never on a command line: a remote
// rank reads it from its stdin), the knobs, chorusrun's malloc settings and
// the -x variables; a local rank also gets the exit hook that records the code it
// chose (rank_exits.h). Pure, so every rule is unit-tested without
// launching anything.

#include <string>
#include <utility>
#include <vector>

#include "host_machines.h"
#include "launch_options.h"

namespace chorus::launcher {

/// Facts about this machine that shape the commands.
struct TcpLaunchContext {
  std::vector<std::string> local_host_names;
  std::vector<std::string> local_addresses;  ///< of this machine's interfaces
  HostResolver resolve;                      ///< resolve_host, or a test's
  std::string program_path;  ///< resolved PROGRAM
  std::string cwd;           ///< remote ranks start here too
  int master_port = 0;       ///< where rank 0 listens
  std::string job_id;        ///< this launch's, so no other job's rank is taken for ours
  std::string secret;        ///< this launch's (job_secret.h): local ranks' environment, remote ranks' stdin
  bool user_set_glibc_tunables = false;  ///< GLIBC_TUNABLES already here: the ranks keep the user's
  std::string exit_record_dir;           ///< where local ranks record their exit ("": they do not)
  std::string exit_hook_path;            ///< libchorusrun_exit_hook.so ("": none found, no records)
};

/// What one rank runs.
struct RankCommand {
  int rank = 0;
  std::string host;
  bool local = true;
  std::vector<std::string> argv;  ///< local: the program; remote: the agent's command
  std::vector<std::pair<std::string, std::string>> env;  ///< set for a local rank (remote: inside argv)
  std::string stdin_text;   ///< written to the rank's stdin, then closed (a remote rank's secret)
  std::string exit_record;  ///< local rank: the file the exit hook writes ("": no hook)
  std::string exit_hook;    ///< the hook library preloaded for it
};

/// The rank commands, in rank order, or an error line. Ranks fill the
/// machines of the host list in order (host_machines.h: a machine named
/// twice is one, with both entries' slots), each up to its slots (the way
/// mpirun maps by slot); rank 0's machine is the rendezvous address
/// (127.0.0.1 when every rank is local).
std::string make_tcp_launch(const LaunchOptions& options, const TcpLaunchContext& context,
                            std::vector<RankCommand>* out);

/// One worker of an elastic job on `machine`: the job's variables (no rank:
/// the elastic rendezvous gives it one per world) and `member_env` (the
/// rendezvous's address, the member's id); its program, or the agent's
/// command for a remote machine, as for a rank. An error line, or "".
std::string make_elastic_worker(const LaunchOptions& options, const TcpLaunchContext& context, const Machine& machine,
                                const std::vector<std::pair<std::string, std::string>>& member_env, RankCommand* out);

}  // namespace chorus::launcher
