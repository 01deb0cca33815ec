#include "call_frame.h"

#include <cstring>

#include "chorus/c_api.h"

namespace chorus::jax {

namespace {

// XLA asks a handler for its metadata by calling it with this extension.
XLA_FFI_Metadata_Extension* metadata_request(XLA_FFI_CallFrame* frame) {
  for (XLA_FFI_Extension_Base* e = frame->extension_start; e != nullptr; e = e->next) {
    if (e->type == XLA_FFI_Extension_Metadata) return reinterpret_cast<XLA_FFI_Metadata_Extension*>(e);
  }
  return nullptr;
}

std::vector<XLA_FFI_Buffer*> arrays_of(int64_t n, void** items, bool (*is_buffer)(int64_t, const void*),
                                       const void* types) {
  std::vector<XLA_FFI_Buffer*> out;
  for (int64_t i = 0; i < n; ++i) {
    if (!is_buffer(i, types)) continue;
    auto* b = static_cast<XLA_FFI_Buffer*>(items[i]);
    if (b->dtype != XLA_FFI_DataType_TOKEN) out.push_back(b);
  }
  return out;
}

bool arg_is_buffer(int64_t i, const void* types) {
  return static_cast<const XLA_FFI_ArgType*>(types)[i] == XLA_FFI_ArgType_BUFFER;
}
bool ret_is_buffer(int64_t i, const void* types) {
  return static_cast<const XLA_FFI_RetType*>(types)[i] == XLA_FFI_RetType_BUFFER;
}

}  // namespace

CallFrame::CallFrame(XLA_FFI_CallFrame* frame) : frame_(frame) {
  if (XLA_FFI_Metadata_Extension* request = metadata_request(frame)) {
    request->metadata->api_version =
        XLA_FFI_Api_Version{XLA_FFI_Api_Version_STRUCT_SIZE, nullptr, XLA_FFI_API_MAJOR, XLA_FFI_API_MINOR};
    request->metadata->traits = 0;
    nothing_to_run_ = true;
    return;
  }
  if (frame->stage != XLA_FFI_ExecutionStage_EXECUTE) {
    nothing_to_run_ = true;
    return;
  }
  operands_ = arrays_of(frame->args.size, frame->args.args, arg_is_buffer, frame->args.types);
  results_ = arrays_of(frame->rets.size, frame->rets.rets, ret_is_buffer, frame->rets.types);
}

void* CallFrame::find_attr(const char* name, XLA_FFI_AttrType type) const {
  const XLA_FFI_Attrs& attrs = frame_->attrs;
  const size_t len = std::strlen(name);
  for (int64_t i = 0; i < attrs.size; ++i) {
    const XLA_FFI_ByteSpan* n = attrs.names[i];
    if (n->len == len && std::memcmp(n->ptr, name, len) == 0 && attrs.types[i] == type) return attrs.attrs[i];
  }
  return nullptr;
}

std::string CallFrame::string_attr(const char* name, const std::string& fallback) const {
  const auto* s = static_cast<const XLA_FFI_ByteSpan*>(find_attr(name, XLA_FFI_AttrType_STRING));
  return s ? std::string(s->ptr, s->len) : fallback;
}

int64_t CallFrame::int_attr(const char* name, int64_t fallback) const {
  const auto* s = static_cast<const XLA_FFI_Scalar*>(find_attr(name, XLA_FFI_AttrType_SCALAR));
  if (s == nullptr) return fallback;
  switch (s->dtype) {
    case XLA_FFI_DataType_S64: return *static_cast<const int64_t*>(s->value);
    case XLA_FFI_DataType_S32: return *static_cast<const int32_t*>(s->value);
    default: return fallback;
  }
}

double CallFrame::float_attr(const char* name, double fallback) const {
  const auto* s = static_cast<const XLA_FFI_Scalar*>(find_attr(name, XLA_FFI_AttrType_SCALAR));
  if (s == nullptr) return fallback;
  switch (s->dtype) {
    case XLA_FFI_DataType_F64: return *static_cast<const double*>(s->value);
    case XLA_FFI_DataType_F32: return *static_cast<const float*>(s->value);
    default: return fallback;
  }
}

XLA_FFI_Error* CallFrame::error(XLA_FFI_Error_Code code, const std::string& message) const {
  XLA_FFI_Error_Create_Args args{};
  args.struct_size = XLA_FFI_Error_Create_Args_STRUCT_SIZE;
  args.message = message.c_str();  // copied by XLA
  args.errc = code;
  return frame_->api->XLA_FFI_Error_Create(&args);
}

size_t element_bytes(XLA_FFI_DataType dtype) {
  switch (dtype) {
    case XLA_FFI_DataType_PRED:
    case XLA_FFI_DataType_S8:
    case XLA_FFI_DataType_U8: return 1;
    case XLA_FFI_DataType_S16:
    case XLA_FFI_DataType_F16:
    case XLA_FFI_DataType_BF16: return 2;
    case XLA_FFI_DataType_S32:
    case XLA_FFI_DataType_F32: return 4;
    case XLA_FFI_DataType_S64:
    case XLA_FFI_DataType_F64: return 8;
    default: return 0;
  }
}

int chorus_type_of(XLA_FFI_DataType dtype) {
  switch (dtype) {
    case XLA_FFI_DataType_PRED: return CHORUS_BOOL;
    case XLA_FFI_DataType_S8: return CHORUS_INT8;
    case XLA_FFI_DataType_U8: return CHORUS_UINT8;
    case XLA_FFI_DataType_S16: return CHORUS_INT16;
    case XLA_FFI_DataType_S32: return CHORUS_INT32;
    case XLA_FFI_DataType_S64: return CHORUS_INT64;
    case XLA_FFI_DataType_F16: return CHORUS_FLOAT16;
    case XLA_FFI_DataType_BF16: return CHORUS_BFLOAT16;
    case XLA_FFI_DataType_F32: return CHORUS_FLOAT32;
    case XLA_FFI_DataType_F64: return CHORUS_FLOAT64;
    default: return -1;
  }
}

int64_t element_count(const XLA_FFI_Buffer& buffer) {
  int64_t n = 1;
  for (int64_t d = 0; d < buffer.rank; ++d) n *= buffer.dims[d];
  return n;
}

std::vector<int64_t> shape_of(const XLA_FFI_Buffer& buffer) {
  return std::vector<int64_t>(buffer.dims, buffer.dims + buffer.rank);
}

}  // namespace chorus::jax
