#pragma once
// Counters for the names an adapter gives collectives called without one
// (eager TensorFlow ops, jitted JAX calls traced unnamed): counted as they
// run, one counter per process set, so every rank names its n-th unnamed
// call of a set alike as long as the calls run in the same order.
#include <cstdint>

namespace chorus::adapter {

// 0, 1, 2, ... for the calls of `process_set` in this process.
int64_t next_unnamed_call(int64_t process_set);

}  // namespace chorus::adapter
