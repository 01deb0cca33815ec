#pragma once
// What a Chorus FFI handler reads from XLA's call frame (the typed FFI's C
// API, xla/ffi/api/c_api.h): its array operands and results (the ordered
// effect's tokens left out), its attributes by name, and the errors it
// returns. Also the answer to XLA's metadata query, which asks a handler
// which FFI version it was built against instead of running it.
#include <cstdint>
#include <string>
#include <vector>

#include "xla/ffi/api/c_api.h"

namespace chorus::jax {

class CallFrame {
 public:
  explicit CallFrame(XLA_FFI_CallFrame* frame);

  // True when XLA only asked for the handler's metadata (now answered), or
  // called it at a stage other than execution: nothing to run then.
  bool nothing_to_run() const { return nothing_to_run_; }

  const std::vector<XLA_FFI_Buffer*>& operands() const { return operands_; }
  const std::vector<XLA_FFI_Buffer*>& results() const { return results_; }

  // An attribute by name, or `fallback` when the call has none of that name.
  std::string string_attr(const char* name, const std::string& fallback = "") const;
  int64_t int_attr(const char* name, int64_t fallback) const;
  double float_attr(const char* name, double fallback) const;

  const XLA_FFI_Api* api() const { return frame_->api; }
  XLA_FFI_CallFrame* raw() const { return frame_; }
  XLA_FFI_Error* error(XLA_FFI_Error_Code code, const std::string& message) const;

 private:
  void* find_attr(const char* name, XLA_FFI_AttrType type) const;

  XLA_FFI_CallFrame* frame_;
  bool nothing_to_run_ = false;
  std::vector<XLA_FFI_Buffer*> operands_, results_;
};

// Bytes of one element of an XLA dtype, 0 for one Chorus does not carry.
size_t element_bytes(XLA_FFI_DataType dtype);
// The chorus_dtype of an XLA dtype, or -1.
int chorus_type_of(XLA_FFI_DataType dtype);
// Elements of a buffer (the product of its dimensions).
int64_t element_count(const XLA_FFI_Buffer& buffer);
std::vector<int64_t> shape_of(const XLA_FFI_Buffer& buffer);

}  // namespace chorus::jax
