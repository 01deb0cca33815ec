// Looks up TensorFlow's C API in the process that loaded this library.
#include "tf_c_api.h"

#include <dlfcn.h>

namespace chorus::tf {

namespace {

// The library TensorFlow's Python package loads first; its soname has
// stayed the same through TensorFlow 2.x.
constexpr const char* kFramework = "libtensorflow_framework.so.2";

template <typename Fn>
void find(void* library, const char* name, Fn* fn, std::string* missing) {
  void* found = library ? dlsym(library, name) : nullptr;
  if (!found) found = dlsym(RTLD_DEFAULT, name);
  if (!found) *missing += std::string(missing->empty() ? "" : ", ") + name;
  *fn = reinterpret_cast<Fn>(found);
}

LoadedCApi load() {
  LoadedCApi out;
  void* library = dlopen(kFramework, RTLD_NOW | RTLD_NOLOAD);  // already loaded by `import tensorflow`
  std::string missing;
  CApi& a = out.api;
#define CHORUS_TF_FIND(name) find(library, #name, &a.name, &missing)
  CHORUS_TF_FIND(TF_NewStatus);
  CHORUS_TF_FIND(TF_DeleteStatus);
  CHORUS_TF_FIND(TF_SetStatus);
  CHORUS_TF_FIND(TF_GetCode);
  CHORUS_TF_FIND(TF_Message);
  CHORUS_TF_FIND(TF_DeleteTensor);
  CHORUS_TF_FIND(TF_TensorType);
  CHORUS_TF_FIND(TF_NumDims);
  CHORUS_TF_FIND(TF_Dim);
  CHORUS_TF_FIND(TF_TensorByteSize);
  CHORUS_TF_FIND(TF_TensorData);
  CHORUS_TF_FIND(TF_NewKernelBuilder);
  CHORUS_TF_FIND(TF_RegisterKernelBuilder);
  CHORUS_TF_FIND(TF_NumInputs);
  CHORUS_TF_FIND(TF_GetInput);
  CHORUS_TF_FIND(TF_AllocateOutput);
  CHORUS_TF_FIND(TF_OpKernelContext_Failure);
  CHORUS_TF_FIND(TF_OpKernelConstruction_Failure);
  CHORUS_TF_FIND(TF_OpKernelConstruction_GetAttrSize);
  CHORUS_TF_FIND(TF_OpKernelConstruction_GetAttrInt64);
  CHORUS_TF_FIND(TF_OpKernelConstruction_GetAttrFloat);
  CHORUS_TF_FIND(TF_OpKernelConstruction_GetAttrStringList);
  CHORUS_TF_FIND(TF_NewOpDefinitionBuilder);
  CHORUS_TF_FIND(TF_OpDefinitionBuilderAddAttr);
  CHORUS_TF_FIND(TF_OpDefinitionBuilderAddInput);
  CHORUS_TF_FIND(TF_OpDefinitionBuilderAddOutput);
  CHORUS_TF_FIND(TF_OpDefinitionBuilderSetIsStateful);
  CHORUS_TF_FIND(TF_OpDefinitionBuilderSetShapeInferenceFunction);
  CHORUS_TF_FIND(TF_RegisterOpDefinition);
  CHORUS_TF_FIND(TF_ShapeInferenceContextNumInputs);
  CHORUS_TF_FIND(TF_NewShapeHandle);
  CHORUS_TF_FIND(TF_DeleteShapeHandle);
  CHORUS_TF_FIND(TF_ShapeInferenceContextGetInput);
  CHORUS_TF_FIND(TF_ShapeInferenceContextSetOutput);
  CHORUS_TF_FIND(TF_ShapeInferenceContextSetUnknownShape);
#undef CHORUS_TF_FIND
  if (library) dlclose(library);  // drops the reference NOLOAD took; TensorFlow keeps its own
  if (!missing.empty()) {
    out.error = std::string("this TensorFlow lacks C API functions Chorus's ops need (") + missing +
                "); Chorus needs TensorFlow 2.12 or later";
  }
  return out;
}

}  // namespace

const LoadedCApi& tensorflow_c_api() {
  static const LoadedCApi loaded = load();
  return loaded;
}

TfStatus::TfStatus() : status_(tensorflow_c_api().api.TF_NewStatus()) {}
TfStatus::~TfStatus() { tensorflow_c_api().api.TF_DeleteStatus(status_); }
bool TfStatus::ok() const { return tensorflow_c_api().api.TF_GetCode(status_) == kTfOk; }
std::string TfStatus::message() const { return tensorflow_c_api().api.TF_Message(status_); }

}  // namespace chorus::tf
