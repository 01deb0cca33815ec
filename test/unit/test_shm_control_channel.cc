// The control plane through shared memory (comm/shm/shm_ring.h,
// comm/shm/shm_control_channel.h): order, messages longer than a ring (over the
// sockets, a marker keeping their place), wraparound, several workers at
// once, close(), and lost peers heard of through the transport's sockets.
#include <catch2/catch.hpp>

#include <dirent.h>
#include <unistd.h>

#include <atomic>
#include <deque>
#include <mutex>
#include <chrono>
#include <cstdint>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "comm/shm/shm_control_channel.h"
#include "comm/shm/shm_ring.h"
#include "comm/tcp/tcp_control_channel.h"
#include "comm/tcp/tcp_mesh.h"
#include "loopback_job.h"
#include "tcp_job.h"
#include "thread_ranks.h"

using namespace chorus;
using namespace chorus::detail;

namespace {

// Message `i` from `who`: its length varies (0 included, some longer than
// a small ring), every byte says which message it is.
std::string message_of(int who, int i, size_t longest) {
  const size_t n = (static_cast<size_t>(i) * 37 + static_cast<size_t>(who) * 11) % (longest + 1);
  std::string m(n, '\0');
  for (size_t k = 0; k < n; ++k) m[k] = static_cast<char>((who * 131 + i * 7 + static_cast<int>(k)) & 0xff);
  return m;
}

// Zeroed, 8-byte-aligned memory standing in for the shared segment.
struct Memory {
  explicit Memory(size_t bytes) : words(bytes / 8 + 1, 0) {}
  char* base() { return reinterpret_cast<char*>(words.data()); }
  std::vector<uint64_t> words;
};

// The transports' channels of an in-process job: per rank, what came to it
// over the "sockets", from which rank. They count polls and can break.
struct FakeNet {
  explicit FakeNet(int size) : inboxes(static_cast<size_t>(size)) {}
  std::mutex mu;
  std::vector<std::deque<std::pair<int, std::string>>> inboxes;
};

class FakeSockets final : public ControlChannel {
 public:
  FakeSockets(int rank, int size, FakeNet& net) : rank_(rank), size_(size), net_(net) {}
  Status send_to_coordinator(std::string bytes) override {
    std::lock_guard<std::mutex> lock(net_.mu);
    net_.inboxes[0].emplace_back(rank_, std::move(bytes));
    return Status::ok();
  }
  Status send_to_workers(const std::string& bytes) override {
    std::lock_guard<std::mutex> lock(net_.mu);
    for (int r = 1; r < size_; ++r) net_.inboxes[static_cast<size_t>(r)].emplace_back(0, bytes);
    return Status::ok();
  }
  bool poll_from_workers(int* from, std::string* bytes) override { return polled(from, bytes); }
  bool poll_from_coordinator(std::string* bytes) override { return polled(nullptr, bytes); }
  bool close(std::chrono::milliseconds) override { return closed = true; }
  Status failure() const override { return broken; }
  std::atomic<int> polls{0};
  bool closed = false;
  Status broken;

 private:
  bool polled(int* from, std::string* bytes) {
    ++polls;
    std::lock_guard<std::mutex> lock(net_.mu);
    auto& mine = net_.inboxes[static_cast<size_t>(rank_)];
    if (mine.empty()) return false;
    if (from) *from = mine.front().first;
    *bytes = std::move(mine.front().second);
    mine.pop_front();
    return true;
  }
  const int rank_, size_;
  FakeNet& net_;
};

// This process's segments only (they carry its pid; the ranks here are
// its threads): other jobs of a parallel ctest come and go meanwhile.
std::set<std::string> shm_names() {
  std::set<std::string> names;
  const std::string prefix = "chorus." + std::to_string(getpid()) + ".";
  if (DIR* d = opendir("/dev/shm")) {
    while (dirent* e = readdir(d)) {
      const std::string n = e->d_name;
      if (n.rfind(prefix, 0) == 0) names.insert(n);
    }
    closedir(d);
  }
  return names;
}

}  // namespace

