"""A Python program that allocates through CUDA itself (ctypes over the
runtime the loader finds: the test double under the interpose tests), holding
the GIL as a Cython or pybind11 binding that does not release it would
(ctypes.PyDLL), or releasing it as PyTorch's operators do (ctypes.CDLL): its
allocation stacks must name these lines either way.

  python_alloc.py leak      one 4096-byte block made in Model.build (via
                            allocate_block) and never freed: a leak whose
                            stack holds allocate_block, Model.build and
                            <module>
  python_alloc.py raised    the same, but allocated while an exception is
                            being handled: the exception must survive the
                            tool's reading of the frames
  python_alloc.py released  the same as leak, the GIL released for the call
  python_alloc.py redefined|fault|fault_gil|fault_lib: see the functions
"""
import ctypes
import sys
import types

holding = ctypes.PyDLL("libcudart.so.13")  # calls keep the GIL
releasing = ctypes.CDLL("libcudart.so.13")  # calls release it
for lib in (holding, releasing):
    lib.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]


def allocate_block(size, runtime):
    pointer = ctypes.c_void_p()
    rc = runtime.cudaMalloc(ctypes.byref(pointer), size)  # the allocating line
    if rc != 0:
        raise RuntimeError("cudaMalloc returned %d" % rc)
    return pointer


class Model:
    def build(self, runtime):
        return allocate_block(4096, runtime)


def main(mode):
    if mode == "raised":
        try:
            raise KeyError("pending")
        except KeyError as error:
            kept = Model().build(holding)
            assert sys.exc_info()[1] is error, sys.exc_info()
            print("exception kept: %r" % (error,))
            return kept
    return Model().build(releasing if mode == "released" else holding)


def template(runtime):
    a = allocate_block(4096, runtime)
    b = allocate_block(8192, runtime)
    return a, b


def redefined():
    """Six copies of template() under other names, each made, called (the GIL
    released) and dropped in turn, so that each copy's code object likely
    takes the dropped one's address: each leak must name its own copy (first
    .. sixth) and its two lines."""
    kept = []
    for name in ("first", "second", "third", "fourth", "fifth", "sixth"):
        names = {"co_name": name}
        if sys.version_info >= (3, 11):
            names["co_qualname"] = name
        code = template.__code__.replace(**names)
        copy = types.FunctionType(code, globals(), name)
        kept.extend(copy(releasing))
        del copy, code
    return kept


class Dim3(ctypes.Structure):
    _fields_ = [("x", ctypes.c_uint), ("y", ctypes.c_uint),
                ("z", ctypes.c_uint)]


def launch_faulting_kernel(runtime):
    """Launches the kernel the test double faults on (by its name), then
    synchronizes: the report at the sticky error must name this line as
    where the launch came from, with the GIL held or released."""
    runtime.cudaLaunchKernel.argtypes = [
        ctypes.c_char_p, Dim3, Dim3, ctypes.c_void_p, ctypes.c_size_t,
        ctypes.c_void_p]
    rc = runtime.cudaLaunchKernel(b"fake_fault_illegal_address", Dim3(4, 1, 1),
                                  Dim3(256, 1, 1), None, 0, None)
    print("launch: %d, sync: %d" % (rc, runtime.cudaDeviceSynchronize()))


LIBRARY = """import ctypes
class Dim3(ctypes.Structure):
    _fields_ = [("x", ctypes.c_uint), ("y", ctypes.c_uint), ("z", ctypes.c_uint)]
def launch(runtime):
    runtime.cudaLaunchKernel.argtypes = [
        ctypes.c_char_p, Dim3, Dim3, ctypes.c_void_p, ctypes.c_size_t,
        ctypes.c_void_p]
    return runtime.cudaLaunchKernel(b"fake_fault_illegal_address",
                                    Dim3(4, 1, 1), Dim3(256, 1, 1), None, 0,
                                    None)
"""


def launch_through_a_library(runtime):
    """The same launch made by an installed package's function (a module in
    a site-packages folder), as torch.nn or Triton's launcher make them: the
    report must name this script's line, below the library's."""
    import os
    import tempfile
    folder = os.path.join(tempfile.mkdtemp(), "site-packages")
    os.makedirs(folder)
    with open(os.path.join(folder, "fakelib.py"), "w") as f:
        f.write(LIBRARY)
    sys.path.insert(0, folder)
    import fakelib
    rc = fakelib.launch(runtime)  # the script's launching line
    print("launch: %d, sync: %d" % (rc, runtime.cudaDeviceSynchronize()))


mode = sys.argv[1] if len(sys.argv) > 1 else "leak"
if mode == "redefined":
    print("python_alloc: allocated %d blocks" % len(redefined()))
    sys.exit(0)
if mode in ("fault", "fault_gil"):
    launch_faulting_kernel(holding if mode == "fault_gil" else releasing)
    sys.exit(0)
if mode == "fault_lib":
    launch_through_a_library(releasing)
    sys.exit(0)
kept = main(mode)  # the <module> line of the other modes
print("python_alloc: allocated 0x%x" % kept.value)
