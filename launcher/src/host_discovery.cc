#include "host_discovery.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <sstream>

namespace chorus::launcher {

namespace {

using Clock = std::chrono::steady_clock;
// Once the script ended, what it started may still hold its stdout open (a
// background process): read what is left this long, then stop waiting.
constexpr auto kDrainAfterExit = std::chrono::seconds(1);
constexpr size_t kMaxStdout = size_t{1} << 20;    // a host list, not a log
constexpr size_t kKeptStderr = size_t{16} << 10;  // its end names the failure
constexpr int kStderrLinesShown = 5;

std::string trim(const std::string& s) {
  const char* space = " \t\r\v\f";
  const size_t b = s.find_first_not_of(space);
  return b == std::string::npos ? "" : s.substr(b, s.find_last_not_of(space) - b + 1);
}

// "1 and 4", "1, 4 and 7".
std::string list_numbers(const std::vector<int>& numbers) {
  std::string out;
  for (size_t i = 0; i < numbers.size(); ++i) {
    if (i > 0) out += i + 1 == numbers.size() ? " and " : ", ";
    out += std::to_string(numbers[i]);
  }
  return out;
}

// One non-blank, trimmed line: "" or why it is not host[:slots].
std::string parse_line(const std::string& line, int default_slots, HostSlots* out) {
  const size_t colon = line.find(':');
  out->host = line.substr(0, colon);
  out->slots = default_slots;
  if (!is_valid_host_name(out->host)) {
    return "not host or host:slots (a host name is dot-separated letters, digits, '-' and '_')";
  }
  if (colon != std::string::npos && !parse_slot_count(line.substr(colon + 1), &out->slots)) {
    return "the slot count after ':' must be a whole number > 0";
  }
  return "";
}

std::string seconds_text(double seconds) {
  std::ostringstream text;
  text << seconds;
  return text.str();
}

// The last lines of the script's stderr, for a message: "" when it wrote none.
std::string stderr_tail(const std::string& err) {
  std::vector<std::string> lines;
  std::istringstream in(err);
  for (std::string line; std::getline(in, line);) {
    line = trim(line);
    if (!line.empty()) lines.push_back(line);
  }
  if (lines.empty()) return "";
  std::string out;
  const size_t first = lines.size() > kStderrLinesShown ? lines.size() - kStderrLinesShown : 0;
  for (size_t i = first; i < lines.size(); ++i) out += (i > first ? " | " : "") + lines[i];
  return out;
}

// "" when `path` is an executable file, else why not.
std::string check_script(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return errno == ENOENT ? "does not exist" : std::string("cannot be read: ") + std::strerror(errno);
  }
  if (S_ISDIR(st.st_mode)) return "is a directory, not a program";
  if (!S_ISREG(st.st_mode)) return "is not a regular file";
  if (::access(path.c_str(), X_OK) != 0) return "is not executable (it needs chmod +x, and a #! line if a script)";
  return "";
}

// In the forked child. A session of its own, so that the timeout's kill
// reaches what it started too; it dies with chorusrun. No signal stays
// blocked, and SIGPIPE has its default action (chorusrun's handlers go at
// exec). On an exec failure, its errno goes back through `report` (closed
// on exec).
[[noreturn]] void exec_script(char* const argv[], int in, int out, int err, int report, pid_t parent) {
  setsid();
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);  // chorusrun died before the line above
  signal(SIGPIPE, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  dup2(in, 0);
  dup2(out, 1);
  dup2(err, 2);
  execv(argv[0], argv);
  const int e = errno;
  (void)!write(report, &e, sizeof e);
  _exit(127);
}

struct ScriptProcess {
  pid_t pid = -1;
  int out = -1, err = -1;  // the read ends of its stdout and stderr
};

void close_fd(int* fd) {
  if (*fd >= 0) ::close(*fd);
  *fd = -1;
}

// Forks and execs the script: "" or why it could not start.
std::string start_script(const std::string& path, ScriptProcess* child) {
  int in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  int out[2] = {-1, -1}, err[2] = {-1, -1}, report[2] = {-1, -1};
  if (in < 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0 || pipe2(report, O_CLOEXEC) != 0) {
    const std::string why = std::strerror(errno);
    for (int* fd : {&in, &out[0], &out[1], &err[0], &err[1], &report[0], &report[1]}) close_fd(fd);
    return why;
  }
  std::string argv0 = path;
  char* argv[] = {argv0.data(), nullptr};
  // No handler of chorusrun's runs in the child between fork and exec.
  sigset_t all, before;
  sigfillset(&all);
  sigprocmask(SIG_BLOCK, &all, &before);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) exec_script(argv, in, out[1], err[1], report[1], parent);
  const int fork_errno = errno;
  sigprocmask(SIG_SETMASK, &before, nullptr);
  for (int* fd : {&in, &out[1], &err[1], &report[1]}) close_fd(fd);
  int exec_errno = 0;
  ssize_t n = -1;
  if (pid > 0) {  // the report pipe closes at a successful exec, or brings its errno
    do n = ::read(report[0], &exec_errno, sizeof exec_errno);
    while (n < 0 && errno == EINTR);
  }
  close_fd(&report[0]);
  if (pid < 0 || n == static_cast<ssize_t>(sizeof exec_errno)) {
    close_fd(&out[0]);
    close_fd(&err[0]);
    if (pid < 0) return std::string("fork failed: ") + std::strerror(fork_errno);
    while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    return std::strerror(exec_errno);
  }
  *child = ScriptProcess{pid, out[0], err[0]};
  return "";
}

