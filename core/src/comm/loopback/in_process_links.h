#pragma once
// PeerLinks between ranks that are threads of one process: a send copies the
// bytes into the receiver's mailbox for (sender, tag) and completes at once;
// a receive waits for the next message of that mailbox. Lets the ring
// algorithms run for real in unit tests, at any world size, with no MPI.

#include <memory>

#include "comm/peer_link.h"

namespace chorus::detail {

class InProcessNetwork;

/// Shared state of `size` in-process ranks.
std::shared_ptr<InProcessNetwork> make_in_process_network(int size);

/// Rank `rank`'s link into `network`.
std::unique_ptr<PeerLink> make_in_process_link(std::shared_ptr<InProcessNetwork> network, int rank);

}  // namespace chorus::detail
