#include "unnamed_calls.h"

#include <map>
#include <mutex>

namespace chorus::adapter {

int64_t next_unnamed_call(int64_t process_set) {
  static std::mutex mu;
  static std::map<int64_t, int64_t> counters;
  std::lock_guard<std::mutex> lock(mu);
  return counters[process_set]++;
}

}  // namespace chorus::adapter
