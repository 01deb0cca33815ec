#include "timeline/timeline.h"

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

Timeline::~Timeline() {
  if (!file_) return;
  flush();
  std::fputs("{}]\n", file_);  // closes the array (Chrome also reads it unclosed)
  std::fclose(file_);
}

Status Timeline::open(const std::string& path, int rank) {
  if (path.empty()) return Status::ok();
  const std::string file = rank == 0 ? path : path + ".rank" + std::to_string(rank);
  file_ = std::fopen(file.c_str(), "w");
  if (!file_) return Status::invalid_argument("cannot write the timeline to '" + file + "': " + std::strerror(errno));
  origin_ = Clock::now();
  std::fputs("[\n", file_);
  return Status::ok();
}

int Timeline::row_id(const std::string& row) {
  auto [it, inserted] = rows_.try_emplace(row, static_cast<int>(rows_.size()) + 1);
  if (inserted) {
    pending_ += "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":" + std::to_string(it->second) +
                ",\"args\":{\"name\":\"" + json_escape(row) + "\"}},\n";
  }
  return it->second;
}

void Timeline::record(const std::string& row, const std::string& label, Clock::time_point start,
                      Clock::time_point end, const std::string& args_json) {
  if (!file_) return;
  using std::chrono::duration;
  const double ts = duration<double, std::micro>(start - origin_).count();
  const double dur = duration<double, std::micro>(end - start).count();
  char times[96];
  std::snprintf(times, sizeof(times), ",\"ts\":%.3f,\"dur\":%.3f", ts, dur);
  std::lock_guard<std::mutex> lock(mu_);
  const int tid = row_id(row);
  pending_ += "{\"name\":\"" + json_escape(label) + "\",\"ph\":\"X\",\"pid\":0,\"tid\":" + std::to_string(tid) + times;
  if (!args_json.empty()) pending_ += ",\"args\":" + args_json;
  pending_ += "},\n";
  if (pending_.size() > kFlushBytes) {
    std::fwrite(pending_.data(), 1, pending_.size(), file_);
    pending_.clear();
  }
}

void Timeline::flush() {
  if (!file_) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (pending_.empty()) return;
  std::fwrite(pending_.data(), 1, pending_.size(), file_);
  pending_.clear();
  std::fflush(file_);
}

}  // namespace chorus::detail
