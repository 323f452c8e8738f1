// Stands in for a program whose kernel faults on a driver with the GPU core
// dump armed (`gpumemtrace run --explain-faults`): with
// CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1 it writes the dump DUMP (a captured
// one) where CUDA_COREDUMP_FILE says, %p as the pid, and aborts, as the
// driver does after writing a dump; without it, it says so and exits 1, as a
// program that checks the sticky error would.
//
//   gmt_gpu_dump_program DUMP
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const char* armed = std::getenv("CUDA_ENABLE_COREDUMP_ON_EXCEPTION");
  const char* file = std::getenv("CUDA_COREDUMP_FILE");
  if (armed == nullptr || std::strcmp(armed, "1") != 0 || file == nullptr) {
    std::printf("sync: cudaErrorIllegalAddress (no dump armed)\n");
    return 1;
  }
  // The launcher leaves CUPTI injection out of an --explain-faults run.
  std::printf("injection: %s\n", std::getenv("CUDA_INJECTION64_PATH") != nullptr
                                     ? "set"
                                     : "unset");
  std::string path = file;
  if (size_t at = path.find("%p"); at != std::string::npos) {
    path.replace(at, 2, std::to_string(getpid()));
  }
  std::printf("dump: %s\n", path.c_str());
  std::ifstream in(argv[1], std::ios::binary);
  std::ofstream out(path, std::ios::binary);
  out << in.rdbuf();
  out.close();
  std::fflush(stdout);
  std::abort();
}
