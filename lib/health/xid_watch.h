// Xid events during the run: an NVML event set on every
// device, waited on by one background thread with a short timeout. Started
// from the background NVML start (lib/health/nvml_startup.h) only when NVML
// is present and xid_events=1; the thread never blocks exit (it is detached
// and polls a stop flag between short waits, asked to stop at the exit hook).
#ifndef GMT_LIB_HEALTH_XID_WATCH_H_
#define GMT_LIB_HEALTH_XID_WATCH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "lib/health/health.h"

namespace gmt {

// Starts the watcher once per process (later calls do nothing). Returns
// whether it runs; the reason otherwise goes to XidSnapshot's status.
bool StartXidWatch();

// Never starts the watcher in this process: StartXidWatch does nothing after
// it, and the status reads "not watched: <why>".
void DeclineXidWatch(const std::string& why);

// Asks the watcher to stop, without waiting for it.
void RequestXidWatchStop();

// Asks the watcher to stop and waits at most `wait_ms` for it to leave NVML
// (it checks between waits of 20 ms). Returns whether it stopped.
bool StopXidWatch(int wait_ms);

// At a GPU fault the program learns of first (a sticky CUDA error), the
// driver's Xid for it comes to the watcher a moment later: waits at most
// `wait_ms` for the first event when none is recorded yet and the watcher
// runs. Returns whether an event is recorded.
bool WaitForFirstXid(int wait_ms);

// What was recorded so far.
void XidSnapshot(bool* watched, std::string* status,
                 std::vector<XidEvent>* events);

}  // namespace gmt

#endif  // GMT_LIB_HEALTH_XID_WATCH_H_
