#pragma once
// Every rank runs the same build (comm/build_check.h), checked first.
// Settings that change what every rank does on the wire must agree, or
// ranks would wait on each other forever (comm/agreed_settings.h). Every
// rank checks the same gathered values, so all fail together, with the same
// message naming each differing setting and its value per rank. Over any
// transport's own collectives.

#include "chorus/options.h"
#include "chorus/status.h"
#include "comm/communicator.h"

namespace chorus::detail {

/// Collective over `comm` (`size` ranks).
Status check_settings_agree(Communicator& comm, int size, const RuntimeOptions& options, bool thread_multiple);

}  // namespace chorus::detail
