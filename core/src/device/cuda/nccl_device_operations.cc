#include "device/cuda/nccl_device_operations.h"

#include <mutex>
#include <thread>

#include "common/logging.h"
#include "device/cuda/completion_poller.h"
#include "device/cuda/device_stream.h"
#include "device/cuda/gpu_devices.h"
#include "device/cuda/gpu_errors.h"
#include "device/cuda/launch_waits.h"
#include "device/cuda/set_communicators.h"
#include "device/cuda/nccl_launcher.h"
#include "device/cuda/nccl_plan.h"
#include "device/cuda/nccl_symbols.h"
#include "device/cuda/nccl_wait.h"

namespace chorus::detail::gpu {

std::shared_ptr<GpuDevices> make_gpu_devices() { return std::make_shared<GpuDevices>(); }

Status nccl_available() {
  NcclSymbols symbols;
  return load_nccl(&symbols);
}

namespace {

/// A batch's done event as the completion thread polls it. That thread has
/// no current device of its own: without setting it, cudaEventQuery would
/// make a primary context on GPU 0 for every rank (PyTorch's watchdog bug).
class EventSignal final : public DoneSignal {
 public:
  EventSignal(DeviceEvent event, int device) : event_(std::move(event)), device_(device) {}
  Status poll() override {
    int current = -1;
    if (cudaGetDevice(&current) != cudaSuccess || current != device_) {
      Status s = cuda_status(cudaSetDevice(device_), "cudaSetDevice(" + std::to_string(device_) + ") on the completion thread");
      if (!s.is_ok()) return s;
    }
    return event_.query();
  }

 private:
  DeviceEvent event_;
  int device_;
};

/// What one launch needs besides the plan: the buffers, and device scratch
/// standing in for outputs whose allocation failed (the rank still takes
/// part, then fails those tensors alone).
struct Launch {
  PlanBuffers buffers;
  std::vector<std::pair<size_t, int64_t>> scratch_bytes;  ///< tensor, bytes: made on the stream at launch
  std::vector<void*> scratch;
  std::vector<Status> alloc_errors;
  /// The streams of outputs allocated through the OpContext: a caching
  /// allocator's block may still be in use by work queued there.
  std::vector<cudaStream_t> allocated_streams;
};

/// How long shutdown and abort wait for device work to end.
constexpr std::chrono::milliseconds kDrainWait{10000};

void fail_entries(std::vector<TensorEntry>& entries, const Status& s) {
  CompletionBatch wake;
  for (auto& e : entries) finish_entry(std::move(e), s, wake);
  entries.clear();
}

class NcclDeviceOperations final : public DeviceOperations {
 public:
  NcclDeviceOperations(Backend& backend, NcclOperationsSettings settings, std::shared_ptr<GpuDevices> devices)
      : backend_(backend), settings_(std::move(settings)), devices_(std::move(devices)),
        topology_(backend.topology()), poller_(std::make_unique<CompletionPoller>()) {}

  // Normal shutdown: the pending work finishes, then Finalize and Destroy.
  // Work that does not finish in time (a dead peer) or a fault: Abort first,
  // which ends the kernels, so neither step can wait forever.
  // The poller fails what is pending before the Abort, as in abort(): the
  // aborted kernels' events complete, and must not read as success.
  ~NcclDeviceOperations() override {
    wait_until_done([this] { return poller_->pending() == 0; }, kDrainWait);
    const bool clean = fault().is_ok() && poller_->pending() == 0;
    if (!clean) {
      poller_->fail_all(Status::aborted("GPU data plane of " + topology_.scope.describe() +
                                        ": shut down before the device finished: " + poller_->describe_pending()));
      if (comms_) comms_->abort();
    }
    poller_.reset();  // waits for the draining work (the Abort ended it)
    if (comms_ && clean) comms_->finalize_and_destroy(10.0);  // like the drain wait; Abort after it
  }

  void execute(const Response& response, std::vector<TensorEntry> entries) override;

