// DistributedOptimizer: a post hook on each parameter's gradient
// accumulator starts that gradient's allreduce as soon as autograd has
// written it (Horovod's design), so communication overlaps the rest of
// backward; step() waits for them all.
#include "chorus/torch/distributed_optimizer.h"

#include <algorithm>
#include <mutex>
#include <unordered_map>

#include <c10/util/strides.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/torch.h>

#include "chorus/chorus.h"
#include "chorus/elastic.h"
#include "chorus/torch/ops.h"
#include "chorus/torch/shared_host_tensor.h"
#include "device_buffers.h"
#include "rank_agreement.h"
#include "sparse_gradient.h"
#include "torch_tensor.h"

namespace chorus {

namespace {

[[noreturn]] void invalid(const std::string& message) {
  throw InvalidArgumentError(Status::invalid_argument(message));
}

using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;

void check_options(const DistributedOptimizerOptions& o) {
  if (o.backward_passes_per_step < 1) {
    invalid("DistributedOptimizer: backward_passes_per_step must be at least 1, got " +
            std::to_string(o.backward_passes_per_step));
  }
  if (!(o.gradient_predivide_factor > 0)) {
    invalid("DistributedOptimizer: gradient_predivide_factor must be positive, got " +
            std::to_string(o.gradient_predivide_factor));
  }
  if (o.gradient_predivide_factor != 1.0 && o.op != ReduceOp::kAverage) {
    invalid(std::string("DistributedOptimizer: gradient_predivide_factor needs op Average, got ") +
            reduce_op_name(o.op));
  }
  if (o.op == ReduceOp::kProduct) invalid("DistributedOptimizer: op Product makes no sense for gradients");
}

// The optimizer's parameters with their names, in named_parameters order.
NamedTensors optimized_parameters(const torch::optim::Optimizer& optimizer, const NamedTensors& named) {
  std::unordered_map<const void*, std::string> name_of;
  std::unordered_map<std::string, const void*> tensor_named;
  for (const auto& [name, tensor] : named) {
    auto [it, fresh] = tensor_named.emplace(name, tensor.unsafeGetTensorImpl());
    if (!fresh && it->second != tensor.unsafeGetTensorImpl()) {
      invalid("DistributedOptimizer: two parameters are named '" + name + "'; names must be unique");
    }
    name_of.emplace(tensor.unsafeGetTensorImpl(), name);
  }
  std::unordered_map<const void*, bool> optimized;
  for (size_t g = 0; g < optimizer.param_groups().size(); ++g) {
    for (const torch::Tensor& p : optimizer.param_groups()[g].params()) {
      if (!name_of.count(p.unsafeGetTensorImpl())) {
        invalid("DistributedOptimizer: param group " + std::to_string(g) + " holds a parameter of shape " +
                c10::str(p.sizes()) + " that named_parameters does not name");
      }
      optimized[p.unsafeGetTensorImpl()] = true;
    }
  }
  NamedTensors out;
  for (const auto& [name, tensor] : named) {
    if (optimized.count(tensor.unsafeGetTensorImpl()) && tensor.requires_grad()) {
      optimized.erase(tensor.unsafeGetTensorImpl());  // a tensor named twice is hooked once
      out.emplace_back(name, tensor);
    }
  }
  return out;
}

// Horovod's names for an optimizer given without named_parameters.
NamedTensors unnamed_parameters(const torch::optim::Optimizer* optimizer) {
  if (optimizer == nullptr) invalid("DistributedOptimizer: the optimizer is null");
  NamedTensors out;
  const auto& groups = optimizer->param_groups();
  for (size_t g = 0; g < groups.size(); ++g) {
    const auto& params = groups[g].params();
    for (size_t j = 0; j < params.size(); ++j) {
      out.emplace_back("allreduce.noname." + std::to_string(g) + "." + std::to_string(j), params[j]);
    }
  }
  return out;
}

NamedTensors to_vector(const torch::OrderedDict<std::string, torch::Tensor>& dict) {
  NamedTensors out;
  for (const auto& item : dict) out.emplace_back(item.key(), item.value());
  return out;
}

}  // namespace

class DistributedOptimizer::State : public std::enable_shared_from_this<DistributedOptimizer::State> {
 public:
  struct Param {
    std::string name;  // the collective's name
    torch::Tensor tensor;
    std::shared_ptr<torch::autograd::Node> accumulator;  // kept alive: the hook lives on it
    uintptr_t hook_key = 0;
    int passes = 0;  // backward passes since the last allreduce
    Handle handle;   // the gradient's allreduce in flight
    std::shared_ptr<torch_adapter::TorchTensor> wire;  // what the allreduce works on
    torch::Dtype original_dtype = torch::kFloat32;
    bool sparse = false;  // the ranks agreed its gradient is sparse: allgathered
    int64_t sparse_dim = 1;
    // Its gradients are sparse (some rank's came sparse at the first step, or
    // this rank's since): reduced densely they are handed back sparse, and
    // never flattened.
    bool sparse_grads = false;
    torch_adapter::SparseGather sparse_gather;  // the allgather in flight (sparse only)
    torch::Tensor flat_slice;  // its place in a flat buffer, once flattened
  };

