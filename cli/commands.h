// The launcher's subcommands. Each takes the arguments from the subcommand's
// name on (argv[0] is "run", "report", ...) and returns the process exit
// status: 0 success, 1 a failure it explains, 2 bad usage.
#ifndef GMT_CLI_COMMANDS_H_
#define GMT_CLI_COMMANDS_H_

namespace gmt::cli {

// `gpumemtrace run [FLAGS] -- PROGRAM [ARGS...]` (cli/run_command.cc). Does
// not return when the program starts: it becomes the program (exec), so the
// exit status is the program's.
int RunMain(int argc, char** argv);

// `gpumemtrace report FILE.json ...` and `report --diff A.json B.json`
// (cli/report_command.cc).
int ReportMain(int argc, char** argv);

// `gpumemtrace health` (cli/health_main.cc).
int HealthMain(int argc, char** argv);

// `gpumemtrace memtest` (cli/memtest_main.cc).
int MemtestMain(int argc, char** argv);

// `gpumemtrace explain-dump FILE` (cli/explain_dump_command.cc).
int ExplainDumpMain(int argc, char** argv);

}  // namespace gmt::cli

#endif  // GMT_CLI_COMMANDS_H_