  Status fault() const override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!fault_.is_ok()) return fault_;
    }
    return poller_ ? poller_->fault() : Status::ok();
  }

  size_t in_flight() const override { return poller_ ? poller_->pending_relaxed() : 0; }

  void abort(const Status& why) override {
    set_fault(why);
    if (poller_) poller_->fail_all(why);  // after this nothing polls the communicator
    if (comms_) comms_->abort();          // ends their kernels, so the events complete
    if (poller_) wait_until_done([this] { return poller_->draining() == 0; }, kDrainWait);
  }

 private:
  Status prepare(const std::vector<TensorEntry>& entries, GpuDevice** gpu);
  void allocate_outputs(const NcclPlan& plan, std::vector<TensorEntry>& entries, Launch& launch);
  Status allocate_scratch(Launch& launch, cudaStream_t stream);
  Status launch_device_work(const NcclPlan& plan, GpuDevice& gpu, const std::vector<TensorEntry>& entries,
                            Launch& launch, const std::string& what, DeviceEvent* done, bool* queued);
  void launch_failed(std::vector<TensorEntry> entries, DeviceEvent done, bool queued, const Status& why);
  void submit(const Response& response, std::vector<TensorEntry> entries, Launch& launch, DeviceEvent done,
              std::chrono::steady_clock::time_point launched);
  void set_fault(const Status& s) {
    std::lock_guard<std::mutex> lock(mu_);
    if (fault_.is_ok()) fault_ = s;
  }

  Backend& backend_;
  const NcclOperationsSettings settings_;
  std::shared_ptr<GpuDevices> devices_;
  const Topology topology_;
  std::unique_ptr<SetCommunicators> comms_;
  int device_ = -1;
  mutable std::mutex mu_;
  Status fault_;
  std::unique_ptr<CompletionPoller> poller_;
};

// The communicator first, before any local check can fail: its creation is
// collective, and a rank that skipped it would leave the others waiting.
Status NcclDeviceOperations::prepare(const std::vector<TensorEntry>& entries, GpuDevice** gpu) {
  const int device = entries.front().input->device();
  if (!comms_) {
    const SetCommunicators::Spec spec{&backend_, device, "chorus." + std::to_string(topology_.scope.id),
                                      settings_.op_timeout_seconds, settings_.hierarchical_allreduce};
    std::string warning;
    Status s = SetCommunicators::create(spec, &comms_, &warning);
    if (!s.is_ok()) return Status(s.code(), "creating the NCCL communicators of " + topology_.scope.describe() + ": " + s.message());
    device_ = device;
    if (!warning.empty()) {
      Logger log;
      log.set_rank(topology_.rank);
      CHORUS_LOG(log, kWarning) << warning;
    }
  }
  for (const auto& e : entries) {
    const int in = e.input->device(), out = e.output ? e.output->device() : device_;
    if (in != device_ || out != device_)
      return Status::invalid_argument("GPU " + std::string(collective_name(e.request.type)) + " of tensor '" + e.name() +
                                      "': its input is on GPU " + std::to_string(in) + " and its output on GPU " +
                                      std::to_string(out) + ", but this rank's NCCL communicator of " +
                                      topology_.scope.describe() + " is on GPU " + std::to_string(device_) +
                                      " (one GPU per rank)");
  }
  Status s = devices_->claims().claim(device_, topology_.scope.id, entries.front().name());
  if (!s.is_ok()) return s;
  return devices_->get(device_, gpu);
}

void NcclDeviceOperations::allocate_outputs(const NcclPlan& plan, std::vector<TensorEntry>& entries, Launch& launch) {
  for (size_t t = 0; t < entries.size(); ++t) {
    TensorEntry& e = entries[t];
    launch.buffers.inputs.push_back(e.input->data());
    if (plan.output_shapes.empty()) {
      launch.buffers.outputs.push_back(e.output->mutable_data());
      continue;
    }
    TensorShape shape(plan.output_shapes[t]);
    std::shared_ptr<Tensor> out;
    Status s = e.hooks.context ? e.hooks.context->allocate_output(shape, e.request.dtype, &out)
                               : Status::invalid_argument("no OpContext to allocate a device output with");
    if (s.is_ok() && out->device() != device_)
      s = Status::invalid_argument("the OpContext allocated it on device " + std::to_string(out->device()) +
                                   ", not on GPU " + std::to_string(device_));
    if (s.is_ok()) {
      e.output = out;
      if (e.handle) e.handle->set_output(out, plan.received_splits);
      launch.buffers.outputs.push_back(out->mutable_data());
      // No stream (nullptr) is the legacy default stream, which a framework's
      // kernels on its default stream still use (our stream does not wait for it).
      launch.allocated_streams.push_back(out->stream() != nullptr ? static_cast<cudaStream_t>(out->stream())
                                                                  : cudaStreamLegacy);
      continue;
    }
    launch.alloc_errors.resize(entries.size());
    launch.alloc_errors[t] = Status(s.code(), "allocating the output " + shape.to_string() + " of tensor '" +
                                                  e.name() + "': " + s.message());
    // This rank still takes part, into scratch made at launch (allocate_scratch).
    launch.scratch_bytes.emplace_back(t, std::max<int64_t>(shape.num_elements() * dtype_size(e.request.dtype), 1));
    launch.buffers.outputs.push_back(nullptr);
  }
}

