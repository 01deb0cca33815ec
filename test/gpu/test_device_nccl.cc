// On a GPU: streams and events, and the toolkit end to end with the installed
// NCCL on one rank (pack -> ncclAllReduce on the fusion buffer -> unpack).
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "device_buffer.h"
#include "device/cuda/device_fusion.h"
#include "device/cuda/device_stream.h"
#include "device/cuda/gpu_errors.h"
#include "device/cuda/nccl_symbols.h"
#include "kernels/reduce_kernels.h"

using namespace chorus;
using namespace chorus::detail;
using namespace chorus::detail::gpu;
using chorus::test::DeviceBuffer;

TEST_CASE("Streams and events: order work and report completion without blocking", "[device][stream]") {
  DeviceStream producer, consumer;
  REQUIRE(DeviceStream::create(0, &producer).is_ok());
  REQUIRE(DeviceStream::create(0, &consumer).is_ok());
  DeviceEvent ready;
  REQUIRE(DeviceEvent::create(0, &ready).is_ok());
  std::vector<char> host(1 << 20, 7);
  DeviceBuffer a(host.size()), b(host.size());
  REQUIRE(cudaMemcpyAsync(a.data(), host.data(), host.size(), cudaMemcpyHostToDevice, producer.get()) == cudaSuccess);
  REQUIRE(ready.record(producer.get()).is_ok());
  REQUIRE(ready.make_wait(consumer.get()).is_ok());  // b must see a's bytes
  REQUIRE(cudaMemcpyAsync(b.data(), a.data(), host.size(), cudaMemcpyDeviceToDevice, consumer.get()) == cudaSuccess);
  DeviceEvent done;
  REQUIRE(DeviceEvent::create(0, &done).is_ok());
  REQUIRE(done.record(consumer.get()).is_ok());
  chorus::Status s = done.query();
  while (s.code() == chorus::StatusCode::kInProgress) s = done.query();
  REQUIRE(s.is_ok());
  CHECK(b.download() == host);
  DeviceStream moved = std::move(producer);
  CHECK(moved.get() != nullptr);
  CHECK(producer.get() == nullptr);
}

TEST_CASE("A released event is handed out again and orders work as a new one", "[device][stream]") {
  cudaEvent_t first = nullptr;
  {
    DeviceEvent e;
    REQUIRE(DeviceEvent::create(0, &e).is_ok());
    first = e.get();
  }  // released to the device's pool
  DeviceStream producer, consumer;
  REQUIRE(DeviceStream::create(0, &producer).is_ok());
  REQUIRE(DeviceStream::create(0, &consumer).is_ok());
  DeviceEvent reused;
  REQUIRE(DeviceEvent::create(0, &reused).is_ok());
  CHECK(reused.get() == first);
  std::vector<char> host(4 << 20, 3);
  DeviceBuffer a(host.size()), b(host.size());
  REQUIRE(cudaMemcpyAsync(a.data(), host.data(), host.size(), cudaMemcpyHostToDevice, producer.get()) == cudaSuccess);
  REQUIRE(reused.record(producer.get()).is_ok());
  REQUIRE(reused.make_wait(consumer.get()).is_ok());
  REQUIRE(cudaMemcpyAsync(b.data(), a.data(), host.size(), cudaMemcpyDeviceToDevice, consumer.get()) == cudaSuccess);
  REQUIRE(cudaStreamSynchronize(consumer.get()) == cudaSuccess);
  CHECK(b.download() == host);
  DeviceEvent other;  // never the one still held
  REQUIRE(DeviceEvent::create(0, &other).is_ok());
  CHECK(other.get() != first);
}

TEST_CASE("A stream on a device that does not exist names the call", "[device][stream]") {
  DeviceStream s;
  chorus::Status status = DeviceStream::create(4096, &s);
  CHECK_FALSE(status.is_ok());
  CHECK(status.message().find("cudaSetDevice(4096) failed: ") == 0);
}

TEST_CASE("One-rank NCCL allreduce over the packed fusion buffer", "[device][nccl]") {
  NcclSymbols symbols;
  REQUIRE(load_nccl(&symbols).is_ok());
  ncclComm_t comm = nullptr;
  int device = 0;
  REQUIRE(nccl_status(ncclCommInitAll(&comm, 1, &device), "ncclCommInitAll").is_ok());
  DeviceStream stream;
  REQUIRE(DeviceStream::create(0, &stream).is_ok());

  std::vector<int64_t> counts;
  for (int i = 0; i < 2 * kMaxCopiesPerLaunch + 5; ++i) counts.push_back(1 + (i * 37) % 301);
  CopyPlan plan;
  std::string error;
  REQUIRE(plan_copies(counts, 4, kMaxCopiesPerLaunch, &plan, &error));
  std::vector<float> input;
  for (int64_t c : counts) for (int64_t j = 0; j < c; ++j) input.push_back(static_cast<float>(j % 97) - 48.5f);
  const size_t bytes = input.size() * sizeof(float);
  DeviceBuffer in(bytes), out(bytes), fusion(static_cast<size_t>(plan.buffer_bytes));
  in.upload(std::vector<char>(reinterpret_cast<char*>(input.data()), reinterpret_cast<char*>(input.data()) + bytes));
  std::vector<DevicePiece> pieces;
  int64_t at = 0;
  for (int64_t c : counts) {
    pieces.push_back({in.data() + at * 4, out.data() + at * 4, c});
    at += c;
  }
  const chorus::Status packed = pack_pieces(pieces, DataType::kFloat32, 0.5, plan, fusion.data(), stream.get());
  INFO(packed.message());
  REQUIRE(packed.is_ok());
  REQUIRE(nccl_status(ncclAllReduce(fusion.data(), fusion.data(), static_cast<size_t>(plan.buffer_bytes / 4), ncclFloat,
                                    ncclSum, comm, stream.get()),
                      "ncclAllReduce", comm)
              .is_ok());
  REQUIRE(unpack_pieces(pieces, DataType::kFloat32, {4.0, 1}, plan, fusion.data(), stream.get()).is_ok());
  REQUIRE(cudaStreamSynchronize(stream.get()) == cudaSuccess);
  std::vector<char> result = out.download();
  std::vector<float> expected(input.size());
  scale_copy(expected.data(), input.data(), static_cast<int64_t>(input.size()), DataType::kFloat32, 2.0, 1);
  CHECK(std::memcmp(result.data(), expected.data(), bytes) == 0);

  // A bad call names itself and NCCL's reason.
  // (A datatype NCCL does not have: it accepts null buffers at one rank.)
  chorus::Status bad = nccl_status(ncclAllReduce(fusion.data(), fusion.data(), 4, static_cast<ncclDataType_t>(255),
                                                 ncclSum, comm, stream.get()),
                                   "ncclAllReduce(test)", comm);
  CHECK_FALSE(bad.is_ok());
  CHECK(bad.message().find("ncclAllReduce(test) failed: ") == 0);
  REQUIRE(ncclCommFinalize(comm) == ncclSuccess);
  REQUIRE(ncclCommDestroy(comm) == ncclSuccess);
}
