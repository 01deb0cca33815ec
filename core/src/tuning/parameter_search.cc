#include "tuning/parameter_search.h"

#include <algorithm>

namespace chorus::detail {

namespace {

constexpr int kKnobs = 3;

double knob_value(const TuningPoint& p, int knob) {
  if (knob == 0) return static_cast<double>(p.fusion_threshold_bytes);
  return knob == 1 ? p.fusion_wait_us : p.cycle_time_ms;
}

void set_knob(TuningPoint* p, int knob, double v) {
  if (knob == 0) p->fusion_threshold_bytes = static_cast<int64_t>(v);
  if (knob == 1) p->fusion_wait_us = v;
  if (knob == 2) p->cycle_time_ms = v;
}

// The knob's grid values and the value it has now, ascending, once each.
std::vector<double> knob_candidates(const TuningGrid& g, int knob, double now) {
  std::vector<double> v;
  if (knob == 0) {
    for (int64_t t : g.fusion_threshold_bytes) v.push_back(static_cast<double>(t));
  } else {
    v = knob == 1 ? g.fusion_wait_us : g.cycle_time_ms;
  }
  v.push_back(now);
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

}  // namespace

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 == 1 ? v[m] : (v[m - 1] + v[m]) / 2;
}

TuningGrid TuningGrid::standard() {
  constexpr int64_t kMiB = int64_t{1} << 20;
  TuningGrid g;
  g.fusion_threshold_bytes = {1 * kMiB, 4 * kMiB, 16 * kMiB, 64 * kMiB, 128 * kMiB};
  g.fusion_wait_us = {0, 50, 200, 1000, 3000};
  g.cycle_time_ms = {0.5, 1, 2, 5};
  return g;
}

ParameterSearch::ParameterSearch(TuningPoint start, TuningGrid grid, int samples_per_trial, int warmup_samples)
    : grid_(std::move(grid)), samples_per_trial_(std::max(1, samples_per_trial)),
      warmup_left_(std::max(0, warmup_samples)), best_(start), current_(start) {
  if (!warming_up()) current_ = candidate(0);
}

size_t ParameterSearch::candidates() const { return knob_candidates(grid_, knob_, knob_value(best_, knob_)).size(); }

TuningPoint ParameterSearch::candidate(size_t i) const {
  TuningPoint p = best_;
  set_knob(&p, knob_, knob_candidates(grid_, knob_, knob_value(best_, knob_))[i]);
  return p;
}

bool ParameterSearch::add_sample(double bytes_per_second) {
  if (done_) return false;
  if (warming_up()) {
    if (--warmup_left_ > 0) return false;
    current_ = candidate(0);
    return true;
  }
  samples_.push_back(bytes_per_second);
  if (static_cast<int>(samples_.size()) < samples_per_trial_) return false;
  finish_trial();
  return true;
}

void ParameterSearch::finish_trial() {
  TuningTrial t;
  t.index = static_cast<int>(trials_.size());
  t.point = current_;
  t.samples.swap(samples_);
  t.score = median(t.samples);
  knob_trials_.push_back(trials_.size());
  trials_.push_back(std::move(t));
  if (++candidate_ < candidates()) {
    current_ = candidate(candidate_);
    return;
  }
  finish_knob();
}

// The knob takes its best trial's value (a tie keeps the value it had).
void ParameterSearch::finish_knob() {
  const double had = knob_value(best_, knob_);
  const TuningTrial* chosen = nullptr;
  for (size_t i : knob_trials_) {
    const TuningTrial& t = trials_[i];
    const bool better = chosen == nullptr || t.score > chosen->score ||
                        (t.score == chosen->score && knob_value(t.point, knob_) == had);
    if (better) chosen = &t;
  }
  best_ = chosen->point;
  best_score_ = chosen->score;
  knob_trials_.clear();
  candidate_ = 0;
  if (++knob_ < kKnobs) {
    current_ = candidate(0);
  } else {
    current_ = best_;
    done_ = true;
  }
}

}  // namespace chorus::detail
