#pragma once
// Rank 0's autotuner (CHORUS_AUTOTUNE): turns the bytes the job allreduced
// and the time into samples for the ParameterSearch, writes each finished
// trial to CHORUS_AUTOTUNE_LOG, and says when the settings change. The
// coordinator puts a change into the next response list; every rank (rank
// 0 too) applies it when it runs that list, so no rank's local state ever
// decides what another computes.

#include <chrono>
#include <fstream>
#include <optional>
#include <string>

#include "chorus/options.h"
#include "negotiation/messages.h"
#include "tuning/parameter_search.h"

namespace chorus::detail {

class Autotuner {
 public:
  using Clock = std::chrono::steady_clock;
  /// `search` starts at the options' values; the log (if named) is opened
  /// here: warning() says why when it could not be.
  Autotuner(const RuntimeOptions& options, ParameterSearch search);

  /// Cheap: whether observe() might end a sample now.
  bool sample_due(Clock::time_point now) const;
  /// `bytes`: allreduce bytes this rank ran so far; `between_bursts`: no
  /// tensor is on its way in the coordinator. A sample ends at the first
  /// call after its length between bursts (so it holds whole steps, not a
  /// step cut in two: bytes come in bursts), or at 4x its length anyway.
  /// Returns the settings every rank must apply from the next list on,
  /// when they change.
  std::optional<TunedSettings> observe(int64_t bytes, Clock::time_point now, bool between_bursts);
  /// The settings the coordinator plans with now.
  const TuningPoint& current() const { return search_.current(); }
  bool done() const { return search_.done(); }
  const std::string& warning() const { return warning_; }

  /// The CSV header and one trial's row (the log's format, docs/tuning.md).
  static std::string csv_header();
  static std::string csv_row(const TuningTrial& t);
  static std::string csv_final(const TuningPoint& p, double score);

 private:
  void log_new_trials();
  TunedSettings settings() const;  // current(), as the lists carry it

  ParameterSearch search_;
  const std::chrono::nanoseconds sample_length_;
  bool started_ = false;
  Clock::time_point sample_start_;
  int64_t sample_bytes_ = 0;
  size_t logged_ = 0;
  std::ofstream log_;
  std::string warning_;
};

}  // namespace chorus::detail
