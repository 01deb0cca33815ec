#pragma once
// One row per collective: the properties the negotiation, the response
// cache, fusion and join decide by. A new collective is one row here plus
// its executor (engine/operation_executor.cc); nothing else keeps a list.

#include "negotiation/messages.h"

namespace chorus::detail {

struct CollectiveTraits {
  const char* name;        ///< for messages: "allreduce", ...
  ResponseType response;   ///< the response that runs it
  bool cacheable;          ///< its signature may live in the response cache (a repeated, per-rank-equal shape)
  bool by_cache_bits;      ///< once cached, ungrouped ones travel as one cache bit
  bool fusable;            ///< several tensors may share one response
  bool first_dim_varies;   ///< the first dimension may differ per rank (only the rest must agree)
  bool runs_while_joined;  ///< runs while ranks have joined (they add zeros); others fail naming them
  bool reduces;            ///< takes a reduce op and scale factors, which must agree
};

/// The row of `type` (a valid CollectiveType).
const CollectiveTraits& traits_of(CollectiveType type);

}  // namespace chorus::detail