TEST_CASE("A shared-memory ring keeps the order of its messages and of those sent the other way", "[shm_control]") {
  const size_t capacity = 256;
  Memory memory(ShmRing::bytes_for(capacity));
  ShmRing writer(memory.base(), capacity), reader(memory.base(), capacity);
  REQUIRE_FALSE(writer.write(std::string(capacity, 'x')));  // header + payload: more than the ring
  REQUIRE(writer.takes(capacity - 8));
  // One thread, writer and reader taking turns, the reader falling behind
  // now and then; what the ring does not take goes "the other way" (a
  // queue here); the cursors pass the end many times.
  std::deque<std::string> other_way;
  std::vector<int> sent_other_way;
  int next = 0, expected = 0;
  for (int step = 0; step < 4000; ++step) {
    const std::string m = message_of(0, next, capacity);
    if (!writer.write(m)) {
      writer.sent_elsewhere();
      other_way.push_back(m);
      sent_other_way.push_back(next);
    }
    ++next;
    if (step % 3 == 0) continue;
    for (int k = 0; k < 2; ++k) {  // the reader catches up by two
      std::string got;
      const ShmRing::Next n = reader.read(&got);
      if (n == ShmRing::Next::kNothing) {
        REQUIRE(expected == next);
        break;
      }
      if (n == ShmRing::Next::kElsewhere) {
        REQUIRE_FALSE(other_way.empty());
        got = other_way.front();
        other_way.pop_front();
        reader.took_elsewhere();
      }
      REQUIRE(got == message_of(0, expected, capacity));
      ++expected;
    }
  }
  REQUIRE(expected > 2000);
  REQUIRE(sent_other_way.size() > 100);                     // both ways were used
  REQUIRE(sent_other_way.size() < static_cast<size_t>(next) - 1000);
}

TEST_CASE("A shared-memory ring between two threads delivers every message whole and in order", "[shm_control]") {
  const size_t capacity = 1024;
  Memory memory(ShmRing::bytes_for(capacity));
  const int count = 20000;
  std::thread writer([&] {
    ShmRing ring(memory.base(), capacity);
    for (int i = 0; i < count; ++i) {
      while (!ring.write(message_of(1, i, capacity / 3))) std::this_thread::yield();
    }
  });
  ShmRing ring(memory.base(), capacity);
  int wrong = -1;
  for (int i = 0; i < count; ++i) {
    std::string got;
    ShmRing::Next n = ShmRing::Next::kNothing;
    while ((n = ring.read(&got)) == ShmRing::Next::kNothing) std::this_thread::yield();
    if (wrong < 0 && (n != ShmRing::Next::kMessage || got != message_of(1, i, capacity / 3))) wrong = i;
  }
  writer.join();
  REQUIRE(wrong == -1);
}

