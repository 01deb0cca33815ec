#include "device/staged_job.h"

#include <cstring>

#include "engine/output_slot.h"

namespace chorus::detail {

namespace {

constexpr int64_t kStagingAlign = 64;

int64_t bytes_of(const Request& r) { return r.num_elements() * dtype_size(r.dtype); }

// Results land where the inputs were staged (in place); the other
// collectives' outputs are sized by the negotiation and allocated by it.
bool in_place_on_staging(ResponseType type) {
  return type == ResponseType::kAllreduce || type == ResponseType::kBroadcast;
}

// A host tensor whose memory is a staging lease.
class LeasedHostTensor final : public Tensor {
 public:
  LeasedHostTensor(std::shared_ptr<char> memory, DataType dtype, TensorShape shape)
      : memory_(std::move(memory)), dtype_(dtype), shape_(std::move(shape)) {}
  DataType dtype() const override { return dtype_; }
  TensorShape shape() const override { return shape_; }
  const void* data() const override { return memory_.get(); }
  void* mutable_data() override { return memory_.get(); }
  int64_t size_bytes() const override { return shape_.num_elements() * dtype_size(dtype_); }

 private:
  std::shared_ptr<char> memory_;
  DataType dtype_;
  TensorShape shape_;
};

class StagingOpContext final : public OpContext {
 public:
  explicit StagingOpContext(StagingPool& pool) : pool_(pool) {}
  Status allocate_output(const TensorShape& shape, DataType dtype, std::shared_ptr<Tensor>* out) override {
    StatusOr<std::shared_ptr<char>> lease = pool_.lease(shape.num_elements() * dtype_size(dtype));
    if (!lease.is_ok()) return lease.status();
    *out = std::make_shared<LeasedHostTensor>(std::move(lease).value(), dtype, shape);
    return Status::ok();
  }
  Status allocate_zeros(const TensorShape& shape, DataType dtype, std::shared_ptr<Tensor>* out) override {
    Status s = allocate_output(shape, dtype, out);
    if (s.is_ok()) std::memset((*out)->mutable_data(), 0, static_cast<size_t>((*out)->size_bytes()));
    return s;
  }