  // `options` are checked and carry a compression.
  explicit State(DistributedOptimizerOptions options) : options_(std::move(options)) {
    const double k = options_.backward_passes_per_step;
    allreduce_.op = options_.op;
    allreduce_.prescale_factor = 1.0 / options_.gradient_predivide_factor;
    if (options_.average_backward_passes) allreduce_.prescale_factor /= k;
    allreduce_.postscale_factor = options_.gradient_predivide_factor;
  }

  void add(const std::string& name, const torch::Tensor& tensor);
  void remove_hooks();
  void on_gradient(size_t index);
  void synchronize();
  /// step() ran: the next synchronize() reduces again.
  void end_step();
  /// `optimizer`'s zero_grad(), keeping the flat gradients in their buffers.
  void zero_grad(torch::optim::Optimizer& optimizer);
  std::vector<std::string> pending() const;
  std::vector<std::string> names() const;
  void forget_world();

 private:
  void start_allreduce(Param& p);
  void start_sparse_allgather(Param& p);
  void agree_on_layout();
  // Its allreduce is in flight, or (first step) waits for the layout's agreement.
  bool pending(const Param& p) const {
    return p.handle.valid() || (!layout_agreed_ && p.passes >= options_.backward_passes_per_step);
  }
  double sparse_scale() const;
  void refresh_hooks();
  void flatten_gradients();

  // Parameter indices in the order their first gradient arrived, recorded
  // until the gradients are flattened (first step) for the buffer's layout.
  std::vector<size_t> arrival_order_;
  std::vector<bool> arrived_;
  bool flattened_ = false;
  std::vector<torch::Tensor> flat_buffers_;
  // Whether each gradient is allgathered sparse or allreduced dense is agreed
  // by all ranks at the first synchronize(); until then no collective starts.
  bool layout_agreed_ = false;

  DistributedOptimizerOptions options_;
  AllreduceOptions allreduce_;
  mutable std::mutex mu_;  // hooks may run on autograd's worker threads
  std::vector<Param> params_;
  // True from a completed synchronize() until the next step(): synchronizing
  // again must not reduce the reduced gradients once more. Set and cleared
  // by the caller's calls only, never by hook events, so it is the same on
  // every rank (a rank whose hooks did not fire still joins the allreduces).
  bool synchronized_ = false;
};

namespace {

// Runs after the parameter's AccumulateGrad wrote .grad.
class GradientReadyHook final : public torch::autograd::FunctionPostHook {
 public:
  GradientReadyHook(std::weak_ptr<DistributedOptimizer::State> state, size_t index)
      : state_(std::move(state)), index_(index) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                            const torch::autograd::variable_list&) override {
    if (auto state = state_.lock()) state->on_gradient(index_);
    return outputs;
  }

 private:
  std::weak_ptr<DistributedOptimizer::State> state_;
  size_t index_;
};

}  // namespace

