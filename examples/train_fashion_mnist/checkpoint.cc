#include "checkpoint.h"

#include <functional>
#include <stdexcept>

#include <chorus/chorus.h>
#include <chorus/torch/broadcast_state.h>

#include "error_message.h"

namespace chorus_examples {
namespace {

// Runs `step` on the root only and gives every rank its outcome: the root's
// error message ("" when it succeeded), under the broadcast name `name`.
std::string on_root_then_agree(int root_rank, const std::string& name, const std::function<void()>& step) {
  std::string error;
  if (chorus::rank() == root_rank) {
    try {
      step();
    } catch (const std::exception& e) {
      error = error_message(e);
    }
  }
  return chorus::broadcast_object<std::string>(error, root_rank, name);
}

}  // namespace

void require_checkpoint_writable(const std::string& path, int root_rank) {
  const std::string error =
      on_root_then_agree(root_rank, "checkpoint.writable", [&] { check_checkpoint_writable(path); });
  if (!error.empty()) throw std::runtime_error("--checkpoint: " + error);
}

int64_t resume_from_checkpoint(const std::string& path, torch::nn::Module& model,
                               torch::optim::Optimizer& optimizer, int root_rank) {
  int64_t epochs_done = 0;
  // Every rank learns whether the root succeeded before any state broadcast,
  // so a bad file is one clear error everywhere instead of a hang.
  const std::string error = on_root_then_agree(root_rank, "checkpoint.error", [&] {
    epochs_done = load_checkpoint(path, model, optimizer);
  });
  if (!error.empty()) throw std::runtime_error("--resume: " + error);
  chorus::broadcast_parameters(model, root_rank);
  chorus::broadcast_optimizer_state(optimizer, root_rank);
  return chorus::broadcast_object<int64_t>(epochs_done, root_rank, "checkpoint.epochs_done");
}

}  // namespace chorus_examples
