/* kernelarc's ABI over a PyTorch extension (`binding: torch`): the worker calls this library's
 * ka_run like any solution's; on the first call it starts the Python interpreter that built the
 * extension, imports kernelarc_torch_host and asks it for the solution's entry, then hands every
 * call's buffers over as DLPack capsules. The build writes ka_torch_shim_config.h beside this
 * file (interpreter, libpython, module, extension file, entry, call description). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ka_torch_shim_config.h"
#include "kernelarc/abi.h"

/* DLPack's C ABI (dlpack.h, v0.8), the layout torch.utils.dlpack reads from a "dltensor" capsule. */
typedef struct {
  int32_t device_type; /* 1 CPU, 2 CUDA */
  int32_t device_id;
} KaDLDevice;
typedef struct {
  uint8_t code; /* 0 int, 1 uint, 2 float, 4 bfloat */
  uint8_t bits;
  uint16_t lanes;
} KaDLDataType;
typedef struct {
  void* data;
  KaDLDevice device;
  int32_t ndim;
  KaDLDataType dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
} KaDLTensor;
typedef struct KaDLManagedTensor {
  KaDLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(struct KaDLManagedTensor*);
} KaDLManagedTensor;

/* The managed tensor and its shape and strides, freed together. The data is the guard's. */
typedef struct {
  KaDLManagedTensor managed;
  int64_t shape[KA_MAX_DIMS];
  int64_t strides[KA_MAX_DIMS];
} KaCapsuleTensor;

static pthread_once_t started = PTHREAD_ONCE_INIT;
static PyObject* entry;     /* kernelarc_torch_host.Entry, or NULL when starting failed */
static int device_id = -1;  /* the CUDA device of the call, -1 on the CPU */
static char last_error[8192];

static void set_error(const char* text) { snprintf(last_error, sizeof last_error, "%s", text); }

/* The pending Python exception as text (the host formats call failures itself). */
static void set_python_error(const char* doing) {
  PyObject *type, *value, *trace;
  PyErr_Fetch(&type, &value, &trace);
  PyObject* text = value ? PyObject_Str(value) : NULL;
  const char* message = text ? PyUnicode_AsUTF8(text) : NULL;
  snprintf(last_error, sizeof last_error, "%s: %s", doing, message ? message : "unknown error");
  Py_XDECREF(text);
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(trace);
  PyErr_Clear();
}

static void delete_tensor(KaDLManagedTensor* managed) { free(managed); }

static void delete_capsule(PyObject* capsule) {
  /* A capsule torch consumed is renamed "used_dltensor" and its tensor owns the memory. */
  if (!PyCapsule_IsValid(capsule, "dltensor")) return;
  KaDLManagedTensor* managed = PyCapsule_GetPointer(capsule, "dltensor");
  if (managed) managed->deleter(managed);
}

/* Types outside DLPack's integer and float codes, or read inconsistently across torch
 * versions (bool, float8), travel as bytes of their width; the host views them back. */
static KaDLDataType dlpack_type(int dtype) {
  switch (dtype) {
    case KA_FLOAT64: return (KaDLDataType){2, 64, 1};
    case KA_FLOAT32: return (KaDLDataType){2, 32, 1};
    case KA_FLOAT16: return (KaDLDataType){2, 16, 1};
    case KA_BFLOAT16: return (KaDLDataType){4, 16, 1};
    case KA_INT8: return (KaDLDataType){0, 8, 1};
    case KA_INT16: return (KaDLDataType){0, 16, 1};
    case KA_INT32: return (KaDLDataType){0, 32, 1};
    case KA_INT64: return (KaDLDataType){0, 64, 1};
    default: return (KaDLDataType){1, 8, 1};
  }
}

static PyObject* capsule_of(const ka_tensor* tensor) {
  KaCapsuleTensor* owned = calloc(1, sizeof *owned);
  if (!owned) return PyErr_NoMemory();
  int ndim = tensor->ndim < 0 ? 0 : (tensor->ndim > KA_MAX_DIMS ? KA_MAX_DIMS : tensor->ndim);
  for (int i = 0; i < ndim; ++i) {
    owned->shape[i] = tensor->shape[i];
    owned->strides[i] = tensor->stride[i];
  }
  KaDLTensor* dl = &owned->managed.dl_tensor;
  dl->data = tensor->data;
  dl->device = device_id < 0 ? (KaDLDevice){1, 0} : (KaDLDevice){2, device_id};
  dl->ndim = ndim;
  dl->dtype = dlpack_type(tensor->dtype);
  dl->shape = owned->shape;
  dl->strides = owned->strides;
  owned->managed.deleter = delete_tensor;
  PyObject* capsule = PyCapsule_New(&owned->managed, "dltensor", delete_capsule);
  if (!capsule) free(owned);
  return capsule;
}

