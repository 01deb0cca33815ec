#include "engine/special_responses.h"

#include <chrono>
#include <new>
#include <string>

#include "chorus/tensor.h"

namespace chorus::detail {

// Every rank reached the registration at this point of the response order:
// split the backend for the new set here (a collective over all ranks).
void register_process_sets(Backend& backend, std::vector<TensorEntry> entries) {
  CompletionBatch batch;
  for (TensorEntry& e : entries) {
    Status s = Status::internal("a process-set registration without its split");
    if (e.process_set_split) {
      ProcessSetSplit& split = *e.process_set_split;
      s = backend.split(split.id, split.members, &split.backend);
      if (!s.is_ok()) s = Status(s.code(), "registering process set " + std::to_string(split.id) + ": " + s.message());
    }
    finish_entry(std::move(e), s, batch);
  }
}

// This rank joined and never submitted `name`: it takes part with zeros of
// the shape the other ranks agreed on, so their allreduce can run.
bool stand_in_for_joined(const Response& response, const std::string& name, int rank, const Logger& logger,
                         TensorEntry* out) {
  for (const Request& spec : response.joined_specs) {
    if (spec.name != name) continue;
    std::shared_ptr<Tensor> zeros;
    try {
      if (!HostOpContext().allocate_zeros(TensorShape(spec.shape), spec.dtype, &zeros).is_ok()) zeros.reset();
    } catch (const std::bad_alloc&) {
      zeros.reset();
    }
    if (!zeros) {  // the other ranks are about to run this allreduce with us
      logger.fatal("allreduce of tensor '" + name + "' " + TensorShape(spec.shape).to_string() +
                    ": this rank joined and has no memory for its stand-in zeros");
    }
    out->request = spec;
    out->request.rank = rank;
    out->input = zeros;
    out->output = zeros;
    out->enqueued = std::chrono::steady_clock::now();
    return true;
  }
  return false;
}

}  // namespace chorus::detail
