// CudaRig: the benchmark's only CUDA and NCCL code (cuda_rig.h).
#include "cuda_rig.h"

#include <cstring>
#include <stdexcept>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "bench_util.h"

namespace bench {

namespace {

void check(cudaError_t r, const char* call) {
  if (r != cudaSuccess) throw std::runtime_error(std::string(call) + ": " + cudaGetErrorString(r));
}
void check(ncclResult_t r, const char* call) {
  if (r != ncclSuccess) throw std::runtime_error(std::string(call) + ": " + ncclGetErrorString(r));
}
#define BENCH_CHECK(x) check((x), #x)

cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }

}  // namespace

int cuda_device_count(std::string* why) {
  int n = 0;
  const cudaError_t r = cudaGetDeviceCount(&n);
  if (r == cudaSuccess && n > 0) return n;
  if (why) *why = r == cudaSuccess ? "no device" : cudaGetErrorString(r);
  return 0;
}

CudaRig::CudaRig(int device) : device_(device) {
  BENCH_CHECK(cudaSetDevice(device));
  cudaStream_t s = nullptr;
  BENCH_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  stream_ = s;
}

CudaRig::~CudaRig() {
  cudaSetDevice(device_);
  if (stream_) cudaStreamSynchronize(as_stream(stream_));
  if (comm_) ncclCommDestroy(static_cast<ncclComm_t>(comm_));
  if (stream_) cudaStreamDestroy(as_stream(stream_));
  if (pinned_) cudaFreeHost(pinned_);
}

std::vector<uint8_t> CudaRig::new_nccl_id() {
  static_assert(sizeof(ncclUniqueId) == kNcclIdBytes, "ncclUniqueId size");
  ncclUniqueId id;
  BENCH_CHECK(ncclGetUniqueId(&id));
  std::vector<uint8_t> bytes(kNcclIdBytes);
  std::memcpy(bytes.data(), &id, bytes.size());
  return bytes;
}

void CudaRig::open_nccl(const std::vector<uint8_t>& id_bytes, int rank, int size) {
  ncclUniqueId id;
  if (id_bytes.size() != sizeof(id)) throw std::runtime_error("ncclUniqueId of the wrong size");
  std::memcpy(&id, id_bytes.data(), sizeof(id));
  BENCH_CHECK(cudaSetDevice(device_));
  ncclComm_t comm = nullptr;
  BENCH_CHECK(ncclCommInitRank(&comm, size, id, rank));
  comm_ = comm;
}

std::shared_ptr<float> CudaRig::device_floats(int64_t n) {
  BENCH_CHECK(cudaSetDevice(device_));
  void* p = nullptr;
  BENCH_CHECK(cudaMalloc(&p, static_cast<size_t>(n) * sizeof(float)));
  return std::shared_ptr<float>(static_cast<float*>(p), [](float* q) { cudaFree(q); });
}

float* CudaRig::pinned(int64_t n) {
  if (n > pinned_floats_) {
    if (pinned_) BENCH_CHECK(cudaFreeHost(pinned_));
    pinned_ = nullptr;
    void* p = nullptr;
    BENCH_CHECK(cudaMallocHost(&p, static_cast<size_t>(n) * sizeof(float)));
    pinned_ = static_cast<float*>(p);
    pinned_floats_ = n;
  }
  return pinned_;
}

void CudaRig::fill_inputs(float* dst, int64_t n, int rank, int64_t offset) {
  synchronize();  // the staging buffer's last copy has run
  float* host = pinned(n);
  for (int64_t i = 0; i < n; ++i) host[i] = exact_input(rank, offset + i);
  BENCH_CHECK(cudaMemcpyAsync(dst, host, static_cast<size_t>(n) * sizeof(float), cudaMemcpyHostToDevice,
                              as_stream(stream_)));
}

void CudaRig::zero(float* dst, int64_t n) {
  BENCH_CHECK(cudaMemsetAsync(dst, 0, static_cast<size_t>(n) * sizeof(float), as_stream(stream_)));
}

int64_t CudaRig::count_wrong(const float* dst, int64_t n, int size, int64_t offset) {
  // Only this rig's stream is waited for, not Chorus's: a completed handle
  // must mean its result is in place, and a wrong count shows it when not.
  synchronize();
  BENCH_CHECK(cudaSetDevice(device_));
  float* host = pinned(n);
  BENCH_CHECK(cudaMemcpy(host, dst, static_cast<size_t>(n) * sizeof(float), cudaMemcpyDeviceToHost));
  int64_t wrong = 0;
  for (int64_t i = 0; i < n; ++i) wrong += host[i] != exact_sum(size, offset + i);
  return wrong;
}

void CudaRig::raw_allreduce(const float* in, float* out, int64_t n) {
  if (!comm_) throw std::runtime_error("raw_allreduce without an NCCL communicator");
  BENCH_CHECK(ncclAllReduce(in, out, static_cast<size_t>(n), ncclFloat32, ncclSum, static_cast<ncclComm_t>(comm_),
                            as_stream(stream_)));
}

void CudaRig::synchronize() { BENCH_CHECK(cudaStreamSynchronize(as_stream(stream_))); }

}  // namespace bench
