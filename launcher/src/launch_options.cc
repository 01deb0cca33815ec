#include "launch_options.h"

#include "tuning_flags.h"
#include "common/env_params.h"

#include "chorus/version.h"

#include <boost/program_options.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

namespace po = boost::program_options;

namespace chorus::launcher {

namespace {

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

// An option of exactly two values, as argparse's nargs=2 (Boost has no such
// count of its own): --blacklist-cooldown-range LO HI.
class TwoValues : public po::typed_value<std::vector<std::string>> {
 public:
  TwoValues() : po::typed_value<std::vector<std::string>>(nullptr) {}
  unsigned min_tokens() const override { return 2; }
  unsigned max_tokens() const override { return 2; }
};

// horovodrun's elastic flags, under its names.
void add_elastic_flags(po::options_description* d) {
  // A table, one flag a line, as describe_options' own.
  // clang-format off
  d->add_options()
      ("min-np", po::value<int>(), "elastic: the fewest ranks to train with (default -np; -np defaults to it)")
      ("max-np", po::value<int>(), "elastic: the most ranks to run (default: no limit)")
      ("host-discovery-script", po::value<std::string>(),
       "elastic: a program that prints the hosts available now, one 'host' or 'host:slots' a line")
      ("slots-per-host", po::value<int>(), "elastic: the slots of a discovered host printed without a count (default 1)")
      ("elastic-timeout", po::value<double>(), "elastic: seconds to wait for enough ranks after the hosts changed (default 600)")
      ("reset-limit", po::value<int>(), "elastic: end the job after this many changes of its ranks (default: no limit)")
      ("blacklist-cooldown-range", new TwoValues,
       "elastic: LO HI: a host whose worker failed stays out LO seconds, about twice as long each time, at most HI (default: for good)")
      ("discovery-interval", po::value<double>(), "elastic: seconds between runs of the discovery script (default 1)");
  // clang-format on
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
      ("mpi-args", po::value<std::string>(), "extra mpirun arguments, split like a shell would (no shell runs; not with --tcp)")
      ("output-filename", po::value<std::string>(), "one log per rank under this folder")
      ("ssh-port,p", po::value<int>(), "ssh port for remote hosts")
      ("ssh-identity-file,i", po::value<std::string>(), "ssh identity file for remote hosts")
      ("start-timeout", po::value<int>(), "seconds the ranks may take to start before the job fails (--tcp: to meet at the rendezvous)")
      ("no-stall-check", po::bool_switch(), "disable the stall check")
      ("no-malloc-tuning", po::bool_switch(), "do not set chorusrun's default GLIBC_TUNABLES")
      ("no-exit-report", po::bool_switch(),
       "run ranks without chorusrun's exit reporter (the exit code is then whichever exit mpirun or --tcp saw first)")
      ("version", po::bool_switch(), "print chorusrun's version and exit")
      ("tcp", po::bool_switch(), "start the ranks without mpirun (TCP transport): local ones directly, remote ones through ssh")
      ("gloo", po::bool_switch(), "the same as --tcp (horovodrun's name for running without MPI)")
      ("disable-cache", po::bool_switch(), "turn the response cache off (CHORUS_CACHE_CAPACITY=0)")
      ("agent", po::value<std::string>(), "with --tcp: the program that starts a remote rank as AGENT HOST COMMAND (default ssh)")
      ("verbose", po::bool_switch(), "print the mpirun command (--tcp: each rank's) before running it")
      ("dry-run", po::bool_switch(), "print the mpirun command (--tcp: each rank's) and run nothing");
  add_elastic_flags(&d);
  add_tuning_flags(&d);
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

// The option word `a` names (nullptr: none, or its value is attached:
// --flag=value, -xVAR).
const po::option_description* option_named(const std::string& a, const po::options_description& desc) {
  if (a.size() < 2 || a[0] != '-' || a.find('=') != std::string::npos) return nullptr;
  if (a[1] == '-') return desc.find_nothrow(a.substr(2), false, false, false);
  // -np (a long name behind one dash), -H (Boost stores short names with
  // their dash), or -xVAR (a short option with its value attached).
  const po::option_description* o = desc.find_nothrow(a.substr(1), false, false, false);
  if (o != nullptr) return o;
  o = desc.find_nothrow(a.substr(0, 2), false, false, false);
  return o != nullptr && a.size() > 2 ? nullptr : o;
}

// A switch's value when one follows it (--autotune 0): the on/off words
// the knobs take (lower case, as they do) and numbers (so that --autotune 2
// is refused, not taken for a program).
bool switch_value(const std::string& word) {
  for (const char* v : {"true", "false", "yes", "no", "on", "off"}) {
    if (word == v) return true;
  }
  return detail::is_plain_decimal(word, true);
}

// Whether `o`, found at args[i], takes args[i + 1] as its value.
bool takes_next(const po::option_description* o, const std::vector<std::string>& args, size_t i) {
  if (o == nullptr || o->semantic()->max_tokens() == 0 || i + 1 >= args.size()) return false;
  return o->semantic()->min_tokens() > 0 || switch_value(args[i + 1]);  // a switch: only a value
}

// How many words after the option at args[i] are its values: one, or two
// for --blacklist-cooldown-range LO HI (one more when LO is attached:
// --blacklist-cooldown-range=LO HI), or none.
size_t value_words(const std::vector<std::string>& args, size_t i, const po::options_description& desc) {
  const std::string& a = args[i];
  const size_t eq = a.find('=');
  if (eq != std::string::npos && a.rfind("--", 0) == 0) {
    const po::option_description* o = desc.find_nothrow(a.substr(2, eq - 2), false, false, false);
    return o != nullptr && o->semantic()->min_tokens() > 1 ? o->semantic()->min_tokens() - 1 : 0;
  }
  const po::option_description* o = option_named(a, desc);
  return takes_next(o, args, i) ? std::max(1u, o->semantic()->min_tokens()) : 0;
}

// Where PROGRAM starts: the first word that is neither an option nor the
// value of one. Returns args.size() when there is none.
size_t find_program(const std::vector<std::string>& args, const po::options_description& desc) {
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") return i + 1;
    if (a.size() < 2 || a[0] != '-') return i;
    i += value_words(args, i, desc);  // skip its values
  }
  return args.size();
}

// Boost takes a switch's value only attached (--autotune=0): attach the
// ones given as the next word.
std::vector<std::string> attach_switch_values(const std::vector<std::string>& ours,
                                              const po::options_description& desc) {
  std::vector<std::string> out;
  for (size_t i = 0; i < ours.size(); ++i) {
    const po::option_description* o = option_named(ours[i], desc);
    const bool is_switch = o != nullptr && o->semantic()->min_tokens() == 0 && o->semantic()->max_tokens() > 0;
    if (is_switch && takes_next(o, ours, i)) {
      out.push_back(ours[i] + "=" + ours[i + 1]);
      ++i;
    } else {
      out.push_back(ours[i]);
    }
  }
  return out;
}

// Parses `ours` (and the config file it names) into `vm`: "" or the error.
std::string parse_into(const std::vector<std::string>& ours, const po::options_description& desc,
                       po::variables_map* vm) {
  try {
    const int style = (po::command_line_style::default_style | po::command_line_style::allow_long_disguise) &
                      ~po::command_line_style::allow_guessing;
    po::store(po::command_line_parser(ours).options(desc).style(style).run(), *vm);
    if (vm->count("config-file")) {
      std::string text;
      const std::string error = read_named_file((*vm)["config-file"].as<std::string>(), "config file", &text);
      if (!error.empty()) return error;
      std::istringstream in(text);
      po::store(po::parse_config_file(in, desc), *vm);  // stored second: the command line wins
    }
    po::notify(*vm);
  } catch (const po::error& e) {
    return e.what();
  }
  return "";
}

// -np and the hosts (-H or --hostfile).
std::string read_ranks_and_hosts(const po::variables_map& vm, LaunchOptions* o) {
  if (vm.count("num-proc")) {
    o->num_proc = vm["num-proc"].as<int>();
  } else if (o->elastic && vm.count("min-np")) {
    o->num_proc = o->elastic->min_np;  // as horovodrun: an elastic job starts with --min-np ranks
  } else {
    return "missing -np N (the number of ranks)";
  }
  if (o->num_proc <= 0) return "-np " + std::to_string(o->num_proc) + ": the number of ranks must be at least 1";
  if (vm.count("hosts") && vm.count("hostfile")) return "give either -H or --hostfile, not both";
  o->hosts_given = vm.count("hosts") || vm.count("hostfile");
  if (vm.count("hosts")) return parse_host_spec(vm["hosts"].as<std::string>(), &o->hosts);
  if (!vm.count("hostfile")) return "";
  const std::string path = vm["hostfile"].as<std::string>();
  std::string text;
  std::string error = read_named_file(path, "hostfile", &text);
  return error.empty() ? parse_hostfile(text, path, &o->hosts) : error;
}

// The tuning flags (tuning_flags.h), --disable-cache and --no-stall-check.
std::string read_knobs(const po::variables_map& vm, LaunchOptions* o) {
  const std::string error = tuning_knobs(vm, &o->knobs);
  if (!error.empty()) return error;
  if (vm["disable-cache"].as<bool>()) {
    const std::string capacity = tuning_flag(*detail::find_knob("CACHE_CAPACITY"));
    if (vm.count(capacity)) return "--disable-cache contradicts --" + capacity;
    o->knobs.emplace_back("CHORUS_CACHE_CAPACITY", "0");
  }
  if (!vm["no-stall-check"].as<bool>()) return "";
  for (const char* knob : {"STALL_CHECK_TIME_SECONDS", "STALL_SHUTDOWN_TIME_SECONDS"}) {
    if (vm.count(tuning_flag(*detail::find_knob(knob)))) {
      return "--no-stall-check contradicts --" + tuning_flag(*detail::find_knob(knob));
    }
  }
  o->knobs.emplace_back("CHORUS_STALL_CHECK_DISABLE", "1");
  return "";
}

// -x VAR and -x VAR=VALUE.
std::string read_exports(const po::variables_map& vm, LaunchOptions* o) {
  if (!vm.count("env")) return "";
  for (const std::string& v : vm["env"].as<std::vector<std::string>>()) {
    const std::string name = v.substr(0, v.find('='));
    if (name.empty() || name.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") !=
                            std::string::npos || std::isdigit(static_cast<unsigned char>(name[0]))) {
      return "-x '" + v + "': not a variable name (expected VAR or VAR=VALUE)";
    }
    o->exported_env.push_back(v);
  }
  return "";
}

std::string read_mpi_args(const po::variables_map& vm, LaunchOptions* o) {
  if (!vm.count("mpi-args")) return "";
  const std::string args = vm["mpi-args"].as<std::string>();
  if (!quotes_balanced(args)) return "--mpi-args '" + args + "': unclosed quote";
  try {
    o->mpi_args = po::split_unix(args);
  } catch (const std::exception& e) {
    return std::string("--mpi-args: ") + e.what();
  }
  return "";
}

// --output-filename, ssh's port and identity, --start-timeout.
std::string read_remote(const po::variables_map& vm, LaunchOptions* o) {
  if (vm.count("output-filename")) o->output_dir = vm["output-filename"].as<std::string>();
  if (vm.count("ssh-port")) {
    o->ssh_port = vm["ssh-port"].as<int>();
    if (*o->ssh_port <= 0 || *o->ssh_port > 65535) return "-p " + std::to_string(*o->ssh_port) + ": not a port number";
  }
  if (vm.count("ssh-identity-file")) {
    o->ssh_identity = vm["ssh-identity-file"].as<std::string>();
    // mpirun splits plm_rsh_args on white space: such a path cannot get through
    // intact (--tcp hands ssh its own argument).
    if (!o->tcp && o->ssh_identity->find_first_of(" \t\n") != std::string::npos) {
      return "-i '" + *o->ssh_identity + "': mpirun cannot pass an identity file path containing spaces to ssh";
    }
  }
  if (vm.count("start-timeout")) {
    o->start_timeout_seconds = vm["start-timeout"].as<int>();
    if (*o->start_timeout_seconds <= 0) return "--start-timeout must be at least 1 second";
  }
  return "";
}

// The flags that mean elastic training, and those that only it takes.
constexpr const char* kElasticFlags[] = {"min-np", "max-np", "host-discovery-script"};
constexpr const char* kElasticOnlyFlags[] = {"slots-per-host", "elastic-timeout", "reset-limit",
                                             "blacklist-cooldown-range", "discovery-interval"};

bool is_elastic(const po::variables_map& vm) {
  return std::any_of(std::begin(kElasticFlags), std::end(kElasticFlags), [&](const char* f) { return vm.count(f); });
}

// A number of seconds: finite and > 0 (>= 0 when `zero_ok`).
bool parse_seconds(const std::string& text, bool zero_ok, double* out) {
  char* end = nullptr;
  errno = 0;
  *out = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno != 0 || !std::isfinite(*out)) return false;
  return zero_ok ? *out >= 0 : *out > 0;
}

// --blacklist-cooldown-range LO HI (in a config file one value, "LO HI").
std::string read_cooldown(const po::variables_map& vm, ElasticOptions* e) {
  std::vector<std::string> words;
  for (const std::string& value : vm["blacklist-cooldown-range"].as<std::vector<std::string>>()) {
    std::istringstream in(value);
    for (std::string w; in >> w;) words.push_back(w);
  }
  std::string given = "--blacklist-cooldown-range";
  for (const std::string& w : words) given += " " + w;
  CooldownRange r;
  if (words.size() != 2 || !parse_seconds(words[0], true, &r.lo) || !parse_seconds(words[1], true, &r.hi)) {
    return given + ": expected two numbers of seconds >= 0, LO HI (e.g. 60 300)";
  }
  if (r.lo > r.hi) return given + ": LO must not be more than HI";
  e->blacklist_cooldown = r;
  return "";
}

// The counts: --min-np, --max-np, --slots-per-host, --reset-limit.
std::string read_elastic_counts(const po::variables_map& vm, ElasticOptions* e) {
  if (vm.count("min-np")) {
    e->min_np = vm["min-np"].as<int>();
    if (e->min_np < 1) return "--min-np " + std::to_string(e->min_np) + ": the fewest ranks must be at least 1";
  }
  if (vm.count("max-np")) {
    e->max_np = vm["max-np"].as<int>();
    if (*e->max_np < 1) return "--max-np " + std::to_string(*e->max_np) + ": the most ranks must be at least 1";
  }
  if (vm.count("slots-per-host")) {
    e->slots_per_host = vm["slots-per-host"].as<int>();
    if (e->slots_per_host < 1) return "--slots-per-host " + std::to_string(e->slots_per_host) + ": must be at least 1";
  }
  if (vm.count("reset-limit")) {
    e->reset_limit = vm["reset-limit"].as<int>();
    if (*e->reset_limit < 0) return "--reset-limit " + std::to_string(*e->reset_limit) + ": must be 0 or more";
  }
  return "";
}

// --elastic-timeout (else CHORUS_ELASTIC_TIMEOUT or HOROVOD_ELASTIC_TIMEOUT,
// as horovodrun reads it), --discovery-interval, --blacklist-cooldown-range.
std::string read_elastic_times(const po::variables_map& vm, ElasticOptions* e) {
  if (!vm.count("elastic-timeout")) {
    const chorus::Status s =
        detail::number_from_environment("ELASTIC_TIMEOUT", e->elastic_timeout_seconds, &e->elastic_timeout_seconds);
    if (!s.is_ok()) return s.message();
  }
  for (auto [flag, value] : {std::pair{"elastic-timeout", &e->elastic_timeout_seconds},
                             std::pair{"discovery-interval", &e->discovery_interval_seconds}}) {
    if (!vm.count(flag)) continue;
    *value = vm[flag].as<double>();
    if (!std::isfinite(*value) || *value <= 0) {
      std::ostringstream text;
      text << "--" << flag << " " << *value << ": must be a number of seconds > 0";
      return text.str();
    }
  }
  return vm.count("blacklist-cooldown-range") ? read_cooldown(vm, e) : "";
}

// horovodrun's elastic flags (before -np: -np defaults to --min-np).
std::string read_elastic(const po::variables_map& vm, LaunchOptions* o) {
  if (!is_elastic(vm)) {
    for (const char* flag : kElasticOnlyFlags) {
      if (vm.count(flag)) {
        return std::string("--") + flag +
               " only applies to elastic training (--min-np, --max-np or --host-discovery-script)";
      }
    }
    return "";
  }
  if (vm.count("mpi-args")) {
    return "elastic training runs over the TCP transport: --mpi-args cannot be used with "
           "--min-np/--max-np/--host-discovery-script";
  }
  ElasticOptions& e = o->elastic.emplace();
  if (vm.count("host-discovery-script")) {
    e.discovery_script = vm["host-discovery-script"].as<std::string>();
    if (e.discovery_script.empty()) return "--host-discovery-script: empty path";
    if (vm.count("hosts") || vm.count("hostfile")) {
      return std::string("give either ") + (vm.count("hosts") ? "-H" : "--hostfile") +
             " or --host-discovery-script, not both (the script says which hosts there are)";
    }
  } else if (vm.count("slots-per-host")) {
    return "--slots-per-host gives the slots of the hosts --host-discovery-script prints without a count; "
           "there is no such script (with -H, give host:slots)";
  }
  const std::string error = read_elastic_counts(vm, &e);
  return error.empty() ? read_elastic_times(vm, &e) : error;
}

// An elastic job's sizes, once -np is known: min-np <= np <= max-np.
std::string check_elastic_sizes(const po::variables_map& vm, LaunchOptions* o) {
  if (!o->elastic) return "";
  ElasticOptions& e = *o->elastic;
  if (!vm.count("min-np")) e.min_np = o->num_proc;  // horovodrun's default
  const std::string np = "-np " + std::to_string(o->num_proc);
  if (vm.count("min-np") && e.max_np && *e.max_np < e.min_np) {
    return "--max-np " + std::to_string(*e.max_np) + " is less than --min-np " + std::to_string(e.min_np);
  }
  if (o->num_proc < e.min_np) return np + " is less than --min-np " + std::to_string(e.min_np);
  if (e.max_np && o->num_proc > *e.max_np) return np + " is more than --max-np " + std::to_string(*e.max_np);
  return "";
}

// What only one of the two ways to start a job understands.
std::string check_tcp_combinations(const po::variables_map& vm, LaunchOptions* o) {
  if (!o->tcp) {
    return o->agent.empty() ? "" : "--agent only applies with --tcp (mpirun starts remote ranks itself; "
                                   "give it an agent with --mpi-args \"--mca plm_rsh_agent ...\")";
  }
  if (vm.count("mpi-args")) return "--mpi-args goes to mpirun, and --tcp starts no mpirun";
  if (!o->agent.empty() && o->agent != "ssh" && (o->ssh_port || o->ssh_identity)) {
    return "-p and -i are ssh's options; --agent " + o->agent + " gets none (give them to the agent itself)";
  }
  return "";
}

}  // namespace

