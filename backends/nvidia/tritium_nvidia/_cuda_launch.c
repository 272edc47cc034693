/* tritium_nvidia._cuda_launch: cuLaunchKernel without the cuda.bindings wrapper.
 *
 * Built with the package (an optional setuptools extension: where no C compiler is present, pip installs
 * tritium without it and the launcher calls cuda.bindings' cuLaunchKernel as before).  cuda.bindings spends
 * ~1.2 us per call above the driver's own cost converting its arguments and building the CUresult enum it
 * returns (measured on an H100 host: 3.8 us vs 2.6 us from C); this takes plain ints and returns the CUresult
 * as an int.
 *
 * libcuda.so.1 is opened, and cuLaunchKernel looked up, on the first call (no CUDA headers or libraries at
 * build time; importing the module touches nothing CUDA).  The launch is made with the GIL released, as
 * cuda.bindings does.
 *
 *   launch(function, gx, gy, gz, block, shared, stream, params) -> CUresult (int)
 *       function, stream: the CUfunction / CUstream handles as ints; params: the address of the kernel's
 *       void*[] argument array (see tritium_nvidia.launcher.Packer).  Block is (block, 1, 1).
 *   available() -> "" when libcuda's cuLaunchKernel was found, else why not
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>

typedef int (*launch_fn)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *,
                         void **, void **);

static launch_fn cu_launch = NULL;
static char why_not[256] = "";

static int resolve(void) {
    if (cu_launch != NULL) return 1;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (lib == NULL) {
        const char *e = dlerror();
        snprintf(why_not, sizeof why_not, "libcuda.so.1 not loadable: %s", e ? e : "?");
        return 0;
    }
    cu_launch = (launch_fn)dlsym(lib, "cuLaunchKernel");
    if (cu_launch == NULL) {
        snprintf(why_not, sizeof why_not, "libcuda.so.1 has no cuLaunchKernel");
        return 0;
    }
    why_not[0] = 0;
    return 1;
}

static int as_ptr(PyObject *o, void **out) {
    *out = PyLong_AsVoidPtr(o);
    return !(*out == NULL && PyErr_Occurred());
}

static int as_uint(PyObject *o, unsigned *out) {
    unsigned long v = PyLong_AsUnsignedLong(o);
    if (v == (unsigned long)-1 && PyErr_Occurred()) return 0;
    if (v > 0xFFFFFFFFul) {
        PyErr_SetString(PyExc_OverflowError, "launch dimension or shared memory size above 2**32 - 1");
        return 0;
    }
    *out = (unsigned)v;
    return 1;
}

static PyObject *launch(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    void *function, *stream, *params;
    unsigned gx, gy, gz, block, shared;
    if (nargs != 8) {
        PyErr_SetString(PyExc_TypeError, "launch(function, gx, gy, gz, block, shared, stream, params)");
        return NULL;
    }
    if (!as_ptr(args[0], &function) || !as_uint(args[1], &gx) || !as_uint(args[2], &gy) ||
        !as_uint(args[3], &gz) || !as_uint(args[4], &block) || !as_uint(args[5], &shared) ||
        !as_ptr(args[6], &stream) || !as_ptr(args[7], &params))
        return NULL;
    if (cu_launch == NULL && !resolve()) {
        PyErr_SetString(PyExc_RuntimeError, why_not);
        return NULL;
    }
    int err;
    Py_BEGIN_ALLOW_THREADS
    err = cu_launch(function, gx, gy, gz, block, 1, 1, shared, stream, (void **)params, NULL);
    Py_END_ALLOW_THREADS
    return PyLong_FromLong(err);
}

static PyObject *available(PyObject *self, PyObject *unused) {
    resolve();
    return PyUnicode_FromString(why_not);
}

static PyMethodDef methods[] = {
    {"launch", (PyCFunction)(void (*)(void))launch, METH_FASTCALL,
     "launch(function, gx, gy, gz, block, shared, stream, params) -> CUresult: cuLaunchKernel with ints."},
    {"available", available, METH_NOARGS, "'' when libcuda's cuLaunchKernel was found, else why not."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_cuda_launch",
                                    "cuLaunchKernel from C (see the source's header).", -1, methods};

PyMODINIT_FUNC PyInit__cuda_launch(void) { return PyModule_Create(&module); }