 private:
  StagingPool& pool_;
};

// The devices the entries' inputs are on, each once, in order.
std::vector<int> devices_of(const std::vector<TensorEntry>& entries) {
  std::vector<int> devices;
  for (const TensorEntry& e : entries) {
    const int d = e.input->device();
    bool seen = false;
    for (int x : devices) seen = seen || x == d;
    if (!seen) devices.push_back(d);
  }
  return devices;
}

// Queues, per input: wait for its ready point, copy it to its offset.
Status queue_copies_in(StagedJob& job, DeviceMemory& memory) {
  for (size_t i = 0; i < job.entries.size(); ++i) {
    const TensorEntry& e = job.entries[i];
    const int device = e.input->device();
    if (e.ready) {
      Status s = memory.wait(device, *e.ready);
      if (!s.is_ok()) return s;
    }
    const int64_t bytes = bytes_of(e.request);
    if (bytes == 0) continue;
    Status s = memory.copy_to_host(device, job.staging.get() + job.offsets[i], e.input->data(), bytes);
    if (!s.is_ok()) return s;
  }
  for (int device : devices_of(job.entries)) {
    StatusOr<std::shared_ptr<DeviceMark>> end = memory.mark(device);
    if (!end.is_ok()) return end.status();
    job.copied_in.push_back(std::move(end).value());
  }
  return Status::ok();
}

}  // namespace

std::shared_ptr<OpContext> staging_op_context(StagingPool& pool) { return std::make_shared<StagingOpContext>(pool); }

int64_t staging_layout(const std::vector<TensorEntry>& entries, std::vector<int64_t>* offsets) {
  offsets->clear();
  int64_t at = 0;
  for (const TensorEntry& e : entries) {
    offsets->push_back(at);
    at += (bytes_of(e.request) + kStagingAlign - 1) / kStagingAlign * kStagingAlign;
  }
  return at;
}

StagedJob stage_in(const Response& response, std::vector<TensorEntry> entries, DeviceMemory& memory,
                   StagingPool& pool, const std::shared_ptr<OpContext>& host_outputs) {
  StagedJob job;
  job.response = response;
  job.entries = std::move(entries);
  for (const TensorEntry& e : job.entries) job.names += (job.names.empty() ? "'" : ", '") + e.name() + "'";
  const int64_t total = staging_layout(job.entries, &job.offsets);
  // Pinned memory is allocated with the tensors' device current (this is
  // the background thread, on which nothing else set one).
  const Status current = memory.use_device(job.entries.front().input->device());
  StatusOr<std::shared_ptr<char>> lease = current.is_ok() ? pool.lease(total) : StatusOr<std::shared_ptr<char>>(current);
  if (lease.is_ok()) {
    job.staging = std::move(lease).value();
    job.queued = queue_copies_in(job, memory);
  } else {
    // This rank still takes part in the host collective, so no rank waits
    // for it; its tensors fail with the reason.
    job.queued = lease.status();
    job.staging = std::shared_ptr<char>(new char[static_cast<size_t>(total) + 1], std::default_delete<char[]>());
  }
  for (size_t i = 0; i < job.entries.size(); ++i) {
    const TensorEntry& e = job.entries[i];
    TensorEntry h;
    h.request = e.request;
    h.request.device = kCpuDevice;
    h.request.device_kind = DeviceKind::kCpu;
    h.input = std::make_shared<HostTensorView>(job.staging.get() + job.offsets[i], e.request.dtype,
                                               TensorShape(e.request.shape));
    if (in_place_on_staging(response.type)) h.output = h.input;
    h.hooks.context = host_outputs;
    h.handle = std::make_shared<HandleState>();  // where the host executor leaves its outputs
    job.host.push_back(std::move(h));
  }
  return job;
}

namespace {

// The device tensor the result of entry `i` goes to, allocated now when the
// negotiation decided its size.
StatusOr<std::shared_ptr<Tensor>> device_target(StagedJob& job, size_t i, DeviceMemory& memory, const Logger& logger) {
  TensorEntry& e = job.entries[i];
  if (in_place_on_staging(job.response.type)) return e.output;
  // The framework's allocator (a C user's cudaMalloc) works on the current
  // device: the input's, not whatever this thread had.
  const Status current = memory.use_device(e.input->device());
  if (!current.is_ok()) return current;
  const std::shared_ptr<Tensor> host_out = job.host[i].handle->output();
  if (!host_out) return Status::internal("the staged " + std::string(collective_name(e.request.type)) +
                                         " of tensor '" + e.name() + "' left no host output");
  OutputSlot slot = allocate_output(e, host_out->shape(), logger);
  if (!slot.alloc.is_ok()) return slot.alloc;
  if (slot.tensor->device() != e.input->device()) {
    return Status::invalid_argument("the OpContext allocated the output on device " +
                                    std::to_string(slot.tensor->device()) + ", not on the input's CUDA device " +
                                    std::to_string(e.input->device()));
  }
  return slot.tensor;
}

// Makes the staging stream wait until the output may be written: for the
// caller's out-of-place output, its ready point from enqueue; for one just
// allocated, the current end of its stream (a caching allocator may hand
// out a block whose last user's kernels are still queued there; no stream,
// nullptr, is the legacy default stream, which the staging stream does not
// wait for by itself).
Status wait_for_output(const TensorEntry& e, const Tensor& out, bool callers_output, DeviceMemory& memory) {
  const int device = e.input->device();
  if (callers_output) return e.output_ready ? memory.wait(device, *e.output_ready) : Status::ok();
  StatusOr<std::shared_ptr<DeviceMark>> free_point = memory.record(device, out.stream());
  if (!free_point.is_ok()) return free_point.status();
  return memory.wait(device, *free_point.value());
}

}  // namespace

StatusOr<std::vector<std::shared_ptr<DeviceMark>>> stage_out(StagedJob& job, std::vector<Status>& each,
                                                             DeviceMemory& memory, const Logger& logger) {
  job.device_outputs.assign(job.entries.size(), nullptr);
  for (size_t i = 0; i < job.entries.size(); ++i) {
    if (!each[i].is_ok()) continue;
    const TensorEntry& e = job.entries[i];
    StatusOr<std::shared_ptr<Tensor>> target = device_target(job, i, memory, logger);
    if (!target.is_ok()) {
      each[i] = Status(target.status().code(), std::string(collective_name(e.request.type)) + " of tensor '" +
                                                   e.name() + "': " + target.status().message());
      continue;
    }
    std::shared_ptr<Tensor> out = std::move(target).value();
    Status ordered = wait_for_output(e, *out, in_place_on_staging(job.response.type), memory);
    if (!ordered.is_ok()) return ordered;
    const Tensor& result = in_place_on_staging(job.response.type) ? *job.host[i].input : *job.host[i].handle->output();
    if (result.size_bytes() > 0) {
      Status s = memory.copy_to_device(e.input->device(), out->mutable_data(), result.data(), result.size_bytes());
      if (!s.is_ok()) return s;
    }
    if (!in_place_on_staging(job.response.type)) job.device_outputs[i] = std::move(out);
  }
  std::vector<std::shared_ptr<DeviceMark>> ends;
  for (int device : devices_of(job.entries)) {
    StatusOr<std::shared_ptr<DeviceMark>> end = memory.mark(device);
    if (!end.is_ok()) return end.status();
    ends.push_back(std::move(end).value());
  }
  return ends;
}

}  // namespace chorus::detail
