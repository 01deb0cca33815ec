// The checked entries of the collectives (collective_entries.h).
#include "api/collective_entries.h"

#include "chorus/error.h"
#include "kernels/reduce_kernels.h"
#include "negotiation/request_fields.h"

namespace chorus::detail {

[[noreturn]] void invalid(const std::string& message) {
  throw InvalidArgumentError(Status::invalid_argument(message));
}

void check_name(const std::string& name, const char* what) {
  if (name.empty()) invalid(std::string(what) + ": the tensor name is empty; every rank must use the same name");
}

TensorEntry tensor_entry(CollectiveType type, const std::string& name, const std::shared_ptr<Tensor>& tensor, int rank,
                         OpHooks hooks, const TensorShape& shape) {
  if (tensor->device() < kCpuDevice) {
    invalid(std::string(collective_name(type)) + " of tensor '" + name + "': device " +
            std::to_string(tensor->device()) + " is neither kCpuDevice (-1) nor a CUDA device index");
  }
  // A CUDA tensor is checked against the build, and its ready point
  // recorded, when its engine queues it (Engine::prepare_device).
  TensorEntry e;
  e.request.rank = rank;
  e.request.type = type;
  e.request.name = name;
  e.request.dtype = tensor->dtype();
  e.request.shape = shape.dim_sizes();
  e.request.device = tensor->device();
  e.request.device_kind = device_kind_of(tensor->device());
  // What rank 0 would refuse to decode (a negative dimension, a byte count
  // past 64 bits) is refused here, negotiated; sent, it would stop the job.
  for (auto check : {request_field::check_dtype, request_field::check_shape}) {
    const Status s = check(e.request);  // OK allocates nothing: this runs per tensor
    if (!s.is_ok()) invalid(std::string(collective_name(type)) + " of tensor '" + name + "': " + s.message());
  }
  e.input = tensor;
  e.hooks = std::move(hooks);
  return e;
}

TensorEntry tensor_entry(CollectiveType type, const std::string& name, const std::shared_ptr<Tensor>& tensor, int rank,
                         OpHooks hooks) {
  return tensor_entry(type, name, tensor, rank, std::move(hooks), tensor->shape());
}

namespace {

// The checks allgather and reducescatter share: a tensor with a first dimension.
void check_rows_input(const std::string& what, const std::shared_ptr<Tensor>& input, const char* verb) {
  if (!input) invalid(what + "input is null");
  if (input->shape().dims() < 1) {
    invalid(what + "a scalar cannot be " + verb + " along a first dimension; reshape it to [1]");
  }
}

void check_reduction(const std::string& what, DataType dtype, const AllreduceOptions& options) {
  if (!is_valid_reduce_op(static_cast<int>(options.op))) {  // a cast integer from C++ code
    invalid(what + "unknown reduce op " + std::to_string(static_cast<int>(options.op)));
  }
  if (!reduction_supported(dtype, options.op)) {
    invalid(what + reduce_op_name(options.op) + " is not defined for " + dtype_name(dtype) +
            (options.op == ReduceOp::kAdasum ? " (adasum needs float16, bfloat16, float32 or float64)"
                                             : " (bool supports min and max)"));
  }
  if (dtype == DataType::kBool && (options.prescale_factor != 1.0 || options.postscale_factor != 1.0)) {
    invalid(what + "bool tensors cannot be scaled");
  }
}

}  // namespace

TensorEntry allreduce_entry(const std::string& name, std::shared_ptr<Tensor> input, std::shared_ptr<Tensor> output,
                            const AllreduceOptions& options, int rank) {
  check_name(name, "allreduce");
  // Called once per gradient: the error text is built only on an error.
  auto fail = [&name](const std::string& why) { invalid("allreduce of tensor '" + name + "': " + why); };
  if (!input) fail("input is null");
  if (!output) fail("output is null");
  if (input->dtype() != output->dtype()) {
    fail(std::string("input is ") + dtype_name(input->dtype()) + " but output is " + dtype_name(output->dtype()));
  }
  const TensorShape shape = input->shape();
  if (shape.num_elements() != output->shape().num_elements()) {
    fail("input has shape " + shape.to_string() + " but output has shape " + output->shape().to_string());
  }
  if (input->device() != output->device()) fail("input and output are on different devices");
  if (!reduction_supported(input->dtype(), options.op) ||
      (input->dtype() == DataType::kBool && (options.prescale_factor != 1.0 || options.postscale_factor != 1.0))) {
    check_reduction("allreduce of tensor '" + name + "': ", input->dtype(), options);
  }
  TensorEntry e = tensor_entry(CollectiveType::kAllreduce, name, input, rank, {}, shape);
  e.request.op = options.op;
  e.request.prescale = options.prescale_factor;
  e.request.postscale = options.postscale_factor;
  e.output = std::move(output);
  return e;
}


TensorEntry allgather_entry(const std::string& name, const std::shared_ptr<Tensor>& input, int rank, OpHooks hooks) {
  check_name(name, "allgather");
  const std::string what = "allgather of tensor '" + name + "': ";
  check_rows_input(what, input, "gathered");
  const TensorShape shape = input->shape();  // by value: iterate a live object
  for (int64_t d : shape.dim_sizes()) {
    if (d < 0) invalid(what + "negative dimension in shape " + shape.to_string());
  }
  return tensor_entry(CollectiveType::kAllgather, name, input, rank, std::move(hooks), shape);
}

TensorEntry reducescatter_entry(const std::string& name, const std::shared_ptr<Tensor>& input,
                                const AllreduceOptions& options, int rank, OpHooks hooks) {
  check_name(name, "reducescatter");
  const std::string what = "reducescatter of tensor '" + name + "': ";
  check_rows_input(what, input, "scattered");
  if (options.op == ReduceOp::kAdasum) {
    invalid(what + "adasum is defined for allreduce only (its pairwise combination needs whole tensors)");
  }
  check_reduction(what, input->dtype(), options);
  TensorEntry entry = tensor_entry(CollectiveType::kReducescatter, name, input, rank, std::move(hooks));
  entry.request.op = options.op;
  entry.request.prescale = options.prescale_factor;
  entry.request.postscale = options.postscale_factor;
  return entry;
}

TensorEntry alltoall_entry(const std::string& name, const std::shared_ptr<Tensor>& input, std::vector<int64_t> splits,
                           const Topology& topo) {
  const std::string what = "alltoall of tensor '" + name + "': ";
  check_rows_input(what, input, "split");
  const int64_t rows = input->shape().dim_size(0);
  const int size = topo.size;
  if (splits.empty()) {
    if (rows % size != 0) {
      invalid(what + "the first dimension " + std::to_string(rows) + " does not divide into " + std::to_string(size) +
              " equal splits; pass explicit splits");
    }
    splits.assign(static_cast<size_t>(size), rows / size);
  }
  if (static_cast<int>(splits.size()) != size) {
    const std::string ranks = topo.scope.id == 0 ? " ranks" : " ranks of " + topo.scope.describe();
    invalid(what + std::to_string(splits.size()) + " splits given for " + std::to_string(size) + ranks);
  }
  int64_t total = 0;
  for (size_t k = 0; k < splits.size(); ++k) {
    if (splits[k] < 0) invalid(what + "split " + std::to_string(k) + " is negative (" + std::to_string(splits[k]) + ")");
    if (splits[k] > rows - total) total = rows + 1;  // past the end; also keeps the sum from overflowing
    else total += splits[k];
  }
  if (total > rows) invalid(what + "the splits sum past the first dimension " + std::to_string(rows));
  TensorEntry entry = tensor_entry(CollectiveType::kAlltoall, name, input, topo.rank, {});
  entry.request.splits = std::move(splits);
  return entry;
}

TensorEntry broadcast_entry(const std::string& name, std::shared_ptr<Tensor> input, std::shared_ptr<Tensor> output,
                            int set_root, int named_root, int rank) {
  const std::string what = "broadcast of tensor '" + name + "': ";
  if (!input) invalid(what + "tensor is null");
  if (!output) invalid(what + "output is null");
  if (input->dtype() != output->dtype() || input->shape().num_elements() != output->shape().num_elements()) {
    invalid(what + "input is " + dtype_name(input->dtype()) + " " + input->shape().to_string() + " but output is " +
            dtype_name(output->dtype()) + " " + output->shape().to_string());
  }
  if (input->device() != output->device()) invalid(what + "input and output are on different devices");
  TensorEntry entry = tensor_entry(CollectiveType::kBroadcast, name, input, rank, {});
  entry.request.root_rank = set_root;
  entry.request.named_root = named_root;
  entry.output = std::move(output);
  return entry;
}

CollectiveType collective_type(Collective kind) {
  switch (kind) {
    case Collective::kAllreduce: return CollectiveType::kAllreduce;
    case Collective::kBroadcast: return CollectiveType::kBroadcast;
    case Collective::kAllgather: return CollectiveType::kAllgather;
    case Collective::kReducescatter: return CollectiveType::kReducescatter;
    case Collective::kAlltoall: return CollectiveType::kAlltoall;
  }
  invalid("unknown collective " + std::to_string(static_cast<int>(kind)));
}

TensorEntry refused_entry(CollectiveType type, const std::string& name, int rank, OpHooks hooks, const std::string& why) {
  TensorEntry e;
  e.request.rank = rank;
  e.request.type = type;
  e.request.name = name;
  e.hooks = std::move(hooks);
  refuse(e, why);
  return e;
}

std::vector<TensorEntry> refused_group(CollectiveType type, const std::vector<std::string>& names, int rank,
                                       const std::vector<OpHooks>& hooks, const char* kind, const std::string& why) {
  std::vector<TensorEntry> entries;
  for (size_t i = 0; i < names.size(); ++i) {
    entries.push_back(refused_entry(type, names[i], rank, i < hooks.size() ? hooks[i] : OpHooks{}, why));
  }
  make_group(entries, kind);  // all on the CPU: it cannot throw
  return entries;
}

void make_group(std::vector<TensorEntry>& entries, const char* kind) {
  const std::string first = entries.front().name();
  for (const TensorEntry& e : entries) {
    if (e.request.device_kind == entries.front().request.device_kind) continue;
    // The group completes on one thread: the CPU data plane's or the device operations'.
    invalid(std::string("grouped ") + kind + " '" + first + "', ...: tensor '" + e.name() + "' is on " +
            device_kind_name(e.request.device_kind) + " but '" + first + "' on " +
            device_kind_name(entries.front().request.device_kind) + "; a group is on one kind of device");
  }
  // Allreduce groups keep their historical name; the others carry their kind.
  const std::string prefix = std::string(kind) == "allreduce" ? "group(" : std::string(kind) + " group(";
  const std::string group = prefix + first + ", " + std::to_string(entries.size()) + " tensors)";
  auto completion = std::make_shared<GroupCompletion>(entries.size());
  for (TensorEntry& e : entries) {
    e.request.group = group;
    e.request.group_size = static_cast<int32_t>(entries.size());
    e.group = completion;
  }
}

void check_group_sizes(const char* kind, const std::vector<std::string>& names, size_t inputs, size_t others,
                       const char* others_are) {
  const std::string what = std::string("grouped ") + kind;
  if (names.empty()) invalid(what + ": no tensors given");
  if (inputs != names.size() || (others != 0 && others != names.size())) {
    invalid(what + " '" + names.front() + "', ...: " + std::to_string(names.size()) + " names but " +
            std::to_string(inputs) + " inputs and " + std::to_string(others) + " " + others_are);
  }
}

void check_group_hooks(const char* kind, const std::vector<std::string>& names, const std::vector<OpHooks>& hooks) {
  const std::string what = std::string("grouped ") + kind + " '" + names.front() + "', ...: ";
  if (hooks.size() != names.size()) {
    invalid(what + std::to_string(names.size()) + " names but " + std::to_string(hooks.size()) + " hooks");
  }
  for (size_t i = 1; i < hooks.size(); ++i) {
    if (hooks[i].process_set == hooks[0].process_set) continue;
    invalid(what + "member " + std::to_string(i) + " ('" + names[i] + "') is in process set " +
            std::to_string(hooks[i].process_set.id()) + " but member 0 in " +
            std::to_string(hooks[0].process_set.id()) + "; a group runs in one set");
  }
}
const ProcessSet& group_set(const std::vector<OpHooks>& hooks, const char* kind, const std::vector<std::string>& names) {
  if (names.empty()) invalid(std::string("grouped ") + kind + ": no tensors given");
  if (hooks.empty()) {
    invalid(std::string("grouped ") + kind + " '" + names.front() + "', ...: " + std::to_string(names.size()) +
            " names but no hooks (no process set to negotiate the call in)");
  }
  return hooks.front().process_set;
}

}  // namespace chorus::detail
