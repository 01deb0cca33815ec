#include "common/logging.h"

#include <cstdlib>
#include <cstdio>

namespace chorus::detail {

namespace {
const char* short_name(LogLevel level) {
  switch (level) {
    case LogLevel::kTrace: return "TRACE";
    case LogLevel::kDebug: return "DEBUG";
    case LogLevel::kInfo: return "INFO";
    case LogLevel::kWarning: return "WARN";
    case LogLevel::kError: return "ERROR";
    case LogLevel::kFatal: return "FATAL";
  }
  return "?";
}
}  // namespace

void Logger::write(LogLevel level, const std::string& message) const {
  const int rank = rank_.load();
  // One fprintf per line so lines of different threads do not interleave.
  if (rank >= 0) {
    std::fprintf(stderr, "[chorus %d %s] %s\n", rank, short_name(level), message.c_str());
  } else {
    std::fprintf(stderr, "[chorus %s] %s\n", short_name(level), message.c_str());
  }
}

void Logger::fatal(const std::string& message) const {
  write(LogLevel::kFatal, message + "; aborting this rank so the job ends instead of hanging");
  std::fflush(stderr);
  std::abort();
}

const char* log_level_name(LogLevel level) {
  switch (level) {
    case LogLevel::kTrace: return "trace";
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarning: return "warning";
    case LogLevel::kError: return "error";
    case LogLevel::kFatal: return "fatal";
  }
  return "?";
}

}  // namespace chorus::detail
