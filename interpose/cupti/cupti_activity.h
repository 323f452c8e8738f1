// CUPTI memory activity records: the MemoryActivitySource
// (lib/registry/memory_activity.h) behind CUPTI's activity API.
//
//   std::string why;
//   if (!StartMemoryActivity(*cupti, &why)) LogNote(1, "%s", why.c_str());
//
// Enables CUPTI_ACTIVITY_KIND_MEMORY2 only. CUPTI fills buffers the tool
// hands it (256 KiB each) and returns them full, from its own thread or
// inside a flush; the tool decodes the memory records (CUpti_ActivityMemory4,
// whose leading fields CUpti_ActivityMemory3 of CUPTI 12 shares) into a queue
// the engine drains at the exit report and at a free it cannot match (and,
// past 64 Ki queued records, CUPTI's thread hands them over itself, without a
// flush). No CUDA call is made from CUPTI's thread, and nothing is done per
// launch.
//
// The buffer callbacks are process-wide in CUPTI (one registration per
// process): a profiler that registers its own later (Kineto) takes them over,
// and the tool then simply gets no more records.
#ifndef GMT_INTERPOSE_CUPTI_CUPTI_ACTIVITY_H_
#define GMT_INTERPOSE_CUPTI_CUPTI_ACTIVITY_H_

#include <string>

#include "lib/platform/cupti_loader.h"

namespace gmt {

// Registers the buffer callbacks, enables memory records and installs the
// source with SetMemoryActivitySource. False (with `why`) when this libcupti
// lacks the activity API or refuses. Call once, after subscribing.
bool StartMemoryActivity(const CuptiLibrary& cupti, std::string* why);

}  // namespace gmt

#endif  // GMT_INTERPOSE_CUPTI_CUPTI_ACTIVITY_H_