// With the launch lock held and the device set: stream-ordered, so the
// cudaFreeAsync after the plan frees it once the collective is done.
Status NcclDeviceOperations::allocate_scratch(Launch& launch, cudaStream_t stream) {
  for (const auto& [t, bytes] : launch.scratch_bytes) {
    void* scratch = nullptr;
    Status s = cuda_status(cudaMallocAsync(&scratch, size_t(bytes), stream),
                           "cudaMallocAsync(scratch output of tensor " + std::to_string(t) + ", " +
                               std::to_string(bytes) + " bytes)");
    if (!s.is_ok()) return s;
    launch.scratch.push_back(scratch);
    launch.buffers.outputs[t] = scratch;
  }
  return Status::ok();
}

// Queues the plan; `*done` marks the end of everything queued, recorded
// even when a step failed (then `*queued` says the stream may hold work on
// the tensors, and the caller keeps them until that event).
Status NcclDeviceOperations::launch_device_work(const NcclPlan& plan, GpuDevice& gpu,
                                                const std::vector<TensorEntry>& entries, Launch& launch,
                                                const std::string& what, DeviceEvent* done, bool* queued) {
  std::lock_guard<std::mutex> lock(gpu.launch_mu);  // one launch point per device, for every set
  const cudaStream_t stream = gpu.stream.get();
  Status s = cuda_status(cudaSetDevice(device_), "cudaSetDevice(" + std::to_string(device_) + ")");
  if (s.is_ok()) s = wait_ready_points(entries, settings_, device_, stream);
  if (s.is_ok()) s = wait_for_streams(launch.allocated_streams, device_, stream);
  if (!s.is_ok()) return s;  // only waits are queued: nothing uses the tensors yet
  *queued = true;
  s = allocate_scratch(launch, stream);
  if (s.is_ok()) s = gpu.ensure_fusion(plan.fusion_bytes);
  launch.buffers.fusion = gpu.fusion;
  if (s.is_ok())
    s = launch_plan(plan, launch.buffers, comms_->plan_comms(), stream, OpDeadline::after(settings_.op_timeout_seconds), what);
  for (void* p : launch.scratch) cudaFreeAsync(p, stream);  // in stream order: after the collective
  Status recorded = DeviceEvent::create(device_, done);
  if (recorded.is_ok()) recorded = done->record(stream);
  if (!recorded.is_ok()) *done = DeviceEvent();  // none: the caller must not free what the stream uses
  return s.is_ok() ? recorded : s;
}

// A launch that failed after work may have been queued: the tensors stay
// held until the recorded event says that work ended (the poller's draining
// list). Without an event nothing tells when it ends, so their references
// are leaked, never dropped under a running kernel.
void NcclDeviceOperations::launch_failed(std::vector<TensorEntry> entries, DeviceEvent done, bool queued,
                                         const Status& why) {
  set_fault(why);
  const Status f = fault();
  if (queued && done.get() != nullptr) {
    PendingBatch batch;
    batch.what = "GPU " + std::string(collective_name(entries.front().request.type));
    batch.entries = std::move(entries);
    batch.done = std::make_unique<EventSignal>(std::move(done), device_);
    poller_->submit_failed(std::move(batch), f);
  } else {
    if (queued) {
      auto* leaked = new std::vector<std::shared_ptr<Tensor>>();  // NOLINT: deliberate leak, see above
      for (const auto& e : entries) leaked->insert(leaked->end(), {e.input, e.output});
      Logger log;
      log.set_rank(topology_.rank);
      CHORUS_LOG(log, kWarning) << "GPU data plane: no event could be recorded after a failed launch ("
                                << f.message() << "); keeping its " << entries.size()
                                << " tensors alive for the rest of the process";
    }
    fail_entries(entries, f);
  }
  if (why.code() == StatusCode::kTimeout) abort(f);  // a peer never joined: end the stuck NCCL work
}

