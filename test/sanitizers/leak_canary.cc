// Proves the LeakSanitizer suppressions (lsan_openmpi.supp) hide only Open
// MPI's own allocations: every rank runs a whole Chorus job (MPI init, one
// allreduce, shutdown, MPI finalize) and then loses one allocation of its
// own. The test passes only when LeakSanitizer reports that allocation and
// nothing from Open MPI's init.
#include <chorus/chorus.h>

#include <cstdio>
#include <memory>

namespace {

// noinline: the report must name this function.
__attribute__((noinline)) int allocation_lost_on_purpose(int rank) {
  int* lost = new int[16];
  lost[0] = rank;
  std::printf("canary: rank %d allocated %p\n", lost[0], static_cast<void*>(lost));
  return lost[0];
}

}  // namespace

int main() {
  chorus::init();
  int64_t v = 1;
  auto t = std::make_shared<chorus::HostTensorView>(&v, chorus::DataType::kInt64, chorus::TensorShape{1});
  chorus::allreduce_async("canary", t, t, chorus::AllreduceOptions{}).wait();
  const int rank = chorus::rank();
  const bool summed = v == chorus::size();
  chorus::shutdown();
  allocation_lost_on_purpose(rank);
  return summed ? 0 : 1;
}