TEST_CASE("Shared-memory control: every worker's messages reach rank 0 in order, its replies every worker",
          "[shm_control]") {
  for (int size : {2, 3, 4}) {
    // Small rings: wraparound, and many messages over the sockets (too long,
    // or the reader behind), the ring keeping the order.
    const size_t ring = 1024 + 512 * static_cast<size_t>(size);
    Memory memory(ShmControlChannel::bytes_for(size, ring));
    FakeNet net(size);
    std::vector<std::unique_ptr<FakeSockets>> sockets;
    for (int r = 0; r < size; ++r) sockets.push_back(std::make_unique<FakeSockets>(r, size, net));
    const int count = 300;
    const size_t longest = 5 * ring;
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);  // a rank that failed
    const std::vector<std::string> wrong = test::on_thread_ranks<std::string>(size, [&](int rank) -> std::string {
      ShmControlChannel channel(rank, size, memory.base(), ring, nullptr, *sockets[static_cast<size_t>(rank)]);
      std::string bytes;
      auto late = [&] { return std::chrono::steady_clock::now() > give_up; };
      if (rank == 0) {
        std::vector<int> next(static_cast<size_t>(size), 0);
        int from = -1;
        for (int got = 0; got < count * (size - 1);) {
          if (late()) return "got " + std::to_string(got) + " messages only";
          if (!channel.poll_from_workers(&from, &bytes)) continue;
          if (from < 1 || from >= size) return "message from rank " + std::to_string(from);
          int& i = next[static_cast<size_t>(from)];
          if (bytes != message_of(from, i, longest)) return "message " + std::to_string(i) + " of rank " + std::to_string(from);
          ++i;
          ++got;
          if (got % 10 == 0) channel.send_to_workers(message_of(0, got / 10, longest));  // replies meanwhile
        }
      } else {
        int replies = 0;
        for (int i = 0; i < count || replies < count * (size - 1) / 10;) {
          if (late()) return "got " + std::to_string(replies) + " replies only";
          if (i < count) channel.send_to_coordinator(message_of(rank, i++, longest));
          if (!channel.poll_from_coordinator(&bytes)) continue;
          ++replies;
          if (bytes != message_of(0, replies, longest)) return "reply " + std::to_string(replies);
        }
      }
      if (!channel.close(std::chrono::seconds(10))) return "close timed out";
      if (!sockets[static_cast<size_t>(rank)]->closed) return "the transport's channel was not closed";
      return "";
    });
    for (int r = 0; r < size; ++r) {
      INFO("size " << size << " rank " << r);
      REQUIRE(wrong[static_cast<size_t>(r)] == "");
    }
  }
}

TEST_CASE("Shared-memory control: a send never waits for a reader that is busy elsewhere", "[shm_control]") {
  // One thread plays both ranks: the worker sends while rank 0 reads nothing
  // (in a collective that waits for this worker), then rank 0 reads.
  const size_t ring = 4096;
  Memory memory(ShmControlChannel::bytes_for(2, ring));
  FakeNet net(2);
  FakeSockets sockets0(0, 2, net), sockets1(1, 2, net);
  ShmControlChannel coordinator(0, 2, memory.base(), ring, nullptr, sockets0);
  ShmControlChannel worker(1, 2, memory.base(), ring, nullptr, sockets1);
  for (int i = 0; i < 200; ++i) REQUIRE(worker.send_to_coordinator(message_of(1, i, 3 * ring)).is_ok());
  REQUIRE(coordinator.send_to_workers(std::string(2 * ring, 'r')).is_ok());  // longer than the ring
  REQUIRE(coordinator.send_to_workers("short").is_ok());                    // after it, through the ring
  std::string bytes;
  int from = -1;
  for (int i = 0; i < 200; ++i) {
    REQUIRE(coordinator.poll_from_workers(&from, &bytes));
    REQUIRE(from == 1);
    REQUIRE(bytes == message_of(1, i, 3 * ring));
  }
  REQUIRE_FALSE(coordinator.poll_from_workers(&from, &bytes));
  REQUIRE(worker.poll_from_coordinator(&bytes));
  REQUIRE(bytes == std::string(2 * ring, 'r'));
  REQUIRE(worker.poll_from_coordinator(&bytes));
  REQUIRE(bytes == "short");
}

TEST_CASE("Shared-memory control: close() gives up after its bound when a rank never comes", "[shm_control]") {
  const int size = 3;
  Memory memory(ShmControlChannel::bytes_for(size, 2048));
  FakeNet net(size);
  std::vector<std::unique_ptr<FakeSockets>> sockets;
  for (int r = 0; r < size; ++r) sockets.push_back(std::make_unique<FakeSockets>(r, size, net));
  const auto start = std::chrono::steady_clock::now();
  const std::vector<int> closed = test::on_thread_ranks<int>(size, [&](int rank) {
    ShmControlChannel channel(rank, size, memory.base(), 2048, nullptr, *sockets[static_cast<size_t>(rank)]);
    if (rank == 2) return -1;  // stopped before its close
    const bool in_time = channel.close(std::chrono::milliseconds(300));
    return !in_time && channel.not_at_close() == std::vector<int>{2} ? 0 : 1;  // 0: gave up, naming rank 2
  });
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  REQUIRE(closed == std::vector<int>{0, 0, -1});
  REQUIRE(took >= 0.3);
  REQUIRE(took < 5);
}

