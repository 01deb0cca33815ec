#pragma once
// The first thing ranks exchange once their transport connects: which
// Chorus build each runs (its version and the format of the messages between
// ranks), in one row of fixed size that every build since 0.3.0 sends the
// same way. Ranks of different builds then fail init() together, naming
// each build, instead of misreading each other's messages later. Pure
// check_builds (unit-tested) and the collective that feeds it.

#include <cstdint>
#include <vector>

#include "chorus/status.h"
#include "comm/communicator.h"

namespace chorus::detail {

/// The format of every message between ranks (negotiation, TCP frames, the
/// rendezvous and elastic messages, the agreed settings): bumped whenever
/// any of them changes, so two builds that cannot talk say so at init.
constexpr int64_t kWireFormatVersion = 1;

/// One rank's row: a marker, the wire format, the version (major * 1000000
/// + minor * 1000 + patch).
struct BuildIdentity {
  int64_t marker = 0;
  int64_t wire_format = 0;
  int64_t version = 0;
};

/// This build's. CHORUS_TEST_WIRE_FORMAT (tests only) claims another wire
/// format, to play a rank of another build.
BuildIdentity this_build();

/// OK when every rank's row is this build's; otherwise an invalid argument
/// naming each build and the ranks running it (the same text on every rank).
Status check_builds(const std::vector<BuildIdentity>& ranks);

/// Collective over `comm` (`size` ranks): gathers every rank's row, checks it.
Status check_builds_agree(Communicator& comm, int size);

}  // namespace chorus::detail