void DistributedOptimizer::State::add(const std::string& name, const torch::Tensor& tensor) {
  Param p;
  p.name = options_.name_prefix + name;
  p.tensor = tensor;
  p.accumulator = torch::autograd::impl::grad_accumulator(tensor);
  p.hook_key = p.accumulator->add_post_hook(std::make_unique<GradientReadyHook>(weak_from_this(), params_.size()));
  params_.push_back(std::move(p));
  arrived_.push_back(false);
}

void DistributedOptimizer::State::remove_hooks() {
  for (Param& p : params_) p.accumulator->del_post_hook(p.hook_key);
}

void DistributedOptimizer::State::on_gradient(size_t index) {
  std::lock_guard<std::mutex> lock(mu_);
  Param& p = params_[index];
  if (!flattened_ && !arrived_[index]) {
    arrived_[index] = true;
    arrival_order_.push_back(index);
  }
  if (pending(p)) {
    throw PreconditionError(Status::precondition_error(
        "DistributedOptimizer: parameter '" + p.name + "' got a gradient while its allreduce is still pending: more than " +
        std::to_string(options_.backward_passes_per_step) +
        " backward passes before step(); call step() (or synchronize()) after every backward_passes_per_step passes"));
  }
  if (++p.passes >= options_.backward_passes_per_step && layout_agreed_) start_allreduce(p);
}

// A rank whose batch skipped an embedding has no sparse gradient for it while
// the others do: one Max allreduce of each parameter's sparse_dim (0: dense)
// over the process set, so every rank takes the same path under the same name
// and hands back the same layout. Row 0: gathered; row 1: sparse at all.
void DistributedOptimizer::State::agree_on_layout() {
  const bool gathered = (options_.op == ReduceOp::kAverage || options_.op == ReduceOp::kSum) && !options_.sparse_as_dense;
  torch::Tensor dims = torch::zeros({2, static_cast<int64_t>(params_.size())}, torch::kInt64);
  for (size_t i = 0; i < params_.size(); ++i) {
    const torch::Tensor& grad = params_[i].tensor.grad();
    if (!grad.defined() || !grad.is_sparse()) continue;
    dims[0][i] = gathered ? grad.sparse_dim() : 0;
    dims[1][i] = grad.sparse_dim();
  }
  AllreduceOptions max;
  max.op = ReduceOp::kMax;
  dims = chorus::allreduce(dims, options_.name_prefix + "sparse_layout", max, nullptr, options_.process_set);
  for (size_t i = 0; i < params_.size(); ++i) {
    params_[i].sparse = dims[0][i].item<int64_t>() > 0;
    params_[i].sparse_grads = dims[1][i].item<int64_t>() > 0;
    params_[i].sparse_dim = std::max<int64_t>(dims[1][i].item<int64_t>(), 1);
  }
  layout_agreed_ = true;
}

void DistributedOptimizer::State::start_allreduce(Param& p) {
  torch::Tensor& grad = p.tensor.mutable_grad();
  if (grad.defined() && grad.is_sparse() && !p.sparse) {
    // Agreed dense (sparse_as_dense; Min and Max need the dense rows; no rank
    // had it sparse at the first step): reduced dense, handed back sparse.
    p.sparse_grads = true;
    p.sparse_dim = grad.sparse_dim();
    grad = grad.to_dense();
  }
  if (p.sparse) return start_sparse_allgather(p);
  // No gradient this step (unused in the graph): zeros, so ranks still match up.
  if (!grad.defined()) grad = torch::zeros_like(p.tensor, torch::MemoryFormat::Contiguous);
  torch::Tensor sent = options_.compression->compress(grad, &p.original_dtype);
  p.wire = torch_adapter::wrap(sent);  // grad itself when it can be reduced in place
  OpHooks hooks;
  hooks.process_set = options_.process_set;
  p.handle = current_runtime()->allreduce_async(p.name, p.wire, p.wire, allreduce_, std::move(hooks));
  p.passes = 0;
}

// Every rank's indices and values, gathered (Horovod's sparse allreduce).
// Every rank sends something, an empty gradient when it got none.
void DistributedOptimizer::State::start_sparse_allgather(Param& p) {
  const torch::Tensor sent = torch_adapter::with_sparse_dim(p.tensor.grad(), p.tensor, p.sparse_dim);
  p.sparse_gather = torch_adapter::allgather_sparse_async(sent, p.name, *options_.compression, options_.process_set);
  p.handle = p.sparse_gather.handle.handle();
  p.passes = 0;
}