TEST_CASE("Shared-memory control: the polls watch the sockets now and then, and report what they say",
          "[shm_control]") {
  Memory memory(ShmControlChannel::bytes_for(2, 2048));
  FakeNet net(2);
  FakeSockets sockets(0, 2, net);
  ShmControlChannel channel(0, 2, memory.base(), 2048, nullptr, sockets);
  int from = 0;
  std::string bytes;
  for (int i = 0; i < 1000; ++i) channel.poll_from_workers(&from, &bytes);
  REQUIRE(sockets.polls < 100);  // not a system call per poll
  std::this_thread::sleep_for(ShmControlChannel::kWatchInterval * 2);
  const int before = sockets.polls;
  channel.poll_from_workers(&from, &bytes);
  REQUIRE(sockets.polls > before);
  sockets.broken = Status::aborted("rank 0 lost its connection to rank 1");
  REQUIRE(channel.failure().message() == sockets.broken.message());
  REQUIRE(channel.send_to_workers("x").message() == sockets.broken.message());
  REQUIRE(channel.close(std::chrono::seconds(5)));  // a lost peer: only the transport's close
  REQUIRE(sockets.closed);
}

TEST_CASE("Shared-memory control over a real mesh: a rank whose process ends is named at once", "[shm_control][tcp]") {
  const int size = 3;
  std::vector<std::unique_ptr<TcpMesh>> meshes = test::tcp_meshes(size);
  REQUIRE(meshes.size() == static_cast<size_t>(size));
  Memory memory(ShmControlChannel::bytes_for(size, ShmControlChannel::kRingBytes));
  TcpControlChannel sockets0(*meshes[0]), sockets1(*meshes[1]);
  ShmControlChannel coordinator(0, size, memory.base(), ShmControlChannel::kRingBytes, nullptr, sockets0);
  ShmControlChannel worker(1, size, memory.base(), ShmControlChannel::kRingBytes, nullptr, sockets1);
  meshes[2].reset();  // rank 2's process is gone: its connections close
  const auto start = std::chrono::steady_clock::now();
  int from = 0;
  std::string bytes;
  while (coordinator.failure().is_ok() || worker.failure().is_ok()) {
    coordinator.poll_from_workers(&from, &bytes);
    worker.poll_from_coordinator(&bytes);
    REQUIRE(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
  }
  REQUIRE_THAT(coordinator.failure().message(), Catch::Contains("rank 0 lost its connection") &&
                                                    Catch::Contains("rank 2 closed it"));
  REQUIRE_THAT(worker.failure().message(), Catch::Contains("rank 1 lost its connection"));
}

TEST_CASE("Over TCP on one host, requests longer than a ring go through shared memory, and nothing stays in /dev/shm",
          "[shm_control][tcp]") {
  const std::set<std::string> before = shm_names();
  for (bool shm_control : {true, false}) {
    RuntimeOptions options = test::quiet_options();
    options.tcp_shm_control = shm_control;
    test::run_tcp_ranks(3, [](Runtime& rt, int rank) {
      // 400 tensors with long names in one burst: the requests and the
      // response list run to several rings' worth.
      const int count = 400;
      std::vector<std::vector<float>> values(count, std::vector<float>(4, static_cast<float>(rank + 1)));
      std::vector<Handle> handles;
      for (int i = 0; i < count; ++i) {
        auto t = std::make_shared<HostTensorView>(values[static_cast<size_t>(i)].data(), DataType::kFloat32,
                                                  TensorShape{4});
        AllreduceOptions sum;
        sum.op = ReduceOp::kSum;
        handles.push_back(rt.allreduce_async(std::string(300, 'n') + std::to_string(i), t, t, sum));
      }
      for (Handle& h : handles) h.wait();
      for (const auto& v : values) RANK_CHECK(v[0] == 6.0f && v[3] == 6.0f);
    }, options);
  }
  REQUIRE(shm_names() == before);
}
