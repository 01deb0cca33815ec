#pragma once
// The timeline (CHORUS_TIMELINE=file): what every tensor went through on this
// rank, as a Chrome trace (open it in chrome://tracing or ui.perfetto.dev).
// One row per tensor shows how long it waited for negotiation (enqueue until
// every rank had submitted it and the coordinator's answer ran here); a
// "data plane" row shows each executed response split into pack,
// communicate and unpack. A CUDA tensor's row also shows its device work
// (device/device_timeline.h). Rank 0 writes FILE, rank r > 0 writes
// FILE.rank<r>. Events are buffered, recorded by the background thread and
// the device operations' threads (staged worker, NCCL completion thread),
// and written by the background thread when idle; a disabled timeline costs
// one branch per event. start()/stop() (chorus::start_timeline) open and
// close the file at run time from any thread: the file and the buffer are
// only touched under mu_, so every thread's events go to whichever file is
// open when they are recorded, or nowhere.

#include <atomic>
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
  /// off. Fails when the file cannot be written or a timeline is already
  /// being written (PreconditionError status naming its file).
  Status open(const std::string& path, int rank, bool mark_cycles = false);
  /// Writes what is buffered, closes the JSON array and the file. Returns
  /// false when no timeline was open (nothing happens then).
  bool close();
  bool enabled() const { return enabled_.load(std::memory_order_relaxed); }
  /// Whether the background thread marks each cycle that did work.
  bool marks_cycles() const { return mark_cycles_.load(std::memory_order_relaxed); }

  /// A complete event [start, end) on row `row`, labelled `label`, with an
  /// optional JSON object body for its args (e.g. {"bytes": 10}).
  void record(const std::string& row, const std::string& label, Clock::time_point start, Clock::time_point end,
              const std::string& args_json = "");
  /// An instant event (a vertical mark) on row `row` at `when`.
  void instant(const std::string& row, const std::string& label, Clock::time_point when);
  /// Writes what is buffered (the background thread calls it when idle).
  void flush();

 private:
  int row_id(const std::string& row);  // stable thread id per row; mu_ held
  // Microseconds since the file was opened; earlier times (an operation
  // enqueued before start()) are clamped to 0. mu_ held.
  double micros(Clock::time_point t) const;
  void close_locked();
  std::mutex mu_;
  std::atomic<bool> enabled_{false};  // file_ != nullptr, readable without mu_
  std::atomic<bool> mark_cycles_{false};
  std::FILE* file_ = nullptr;
  std::string file_name_;
  Clock::time_point origin_;
  std::string pending_;
  std::unordered_map<std::string, int> rows_;
};

}  // namespace chorus::detail