// What the allreduce's options would have scaled the sum by: an average is
// over the process set's members, not the whole job.
double DistributedOptimizer::State::sparse_scale() const {
  const double scale = allreduce_.prescale_factor * allreduce_.postscale_factor;
  const ProcessSet& set = options_.process_set;
  const int members = set.size();
  return options_.op == ReduceOp::kAverage ? scale / members : scale;
}

void DistributedOptimizer::State::synchronize() {
  std::lock_guard<std::mutex> lock(mu_);
  const bool any_pending = std::any_of(params_.begin(), params_.end(), [](const Param& p) { return p.handle.valid(); });
  if (synchronized_ && !any_pending) return;
  if (!layout_agreed_) agree_on_layout();
  // In arrival order first, as the hooks would have (the first step's order
  // is the one the response cache and the flat buffers keep).
  for (size_t i : arrival_order_) {
    if (!params_[i].handle.valid()) start_allreduce(params_[i]);
  }
  for (Param& p : params_) {
    if (!p.handle.valid()) start_allreduce(p);
  }
  // Wait for every allreduce, even after a failure: none may stay in flight.
  Status first_error;
  for (Param& p : params_) {
    Status s = p.handle.wait_status();
    if (s.is_ok()) {
      torch::Tensor& grad = p.tensor.mutable_grad();
      if (p.sparse_gather.handle.valid()) {
        grad = torch_adapter::wait_sparse(p.sparse_gather, sparse_scale(), *options_.compression);
      } else if (!p.wire->tensor().is_same(grad)) {
        torch::NoGradGuard no_grad;
        grad.copy_(options_.compression->decompress(p.wire->tensor(), p.original_dtype));
      }
      if (p.sparse_grads && !p.sparse) grad = grad.to_sparse(p.sparse_dim);  // as Horovod: sparse-only optimizers still work
    } else if (first_error.is_ok()) {
      first_error = s;
    }
    p.handle = Handle();
    p.wire.reset();
    p.sparse_gather = {};
  }
  synchronized_ = first_error.is_ok();
  refresh_hooks();
  throw_if_error(first_error);
}

void DistributedOptimizer::State::end_step() {
  std::lock_guard<std::mutex> lock(mu_);
  synchronized_ = false;
  if (!flattened_ && options_.flat_gradients) flatten_gradients();
  flattened_ = true;
}

// Moves every gradient into one buffer per device and dtype, in arrival order (then
// the parameters that never got one), and makes .grad a slice of it. The
// slices share the buffer's storage without being autograd views, so
// zero_grad()'s detach_() works on them; autograd accumulates into them in
// place. Only this rank's layout changes: the collectives are the same.
void DistributedOptimizer::State::flatten_gradients() {
  std::vector<size_t> order;  // sparse gradients stay out: they are replaced each step
  for (size_t i : arrival_order_) {
    if (!params_[i].sparse && !params_[i].sparse_grads) order.push_back(i);
  }
  for (size_t i = params_.size(); i-- > 0;) {
    if (!arrived_[i] && !params_[i].sparse && !params_[i].sparse_grads) order.push_back(i);  // autograd runs roughly in reverse
  }
  std::vector<torch::Tensor> tensors;
  for (const Param& p : params_) tensors.push_back(p.tensor);
  torch::NoGradGuard no_grad;
  // One buffer per device and dtype: a gradient stays on its parameter's device.
  for (const torch_adapter::GradientBuffer& group : torch_adapter::group_gradient_buffers(tensors, order)) {
    int64_t total = 0;
    for (size_t i : group.members) total += params_[i].tensor.numel();
    const torch::TensorOptions options = params_[group.members.front()].tensor.options().dtype(group.dtype);
    const torch::Tensor buffer =
        options.device().is_cpu() ? empty_shared_host({total}, options) : torch::empty({total}, options);
    int64_t offset = 0;
    for (size_t i : group.members) {
      const torch::Tensor& param = params_[i].tensor;
      torch::Tensor slice = torch::empty({0}, buffer.options());
      slice.set_(buffer.storage(), offset, param.sizes(), c10::contiguous_strides(param.sizes()));
      torch::Tensor& grad = params_[i].tensor.mutable_grad();
      if (grad.defined()) {
        slice.copy_(grad);
      } else {
        slice.zero_();
      }
      grad = slice;
      params_[i].flat_slice = slice;
      offset += param.numel();
    }
    flat_buffers_.push_back(buffer);
  }
  arrival_order_.clear();
  arrived_.clear();
}

