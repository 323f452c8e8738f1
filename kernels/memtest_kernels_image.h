// The memtest kernels (memtest_kernels.cu) as a fatbin image embedded in the
// memtest host code: SASS for the supported GPU architectures plus PTX, ready
// for cuLibraryLoadData. Generated at build time (kernels/CMakeLists.txt).
#ifndef GMT_KERNELS_MEMTEST_KERNELS_IMAGE_H_
#define GMT_KERNELS_MEMTEST_KERNELS_IMAGE_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

// 16-byte aligned; the driver reads it in place.
extern const unsigned char gmt_memtest_kernels_fatbin[];
extern const size_t gmt_memtest_kernels_fatbin_size;

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // GMT_KERNELS_MEMTEST_KERNELS_IMAGE_H_
