#pragma once
// A DeviceMemory over host memory, for testing what runs on CUDA tensors
// without a GPU: "device" pointers are host pointers, and each device's
// staging stream is a queue of operations that runs lazily, in order, when
// one of its marks is polled, so the code under test sees work that is not
// done yet exactly as it would on a GPU. A producer's stream is a
// FakeProducer (passed as the tensor's stream()): its ready point completes
// when the test releases it. A gate, when set, holds every copy back to the
// device until released.

#include <atomic>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "chorus/tensor.h"
#include "engine/device_memory.h"

namespace chorus::test {

/// A point the test completes by hand: a producer's work, a gate.
class FakeGate final : public detail::DeviceMark {
 public:
  explicit FakeGate(bool open = false) : open_(open) {}
  void release() { open_.store(true); }
  Status query() const override { return open_.load() ? Status::ok() : Status::in_progress(); }
  void* native() const override { return nullptr; }

 private:
  std::atomic<bool> open_;
};

/// A producer's stream: tensors enqueued with it as their stream() are ready
/// when release() is called (work queued on it before the enqueue).
struct FakeProducer {
  std::shared_ptr<FakeGate> ready = std::make_shared<FakeGate>();
};

class FakeDeviceMemory final : public detail::DeviceMemory {
 public:
  detail::StatusOr<std::shared_ptr<detail::DeviceMark>> record(int, void* stream) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++records;
    if (stream == nullptr) return kept(std::make_shared<FakeGate>(true));
    return kept(static_cast<FakeProducer*>(stream)->ready);
  }
  Status wait(int device, const detail::DeviceMark& mark) override {
    std::lock_guard<std::mutex> lock(mu_);
    streams_[device].push_back({&mark, nullptr, nullptr, 0, -1, nullptr});
    ++waits;
    return Status::ok();
  }
  Status copy_to_host(int device, void* host, const void* dev, int64_t bytes) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (fail_copies_to_host) return Status::unknown_error("cudaMemcpyAsync(device to host) failed: fake failure");
    streams_[device].push_back({nullptr, host, dev, bytes, -1, nullptr});
    ++copies_to_host;
    return Status::ok();
  }
  Status copy_to_device(int device, void* dev, const void* host, int64_t bytes) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (gate) streams_[device].push_back({gate.get(), nullptr, nullptr, 0, -1, gate});
    streams_[device].push_back({nullptr, dev, host, bytes, -1, nullptr});
    ++copies_to_device;
    return Status::ok();
  }
  detail::StatusOr<std::shared_ptr<detail::DeviceMark>> mark(int device) override {
    std::lock_guard<std::mutex> lock(mu_);
    const int id = next_mark_++;
    streams_[device].push_back({nullptr, nullptr, nullptr, 0, id, nullptr});
    return kept(std::make_shared<StreamMark>(this, device, id));
  }
  Status use_device(int device) override {
    std::lock_guard<std::mutex> lock(mu_);
    current_[std::this_thread::get_id()] = device;
    return Status::ok();
  }
  /// The device use_device made current on the calling thread; -1 if none.
  int current_device() {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = current_.find(std::this_thread::get_id());
    return it == current_.end() ? -1 : it->second;
  }
  detail::StatusOr<std::shared_ptr<void>> allocate_pinned(int64_t bytes) override {
    const int device = current_device();
    std::lock_guard<std::mutex> lock(mu_);
    pinned_on.push_back(device);
    ++pinned_allocations;
    return std::shared_ptr<void>(new char[static_cast<size_t>(bytes) + 1], [](void* p) { delete[] static_cast<char*>(p); });
  }

  // Counters and switches the tests read and set (under no lock: set them
  // before the work starts, read them after it ended).
  int records = 0, waits = 0, copies_to_host = 0, copies_to_device = 0, pinned_allocations = 0;
  std::vector<int> pinned_on;  ///< the current device at each pinned allocation
  bool fail_copies_to_host = false;
  std::shared_ptr<FakeGate> gate;  ///< holds copies back to the device while closed

 private:
  struct Op {
    const detail::DeviceMark* wait_for;  // a wait: blocks the stream until done
    void* to;
    const void* from;
    int64_t bytes;
    int mark;                                   // >= 0: a mark
    std::shared_ptr<detail::DeviceMark> keep;  // keeps a gate alive while queued
  };
  class StreamMark final : public detail::DeviceMark {
   public:
    StreamMark(FakeDeviceMemory* memory, int device, int id) : memory_(memory), device_(device), id_(id) {}
    Status query() const override { return memory_->reached(device_, id_) ? Status::ok() : Status::in_progress(); }
    void* native() const override { return nullptr; }

   private:
    FakeDeviceMemory* memory_;
    int device_, id_;
  };

  // Runs the device's queue as far as it can; whether mark `id` was passed.
  bool reached(int device, int id) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& ops = streams_[device];
    while (!ops.empty()) {
      Op& op = ops.front();
      if (op.wait_for != nullptr && !op.wait_for->query().is_ok()) break;
      if (op.to != nullptr && op.bytes > 0) std::memcpy(op.to, op.from, static_cast<size_t>(op.bytes));
      if (op.mark >= 0) passed_[device] = op.mark;
      ops.pop_front();
    }
    auto it = passed_.find(device);
    return it != passed_.end() && it->second >= id;
  }

  // A wait queued on a stream reads its mark later, maybe after the caller
  // dropped it (as CUDA keeps an event's state from cudaStreamWaitEvent):
  // every mark made here lives as long as the fake.
  std::shared_ptr<detail::DeviceMark> kept(std::shared_ptr<detail::DeviceMark> mark) {
    made_.push_back(mark);
    return mark;
  }
  std::vector<std::shared_ptr<detail::DeviceMark>> made_;
  std::mutex mu_;
  std::map<int, std::deque<Op>> streams_;
  std::map<int, int> passed_;  // the last mark each stream passed
  std::map<std::thread::id, int> current_;  // use_device, per thread
  int next_mark_ = 0;
};

