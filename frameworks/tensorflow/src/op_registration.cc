// Chorus's TensorFlow ops, registered when TensorFlow loads this library
// (tf.load_op_library): their definitions, shapes and CPU kernels. Every op
// is stateful, so TensorFlow neither prunes nor merges them: inside a
// tf.function each runs once per call; the Python wrappers chain them in
// program order (chorus/tensorflow/mpi_ops.py), so no two of one graph wait
// in different orders on different ranks.
#include <string>
#include <vector>

#include "chorus_functions.h"
#include "collective_kernels.h"
#include "tf_c_api.h"

namespace chorus::tf {

namespace {

// The types Horovod's ops take that Chorus carries (not uint16), and
// bfloat16 and int16 for the reductions too; a reduction refuses bool.
constexpr const char* kReduceTypes = "{uint8, int8, int16, int32, int64, half, bfloat16, float, double}";
constexpr const char* kAnyTypes = "{uint8, int8, int16, int32, int64, half, bfloat16, float, double, bool}";

std::string registration_error;  // "" once every op registered

void same_shapes(TF_ShapeInferenceContext* ctx, TF_Status* status) {
  const CApi& a = tensorflow_c_api().api;
  TF_ShapeHandle* shape = a.TF_NewShapeHandle();
  const int64_t n = a.TF_ShapeInferenceContextNumInputs(ctx);
  for (int i = 0; i < n; ++i) {
    a.TF_ShapeInferenceContextGetInput(ctx, i, shape, status);
    if (a.TF_GetCode(status) != kTfOk) break;
    a.TF_ShapeInferenceContextSetOutput(ctx, i, shape, status);
    if (a.TF_GetCode(status) != kTfOk) break;
  }
  a.TF_DeleteShapeHandle(shape);
}

// Shapes the negotiation decides; the Python wrappers set what they know.
void unknown_shapes(TF_ShapeInferenceContext* ctx, TF_Status* status) {
  tensorflow_c_api().api.TF_ShapeInferenceContextSetUnknownShape(ctx, status);
}

struct OpSpec {
  const char* name;
  std::vector<std::string> attrs, inputs, outputs;
  ShapeFn shape;
  void* (*create)(TF_OpKernelConstruction*);
  ComputeFn compute;
};

bool register_op(const OpSpec& spec) {
  const CApi& a = tensorflow_c_api().api;
  TF_OpDefinitionBuilder* b = a.TF_NewOpDefinitionBuilder(spec.name);
  for (const auto& s : spec.attrs) a.TF_OpDefinitionBuilderAddAttr(b, s.c_str());
  for (const auto& s : spec.inputs) a.TF_OpDefinitionBuilderAddInput(b, s.c_str());
  for (const auto& s : spec.outputs) a.TF_OpDefinitionBuilderAddOutput(b, s.c_str());
  a.TF_OpDefinitionBuilderSetIsStateful(b, true);
  a.TF_OpDefinitionBuilderSetShapeInferenceFunction(b, spec.shape);
  TfStatus status;
  a.TF_RegisterOpDefinition(b, status.get());
  if (status.ok()) {
    TF_KernelBuilder* k = a.TF_NewKernelBuilder(spec.name, "CPU", spec.create, spec.compute, &delete_kernel);
    a.TF_RegisterKernelBuilder(spec.name, k, status.get());
  }
  if (!status.ok()) registration_error = std::string(spec.name) + ": " + status.message();
  return status.ok();
}

bool register_all() {
  if (!tensorflow_c_api().error.empty()) {
    registration_error = tensorflow_c_api().error;
    return false;
  }
  const std::string reduce_list = std::string("T: list(") + kReduceTypes + ") >= 1";
  const std::string any_list = std::string("T: list(") + kAnyTypes + ") >= 1";
  const std::string any_one = std::string("T: ") + kAnyTypes;
  const std::vector<std::string> reduce_attrs = {reduce_list,       "names: list(string)", "reduce_op: int",
                                                 "prescale: float", "postscale: float",    "process_set: int"};
  const std::vector<OpSpec> ops = {
      {"ChorusAllreduce",
       reduce_attrs,
       {"tensors: T"},
       {"reduced: T"},
       &same_shapes,
       &create_reduce_kernel,
       &compute_allreduce},
      {"ChorusReducescatter",
       reduce_attrs,
       {"tensors: T"},
       {"scattered: T"},
       &unknown_shapes,
       &create_reduce_kernel,
       &compute_reducescatter},
      {"ChorusAllgather",
       {any_list, "names: list(string)", "process_set: int"},
       {"tensors: T"},
       {"gathered: T"},
       &unknown_shapes,
       &create_gather_kernel,
       &compute_allgather},
      {"ChorusAlltoall",
       {any_one, "names: list(string)", "process_set: int"},
       {"tensor: T", "splits: int64"},
       {"received: T", "received_splits: int64"},
       &unknown_shapes,
       &create_gather_kernel,
       &compute_alltoall},
      {"ChorusBroadcast",
       {any_one, "names: list(string)", "root_rank: int", "process_set: int"},
       {"tensor: T"},
       {"broadcast: T"},
       &same_shapes,
       &create_broadcast_kernel,
       &compute_broadcast},
      {"ChorusBarrier", {"process_set: int"}, {}, {}, &unknown_shapes, &create_set_kernel, &compute_barrier},
      {"ChorusJoin",
       {"process_set: int"},
       {},
       {"last_joined: int32"},
       &unknown_shapes,
       &create_set_kernel,
       &compute_join},
  };
  for (const OpSpec& op : ops) {
    if (!register_op(op)) return false;
  }
  return true;
}

[[maybe_unused]] const bool registered = register_all();

}  // namespace

}  // namespace chorus::tf

// Binds the ops to the libchorus at `library_path` (already loaded by the
// caller): 0, or -1 with the reason in `error`.
extern "C" __attribute__((visibility("default"))) int chorus_tf_bind(const char* library_path, char* error,
                                                                     int error_size) {
  return chorus::adapter::bind_chorus_functions(library_path, "the TensorFlow ops", error, error_size);
}

// Why the ops did not register ("" when they did), for the Python package's error.
extern "C" __attribute__((visibility("default"))) const char* chorus_tf_registration_error() {
  return chorus::tf::registration_error.c_str();
}
