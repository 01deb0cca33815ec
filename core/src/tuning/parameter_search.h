#pragma once
// The autotuner's search (CHORUS_AUTOTUNE, Horovod's HOROVOD_AUTOTUNE): a
// pure function of the scores it is given, so it is tested without timing.
//
// Coordinate descent over a grid, one pass: for each knob in turn (fusion
// threshold, then fusion wait, then cycle time) every value of its grid
// (and the starting value) is tried with the other knobs at the best values
// found so far; each trial takes `samples_per_trial` samples and scores the
// median (robust to one noisy sample); the knob keeps the value with the
// highest score (a tie keeps the value it had, else the first). The first
// `warmup_samples` samples, at the starting point, are discarded (caches,
// first-step allocations). After the last knob the best point stays.
// Horovod uses Bayesian optimisation over the same knobs; a grid walk is
// simpler to reason about and needs fewer samples for three knobs.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace chorus::detail {

struct TuningPoint {
  int64_t fusion_threshold_bytes = 0;
  double fusion_wait_us = 0;
  double cycle_time_ms = 0;
  bool operator==(const TuningPoint& o) const {
    return fusion_threshold_bytes == o.fusion_threshold_bytes && fusion_wait_us == o.fusion_wait_us &&
           cycle_time_ms == o.cycle_time_ms;
  }
};

struct TuningGrid {
  std::vector<int64_t> fusion_threshold_bytes;
  std::vector<double> fusion_wait_us;
  std::vector<double> cycle_time_ms;
  /// The grid the runtime searches (docs/tuning.md, "Autotune").
  static TuningGrid standard();
};

struct TuningTrial {
  int index = 0;  ///< 0, 1, ... in the order tried
  TuningPoint point;
  std::vector<double> samples;  ///< bytes per second
  double score = 0;             ///< their median
};

class ParameterSearch {
 public:
  ParameterSearch(TuningPoint start, TuningGrid grid, int samples_per_trial, int warmup_samples);

  /// The point to run now: warmup's, the current trial's, or the best once done.
  const TuningPoint& current() const { return current_; }
  bool done() const { return done_; }
  /// Index of the trial being measured (-1 during warmup).
  int trial_index() const { return warming_up() ? -1 : static_cast<int>(trials_.size()); }
  /// One sample (bytes per second) measured at current(). Returns true when
  /// current() changed (the next trial, or the final choice).
  bool add_sample(double bytes_per_second);
  /// The trials finished so far, in order.
  const std::vector<TuningTrial>& trials() const { return trials_; }
  const TuningPoint& best() const { return best_; }
  double best_score() const { return best_score_; }

 private:
  bool warming_up() const { return warmup_left_ > 0; }
  size_t candidates() const;
  TuningPoint candidate(size_t i) const;
  void finish_trial();
  void finish_knob();

  const TuningGrid grid_;
  const int samples_per_trial_;
  int warmup_left_;
  TuningPoint best_, current_;
  double best_score_ = 0;
  int knob_ = 0;             // 0 threshold, 1 wait, 2 cycle time
  size_t candidate_ = 0;     // within the knob's values
  std::vector<TuningTrial> trials_;
  std::vector<double> samples_;  // of the trial under way
  std::vector<size_t> knob_trials_;  // trials_ indices of this knob's candidates
  bool done_ = false;
};

/// Median of `v` (the mean of the middle two for an even count; 0 if empty).
double median(std::vector<double> v);

}  // namespace chorus::detail
