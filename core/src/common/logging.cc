#include "common/logging.h"

#include <algorithm>
#include <cstdlib>
#include <cctype>
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

bool parse_log_level(const std::string& text, LogLevel* out) {
  std::string t = text;
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
  if (t == "trace") *out = LogLevel::kTrace;
  else if (t == "debug") *out = LogLevel::kDebug;
  else if (t == "info") *out = LogLevel::kInfo;
  else if (t == "warning" || t == "warn") *out = LogLevel::kWarning;
  else if (t == "error") *out = LogLevel::kError;
  else if (t == "fatal") *out = LogLevel::kFatal;
  else return false;
  return true;
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
