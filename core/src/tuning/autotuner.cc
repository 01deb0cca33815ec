#include "tuning/autotuner.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>

namespace chorus::detail {

namespace {

std::string settings_columns(const TuningPoint& p) {
  std::ostringstream out;
  out << p.fusion_threshold_bytes << ',' << p.fusion_wait_us << ',' << p.cycle_time_ms;
  return out.str();
}

}  // namespace

Autotuner::Autotuner(const RuntimeOptions& options, ParameterSearch search)
    : search_(std::move(search)),
      sample_length_(static_cast<int64_t>(options.autotune_sample_ms * 1e6)) {
  if (options.autotune_log_path.empty()) return;
  log_.open(options.autotune_log_path, std::ios::out | std::ios::trunc);
  if (!log_) {
    warning_ = "CHORUS_AUTOTUNE_LOG: cannot write '" + options.autotune_log_path + "' (" + std::strerror(errno) +
               "); autotune goes on without a log";
    return;
  }
  log_ << csv_header() << std::flush;
}

std::string Autotuner::csv_header() {
  return "trial,fusion_threshold_bytes,fusion_wait_us,cycle_time_ms,bytes_per_second,samples\n";
}

std::string Autotuner::csv_row(const TuningTrial& t) {
  std::ostringstream out;
  out.precision(0);  // whole bytes per second
  out << t.index << ',' << settings_columns(t.point) << ',' << std::fixed << t.score << ',';
  for (size_t i = 0; i < t.samples.size(); ++i) out << (i ? ";" : "") << t.samples[i];
  out << '\n';
  return out.str();
}

std::string Autotuner::csv_final(const TuningPoint& p, double score) {
  std::ostringstream out;
  out.precision(0);
  out << "final," << settings_columns(p) << ',' << std::fixed << score << ",\n";
  return out.str();
}

bool Autotuner::sample_due(Clock::time_point now) const {
  return !search_.done() && (!started_ || now - sample_start_ >= sample_length_);
}

std::optional<TunedSettings> Autotuner::observe(int64_t bytes, Clock::time_point now, bool between_bursts) {
  if (!sample_due(now)) return std::nullopt;
  if (!started_ || bytes < sample_bytes_) {  // the first call starts the first sample
    const bool first = !started_;
    started_ = true;
    sample_start_ = now;
    sample_bytes_ = bytes;
    // Without warmup the first trial starts at once: every rank must hear of it.
    if (first && search_.trial_index() >= 0) return settings();
    return std::nullopt;
  }
  if (bytes == sample_bytes_) return std::nullopt;  // nothing moved yet: the sample goes on
  if (!between_bursts && now - sample_start_ < 4 * sample_length_) return std::nullopt;
  const double seconds = std::chrono::duration<double>(now - sample_start_).count();
  const double score = static_cast<double>(bytes - sample_bytes_) / std::max(seconds, 1e-9);
  sample_start_ = now;
  sample_bytes_ = bytes;
  if (!search_.add_sample(score)) return std::nullopt;
  log_new_trials();
  return settings();
}

TunedSettings Autotuner::settings() const {
  TunedSettings t;
  t.trial = search_.done() ? -1 : search_.trial_index();
  t.fusion_threshold_bytes = search_.current().fusion_threshold_bytes;
  t.fusion_wait_us = search_.current().fusion_wait_us;
  t.cycle_time_ms = search_.current().cycle_time_ms;
  return t;
}

void Autotuner::log_new_trials() {
  if (!log_.is_open()) return;
  for (; logged_ < search_.trials().size(); ++logged_) log_ << csv_row(search_.trials()[logged_]);
  if (search_.done()) log_ << csv_final(search_.best(), search_.best_score());
  log_.flush();
}

}  // namespace chorus::detail
