// The guard-zone kernels (zone_kernels.cu) as a fatbin image embedded in the
// library: SASS for the supported GPU architectures plus PTX, ready for
// cuLibraryLoadData. Generated at build time (kernels/CMakeLists.txt).
#ifndef GMT_KERNELS_ZONE_KERNELS_IMAGE_H_
#define GMT_KERNELS_ZONE_KERNELS_IMAGE_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

// 16-byte aligned; the driver reads it in place.
extern const unsigned char gmt_zone_kernels_fatbin[];
extern const size_t gmt_zone_kernels_fatbin_size;

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // GMT_KERNELS_ZONE_KERNELS_IMAGE_H_
