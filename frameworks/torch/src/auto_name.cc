#include "auto_name.h"

#include <map>
#include <mutex>

namespace chorus {
namespace torch_adapter {

std::string name_or_auto(const std::string& name, const char* op) {
  if (!name.empty()) return name;
  // Process-wide on purpose: the names must line up across ranks, which
  // count their unnamed calls the same way.
  static std::mutex mu;
  static std::map<std::string, long long> counters;
  std::lock_guard<std::mutex> lock(mu);
  return std::string(op) + ".noname." + std::to_string(counters[op]++);
}

}  // namespace torch_adapter
}  // namespace chorus
