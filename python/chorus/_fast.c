/* chorus._fast: the two calls a training step makes most often (submit an
 * allreduce, wait for a handle) without ctypes' per-argument conversion
 * (about 1 us of the 2 us a ctypes call costs, docs/python.md). Optional:
 * the package falls back to ctypes when this module is missing.
 *
 * It links nothing: the C ABI's function addresses come from the library
 * ctypes loaded (bind()), so this module and ctypes always call the same
 * libchorus, and it is compiled against Python's headers only, never
 * against torch. The GIL is released around every call into Chorus, as
 * ctypes does (a Chorus thread may need it for an allocation callback). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

typedef int (*allreduce_fn)(int, const char*, const void*, void*, const int64_t*, int, int, int, double, double,
                            int, void*, int64_t*);
typedef int (*wait_fn)(int64_t, double);

static allreduce_fn allreduce_shaped = NULL;
static wait_fn wait_timeout = NULL;

/* bind(address of chorus_allreduce_shaped_async, address of chorus_wait_timeout) */
static PyObject* bind(PyObject* self, PyObject* args) {
  unsigned long long allreduce_address = 0, wait_address = 0;
  (void)self;
  if (!PyArg_ParseTuple(args, "KK", &allreduce_address, &wait_address)) return NULL;
  allreduce_shaped = (allreduce_fn)(uintptr_t)allreduce_address;
  wait_timeout = (wait_fn)(uintptr_t)wait_address;
  Py_RETURN_NONE;
}

/* allreduce(set_id, name: bytes, input, output, shape: tuple, dtype, op, prescale, postscale, device, stream)
 * -> the handle (> 0), or the negative C ABI code (chorus_last_error has the message). */
static PyObject* allreduce(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  int64_t shape[16];
  int64_t handle = 0;
  (void)self;
  if (nargs != 11 || !PyBytes_Check(args[1]) || !PyTuple_Check(args[4])) {
    PyErr_SetString(PyExc_TypeError, "chorus._fast.allreduce: (set_id, name: bytes, input, output, shape: tuple, "
                                     "dtype, op, prescale, postscale, device, stream)");
    return NULL;
  }
  if (allreduce_shaped == NULL) {
    PyErr_SetString(PyExc_RuntimeError, "chorus._fast: bind() was not called");
    return NULL;
  }
  const Py_ssize_t ndim = PyTuple_GET_SIZE(args[4]);
  if (ndim > 16) {
    PyErr_SetString(PyExc_ValueError, "chorus._fast.allreduce: more than 16 dimensions");
    return NULL;
  }
  for (Py_ssize_t i = 0; i < ndim; ++i) shape[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(args[4], i));
  const int set_id = (int)PyLong_AsLong(args[0]);
  const char* name = PyBytes_AS_STRING(args[1]);
  void* input = PyLong_AsVoidPtr(args[2]);
  void* output = PyLong_AsVoidPtr(args[3]);
  const int dtype = (int)PyLong_AsLong(args[5]);
  const int op = (int)PyLong_AsLong(args[6]);
  const double prescale = PyFloat_AsDouble(args[7]);
  const double postscale = PyFloat_AsDouble(args[8]);
  const int device = (int)PyLong_AsLong(args[9]);
  void* stream = args[10] == Py_None ? NULL : PyLong_AsVoidPtr(args[10]);
  if (PyErr_Occurred()) return NULL;
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = allreduce_shaped(set_id, name, input, output, shape, (int)ndim, dtype, op, prescale, postscale, device, stream,
                        &handle);
  Py_END_ALLOW_THREADS
  return PyLong_FromLongLong(rc < 0 ? rc : handle);
}

/* wait(handle, timeout_seconds) -> chorus_wait_timeout's result */
static PyObject* wait(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  (void)self;
  if (nargs != 2) {
    PyErr_SetString(PyExc_TypeError, "chorus._fast.wait: (handle, timeout_seconds)");
    return NULL;
  }
  if (wait_timeout == NULL) {
    PyErr_SetString(PyExc_RuntimeError, "chorus._fast: bind() was not called");
    return NULL;
  }
  const int64_t handle = PyLong_AsLongLong(args[0]);
  const double seconds = PyFloat_AsDouble(args[1]);
  if (PyErr_Occurred()) return NULL;
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = wait_timeout(handle, seconds);
  Py_END_ALLOW_THREADS
  return PyLong_FromLong(rc);
}

static PyMethodDef methods[] = {
    {"bind", bind, METH_VARARGS, "bind(allreduce_address, wait_address): the C ABI functions to call"},
    {"allreduce", (PyCFunction)(void (*)(void))allreduce, METH_FASTCALL, "chorus_allreduce_shaped_async"},
    {"wait", (PyCFunction)(void (*)(void))wait, METH_FASTCALL, "chorus_wait_timeout"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fast", "chorus's hot calls without ctypes", -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__fast(void) { return PyModule_Create(&module); }
