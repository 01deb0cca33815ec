#include "launch_options.h"

#include <boost/program_options.hpp>

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace po = boost::program_options;

namespace chorus::launcher {

namespace {

// Tuning flags: flag name -> CHORUS_* variable, and how the value is checked.
enum class Kind { kNonNegNumber, kWholeNumber, kText, kAlgo, kLogLevel };
struct Knob {
  const char* flag;
  const char* variable;
  Kind kind;
  const char* help;
};
const Knob kKnobs[] = {
    {"fusion-threshold-mb", "CHORUS_FUSION_THRESHOLD", Kind::kNonNegNumber,
     "largest fused allreduce buffer in MiB (0: no fusion)"},
    {"cycle-time-ms", "CHORUS_CYCLE_TIME", Kind::kNonNegNumber, "longest sleep of the background thread, ms"},
    {"cache-capacity", "CHORUS_CACHE_CAPACITY", Kind::kWholeNumber, "response cache entries (0: off)"},
    {"timeline-filename", "CHORUS_TIMELINE", Kind::kText, "write a timeline of every tensor to this file"},
    {"stall-check-warning-time-seconds", "CHORUS_STALL_CHECK_TIME_SECONDS", Kind::kNonNegNumber,
     "warn about tensors some ranks never submitted after this long"},
    {"stall-check-shutdown-time-seconds", "CHORUS_STALL_SHUTDOWN_TIME_SECONDS", Kind::kNonNegNumber,
     "stop the job after a stall this long (0: never)"},
    {"log-level", "CHORUS_LOG_LEVEL", Kind::kLogLevel, "trace, debug, info, warning, error or fatal"},
    {"allreduce-algo", "CHORUS_ALLREDUCE_ALGO", Kind::kAlgo, "auto, shm, ring or mpi"},
};

std::string check_knob_value(const Knob& k, const std::string& v, std::string* out) {
  *out = v;
  switch (k.kind) {
    case Kind::kNonNegNumber: {
      std::istringstream in(v);
      double d = 0;
      if (!(in >> d) || !in.eof() || d < 0 || d > 1e9) return "expects a number >= 0 (and at most 1e9)";
      if (std::string(k.flag) == "fusion-threshold-mb") {
        *out = std::to_string(static_cast<long long>(d * 1024 * 1024));
      }
      return "";
    }
    case Kind::kWholeNumber: {
      if (v.empty() || v.size() > 8 || v.find_first_not_of("0123456789") != std::string::npos || std::stoll(v) > (1 << 24)) {
        return "expects a whole number in 0..16777216";
      }
      return "";
    }
    case Kind::kAlgo:
      return v == "auto" || v == "shm" || v == "ring" || v == "mpi" ? "" : "expects auto, shm, ring or mpi";
    case Kind::kLogLevel:
      for (const char* l : {"trace", "debug", "info", "warning", "warn", "error", "fatal"}) {
        if (v == l) return "";
      }
      return "expects trace, debug, info, warning, error or fatal";
    case Kind::kText:
      return v.empty() ? "expects a value" : "";
  }
  return "";
}

// split_unix accepts an unclosed quote silently; refuse it instead of
// guessing what the user meant.
bool quotes_balanced(const std::string& text) {
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\\' && quote != '\'') {
      ++i;
    } else if (quote == 0 && (c == '\'' || c == '"')) {
      quote = c;
    } else if (c == quote) {
      quote = 0;
    }
  }
  return quote == 0;
}

