#pragma once
// Leveled logging to stderr; every line names the rank ("[chorus 1 WARN] ...").
// A Logger belongs to one Runtime; components get a reference to it.

#include <atomic>
#include <sstream>
#include <string>

#include "chorus/options.h"

namespace chorus::detail {

class Logger {
 public:
  explicit Logger(LogLevel level = LogLevel::kWarning) : level_(level) {}
  void set_rank(int rank) { rank_.store(rank); }
  bool enabled(LogLevel level) const { return level >= level_; }
  void write(LogLevel level, const std::string& message) const;
  /// For the one case a rank cannot go on without leaving the others waiting
  /// inside a collective (no memory to take part in it): writes the message
  /// and aborts this process, which makes mpirun end every rank.
  [[noreturn]] void fatal(const std::string& message) const;

 private:
  LogLevel level_;
  std::atomic<int> rank_{-1};
};

// Builds one line and writes it when the statement ends.
class LogLine {
 public:
  LogLine(const Logger& logger, LogLevel level) : logger_(logger), level_(level) {}
  ~LogLine() { logger_.write(level_, out_.str()); }
  template <class T>
  LogLine& operator<<(const T& value) {
    out_ << value;
    return *this;
  }

 private:
  const Logger& logger_;
  LogLevel level_;
  std::ostringstream out_;
};

const char* log_level_name(LogLevel level);

}  // namespace chorus::detail

// Evaluates the message only when the level is enabled.
#define CHORUS_LOG(logger, level)                                  \
  if (!(logger).enabled(::chorus::LogLevel::level)) {              \
  } else                                                           \
    ::chorus::detail::LogLine((logger), ::chorus::LogLevel::level)