static PyObject* capsules_of(const ka_tensor* tensors, int count) {
  PyObject* list = PyList_New(count);
  for (int i = 0; list && i < count; ++i) {
    PyObject* capsule = capsule_of(&tensors[i]);
    if (!capsule) {
      Py_DECREF(list);
      return NULL;
    }
    PyList_SET_ITEM(list, i, capsule);
  }
  return list;
}

/* The directory of this library, where the build put the extension and the host script (the
 * worker's sandbox lets it read the build cache, not kernelarc's own files). */
static int library_directory(char* path, size_t size) {
  Dl_info info;
  if (!dladdr((void*)&ka_run, &info) || !info.dli_fname) return 0;
  const char* slash = strrchr(info.dli_fname, '/');
  if (!slash) return snprintf(path, size, ".") < (int)size;
  return snprintf(path, size, "%.*s", (int)(slash - info.dli_fname), info.dli_fname) < (int)size;
}

static void start_python(void) {
  /* The worker loaded libpython privately, as this library's dependency; extension modules
   * (torch's among them) expect its symbols to be global. */
  if (!dlopen(KA_LIBPYTHON, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD)) {
    snprintf(last_error, sizeof last_error, "cannot load %s: %s", KA_LIBPYTHON, dlerror());
    return;
  }
  /* The interpreter named as the program finds its own prefix and virtual environment. */
  PyConfig config;
  PyConfig_InitPythonConfig(&config);
  config.install_signal_handlers = 0;
  config.parse_argv = 0;
  PyStatus status = PyConfig_SetBytesString(&config, &config.program_name, KA_PYTHON_EXECUTABLE);
  if (!PyStatus_Exception(status)) status = Py_InitializeFromConfig(&config);
  PyConfig_Clear(&config);
  if (PyStatus_Exception(status)) {
    snprintf(last_error, sizeof last_error, "cannot start %s: %s", KA_PYTHON_EXECUTABLE,
             status.err_msg ? status.err_msg : "unknown error");
    return;
  }
  char directory[4096], library[4200];
  if (!library_directory(directory, sizeof directory)) {
    set_error("cannot find the directory of the torch-binding shim library");
  } else {
    snprintf(library, sizeof library, "%s/%s", directory, KA_EXTENSION_FILE);
    PyObject* path = PySys_GetObject("path");
    PyObject* host_dir = PyUnicode_FromString(directory);
    if (path && host_dir) PyList_Insert(path, 0, host_dir);
    Py_XDECREF(host_dir);
    PyObject* host = PyImport_ImportModule("kernelarc_torch_host");
    PyObject* json = host ? PyImport_ImportModule("json") : NULL;
    PyObject* meta = json ? PyObject_CallMethod(json, "loads", "s", KA_CALL_DESCRIPTION) : NULL;
    Py_XDECREF(json);
    entry = meta ? PyObject_CallMethod(host, "load", "sssO", library, KA_MODULE, KA_ENTRY, meta)
                 : NULL;
    PyObject* device = entry ? PyObject_CallMethod(entry, "device", NULL) : NULL;
    if (device) device_id = (int)PyLong_AsLong(device);
    if (!device) {
      Py_CLEAR(entry);
      set_python_error("loading the torch extension");
    }
    Py_XDECREF(device);
    Py_XDECREF(meta);
    Py_XDECREF(host);
  }
  PyEval_SaveThread(); /* later calls take the interpreter lock with PyGILState_Ensure */
}

int ka_run(const ka_tensor* inputs, int n_inputs, ka_tensor* outputs, int n_outputs, void* stream,
           void* workspace, size_t workspace_bytes) {
  (void)workspace;
  (void)workspace_bytes;
  pthread_once(&started, start_python);
  if (!entry) return 1;
  PyGILState_STATE lock = PyGILState_Ensure();
  int failed = 1;
  PyObject* input_list = capsules_of(inputs, n_inputs);
  PyObject* output_list = input_list ? capsules_of(outputs, n_outputs) : NULL;
  PyObject* outcome = output_list ? PyObject_CallFunction(entry, "OOK", input_list, output_list,
                                                          (unsigned long long)(uintptr_t)stream)
                                  : NULL;
  if (!outcome) {
    set_python_error("calling the torch extension");
  } else if (outcome != Py_None) {
    const char* reason = PyUnicode_Check(outcome) ? PyUnicode_AsUTF8(outcome) : NULL;
    set_error(reason ? reason : "the torch extension failed");
  } else {
    failed = 0;
  }
  Py_XDECREF(outcome);
  Py_XDECREF(output_list);
  Py_XDECREF(input_list);
  PyGILState_Release(lock);
  return failed;
}

const char* ka_last_error(void) { return last_error; }
