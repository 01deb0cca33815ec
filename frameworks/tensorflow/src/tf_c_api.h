#pragma once
// The part of TensorFlow's stable C API (tensorflow/c/kernels.h, ops.h,
// tf_tensor.h, tf_status.h) that Chorus's ops use, declared here and looked
// up at load time in the libtensorflow_framework.so.2 the process already
// runs (dlsym), so this library is compiled against no TensorFlow and one
// build serves every TensorFlow 2.x: the C API keeps these signatures and
// the enum values below across versions, where TensorFlow's C++ ABI does
// not.
#include <cstddef>
#include <cstdint>
#include <string>

extern "C" {
struct TF_Status;
struct TF_Tensor;
struct TF_KernelBuilder;
struct TF_OpKernelConstruction;
struct TF_OpKernelContext;
struct TF_OpDefinitionBuilder;
struct TF_ShapeInferenceContext;
struct TF_ShapeHandle;
}

namespace chorus::tf {

// TF_DataType values (tensorflow/c/tf_datatype.h; also DataType in types.proto).
enum TfType : int {
  kTfFloat = 1,
  kTfDouble = 2,
  kTfInt32 = 3,
  kTfUint8 = 4,
  kTfInt16 = 5,
  kTfInt8 = 6,
  kTfInt64 = 9,
  kTfBool = 10,
  kTfBfloat16 = 14,
  kTfHalf = 19,
};

// TF_Code values (the canonical error codes).
enum TfCode : int {
  kTfOk = 0,
  kTfUnknown = 2,
  kTfInvalidArgument = 3,
  kTfDeadlineExceeded = 4,
  kTfFailedPrecondition = 9,
  kTfAborted = 10,
  kTfInternal = 13,
};

using ComputeFn = void (*)(void* kernel, TF_OpKernelContext* ctx);
using ShapeFn = void (*)(TF_ShapeInferenceContext* ctx, TF_Status* status);

// The functions, found by name (each member is the symbol of that name).
struct CApi {
  TF_Status* (*TF_NewStatus)();
  void (*TF_DeleteStatus)(TF_Status*);
  void (*TF_SetStatus)(TF_Status*, int code, const char* msg);
  int (*TF_GetCode)(const TF_Status*);
  const char* (*TF_Message)(const TF_Status*);

  void (*TF_DeleteTensor)(TF_Tensor*);
  int (*TF_TensorType)(const TF_Tensor*);
  int (*TF_NumDims)(const TF_Tensor*);
  int64_t (*TF_Dim)(const TF_Tensor*, int);
  size_t (*TF_TensorByteSize)(const TF_Tensor*);
  void* (*TF_TensorData)(const TF_Tensor*);

  TF_KernelBuilder* (*TF_NewKernelBuilder)(const char* op, const char* device,
                                           void* (*create)(TF_OpKernelConstruction*), ComputeFn compute,
                                           void (*destroy)(void*));
  void (*TF_RegisterKernelBuilder)(const char* name, TF_KernelBuilder*, TF_Status*);
  int (*TF_NumInputs)(TF_OpKernelContext*);
  void (*TF_GetInput)(TF_OpKernelContext*, int i, TF_Tensor** tensor, TF_Status*);
  TF_Tensor* (*TF_AllocateOutput)(TF_OpKernelContext*, int index, int dtype, const int64_t* dims, int num_dims,
                                  size_t len, TF_Status*);
  void (*TF_OpKernelContext_Failure)(TF_OpKernelContext*, TF_Status*);
  void (*TF_OpKernelConstruction_Failure)(TF_OpKernelConstruction*, TF_Status*);
  void (*TF_OpKernelConstruction_GetAttrSize)(TF_OpKernelConstruction*, const char* name, int32_t* list_size,
                                              int32_t* total_size, TF_Status*);
  void (*TF_OpKernelConstruction_GetAttrInt64)(TF_OpKernelConstruction*, const char* name, int64_t* value, TF_Status*);
  void (*TF_OpKernelConstruction_GetAttrFloat)(TF_OpKernelConstruction*, const char* name, float* value, TF_Status*);
  void (*TF_OpKernelConstruction_GetAttrStringList)(TF_OpKernelConstruction*, const char* name, char** values,
                                                    size_t* lengths, int max_values, void* storage, size_t storage_size,
                                                    TF_Status*);

  TF_OpDefinitionBuilder* (*TF_NewOpDefinitionBuilder)(const char* name);
  void (*TF_OpDefinitionBuilderAddAttr)(TF_OpDefinitionBuilder*, const char* spec);
  void (*TF_OpDefinitionBuilderAddInput)(TF_OpDefinitionBuilder*, const char* spec);
  void (*TF_OpDefinitionBuilderAddOutput)(TF_OpDefinitionBuilder*, const char* spec);
  void (*TF_OpDefinitionBuilderSetIsStateful)(TF_OpDefinitionBuilder*, bool);
  void (*TF_OpDefinitionBuilderSetShapeInferenceFunction)(TF_OpDefinitionBuilder*, ShapeFn);
  void (*TF_RegisterOpDefinition)(TF_OpDefinitionBuilder*, TF_Status*);
  int64_t (*TF_ShapeInferenceContextNumInputs)(TF_ShapeInferenceContext*);
  TF_ShapeHandle* (*TF_NewShapeHandle)();
  void (*TF_DeleteShapeHandle)(TF_ShapeHandle*);
  void (*TF_ShapeInferenceContextGetInput)(TF_ShapeInferenceContext*, int i, TF_ShapeHandle*, TF_Status*);
  void (*TF_ShapeInferenceContextSetOutput)(TF_ShapeInferenceContext*, int i, TF_ShapeHandle*, TF_Status*);
  void (*TF_ShapeInferenceContextSetUnknownShape)(TF_ShapeInferenceContext*, TF_Status*);
};

// The functions of the TensorFlow in this process, looked up once; empty
// `error` when every one was found, else what was missing.
struct LoadedCApi {
  CApi api{};
  std::string error;
};
const LoadedCApi& tensorflow_c_api();

// A TF_Status that deletes itself.
class TfStatus {
 public:
  TfStatus();
  ~TfStatus();
  TfStatus(const TfStatus&) = delete;
  TfStatus& operator=(const TfStatus&) = delete;
  TF_Status* get() const { return status_; }
  bool ok() const;
  std::string message() const;

 private:
  TF_Status* status_;
};

}  // namespace chorus::tf