// LibTorch 2's Optimizer::zero_grad() sets gradients to none: autograd would
// then allocate every gradient anew, out of its flat buffer, from the second
// step on. The gradients still in their slices are zeroed with one fill per
// buffer instead and kept; the others get LibTorch's own zero_grad().
void DistributedOptimizer::State::zero_grad(torch::optim::Optimizer& optimizer) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Param*> kept;
  for (Param& p : params_) {
    if (p.flat_slice.defined() && p.tensor.grad().is_same(p.flat_slice)) {
      kept.push_back(&p);
      p.tensor.mutable_grad().reset();  // hidden from the optimizer's zero_grad()
    }
  }
  try {
    optimizer.zero_grad();
  } catch (...) {
    for (Param* p : kept) p->tensor.mutable_grad() = p->flat_slice;
    throw;
  }
  if (kept.empty()) return;
  torch::NoGradGuard no_grad;
  for (torch::Tensor& buffer : flat_buffers_) buffer.zero_();
  for (Param* p : kept) p->tensor.mutable_grad() = p->flat_slice;
}

// Tensor::set_ (Module::load of a checkpoint does it) gives a parameter a
// new gradient accumulator: move the hook there, or its gradients would
// only be reduced late, in synchronize(). A parameter frozen since
// (requires_grad_(false)) has none: it keeps its hook, is reduced as zeros
// as Horovod does, and gets its accumulator back when it thaws.
void DistributedOptimizer::State::refresh_hooks() {
  for (size_t i = 0; i < params_.size(); ++i) {
    Param& p = params_[i];
    std::shared_ptr<torch::autograd::Node> current = torch::autograd::impl::grad_accumulator(p.tensor);
    if (current == nullptr || current == p.accumulator) continue;
    p.accumulator->del_post_hook(p.hook_key);
    p.accumulator = std::move(current);
    p.hook_key = p.accumulator->add_post_hook(std::make_unique<GradientReadyHook>(weak_from_this(), i));
  }
}

std::vector<std::string> DistributedOptimizer::State::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  for (const Param& p : params_) {
    if (pending(p)) out.push_back(p.name);
  }
  return out;
}

std::vector<std::string> DistributedOptimizer::State::names() const {
  std::vector<std::string> out;
  for (const Param& p : params_) out.push_back(p.name);
  return out;
}

DistributedOptimizer::DistributedOptimizer(std::shared_ptr<torch::optim::Optimizer> optimizer,
                                           const torch::OrderedDict<std::string, torch::Tensor>& named_parameters,
                                           DistributedOptimizerOptions options)
    : DistributedOptimizer(std::move(optimizer), to_vector(named_parameters), std::move(options)) {}

DistributedOptimizer::DistributedOptimizer(std::shared_ptr<torch::optim::Optimizer> optimizer,
                                           DistributedOptimizerOptions options)
    : DistributedOptimizer(optimizer, unnamed_parameters(optimizer.get()), std::move(options)) {}