po::options_description describe_options() {
  po::options_description d("chorusrun options");
  d.add_options()
      ("help,h", "show this help")
      ("num-proc,np", po::value<int>(), "number of ranks (-np N)")
      ("hosts,H", po::value<std::string>(), "hosts and slots: host:slots,... (default localhost:N)")
      ("hostfile", po::value<std::string>(), "file of 'host slots=N' lines ('#' comments)")
      ("check-build", po::bool_switch(), "show what this Chorus was built with, and exit")
      ("config-file", po::value<std::string>(), "read these options from a file (the command line wins)")
      ("env,x", po::value<std::vector<std::string>>()->composing(), "pass VAR (or set VAR=VALUE) on every rank")
      ("mpi-args", po::value<std::string>(), "extra mpirun arguments, split like a shell would (no shell runs)")
      ("output-filename", po::value<std::string>(), "one log per rank under this folder")
      ("ssh-port,p", po::value<int>(), "ssh port for remote hosts")
      ("ssh-identity-file,i", po::value<std::string>(), "ssh identity file for remote hosts")
      ("start-timeout", po::value<int>(), "seconds the ranks may take to start before the job fails")
      ("no-stall-check", po::bool_switch(), "disable the stall check")
      ("no-malloc-tuning", po::bool_switch(), "do not set chorusrun's default GLIBC_TUNABLES")
      ("no-exit-report", po::bool_switch(),
       "run ranks without chorusrun's exit reporter (the exit code is then whichever mpirun saw first)")
      ("tcp", po::bool_switch(), "start the ranks without mpirun (TCP transport): local ones directly, remote ones through ssh")
      ("agent", po::value<std::string>(), "with --tcp: the program that starts a remote rank as AGENT HOST COMMAND (default ssh)")
      ("verbose", po::bool_switch(), "print the mpirun command before running it")
      ("dry-run", po::bool_switch(), "print the mpirun command and run nothing");
  for (const Knob& k : kKnobs) d.add_options()(k.flag, po::value<std::string>(), k.help);
  return d;
}

// The whole of a file named on the command line (`what`: "config file",
// "hostfile"), or an error naming it. A directory opens fine as a stream
// and reads as empty; it must be refused, not taken for an empty file.
std::string read_named_file(const std::string& path, const std::string& what, std::string* text) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "cannot read " + what + " '" + path + "': " + std::strerror(errno);
  if (S_ISDIR(st.st_mode)) return what + " '" + path + "' is a directory, not a file";
  std::ifstream in(path, std::ios::binary);
  std::stringstream content;
  content << in.rdbuf();
  if (!in || in.bad()) return "cannot read " + what + " '" + path + "'";
  *text = content.str();
  return "";
}

// Where PROGRAM starts: the first word that is neither an option nor the
// value of one. Returns args.size() when there is none.
size_t find_program(const std::vector<std::string>& args, const po::options_description& desc) {
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") return i + 1;
    if (a.size() < 2 || a[0] != '-') return i;
    if (a.find('=') != std::string::npos) continue;  // --flag=value
    const po::option_description* o = nullptr;
    if (a[1] == '-') {
      o = desc.find_nothrow(a.substr(2), false, false, false);
    } else {
      // -np (a long name behind one dash), -H (Boost stores short names
      // with their dash), or -xVAR (a short option with its value attached).
      o = desc.find_nothrow(a.substr(1), false, false, false);
      if (o == nullptr) {
        o = desc.find_nothrow(a.substr(0, 2), false, false, false);
        if (o != nullptr && a.size() > 2) continue;
      }
    }
    if (o != nullptr && o->semantic()->max_tokens() > 0) ++i;  // skip its value
  }
  return args.size();
}

}  // namespace

