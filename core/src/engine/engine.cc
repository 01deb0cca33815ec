#include "engine/engine.h"

#include <algorithm>
#include <cstdlib>
#include <future>
#include <new>

#include "kernels/reduce_kernels.h"
#include "chorus/error.h"
#include "common/env_params.h"
#include "engine/job_end.h"

namespace chorus::detail {

Engine::Engine(std::unique_ptr<Backend> backend, RuntimeOptions options, std::shared_ptr<SharedStats> stats,
               std::shared_ptr<const DeviceSupport> device, BackgroundLoop::FaultListener on_device_fault)
    : options_(options),
      logger_(options.log_level),
      on_device_fault_(std::move(on_device_fault)),
      backend_(std::move(backend)),
      stats_(stats ? std::move(stats) : std::make_shared<SharedStats>()),
      device_(device ? std::move(device) : std::make_shared<const DeviceSupport>()) {
  queue_.set_wake_on_add(options_.wake_on_enqueue);
  std::promise<Status> started;
  auto ready = started.get_future();
  thread_ = std::thread([this, &started] { thread_main(&started); });
  Status s = ready.get();
  if (!s.is_ok()) {
    thread_.join();
    throw_if_error(s);
  }
}

Engine::~Engine() {
  shutdown();
  if (thread_.joinable()) thread_.join();
}

void Engine::thread_main(std::promise<Status>* started) {
  Status s = backend_->start();
  if (!s.is_ok()) {
    started->set_value(s);
    return;
  }
  topo_ = backend_->topology();
  arena_ = backend_->shared_arena();
  logger_.set_rank(topo_.scope.world_rank(topo_.rank));
  if (topo_.rank == 0 && topo_.scope.id == 0) {
    for (const std::string& var : unknown_chorus_variables()) {
      CHORUS_LOG(logger_, kWarning) << var << " is set, but this build of Chorus reads no such variable; "
                                    << "it is ignored (docs/tuning.md lists the knobs)";
    }
    for (const std::string& var : unread_horovod_variables()) {
      CHORUS_LOG(logger_, kWarning) << var << " is set, but Chorus has no such setting; it is ignored "
                                    << "(docs/tuning.md, \"Horovod's variables\")";
    }
  }
  const Status timeline_opened = timeline_.open(options_.timeline_path, topo_.rank, options_.timeline_mark_cycles);
  if (!timeline_opened.is_ok()) {
    CHORUS_LOG(logger_, kError) << timeline_opened.message() << "; running without a timeline";
  }
  {
    std::lock_guard<std::mutex> lock(loop_mu_);
    loop_ = std::make_unique<BackgroundLoop>(*backend_, queue_, options_, logger_, *stats_, timeline_, *device_,
                                             on_device_fault_);
  }
  running_.store(true);
  started->set_value(Status::ok());  // `started` is gone after this line
  loop_->run();
  running_.store(false);
  close_or_end_job(*backend_, logger_, LoopEnd{loop_->end_reason(), loop_->ended_by_stall()});
  backend_->stop();
}

namespace {
std::shared_ptr<void> ordinary_host_memory(int64_t bytes) {
  void* p = nullptr;
  const size_t size = static_cast<size_t>(std::max<int64_t>(bytes, 1) + 63) / 64 * 64;
  if (posix_memalign(&p, 64, size) != 0) throw std::bad_alloc();
  return std::shared_ptr<void>(p, [](void* q) { std::free(q); });
}
}  // namespace

std::shared_ptr<void> Engine::allocate_shared_host(int64_t bytes) {
  if (bytes < 0 || bytes > (int64_t{1} << 56)) {
    throw_if_error(Status::invalid_argument("allocate_shared_host: " + std::to_string(bytes) + " bytes"));
  }
  if (!arena_) return ordinary_host_memory(bytes);
  StatusOr<std::shared_ptr<void>> p = arena_->allocate(bytes);
  if (p.is_ok()) return std::move(p).value();
  // Correct either way, only slower: say it once rather than every step.
  if (!arena_fallback_said_.exchange(true)) {
    CHORUS_LOG(logger_, kWarning) << "allocate_shared_host(" << bytes << "): " << p.status().message()
                                  << "; returning ordinary memory (its allreduces stage through shared memory)";
  }
  return ordinary_host_memory(bytes);
}

void Engine::shutdown() {
  {
    std::lock_guard<std::mutex> lock(loop_mu_);
    if (loop_) loop_->request_shutdown();
  }
  // Two threads may shut down at once: one joins, the other waits for it.
  std::lock_guard<std::mutex> lock(join_mu_);
  if (thread_.joinable() && std::this_thread::get_id() != thread_.get_id()) thread_.join();
}

void Engine::request_shutdown(const std::string& reason) {
  std::lock_guard<std::mutex> lock(loop_mu_);
  if (loop_) loop_->request_shutdown(reason);
}

// The queue closes before pending handles fail, so a caller that saw its
// handle fail with "shut down" also sees is_running() == false.
bool Engine::is_running() const { return running_.load() && !queue_.closed(); }

// A device collective's waiter spins longer (HandleState::wait).
static std::shared_ptr<HandleState> make_handle_state(const TensorEntry& e) {
  return std::make_shared<HandleState>(e.request.device_kind == DeviceKind::kCpu ? HandleState::kHostWaitSpin
                                                                                 : HandleState::kDeviceWaitSpin);
}

std::vector<Handle> Engine::enqueue(std::vector<TensorEntry> entries) {
  std::vector<Handle> handles;
  handles.reserve(entries.size());
  const auto now = std::chrono::steady_clock::now();
  std::vector<TensorEntry*> on_device;
  for (auto& e : entries) {
    if (e.request.device_kind != DeviceKind::kCpu) on_device.push_back(&e);
  }
  if (!on_device.empty()) prepare_or_refuse(std::move(on_device));
  for (auto& e : entries) {
    e.enqueued = now;
    e.handle = make_handle_state(e);
    handles.push_back(Handle(e.handle));
  }
  throw_if_error(queue_.add(std::move(entries)));
  return handles;
}

Handle Engine::enqueue(TensorEntry entry) {
  if (entry.request.device_kind != DeviceKind::kCpu) prepare_or_refuse({&entry});
  entry.enqueued = std::chrono::steady_clock::now();
  entry.handle = make_handle_state(entry);
  Handle handle(entry.handle);
  throw_if_error(queue_.add(std::move(entry)));
  return handle;
}

void Engine::prepare_or_refuse(std::vector<TensorEntry*> entries) const {
  RecordedMarks recorded;
  Status failed;
  for (TensorEntry* e : entries) {
    if (failed.is_ok()) failed = prepare_device(*e, recorded);
  }
  if (failed.is_ok()) return;
  for (TensorEntry* e : entries) refuse(*e, failed.message());
}

// The message prefix is built only on failure: this runs per tensor.
static std::string device_what(const TensorEntry& e) {
  return std::string(collective_name(e.request.type)) + " of tensor '" + e.name() + "': ";
}

Status Engine::prepare_device(TensorEntry& e, RecordedMarks& recorded) const {
  const int device = e.input->device();
  if (!device_->memory) {
    return Status::invalid_argument(device_what(e) + "the tensor is on CUDA device " + std::to_string(device) +
                                    ", but this build of Chorus has no GPU support (built without CUDA: CHORUS_WITH_CUDA)");
  }
  const CollectiveType t = e.request.type;
  const bool output_after_negotiation =
      t == CollectiveType::kAllgather || t == CollectiveType::kAlltoall || t == CollectiveType::kReducescatter;
  if (output_after_negotiation && !e.hooks.context) {
    return Status::invalid_argument(device_what(e) + "its output is allocated after negotiation, on CUDA device " +
                                    std::to_string(device) + ": pass an OpContext that allocates there (OpHooks::context)");
  }
  StatusOr<std::shared_ptr<DeviceMark>> ready = ready_mark(device, e.input->stream(), recorded, e, "");
  if (!ready.is_ok()) return ready.status();
  e.ready = std::move(ready).value();
  // An out-of-place output on another stream may still be read or written
  // by work queued there: the copy back waits for that too.
  if (e.output && e.output != e.input && e.output->stream() != e.input->stream()) {
    StatusOr<std::shared_ptr<DeviceMark>> out =
        ready_mark(e.output->device(), e.output->stream(), recorded, e, "its output's ready point: ");
    if (!out.is_ok()) return out.status();
    e.output_ready = std::move(out).value();
  }
  return Status::ok();
}

StatusOr<std::shared_ptr<DeviceMark>> Engine::ready_mark(int device, void* stream, RecordedMarks& recorded,
                                                         const TensorEntry& e, const char* which) const {
  for (const auto& m : recorded.marks)
    if (m.device == device && m.stream == stream) return m.mark;
  StatusOr<std::shared_ptr<DeviceMark>> made = device_->memory->record(device, stream);
  if (!made.is_ok()) return Status(made.status().code(), device_what(e) + which + made.status().message());
  recorded.marks.push_back({device, stream, made.value()});
  return made;
}

}  // namespace chorus::detail