DistributedOptimizer::DistributedOptimizer(std::shared_ptr<torch::optim::Optimizer> optimizer,
                                           const std::vector<std::pair<std::string, torch::Tensor>>& named_parameters,
                                           DistributedOptimizerOptions options)
    : optimizer_(std::move(optimizer)), options_(std::move(options)) {
  if (!optimizer_) invalid("DistributedOptimizer: the optimizer is null");
  if (!options_.compression) options_.compression = Compression::none();
  // A rank that refuses its own input still takes part in the comparison
  // (with a list no other rank can have), so the others fail naming it
  // instead of waiting for it.
  NamedTensors params;
  std::vector<std::string> signature;
  std::exception_ptr local_error;
  try {
    check_options(options_);
    params = optimized_parameters(*optimizer_, named_parameters);
    std::vector<std::pair<std::string, torch::Device>> devices;
    for (const auto& [name, tensor] : params) {
      // Before the comparison: a rank refusing a parameter alone must not
      // leave the others constructed and waiting for its gradients.
      if (!tensor.is_leaf()) invalid("DistributedOptimizer: parameter '" + name + "' is not a leaf tensor");
      torch_adapter::check_tensor(tensor, "DistributedOptimizer: parameter '" + name + "'");
      signature.push_back(name + c10::str(tensor.sizes()) + c10::toString(tensor.scalar_type()));
      devices.emplace_back(name, tensor.device());
    }
    torch_adapter::check_one_cuda_device(devices, "DistributedOptimizer");
  } catch (const InvalidArgumentError&) {
    local_error = std::current_exception();
    signature = {"<invalid input on rank " + std::to_string(rank()) + ">"};
  }
  const std::string what = "DistributedOptimizer(" + options_.name_prefix + "*)";
  if (local_error) {
    try {
      torch_adapter::check_same_on_all_ranks(signature, what, options_.process_set);
    } catch (const InvalidArgumentError&) {
      // The other ranks got the error naming this one; this rank reports its own.
    }
    std::rethrow_exception(local_error);
  }
  // A rank that joins an elastic job builds its optimizer while the others
  // train (they built theirs long ago): no comparison then (horovod#2652),
  // the allreduces' own negotiation still refuses a mismatch by name.
  if (!elastic::enabled()) torch_adapter::check_same_on_all_ranks(signature, what, options_.process_set);
  state_ = std::make_shared<State>(options_);
  for (const auto& [name, tensor] : params) state_->add(name, tensor);
}

DistributedOptimizer::~DistributedOptimizer() {
  state_->remove_hooks();
  if (!state_->pending().empty()) {
    try {
      state_->synchronize();
    } catch (const std::exception&) {
      // A destructor cannot report it; the operations are finished either way.
    }
  }
}

void DistributedOptimizer::synchronize() { state_->synchronize(); }

void DistributedOptimizer::skip_synchronize() { skip_next_synchronize_ = true; }

// The handles of a runtime that stopped are done (failed): dropped, as the
// counts of this step; the layout is agreed again with the new world's ranks.
void DistributedOptimizer::State::forget_world() {
  std::lock_guard<std::mutex> lock(mu_);
  for (Param& p : params_) {
    p.handle = Handle();
    p.wire.reset();
    p.sparse_gather = {};
    p.passes = 0;
  }
  layout_agreed_ = false;
  synchronized_ = false;
}

void DistributedOptimizer::reset() {
  state_->forget_world();
  skip_next_synchronize_ = false;
}

torch::Tensor DistributedOptimizer::step(torch::optim::Optimizer::LossClosure closure) {
  if (!skip_next_synchronize_) synchronize();
  skip_next_synchronize_ = false;
  torch::Tensor loss = optimizer_->step(std::move(closure));
  state_->end_step();
  const auto now = std::chrono::steady_clock::now();
  // In the set's own timeline file, beside the step's collectives.
  current_runtime()->timeline_span("steps " + options_.name_prefix, "step " + std::to_string(++steps_), step_began_, now,
                                   options_.process_set);
  step_began_ = now;
  return loss;
}

void DistributedOptimizer::zero_grad() {
  const std::vector<std::string> pending = state_->pending();
  if (!pending.empty()) {
    std::string names;
    for (size_t i = 0; i < pending.size() && i < 3; ++i) names += (i ? ", '" : "'") + pending[i] + "'";
    if (pending.size() > 3) names += " and " + std::to_string(pending.size() - 3) + " more";
    throw PreconditionError(Status::precondition_error(
        "DistributedOptimizer::zero_grad: " + std::to_string(pending.size()) + " gradient allreduces are still pending (" +
        names + "); call step() or synchronize() first"));
  }
  state_->zero_grad(*optimizer_);
}

std::vector<std::string> DistributedOptimizer::parameter_names() const { return state_->names(); }

}  // namespace chorus