// Refusals that depend only on the (agreed) response come before prepare():
// it creates the communicators, a collective every rank must reach together.
void NcclDeviceOperations::execute(const Response& response, std::vector<TensorEntry> entries) {
  if (entries.empty()) return;
  if (response.type == ResponseType::kError) return fail_entries(entries, Status::invalid_argument(response.error_message));
  Status s = fault();
  if (!s.is_ok()) return fail_entries(entries, s);
  const std::string what = "GPU " + std::string(collective_name(entries.front().request.type)) + " of '" +
                           entries.front().name() + "'" + (entries.size() > 1 ? " and " + std::to_string(entries.size() - 1) + " more" : "");
  std::vector<Request> requests;
  for (const auto& e : entries) requests.push_back(e.request);
  if (response.type == ResponseType::kAllreduce && entries.front().request.op == ReduceOp::kAdasum) {
    // NCCL has no Adasum (it would sum); a fused response shares its op.
    return fail_entries(entries, Status::invalid_argument(what + ": adasum does not run on NCCL; set "
                                                          "CHORUS_GPU_OPERATIONS=staged to combine CUDA tensors with "
                                                          "Adasum through pinned host memory and the CPU data plane"));
  }
  const bool reduces = response.type == ResponseType::kAllreduce || response.type == ResponseType::kReducescatter;
  if (reduces && entries.front().request.dtype == DataType::kInt16) {  // a fused response shares its dtype
    return fail_entries(entries, Status::invalid_argument(what + ": NCCL has no int16 reduction; set "
                                                          "CHORUS_GPU_OPERATIONS=staged to reduce int16 CUDA tensors "
                                                          "through pinned host memory and the CPU data plane"));
  }
  // The communicators say whether allreduces go hierarchical; before the
  // first response made them, plan flat and plan again below.
  const HostPlace* hierarchy = comms_ ? comms_->hierarchy() : nullptr;
  StatusOr<NcclPlan> plan = plan_nccl(response, requests, topology_.rank, topology_.size, hierarchy);
  if (!plan.is_ok()) {  // agreed input, so the same refusal on every rank; a broken invariant is a fault
    if (plan.status().code() == StatusCode::kInternal) set_fault(plan.status());
    return fail_entries(entries, Status(plan.status().code(), what + ": " + plan.status().message()));
  }
  GpuDevice* gpu = nullptr;
  s = prepare(entries, &gpu);
  if (!s.is_ok()) {  // local to this rank: the runtime ends the job on every rank with it
    set_fault(Status(s.code(), what + ": " + s.message()));
    return fail_entries(entries, fault());
  }
  if (response.type == ResponseType::kAllreduce && hierarchy == nullptr && comms_->hierarchy() != nullptr) {
    plan = plan_nccl(response, requests, topology_.rank, topology_.size, comms_->hierarchy());
    if (!plan.is_ok()) return launch_failed(std::move(entries), DeviceEvent(), false, plan.status());
  }
  Launch launch;
  DeviceEvent done;
  bool queued = false;
  // The OpContext (a C alloc callback's cudaMalloc) allocates on the current
  // device: this rank's, which NcclComm::create set on this thread.
  cudaSetDevice(device_);
  const auto launched = std::chrono::steady_clock::now();  // the timeline's span starts here
  allocate_outputs(plan.value(), entries, launch);
  s = launch_device_work(plan.value(), *gpu, entries, launch, what, &done, &queued);
  if (!s.is_ok()) return launch_failed(std::move(entries), std::move(done), queued, Status(s.code(), what + ": " + s.message()));
  submit(response, std::move(entries), launch, std::move(done), launched);
}

void NcclDeviceOperations::submit(const Response& response, std::vector<TensorEntry> entries, Launch& launch,
                                  DeviceEvent done, std::chrono::steady_clock::time_point launched) {
  PendingBatch batch;
  batch.what = "GPU " + std::string(collective_name(entries.front().request.type));
  batch.done = std::make_unique<EventSignal>(std::move(done), device_);
  batch.errors = comms_->error_source();
  if (settings_.op_timeout_seconds > 0) {
    batch.timeout_seconds = settings_.op_timeout_seconds;
    batch.deadline = OpDeadline::after(settings_.op_timeout_seconds).at;
  }
  auto held = std::make_shared<std::vector<std::shared_ptr<Tensor>>>();  // inputs of tensors failed alone
  CompletionBatch wake;
  for (size_t t = 0; t < entries.size(); ++t) {
    if (t < launch.alloc_errors.size() && !launch.alloc_errors[t].is_ok()) {
      held->push_back(entries[t].input);
      finish_entry(std::move(entries[t]), launch.alloc_errors[t], wake);
    } else {
      batch.entries.push_back(std::move(entries[t]));
    }
  }
  batch.resources = held;
  std::function<void(const Status&)> trace;  // the tensors that went to the device (not those failed alone above)
  if (settings_.trace && !batch.entries.empty()) trace = settings_.trace(response.type, batch.entries, launched);
  if (settings_.on_finish || trace) {
    int64_t bytes = 0;
    for (const auto& e : batch.entries) bytes += e.request.num_elements() * dtype_size(e.request.dtype);
    batch.on_finish = [f = settings_.on_finish, trace = std::move(trace), type = response.type,
                       n = batch.entries.size(), bytes](const Status& st) {
      if (trace) trace(st);
      if (f) f(type, n, bytes, st);
    };
  }
  poller_->submit(std::move(batch));
}

}  // namespace

std::unique_ptr<DeviceOperations> make_nccl_device_operations(Backend& backend, NcclOperationsSettings settings,
                                                               std::shared_ptr<GpuDevices> devices) {
  return std::make_unique<NcclDeviceOperations>(backend, std::move(settings), std::move(devices));
}

}  // namespace chorus::detail::gpu
