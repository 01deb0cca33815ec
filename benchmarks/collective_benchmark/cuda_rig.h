#pragma once
// The benchmark's CUDA side behind a CUDA-free interface: cuda_rig.cc is the
// only file of the benchmark that includes CUDA or NCCL headers.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace bench {

/// Number of CUDA devices; 0 when there is none or no usable driver, with
/// CUDA's reason in `why` when given.
int cuda_device_count(std::string* why = nullptr);

/// Bytes of an ncclUniqueId.
constexpr int kNcclIdBytes = 128;

/// One CUDA device with one non-blocking stream: the "producer" that writes
/// the inputs (named as the tensors' stream(), so Chorus must wait for it)
/// and where the raw NCCL reference runs. Errors throw std::runtime_error
/// naming the CUDA or NCCL call.
class CudaRig {
 public:
  explicit CudaRig(int device);
  ~CudaRig();
  CudaRig(const CudaRig&) = delete;
  CudaRig& operator=(const CudaRig&) = delete;

  int device() const { return device_; }
  void* stream() const { return stream_; }

  /// A new ncclUniqueId (rank 0 makes it; the others get its bytes).
  static std::vector<uint8_t> new_nccl_id();
  /// The raw reference communicator over `size` ranks (blocking init).
  void open_nccl(const std::vector<uint8_t>& id, int rank, int size);
  bool has_nccl() const { return comm_ != nullptr; }

  /// `n` floats of device memory, freed when the pointer goes.
  std::shared_ptr<float> device_floats(int64_t n);
  /// Queues exact_input(rank, offset + i) into dst[0..n) on the stream.
  void fill_inputs(float* dst, int64_t n, int rank, int64_t offset);
  /// Queues zeros into dst[0..n) on the stream (not waited for).
  void zero(float* dst, int64_t n);
  /// Waits for the stream (not for Chorus's), copies dst to the host and counts
  /// elements that differ from exact_sum(size, offset + i).
  int64_t count_wrong(const float* dst, int64_t n, int size, int64_t offset);
  /// Raw ncclAllReduce (float32 sum) on the stream; not waited for.
  void raw_allreduce(const float* in, float* out, int64_t n);
  /// Waits for everything queued on the stream.
  void synchronize();

 private:
  int device_;
  void* stream_ = nullptr;   // cudaStream_t
  void* comm_ = nullptr;     // ncclComm_t
  float* pinned_ = nullptr;  // host staging for fill_inputs / count_wrong
  int64_t pinned_floats_ = 0;
  float* pinned(int64_t n);
};

}  // namespace bench