// What the script did.
struct Captured {
  std::string out, err;       // err: its last kKeptStderr bytes
  bool out_too_long = false;  // more than kMaxStdout
  int status = 0;             // waitpid's
  bool timed_out = false;     // killed at the deadline
  bool stopped = false;       // killed because `stop` said so
};

// Appends what `*fd` has to `to` (keeping at most `max` bytes: the first
// ones, noting `too_long`, or with `too_long` null the last ones); closes
// it at its end.
void read_into(int* fd, std::string* to, size_t max, bool* too_long) {
  char buf[65536];
  const ssize_t n = ::read(*fd, buf, sizeof buf);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n <= 0) return close_fd(fd);
  to->append(buf, static_cast<size_t>(n));
  if (to->size() <= max) return;
  if (too_long == nullptr) {
    to->erase(0, to->size() - max);
  } else {
    to->resize(max);
    *too_long = true;
  }
}

// Reads the script's output until it ended and both pipes closed (once it
// ended, kDrainAfterExit at most), or until `deadline` or `stop`: then its
// process group is killed.
Captured wait_for(ScriptProcess* c, Clock::time_point deadline, const std::function<bool()>& stop) {
  Captured r;
  bool exited = false;
  Clock::time_point stop_reading = deadline;
  for (;;) {
    if (!exited && waitpid(c->pid, &r.status, WNOHANG) == c->pid) {
      exited = true;
      stop_reading = std::min(deadline, Clock::now() + kDrainAfterExit);
    }
    if (exited && c->out < 0 && c->err < 0) break;
    if (!exited && stop && stop()) {
      r.stopped = true;
      break;
    }
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(stop_reading - Clock::now()).count();
    if (left <= 0) break;
    // At most 50 ms: the script's end is noticed by waitpid, not by poll.
    pollfd fds[2] = {{c->out, POLLIN, 0}, {c->err, POLLIN, 0}};  // poll skips a closed (-1) one
    if (poll(fds, 2, static_cast<int>(std::min<long long>(left, 50))) <= 0) continue;
    if (fds[0].revents != 0) read_into(&c->out, &r.out, kMaxStdout, &r.out_too_long);
    if (fds[1].revents != 0) read_into(&c->err, &r.err, kKeptStderr, nullptr);
  }
  close_fd(&c->out);
  close_fd(&c->err);
  if (!exited) {
    r.timed_out = !r.stopped;
    ::kill(-c->pid, SIGKILL);  // its group: what it started too
    ::kill(c->pid, SIGKILL);   // in case it had no group of its own yet
    while (waitpid(c->pid, &r.status, 0) < 0 && errno == EINTR) {
    }
  }
  return r;
}

