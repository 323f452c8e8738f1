// CUDA_INJECTION64_PATH entry: libcuda dlopens this library inside the
// program's first cuInit and calls InitializeInjection. The program's own
// references to cu*/cuda* were bound before that, so the shims see nothing
// unless LD_PRELOAD also named the library; the CUPTI subscriber
// (cupti_subscriber.h) covers what they miss.
//
//   CUDA_INJECTION64_PATH=/path/libgpumemtrace.so ./app          CUPTI only
//   LD_PRELOAD=... CUDA_INJECTION64_PATH=... ./app               shims (count
//                                                                 once)
#include "interpose/cupti/cupti_subscriber.h"
#include "interpose/resolve/driver_import_patch.h"
#include "interpose/resolve/driver_table_patch.h"
#include "lib/core/log.h"
#include "lib/core/options.h"

extern "C" __attribute__((visibility("default"))) int InitializeInjection(
    void) {
  gmt::StartCupti(/*injected=*/true);
  // Entry points the program's runtime fetched before this cuInit: point
  // them at the shims now (driver_table_patch.h), for guard zones.
  // The same for the objects' own imports of driver functions
  // (driver_import_patch.h): their direct calls reach the shims too.
  if (gmt::GlobalOptions().enabled && !gmt::ShimsInterposed()) {
    const int patched = gmt::PatchDriverTables();
    const int imports = gmt::PatchDriverImports();
    gmt::LogNote(1,
                 "injection: %d driver entry point(s) in the program's "
                 "data and %d import slot(s) redirected to the shims",
                 patched, imports);
  }
  return 1;  // the driver ignores the value; 1 is what NVIDIA's samples return
}

namespace gmt {
namespace {

// cupti=on asks for CUPTI beside the shims, injected or not: subscribe at
// load, before the program's first CUDA call.
__attribute__((constructor)) void SubscribeIfAsked() {
  if (GlobalOptions().cupti == CuptiMode::kOn) StartCupti(/*injected=*/false);
}

}  // namespace
}  // namespace gmt
