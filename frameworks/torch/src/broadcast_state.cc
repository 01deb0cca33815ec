// Broadcasting parameters, optimizer state and objects from one root.
#include "chorus/torch/broadcast_state.h"

#include <torch/torch.h>

#include "auto_name.h"
#include "chorus/torch/ops.h"
#include "rank_agreement.h"

namespace chorus {

namespace {

using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;

// The root is not checked here: a root outside the job or the set on one
// rank would throw there alone while the others wait in the collectives.
// The core negotiates it (every rank fails, naming the roots and ranks).

// Waits for all, even after a failure, then throws the first error.
void wait_all(const std::vector<TensorHandle>& handles) {
  Status first_error;
  for (const TensorHandle& h : handles) {
    Status s = h.handle().wait_status();
    if (s.is_ok()) {
      h.wait();  // copies non-contiguous results back
    } else if (first_error.is_ok()) {
      first_error = s;
    }
  }
  throw_if_error(first_error);
}

// The optimizer's layout: what must agree before its state can travel.
std::vector<std::string> optimizer_layout(const torch::optim::Optimizer& optimizer) {
  std::vector<std::string> layout;
  for (size_t g = 0; g < optimizer.param_groups().size(); ++g) {
    for (const torch::Tensor& p : optimizer.param_groups()[g].params()) {
      layout.push_back("group " + std::to_string(g) + ": " + c10::str(p.sizes()) + c10::toString(p.scalar_type()));
    }
  }
  return layout;
}

// LibTorch's optimizer serialization carries each parameter's state (matched
// to parameters by position on load) but, in 1.13, load() does not restore
// the param groups' options; they travel beside it through their own
// serialize().
std::string save_optimizer(const torch::optim::Optimizer& optimizer) {
  torch::serialize::OutputArchive archive, state;
  optimizer.save(state);
  archive.write("state", state);
  for (size_t g = 0; g < optimizer.param_groups().size(); ++g) {
    torch::serialize::OutputArchive options;
    optimizer.param_groups()[g].options().serialize(options);
    archive.write("group_options/" + std::to_string(g), options);
  }
  std::ostringstream os;
  archive.save_to(os);
  return os.str();
}

// The one device of the optimizer's parameters, if they share one.
c10::optional<torch::Device> parameters_device(const torch::optim::Optimizer& optimizer) {
  c10::optional<torch::Device> device;
  for (const auto& group : optimizer.param_groups()) {
    for (const torch::Tensor& p : group.params()) {
      if (device && *device != p.device()) return c10::nullopt;
      device = p.device();
    }
  }
  return device;
}

// The state's tensors are saved with the root's devices; they load onto this
// rank's parameters' device (ranks sit on different GPUs). Parameters
// spread over devices keep the saved devices.
void load_optimizer(torch::optim::Optimizer& optimizer, const std::string& bytes) {
  std::istringstream is(bytes);
  torch::serialize::InputArchive archive, state;
  archive.load_from(is, parameters_device(optimizer));
  archive.read("state", state);
  optimizer.state().clear();  // state the root does not have must not survive
  optimizer.load(state);
  for (size_t g = 0; g < optimizer.param_groups().size(); ++g) {
    torch::serialize::InputArchive options;
    archive.read("group_options/" + std::to_string(g), options);
    optimizer.param_groups()[g].options().serialize(options);
  }
}

}  // namespace

void broadcast_parameters(const NamedTensors& named_tensors, int root_rank, const ProcessSet& process_set) {
  std::vector<std::string> names;
  for (const auto& item : named_tensors) names.push_back(item.first);
  torch_adapter::check_same_on_all_ranks(names, "broadcast_parameters", process_set);
  // Parameters are leaves that require grad: writing them is not part of any graph.
  torch::NoGradGuard no_grad;
  std::vector<TensorHandle> handles;
  for (const auto& [name, tensor] : named_tensors) {
    torch::Tensor t = tensor;
    handles.push_back(broadcast_async_(t, root_rank, "broadcast_parameters." + name, process_set));
  }
  wait_all(handles);
}

void broadcast_parameters(const torch::OrderedDict<std::string, torch::Tensor>& named_tensors, int root_rank,
                          const ProcessSet& process_set) {
  NamedTensors v;
  for (const auto& item : named_tensors) v.emplace_back(item.key(), item.value());
  broadcast_parameters(v, root_rank, process_set);
}

void broadcast_parameters(const torch::nn::Module& module, int root_rank, const ProcessSet& process_set) {
  NamedTensors v;
  for (const auto& item : module.named_parameters(true)) v.emplace_back("parameter." + item.key(), item.value());
  for (const auto& item : module.named_buffers(true)) v.emplace_back("buffer." + item.key(), item.value());
  broadcast_parameters(v, root_rank, process_set);
}

void broadcast_optimizer_state(torch::optim::Optimizer& optimizer, int root_rank, const ProcessSet& process_set) {
  torch_adapter::check_same_on_all_ranks(optimizer_layout(optimizer), "broadcast_optimizer_state", process_set);
  std::string bytes;
  if (rank() == root_rank) bytes = save_optimizer(optimizer);
  bytes = broadcast_bytes(bytes, root_rank, "broadcast_optimizer_state", process_set);
  if (rank() != root_rank) load_optimizer(optimizer, bytes);
}

void broadcast_optimizer_state(DistributedOptimizer& optimizer, int root_rank) {
  broadcast_optimizer_state(optimizer.optimizer(), root_rank, optimizer.options().process_set);
}

void broadcast_optimizer_state(DistributedOptimizer& optimizer, int root_rank, const ProcessSet& process_set) {
  broadcast_optimizer_state(optimizer.optimizer(), root_rank, process_set);
}

std::string broadcast_bytes(const std::string& bytes, int root_rank, const std::string& name,
                            const ProcessSet& process_set) {
  const std::string n = torch_adapter::name_or_auto(name, "broadcast_object", process_set);
  torch::Tensor length = torch::tensor({static_cast<int64_t>(bytes.size())}, torch::kInt64);
  broadcast_(length, root_rank, n + ".length", process_set);
  const int64_t count = length.item<int64_t>();
  if (count == 0) return std::string();
  torch::Tensor data = torch::empty({count}, torch::kUInt8);
  if (rank() == root_rank) std::memcpy(data.data_ptr(), bytes.data(), bytes.size());
  broadcast_(data, root_rank, n + ".bytes", process_set);
  return std::string(static_cast<const char*>(data.data_ptr()), static_cast<size_t>(count));
}

std::vector<std::string> allgather_bytes(const std::string& bytes, const std::string& name,
                                         const ProcessSet& process_set) {
  const std::string n = torch_adapter::name_or_auto(name, "allgather_object", process_set);
  torch::Tensor length = torch::tensor({static_cast<int64_t>(bytes.size())}, torch::kInt64);
  torch::Tensor data = torch::empty({static_cast<int64_t>(bytes.size())}, torch::kUInt8);
  if (!bytes.empty()) std::memcpy(data.data_ptr(), bytes.data(), bytes.size());
  // One group: the lengths say where each rank's bytes start.
  std::vector<torch::Tensor> gathered = grouped_allgather({length, data}, n, process_set);
  const int64_t* lengths = gathered[0].data_ptr<int64_t>();
  const char* all = static_cast<const char*>(gathered[1].data_ptr());
  std::vector<std::string> out;
  int64_t offset = 0;
  for (int64_t r = 0; r < gathered[0].size(0); ++r) {
    out.push_back(lengths[r] == 0 ? std::string() : std::string(all + offset, static_cast<size_t>(lengths[r])));
    offset += lengths[r];
  }
  return out;
}

}  // namespace chorus
