// Fake driver: the parameter layout of the double's kernels
// (cuFuncGetParamInfo, cuKernelGetParamInfo; the runtime's
// cudaFuncGetParamInfo and cudaGetFuncBySymbol are in
// fake_runtime_launch_sync.cc).
//
// A kernel handle of the double is a pointer to its mangled name
// (fake_driver_launch_sync.cc); its layout is read from the name's parameter
// types, laid out as the compiler lays out a kernel's parameter buffer (each
// at its alignment, in order):
//   * builtin types by their size: b c a h (1), s t (2), i j f (4),
//     l m x y d (8); pointers (P..., any pointee) 8;
//   * a class passed by value whose name ends in its size in bytes,
//     e.g. `6Args24` (struct Args24, 24 bytes, aligned to 8);
//   * substitutions (S_, S0_, ...) of earlier pointer and class types.
// `_Z4fillPfi` is fill(float*, int): offsets 0 and 8, sizes 8 and 4.
//
// As in CUDA, an index past the last parameter is CUDA_ERROR_INVALID_VALUE
// (index 0 of a kernel without parameters: `_Z4stepv`). A name the double
// cannot read (not mangled, or a type outside the list above) answers
// CUDA_ERROR_NOT_SUPPORTED: the double does not know that kernel's layout,
// as an older driver would not (the tool must then fall back).
#include <cudaTypedefs.h>

#include <cctype>
#include <cstring>
#include <string>
#include <vector>

#include "tests/fake_cuda/fake_driver.h"
#include "tests/fake_cuda/fake_weak.h"

namespace {

struct Param {
  size_t size;
  size_t align;
};

// Reads one <type> at `*p`; false when the double does not know it.
bool ReadType(const char** p, std::vector<Param>* substitutions, Param* out) {
  const char c = **p;
  switch (c) {
    case 'b':
    case 'c':
    case 'a':
    case 'h':
      ++*p;
      *out = {1, 1};
      return true;
    case 's':
    case 't':
      ++*p;
      *out = {2, 2};
      return true;
    case 'i':
    case 'j':
    case 'f':
      ++*p;
      *out = {4, 4};
      return true;
    case 'l':
    case 'm':
    case 'x':
    case 'y':
    case 'd':
      ++*p;
      *out = {8, 8};
      return true;
    case 'K':  // const: the pointee of a pointer
    case 'V':
      ++*p;
      if (!ReadType(p, substitutions, out)) return false;
      substitutions->push_back(*out);
      return true;
    case 'P': {
      ++*p;
      Param pointee{};
      if (!ReadType(p, substitutions, &pointee)) return false;
      *out = {8, 8};
      substitutions->push_back(*out);
      return true;
    }
    case 'S': {
      ++*p;
      size_t index = 0;
      if (**p != '_') {
        if (!std::isdigit(static_cast<unsigned char>(**p))) return false;
        index = static_cast<size_t>(**p - '0') + 1;
        ++*p;
      }
      if (**p != '_' || index >= substitutions->size()) return false;
      ++*p;
      *out = (*substitutions)[index];
      return true;
    }
    default:
      break;
  }
  if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  size_t length = 0;
  while (std::isdigit(static_cast<unsigned char>(**p))) {
    length = length * 10 + static_cast<size_t>(**p - '0');
    ++*p;
  }
  const std::string name(*p, strnlen(*p, length));
  if (name.size() != length) return false;
  *p += length;
  size_t digits = name.size();
  while (digits > 0 &&
         std::isdigit(static_cast<unsigned char>(name[digits - 1]))) {
    --digits;
  }
  if (digits == name.size()) return false;  // no size in the name
  *out = {std::stoul(name.substr(digits)), 8};
  substitutions->push_back(*out);
  return true;
}

// The layout of the kernel named `mangled`; false when the double cannot
// read it.
bool LayoutOf(const char* mangled, std::vector<Param>* params) {
  if (std::strncmp(mangled, "_Z", 2) != 0) return false;
  const char* p = mangled + 2;
  size_t length = 0;
  if (!std::isdigit(static_cast<unsigned char>(*p))) return false;
  while (std::isdigit(static_cast<unsigned char>(*p))) {
    length = length * 10 + static_cast<size_t>(*p - '0');
    ++p;
  }
  if (strnlen(p, length) != length) return false;
  p += length;
  if (std::strcmp(p, "v") == 0) return true;  // no parameters
  std::vector<Param> substitutions;
  while (*p != '\0') {
    Param param{};
    if (!ReadType(&p, &substitutions, &param)) return false;
    params->push_back(param);
  }
  return true;
}

CUresult ParamInfo(const void* handle, size_t index, size_t* offset,
                   size_t* size) {
  if (!fake_cuda::Initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (handle == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (offset == nullptr && size == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::vector<Param> params;
  if (!LayoutOf(static_cast<const char*>(handle), &params)) {
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  if (index >= params.size()) return CUDA_ERROR_INVALID_VALUE;
  size_t at = 0;
  for (size_t i = 0;; ++i) {
    at = (at + params[i].align - 1) / params[i].align * params[i].align;
    if (i == index) break;
    at += params[i].size;
  }
  if (offset != nullptr) *offset = at;
  if (size != nullptr) *size = params[index].size;
  return CUDA_SUCCESS;
}

}  // namespace

FAKE_CU_API_WEAK(cuFuncGetParamInfo,
                 (CUfunction f, size_t index, size_t* offset, size_t* size)) {
  return ParamInfo(f, index, offset, size);
}

FAKE_CU_API_WEAK(cuKernelGetParamInfo,
                 (CUkernel k, size_t index, size_t* offset, size_t* size)) {
  return ParamInfo(k, index, offset, size);
}
