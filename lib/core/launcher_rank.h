// Who this process is in a multi-process job, for report paths (%r, %h in
// report_path; see ExpandPath in options.h).
#ifndef GMT_LIB_CORE_LAUNCHER_RANK_H_
#define GMT_LIB_CORE_LAUNCHER_RANK_H_

#include <string>

namespace gmt {

// The environment variables that carry a process's rank, in the order they
// are consulted: MPI launchers first (their world rank is global), then
// Slurm, then torchrun's RANK, and LOCAL_RANK (per node only) last.
inline constexpr const char* kRankVariables[] = {
    "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK",  "MV2_COMM_WORLD_RANK",
    "SLURM_PROCID",         "RANK",      "LOCAL_RANK"};

// The first of kRankVariables that is set to a non-negative decimal number
// (at most 9 digits); "0" when none is (a single-process run is rank 0). Other
// values (empty, "abc", "1/2") are skipped, so a path never gets odd
// characters from the environment.
std::string LauncherRank();

// The host name (gethostname), with any '/' replaced by '_'; "localhost" if it
// cannot be read.
std::string HostNameForPath();

}  // namespace gmt

#endif  // GMT_LIB_CORE_LAUNCHER_RANK_H_