ParseResult parse_command_line(const std::vector<std::string>& args) {
  ParseResult r;
  const po::options_description desc = describe_options();
  const size_t program_at = find_program(args, desc);
  std::vector<std::string> ours(args.begin() + (args.empty() ? 0 : 1),
                                args.begin() + static_cast<std::ptrdiff_t>(std::min(program_at, args.size())));
  if (!ours.empty() && ours.back() == "--") ours.pop_back();
  LaunchOptions& o = r.options;
  o.command.assign(args.begin() + static_cast<std::ptrdiff_t>(std::min(program_at, args.size())), args.end());

  po::variables_map vm;
  try {
    const int style = (po::command_line_style::default_style | po::command_line_style::allow_long_disguise) &
                      ~po::command_line_style::allow_guessing;
    po::store(po::command_line_parser(ours).options(desc).style(style).run(), vm);
    if (vm.count("config-file")) {
      std::string text;
      r.error = read_named_file(vm["config-file"].as<std::string>(), "config file", &text);
      if (!r.error.empty()) return r;
      std::istringstream in(text);
      po::store(po::parse_config_file(in, desc), vm);  // stored second: the command line wins
    }
    po::notify(vm);
  } catch (const po::error& e) {
    r.error = e.what();
    return r;
  }
  if (vm.count("help")) {
    std::ostringstream text;
    text << "usage: chorusrun [options] PROGRAM [ARGS...]\n" << desc;
    r.help_text = text.str();
    return r;
  }
  o.check_build = vm["check-build"].as<bool>();
  o.verbose = vm["verbose"].as<bool>();
  o.dry_run = vm["dry-run"].as<bool>();
  o.tune_malloc = !vm["no-malloc-tuning"].as<bool>();
  o.rank_exit_report = !vm["no-exit-report"].as<bool>();
  o.tcp = vm["tcp"].as<bool>();
  if (vm.count("agent")) o.agent = vm["agent"].as<std::string>();
  if (o.check_build) return r;

  if (!vm.count("num-proc")) {
    r.error = "missing -np N (the number of ranks)";
    return r;
  }
  o.num_proc = vm["num-proc"].as<int>();
  if (o.num_proc <= 0) {
    r.error = "-np " + std::to_string(o.num_proc) + ": the number of ranks must be at least 1";
    return r;
  }
  if (vm.count("hosts") && vm.count("hostfile")) {
    r.error = "give either -H or --hostfile, not both";
    return r;
  }
  if (vm.count("hosts")) {
    r.error = parse_host_spec(vm["hosts"].as<std::string>(), &o.hosts);
    o.hosts_given = true;
  } else if (vm.count("hostfile")) {
    const std::string path = vm["hostfile"].as<std::string>();
    std::string text;
    r.error = read_named_file(path, "hostfile", &text);
    if (r.error.empty()) r.error = parse_hostfile(text, path, &o.hosts);
    o.hosts_given = true;
  }
  if (!r.error.empty()) return r;

  for (const Knob& k : kKnobs) {
    if (!vm.count(k.flag)) continue;
    std::string value;
    const std::string why = check_knob_value(k, vm[k.flag].as<std::string>(), &value);
    if (!why.empty()) {
      r.error = "--" + std::string(k.flag) + " '" + vm[k.flag].as<std::string>() + "': " + why;
      return r;
    }
    o.knobs.emplace_back(k.variable, value);
  }
  if (vm["no-stall-check"].as<bool>()) {
    if (vm.count("stall-check-warning-time-seconds") || vm.count("stall-check-shutdown-time-seconds")) {
      r.error = "--no-stall-check contradicts --stall-check-*-time-seconds";
      return r;
    }
    o.knobs.emplace_back("CHORUS_STALL_CHECK_TIME_SECONDS", "0");
  }
  if (vm.count("env")) {
    for (const std::string& v : vm["env"].as<std::vector<std::string>>()) {
      const std::string name = v.substr(0, v.find('='));
      if (name.empty() || name.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") !=
                              std::string::npos || std::isdigit(static_cast<unsigned char>(name[0]))) {
        r.error = "-x '" + v + "': not a variable name (expected VAR or VAR=VALUE)";
        return r;
      }
      o.exported_env.push_back(v);
    }
  }
  if (vm.count("mpi-args")) {
    if (!quotes_balanced(vm["mpi-args"].as<std::string>())) {
      r.error = "--mpi-args '" + vm["mpi-args"].as<std::string>() + "': unclosed quote";
      return r;
    }
    try {
      o.mpi_args = po::split_unix(vm["mpi-args"].as<std::string>());
    } catch (const std::exception& e) {
      r.error = std::string("--mpi-args: ") + e.what();
      return r;
    }
  }
  if (vm.count("output-filename")) o.output_dir = vm["output-filename"].as<std::string>();
  if (vm.count("ssh-port")) {
    o.ssh_port = vm["ssh-port"].as<int>();
    if (*o.ssh_port <= 0 || *o.ssh_port > 65535) {
      r.error = "-p " + std::to_string(*o.ssh_port) + ": not a port number";
      return r;
    }
  }
  if (vm.count("ssh-identity-file")) {
    o.ssh_identity = vm["ssh-identity-file"].as<std::string>();
    // mpirun splits plm_rsh_args on white space: such a path cannot get through intact.
    if (o.ssh_identity->find_first_of(" \t\n") != std::string::npos) {
      r.error = "-i '" + *o.ssh_identity + "': mpirun cannot pass an identity file path containing spaces to ssh";
      return r;
    }
  }
  if (vm.count("start-timeout")) {
    o.start_timeout_seconds = vm["start-timeout"].as<int>();
    if (*o.start_timeout_seconds <= 0) {
      r.error = "--start-timeout must be at least 1 second";
      return r;
    }
  }
  if (o.command.empty()) r.error = "no program to run (usage: chorusrun [options] PROGRAM [ARGS...])";
  return r;
}

}  // namespace chorus::launcher
