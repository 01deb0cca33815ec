#pragma once
// The timeline (CHORUS_TIMELINE=file): what every tensor went through on this
// rank, as a Chrome trace (open it in chrome://tracing or ui.perfetto.dev).
// One row per tensor shows how long it waited for negotiation (enqueue until
// every rank had submitted it and the coordinator's answer ran here); a
// "data plane" row shows each executed response split into pack,
// communicate and unpack. Rank 0 writes FILE, rank r > 0 writes FILE.rank<r>.
// Events are buffered and written by the background thread; a disabled
// timeline costs one branch per event.

#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>
#include <unordered_map>

#include "chorus/status.h"

namespace chorus::detail {

class Timeline {
 public:
  using Clock = std::chrono::steady_clock;
  Timeline() = default;
  ~Timeline();
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  /// Starts writing to the file for `rank` derived from `path`; "" keeps it
  /// off. Fails when the file cannot be written.
  Status open(const std::string& path, int rank);
  bool enabled() const { return file_ != nullptr; }

  /// A complete event [start, end) on row `row`, labelled `label`, with an
  /// optional JSON object body for its args (e.g. {"bytes": 10}).
  void record(const std::string& row, const std::string& label, Clock::time_point start, Clock::time_point end,
              const std::string& args_json = "");
  /// Writes what is buffered (the background thread calls it when idle).
  void flush();

 private:
  int row_id(const std::string& row);  // stable thread id per row; mu_ held
  std::mutex mu_;
  std::FILE* file_ = nullptr;
  Clock::time_point origin_;
  std::string pending_;
  std::unordered_map<std::string, int> rows_;
};

}  // namespace chorus::detail
