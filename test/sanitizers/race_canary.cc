// Proves ThreadSanitizer is live in the thread-sanitized build: two threads
// write one plain int without synchronization. The test passes only when
// ThreadSanitizer reports that race (by its function's name).
#include <cstdio>
#include <thread>

namespace {

// noinline: the report must name this function.
__attribute__((noinline)) void race_on_purpose(int* shared, int value) { *shared = value; }

}  // namespace

int main() {
  int shared = 0;
  std::thread first(race_on_purpose, &shared, 1);
  std::thread second(race_on_purpose, &shared, 2);
  first.join();
  second.join();
  std::printf("canary: shared ended as %d\n", shared);
  return 0;
}
