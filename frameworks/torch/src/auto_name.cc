#include "auto_name.h"

#include <map>
#include <mutex>

namespace chorus {
namespace torch_adapter {

std::string name_or_auto(const std::string& name, const char* op, const ProcessSet& process_set) {
  if (!name.empty()) return name;
  // Process-wide on purpose: the names must line up across ranks, which
  // count their unnamed calls the same way. Per set, because only a set's
  // members make its calls.
  static std::mutex mu;
  static std::map<std::pair<std::string, int32_t>, long long> counters;
  std::lock_guard<std::mutex> lock(mu);
  const std::string set = process_set.is_global() ? "" : ".set" + std::to_string(process_set.id());
  return std::string(op) + set + ".noname." + std::to_string(counters[{op, process_set.id()}]++);
}

}  // namespace torch_adapter
}  // namespace chorus