/// A tensor in fake device memory that owns its bytes (outputs allocated
/// after negotiation, and the tests' own tensors).
class FakeDeviceTensor final : public Tensor {
 public:
  FakeDeviceTensor(DataType dtype, TensorShape shape, int device, FakeProducer* producer = nullptr)
      : dtype_(dtype), shape_(std::move(shape)), device_(device), producer_(producer),
        bytes_(static_cast<size_t>(shape_.num_elements() * dtype_size(dtype)) + 1) {}
  DataType dtype() const override { return dtype_; }
  TensorShape shape() const override { return shape_; }
  const void* data() const override { return bytes_.data(); }
  void* mutable_data() override { return bytes_.data(); }
  int64_t size_bytes() const override { return shape_.num_elements() * dtype_size(dtype_); }
  int device() const override { return device_; }
  void* stream() const override { return producer_; }
  template <class T>
  T* as() { return reinterpret_cast<T*>(bytes_.data()); }

 private:
  DataType dtype_;
  TensorShape shape_;
  int device_;
  FakeProducer* producer_;
  std::vector<char> bytes_;
};

/// Allocates outputs in fake device memory on `device`, on `producer`'s
/// stream when given (a block whose last user's work may still be queued);
/// with `memory`, records the device current at each allocation.
class FakeDeviceContext final : public OpContext {
 public:
  explicit FakeDeviceContext(int device, FakeDeviceMemory* memory = nullptr, FakeProducer* producer = nullptr)
      : device_(device), memory_(memory), producer_(producer) {}
  Status allocate_output(const TensorShape& shape, DataType dtype, std::shared_ptr<Tensor>* out) override {
    if (memory_) current_at_allocation.push_back(memory_->current_device());
    *out = std::make_shared<FakeDeviceTensor>(dtype, shape, device_, producer_);
    return Status::ok();
  }
  std::vector<int> current_at_allocation;  ///< read after the work ended
  Status allocate_zeros(const TensorShape& shape, DataType dtype, std::shared_ptr<Tensor>* out) override {
    Status s = allocate_output(shape, dtype, out);
    std::memset((*out)->mutable_data(), 0, static_cast<size_t>((*out)->size_bytes()));
    return s;
  }

 private:
  int device_;
  FakeDeviceMemory* memory_;
  FakeProducer* producer_;
};

}  // namespace chorus::test
