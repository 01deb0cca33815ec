#include "timeline/timeline.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace chorus::detail {

namespace {

std::string json_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

constexpr size_t kFlushBytes = 1 << 20;

}  // namespace

Timeline::~Timeline() { close(); }

Status Timeline::open(const std::string& path, int rank, bool mark_cycles) {
  if (path.empty()) return Status::ok();
  const std::string file = rank == 0 ? path : path + ".rank" + std::to_string(rank);
  std::lock_guard<std::mutex> lock(mu_);
  if (file_) {
    return Status::precondition_error("the timeline is already being written to '" + file_name_ +
                                      "'; stop it (stop_timeline) before starting another");
  }
  file_ = std::fopen(file.c_str(), "w");
  if (!file_) return Status::invalid_argument("cannot write the timeline to '" + file + "': " + std::strerror(errno));
  file_name_ = file;
  origin_ = Clock::now();
  rows_.clear();  // a new file names its rows again
  std::fputs("[\n", file_);
  mark_cycles_.store(mark_cycles);
  enabled_.store(true);
  return Status::ok();
}

bool Timeline::close() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!file_) return false;
  close_locked();
  return true;
}

void Timeline::close_locked() {
  enabled_.store(false);
  mark_cycles_.store(false);
  std::fwrite(pending_.data(), 1, pending_.size(), file_);
  pending_.clear();
  std::fputs("{}]\n", file_);  // closes the array (Chrome also reads it unclosed)
  std::fclose(file_);
  file_ = nullptr;
}

int Timeline::row_id(const std::string& row) {
  auto [it, inserted] = rows_.try_emplace(row, static_cast<int>(rows_.size()) + 1);
  if (inserted) {
    pending_ += "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":" + std::to_string(it->second) +
                ",\"args\":{\"name\":\"" + json_escape(row) + "\"}},\n";
  }
  return it->second;
}

double Timeline::micros(Clock::time_point t) const {
  return t > origin_ ? std::chrono::duration<double, std::micro>(t - origin_).count() : 0.0;
}

void Timeline::record(const std::string& row, const std::string& label, Clock::time_point start,
                      Clock::time_point end, const std::string& args_json) {
  if (!enabled()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!file_) return;  // stopped meanwhile
  const double ts = micros(start);
  char times[96];
  std::snprintf(times, sizeof(times), ",\"ts\":%.3f,\"dur\":%.3f", ts, std::max(0.0, micros(end) - ts));
  const int tid = row_id(row);
  pending_ += "{\"name\":\"" + json_escape(label) + "\",\"ph\":\"X\",\"pid\":0,\"tid\":" + std::to_string(tid) + times;
  if (!args_json.empty()) pending_ += ",\"args\":" + args_json;
  pending_ += "},\n";
  if (pending_.size() > kFlushBytes) {
    std::fwrite(pending_.data(), 1, pending_.size(), file_);
    pending_.clear();
  }
}

void Timeline::instant(const std::string& row, const std::string& label, Clock::time_point when) {
  if (!enabled()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!file_) return;
  char ts[48];
  std::snprintf(ts, sizeof(ts), ",\"ts\":%.3f", micros(when));
  const int tid = row_id(row);
  pending_ += "{\"name\":\"" + json_escape(label) + "\",\"ph\":\"i\",\"s\":\"t\",\"pid\":0,\"tid\":" +
              std::to_string(tid) + ts + "},\n";
}

void Timeline::flush() {
  if (!enabled()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!file_ || pending_.empty()) return;
  std::fwrite(pending_.data(), 1, pending_.size(), file_);
  pending_.clear();
  std::fflush(file_);
}

}  // namespace chorus::detail
