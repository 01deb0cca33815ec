// The public Runtime: local validation of each call, then the queue.
#include "chorus/runtime.h"

#include "algorithms/reduce_kernels.h"
#include "chorus/error.h"
#include "runtime/runtime_impl.h"

namespace chorus {

namespace {

[[noreturn]] void invalid(const std::string& message) {
  throw InvalidArgumentError(Status::invalid_argument(message));
}

void check_name(const std::string& name, const char* what) {
  if (name.empty()) invalid(std::string(what) + ": the tensor name is empty; every rank must use the same name");
}

// An entry for one tensor: what every collective's request carries.
detail::TensorEntry tensor_entry(detail::CollectiveType type, const std::string& name,
                                 const std::shared_ptr<Tensor>& tensor, int rank, OpHooks hooks) {
  detail::TensorEntry e;
  e.request.rank = rank;
  e.request.type = type;
  e.request.name = name;
  e.request.dtype = tensor->dtype();
  e.request.shape = tensor->shape().dim_sizes();
  e.request.device = tensor->device();
  e.input = tensor;
  e.hooks = std::move(hooks);
  return e;
}


detail::TensorEntry allreduce_entry(const std::string& name, std::shared_ptr<Tensor> input,
                                    std::shared_ptr<Tensor> output, const AllreduceOptions& options,
                                    int rank) {
  check_name(name, "allreduce");
  const std::string what = "allreduce of tensor '" + name + "': ";
  if (!input) invalid(what + "input is null");
  if (!output) invalid(what + "output is null");
  if (input->dtype() != output->dtype()) {
    invalid(what + "input is " + dtype_name(input->dtype()) + " but output is " + dtype_name(output->dtype()));
  }
  if (input->shape().num_elements() != output->shape().num_elements()) {
    invalid(what + "input has shape " + input->shape().to_string() + " but output has shape " +
            output->shape().to_string());
  }
  if (input->device() != output->device()) invalid(what + "input and output are on different devices");
  if (!detail::reduction_supported(input->dtype(), options.op)) {
    invalid(what + reduce_op_name(options.op) + " is not defined for " + dtype_name(input->dtype()) +
            " (bool supports min and max)");
  }
  if (input->dtype() == DataType::kBool && (options.prescale_factor != 1.0 || options.postscale_factor != 1.0)) {
    invalid(what + "bool tensors cannot be scaled");
  }
  detail::TensorEntry e = tensor_entry(detail::CollectiveType::kAllreduce, name, input, rank, {});
  e.request.op = options.op;
  e.request.prescale = options.prescale_factor;
  e.request.postscale = options.postscale_factor;
  e.output = std::move(output);
  return e;
}

}  // namespace

Runtime::Runtime(RuntimeOptions options)
    : Runtime(detail::make_mpi_backend(options), options) {}

Runtime::Runtime(std::unique_ptr<detail::Backend> backend, RuntimeOptions options)
    : impl_(std::make_unique<detail::RuntimeImpl>(std::move(backend), options)) {}

Runtime::~Runtime() = default;

void Runtime::shutdown() { impl_->shutdown(); }
bool Runtime::is_running() const { return impl_->is_running(); }
int Runtime::rank() const { return impl_->topology().rank; }
int Runtime::size() const { return impl_->topology().size; }
int Runtime::local_rank() const { return impl_->topology().local_rank; }
int Runtime::local_size() const { return impl_->topology().local_size; }
int Runtime::cross_rank() const { return impl_->topology().cross_rank; }
int Runtime::cross_size() const { return impl_->topology().cross_size; }
RuntimeStats Runtime::stats() const { return impl_->stats(); }
const RuntimeOptions& Runtime::options() const { return impl_->options(); }

Handle Runtime::allreduce_async(const std::string& name, std::shared_ptr<Tensor> input,
                                std::shared_ptr<Tensor> output, const AllreduceOptions& options,
                                OpHooks hooks) {
  std::vector<detail::TensorEntry> entries;
  entries.push_back(allreduce_entry(name, std::move(input), std::move(output), options, rank()));
  entries.back().hooks = std::move(hooks);
  return impl_->enqueue(std::move(entries)).front();
}

std::vector<Handle> Runtime::grouped_allreduce_async(const std::vector<std::string>& names,
                                                     const std::vector<std::shared_ptr<Tensor>>& inputs,
                                                     const std::vector<std::shared_ptr<Tensor>>& outputs,
                                                     const AllreduceOptions& options) {
  if (names.empty()) invalid("grouped allreduce: no tensors given");
  if (inputs.size() != names.size() || (!outputs.empty() && outputs.size() != names.size())) {
    invalid("grouped allreduce '" + names.front() + "', ...: " + std::to_string(names.size()) +
            " names but " + std::to_string(inputs.size()) + " inputs and " +
            std::to_string(outputs.size()) + " outputs");
  }
  // Every rank derives the same group name from the same tensor names.
  const std::string group = "group(" + names.front() + ", " + std::to_string(names.size()) + " tensors)";
  auto completion = std::make_shared<detail::GroupCompletion>(names.size());
  std::vector<detail::TensorEntry> entries;
  for (size_t i = 0; i < names.size(); ++i) {
    entries.push_back(allreduce_entry(names[i], inputs[i], outputs.empty() ? inputs[i] : outputs[i], options, rank()));
    entries.back().request.group = group;
    entries.back().request.group_size = static_cast<int32_t>(names.size());
    entries.back().group = completion;
  }
  return impl_->enqueue(std::move(entries));
}

Handle Runtime::allgather_async(const std::string& name, std::shared_ptr<Tensor> input, OpHooks hooks) {
  check_name(name, "allgather");
  const std::string what = "allgather of tensor '" + name + "': ";
  if (!input) invalid(what + "input is null");
  if (input->shape().dims() < 1) invalid(what + "a scalar cannot be gathered along a first dimension; reshape it to [1]");
  const TensorShape shape = input->shape();  // by value: iterate a live object
  for (int64_t d : shape.dim_sizes()) {
    if (d < 0) invalid(what + "negative dimension in shape " + shape.to_string());
  }
  std::vector<detail::TensorEntry> entries;
  entries.push_back(tensor_entry(detail::CollectiveType::kAllgather, name, input, rank(), std::move(hooks)));
  return impl_->enqueue(std::move(entries)).front();
}

Handle Runtime::reducescatter_async(const std::string& name, std::shared_ptr<Tensor> input,
                                   const AllreduceOptions& options, OpHooks hooks) {
  check_name(name, "reducescatter");
  const std::string what = "reducescatter of tensor '" + name + "': ";
  if (!input) invalid(what + "input is null");
  if (input->shape().dims() < 1) invalid(what + "a scalar cannot be scattered along a first dimension; reshape it to [1]");
  if (!detail::reduction_supported(input->dtype(), options.op)) {
    invalid(what + reduce_op_name(options.op) + " is not defined for " + dtype_name(input->dtype()) +
            " (bool supports min and max)");
  }
  if (input->dtype() == DataType::kBool && (options.prescale_factor != 1.0 || options.postscale_factor != 1.0)) {
    invalid(what + "bool tensors cannot be scaled");
  }
  std::vector<detail::TensorEntry> entries;
  entries.push_back(tensor_entry(detail::CollectiveType::kReducescatter, name, input, rank(), std::move(hooks)));
  entries.back().request.op = options.op;
  entries.back().request.prescale = options.prescale_factor;
  entries.back().request.postscale = options.postscale_factor;
  return impl_->enqueue(std::move(entries)).front();
}

Handle Runtime::alltoall_async(const std::string& name, std::shared_ptr<Tensor> input, std::vector<int64_t> splits,
                               OpHooks hooks) {
  check_name(name, "alltoall");
  const std::string what = "alltoall of tensor '" + name + "': ";
  if (!input) invalid(what + "input is null");
  const TensorShape shape = input->shape();
  if (shape.dims() < 1) invalid(what + "a scalar cannot be split along a first dimension; reshape it to [1]");
  const int64_t rows = shape.dim_size(0);
  if (splits.empty()) {
    if (rows % size() != 0) {
      invalid(what + "the first dimension " + std::to_string(rows) + " does not divide into " + std::to_string(size()) +
              " equal splits; pass explicit splits");
    }
    splits.assign(static_cast<size_t>(size()), rows / size());
  }
  if (static_cast<int>(splits.size()) != size()) {
    invalid(what + std::to_string(splits.size()) + " splits given for " + std::to_string(size()) + " ranks");
  }
  int64_t total = 0;
  for (size_t k = 0; k < splits.size(); ++k) {
    if (splits[k] < 0) invalid(what + "split " + std::to_string(k) + " is negative (" + std::to_string(splits[k]) + ")");
    if (splits[k] > rows - total) total = rows + 1;  // past the end; also keeps the sum from overflowing
    else total += splits[k];
  }
  if (total > rows) {
    invalid(what + "the splits sum past the first dimension " + std::to_string(rows));
  }
  std::vector<detail::TensorEntry> entries;
  entries.push_back(tensor_entry(detail::CollectiveType::kAlltoall, name, input, rank(), std::move(hooks)));
  entries.back().request.splits = std::move(splits);
  return impl_->enqueue(std::move(entries)).front();
}

Handle Runtime::join_async() {
  detail::TensorEntry e;
  e.request.rank = rank();
  e.request.type = detail::CollectiveType::kJoin;
  e.request.name = detail::join_tensor_name();
  e.request.shape = {0};
  std::vector<detail::TensorEntry> entries;
  entries.push_back(std::move(e));
  return impl_->enqueue(std::move(entries)).front();
}

Handle Runtime::barrier_async() {
  detail::TensorEntry e;
  e.request.rank = rank();
  e.request.type = detail::CollectiveType::kBarrier;
  e.request.name = "chorus.barrier." + std::to_string(impl_->next_barrier());
  e.request.shape = {0};
  std::vector<detail::TensorEntry> entries;
  entries.push_back(std::move(e));
  return impl_->enqueue(std::move(entries)).front();
}

Handle Runtime::broadcast_async(const std::string& name, std::shared_ptr<Tensor> tensor, int root_rank,
                                OpHooks hooks) {
  std::shared_ptr<Tensor> output = tensor;  // in place
  return broadcast_async(name, std::move(tensor), std::move(output), root_rank, std::move(hooks));
}

Handle Runtime::broadcast_async(const std::string& name, std::shared_ptr<Tensor> input, std::shared_ptr<Tensor> output,
                                int root_rank, OpHooks hooks) {
  check_name(name, "broadcast");
  const std::string what = "broadcast of tensor '" + name + "': ";
  if (!input) invalid(what + "tensor is null");
  if (!output) invalid(what + "output is null");
  if (input->dtype() != output->dtype() || input->shape().num_elements() != output->shape().num_elements()) {
    invalid(what + "input is " + dtype_name(input->dtype()) + " " + input->shape().to_string() + " but output is " +
            dtype_name(output->dtype()) + " " + output->shape().to_string());
  }
  if (root_rank < 0 || root_rank >= size()) {
    invalid(what + "root rank " + std::to_string(root_rank) + " is outside 0.." + std::to_string(size() - 1));
  }
  std::vector<detail::TensorEntry> entries;
  entries.push_back(tensor_entry(detail::CollectiveType::kBroadcast, name, input, rank(), std::move(hooks)));
  entries.back().request.root_rank = root_rank;
  entries.back().output = std::move(output);
  return impl_->enqueue(std::move(entries)).front();
}

}  // namespace chorus
