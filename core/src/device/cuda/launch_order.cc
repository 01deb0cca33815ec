#include "device/cuda/launch_order.h"

namespace chorus::detail::gpu {

std::string set_text(int32_t set_id) {
  return set_id == 0 ? "the global process set" : "process set " + std::to_string(set_id);
}

Status CommunicatorClaims::claim(int device, int32_t set_id, const std::string& tensor) {
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, added] = owners_.emplace(device, set_id);
  if (added || it->second == set_id) return Status::ok();
  return Status::precondition_error(
      "GPU collective on tensor '" + tensor + "' in " + set_text(set_id) + ": GPU " + std::to_string(device) +
      " already runs the NCCL collectives of " + set_text(it->second) +
      ", and one GPU serves one communicator (launches on two could run in different orders on two ranks and "
      "deadlock): run the GPU collectives of a rank in one process set, or set CHORUS_GPU_OPERATIONS=staged");
}

int32_t CommunicatorClaims::owner(int device) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = owners_.find(device);
  return it == owners_.end() ? -1 : it->second;
}

}  // namespace chorus::detail::gpu