ParseResult parse_command_line(const std::vector<std::string>& args) {
  ParseResult r;
  const po::options_description desc = describe_options();
  const size_t program_at = std::min(find_program(args, desc), args.size());
  std::vector<std::string> ours(args.begin() + (args.empty() ? 0 : 1),
                                args.begin() + static_cast<std::ptrdiff_t>(program_at));
  if (!ours.empty() && ours.back() == "--") ours.pop_back();
  LaunchOptions& o = r.options;
  o.command.assign(args.begin() + static_cast<std::ptrdiff_t>(program_at), args.end());

  po::variables_map vm;
  r.error = parse_into(attach_switch_values(ours, desc), desc, &vm);
  if (!r.error.empty()) return r;
  if (vm.count("help")) {
    std::ostringstream text;
    text << "usage: chorusrun [options] PROGRAM [ARGS...]\n" << desc;
    r.help_text = text.str();
    return r;
  }
  if (vm["version"].as<bool>()) {
    r.help_text = std::string("chorusrun (Chorus) ") + chorus::version() + "\n";
    return r;
  }
  o.check_build = vm["check-build"].as<bool>();
  o.verbose = vm["verbose"].as<bool>();
  o.dry_run = vm["dry-run"].as<bool>();
  o.tune_malloc = !vm["no-malloc-tuning"].as<bool>();
  o.rank_exit_report = !vm["no-exit-report"].as<bool>();
  o.tcp = vm["tcp"].as<bool>() || vm["gloo"].as<bool>() || is_elastic(vm);  // elastic: TCP only
  if (vm.count("agent")) o.agent = vm["agent"].as<std::string>();
  if (o.check_build) return r;
  for (auto read : {read_elastic, read_ranks_and_hosts, check_elastic_sizes, read_knobs, read_exports, read_mpi_args,
                    read_remote, check_tcp_combinations}) {
    r.error = read(vm, &o);
    if (!r.error.empty()) return r;
  }
  if (o.command.empty()) r.error = "no program to run (usage: chorusrun [options] PROGRAM [ARGS...])";
  return r;
}

}  // namespace chorus::launcher
