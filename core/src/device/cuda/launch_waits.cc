#include "device/cuda/launch_waits.h"

#include "device/cuda/device_stream.h"
#include "device/cuda/gpu_errors.h"

namespace chorus::detail::gpu {

// The launch stream waits on the device for each input's producer: never a
// host-side synchronize (Horovod's PR 363 bug was not waiting at all).
// Tensors enqueued together share one ready point (Engine::ready_mark)
// and sit side by side in the response: an event is waited for once per run.
Status wait_ready_points(const std::vector<TensorEntry>& entries, const NcclOperationsSettings& settings, int device,
                         cudaStream_t stream) {
  bool legacy = false;
  void* last = nullptr;
  auto wait_once = [&](void* event, const TensorEntry& e, const char* which) {
    if (event == last) return Status::ok();
    last = event;
    const cudaError_t r = cudaStreamWaitEvent(stream, static_cast<cudaEvent_t>(event), 0);
    return r == cudaSuccess ? Status::ok()
                            : cuda_status(r, std::string("cudaStreamWaitEvent(ready point of ") + which + "'" + e.name() + "')");
  };
  for (const auto& e : entries) {
    void* event = settings.ready_event ? settings.ready_event(e) : nullptr;
    if (event == nullptr) {
      legacy = true;
      continue;
    }
    Status s = wait_once(event, e, "");
    if (!s.is_ok()) return s;
    void* output_event = settings.output_ready_event ? settings.output_ready_event(e) : nullptr;
    if (output_event == nullptr) continue;
    s = wait_once(output_event, e, "the output of ");
    if (!s.is_ok()) return s;
  }
  if (!legacy) return Status::ok();
  DeviceEvent mark;
  Status s = DeviceEvent::create(device, &mark);
  if (s.is_ok()) s = mark.record(cudaStreamLegacy);
  if (s.is_ok()) s = mark.make_wait(stream);
  return s;  // destroying a waited-on event is fine: the wait keeps its point
}

// The launch stream waits for the current end of each allocated output's
// stream (as the staged path does), so no collective writes a block whose
// previous user's kernels are still queued.
Status wait_for_streams(const std::vector<cudaStream_t>& streams, int device, cudaStream_t stream) {
  cudaStream_t last = stream;  // outputs of one response mostly share a stream: one wait for a run
  for (cudaStream_t other : streams) {
    if (other == last) continue;
    last = other;
    DeviceEvent freed;
    Status s = DeviceEvent::create(device, &freed);
    if (s.is_ok()) s = freed.record(other);
    if (s.is_ok()) s = freed.make_wait(stream);
    if (!s.is_ok()) return Status(s.code(), "waiting for an allocated output's stream: " + s.message());
  }
  return Status::ok();
}

}  // namespace chorus::detail::gpu