// "" when the script succeeded, else what went wrong, starting with `name`.
std::string describe_failure(const std::string& name, const Captured& c, double timeout_seconds) {
  const std::string tail = stderr_tail(c.err);
  const std::string said = tail.empty() ? "" : "; its stderr ends: " + tail;
  if (c.stopped) return name + " was stopped before it finished";
  if (c.timed_out) {
    return name + " did not finish within " + seconds_text(timeout_seconds) + " s, so it was killed" + said;
  }
  if (WIFSIGNALED(c.status)) {
    const int sig = WTERMSIG(c.status);
    return name + " was killed by signal " + std::to_string(sig) + " (" + strsignal(sig) + ")" + said;
  }
  if (WEXITSTATUS(c.status) != 0) {
    return name + " exited with code " + std::to_string(WEXITSTATUS(c.status)) +
           (tail.empty() ? " (and wrote nothing to stderr)" : said);
  }
  if (c.out_too_long) return name + " printed more than " + std::to_string(kMaxStdout >> 20) + " MiB: not a host list";
  return "";
}

}  // namespace

DiscoveryResult parse_discovery_output(const std::string& text, int default_slots) {
  DiscoveryResult r;
  std::vector<std::vector<int>> lines_of;  // of each host in r.hosts: the lines naming it
  std::istringstream in(text);
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    line = trim(line);
    if (line.empty()) continue;
    HostSlots h;
    const std::string why = parse_line(line, default_slots, &h);
    if (!why.empty()) return DiscoveryResult{{}, {}, "line " + std::to_string(line_no) + " '" + line + "': " + why};
    const auto it = std::find_if(r.hosts.begin(), r.hosts.end(), [&](const HostSlots& x) { return x.host == h.host; });
    if (it == r.hosts.end()) {
      r.hosts.push_back(h);
      lines_of.push_back({line_no});
    } else {
      it->slots += h.slots;
      lines_of[static_cast<size_t>(it - r.hosts.begin())].push_back(line_no);
    }
  }
  for (size_t i = 0; i < r.hosts.size(); ++i) {
    if (lines_of[i].size() < 2) continue;
    r.warnings.push_back("host '" + r.hosts[i].host + "' is listed on lines " + list_numbers(lines_of[i]) +
                         ": taken as one host with their slots added up (" + std::to_string(r.hosts[i].slots) + ")");
  }
  return r;
}

DiscoveryResult run_discovery_script(const std::string& path, int default_slots, double timeout_seconds,
                                     const std::function<bool()>& stop) {
  const std::string name = "host discovery script '" + path + "'";
  DiscoveryResult failed;
  std::string why = check_script(path);
  if (!why.empty()) {
    failed.error = name + " " + why;
    return failed;
  }
  // Bounded, so that the deadline cannot overflow the clock (NaN: 0).
  const double seconds = timeout_seconds > 0 ? std::min(timeout_seconds, 1e7) : 0.0;
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  ScriptProcess child;
  why = start_script(path, &child);
  if (!why.empty()) {
    failed.error = name + " could not be started: " + why;
    return failed;
  }
  const Captured captured = wait_for(&child, deadline, stop);
  failed.error = describe_failure(name, captured, timeout_seconds);
  if (!failed.error.empty()) return failed;
  DiscoveryResult r = parse_discovery_output(captured.out, default_slots);
  if (!r.error.empty()) r.error = name + ": " + r.error;
  for (std::string& w : r.warnings) w = name + ": " + w;
  return r;
}

}  // namespace chorus::launcher
