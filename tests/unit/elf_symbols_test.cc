// A module's function symbols sorted once (lib/stacks/elf_symbols.h): the
// functions of this test binary and of libstdc++ by address, the loaded
// modules, one read per module however many addresses the symbolizer names,
// and files that are no symbol table.
#include "lib/stacks/elf_symbols.h"

#include <dirent.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>

#include "gtest/gtest.h"
#include "lib/stacks/symbolizer.h"

// A global function and a file-local one: the local one is only in .symtab,
// which the table must be read from.
extern "C" __attribute__((noinline)) int gmt_elf_symbols_test_global(int x) {
  return x * 3 + 1;
}
static __attribute__((noinline)) int gmt_elf_symbols_test_local(int x) {
  return x * 5 + 2;
}

namespace gmt {
namespace {

uint64_t Address(const void* p) { return reinterpret_cast<uint64_t>(p); }

TEST(ElfSymbolsTest, NamesAGlobalAndAFileLocalFunctionOfThisBinary) {
  volatile int sink = gmt_elf_symbols_test_global(1) +
                      gmt_elf_symbols_test_local(2);  // keep both
  (void)sink;
  LoadedModules modules;
  const uint64_t global =
      Address(reinterpret_cast<const void*>(&gmt_elf_symbols_test_global));
  const uint64_t local =
      Address(reinterpret_cast<const void*>(&gmt_elf_symbols_test_local));
  const LoadedModule* m = modules.At(global);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->name, "unit_elf_symbols_test");
  EXPECT_EQ(modules.At(local), m);
  std::unique_ptr<FunctionSymbols> symbols = FunctionSymbols::Read(m->path);
  ASSERT_NE(symbols, nullptr);
  EXPECT_GT(symbols->size(), 100u);
  // At its first byte and a few bytes in (a return address inside it).
  for (uint64_t offset : {0, 1, 4}) {
    const char* name = symbols->NameAt(global + offset - m->bias);
    ASSERT_NE(name, nullptr) << offset;
    EXPECT_STREQ(name, "gmt_elf_symbols_test_global") << offset;
  }
  const char* name = symbols->NameAt(local + 1 - m->bias);
  ASSERT_NE(name, nullptr);
  EXPECT_NE(std::string(name).find("gmt_elf_symbols_test_local"),
            std::string::npos)
      << name;
  // Below the first function of the file: none.
  EXPECT_EQ(symbols->NameAt(0), nullptr);
}

TEST(ElfSymbolsTest, NamesFunctionsOfASharedLibraryAtItsLoadBias) {
  const uint64_t terminate =
      Address(reinterpret_cast<const void*>(&std::get_terminate));
  LoadedModules modules;
  const LoadedModule* m = modules.At(terminate);
  ASSERT_NE(m, nullptr);
  EXPECT_NE(m->name.find("libstdc++"), std::string::npos) << m->name;
  EXPECT_NE(m->bias, 0u);
  std::unique_ptr<FunctionSymbols> symbols = FunctionSymbols::Read(m->path);
  ASSERT_NE(symbols, nullptr);
  const char* name = symbols->NameAt(terminate + 1 - m->bias);
  ASSERT_NE(name, nullptr);
  EXPECT_STREQ(name, "_ZSt13get_terminatev");
}

int OpenDescriptors() {
  int n = 0;
  if (DIR* dir = opendir("/proc/self/fd")) {
    while (readdir(dir) != nullptr) ++n;
    closedir(dir);
  }
  return n;
}

// A table read holds no file descriptor: a program near its limit of open
// files must not meet the tool's (a report names frames of tens of modules).
TEST(ElfSymbolsTest, AReadTableHoldsNoFileDescriptor) {
  LoadedModules modules;
  const LoadedModule* m =
      modules.At(Address(reinterpret_cast<const void*>(&std::get_terminate)));
  ASSERT_NE(m, nullptr);
  const int before = OpenDescriptors();
  std::unique_ptr<FunctionSymbols> symbols = FunctionSymbols::Read(m->path);
  ASSERT_NE(symbols, nullptr);
  EXPECT_EQ(OpenDescriptors(), before);
  EXPECT_STREQ(symbols->NameAt(
                   Address(reinterpret_cast<const void*>(&std::get_terminate)) +
                   1 - m->bias),
               "_ZSt13get_terminatev");
}

TEST(ElfSymbolsTest, AddressesNoModuleMapsHaveNone) {
  LoadedModules modules;
  EXPECT_EQ(modules.At(0), nullptr);
  EXPECT_EQ(modules.At(16), nullptr);
}

TEST(ElfSymbolsTest, FilesThatAreNoSymbolTableGiveNone) {
  EXPECT_EQ(FunctionSymbols::Read(""), nullptr);
  EXPECT_EQ(FunctionSymbols::Read("/nonexistent/libnothing.so"), nullptr);
  char path[] = "/tmp/gmt_elf_symbols_test_XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const char text[] = "not an ELF file\n";
  ASSERT_EQ(write(fd, text, sizeof(text)), static_cast<ssize_t>(sizeof(text)));
  close(fd);
  EXPECT_EQ(FunctionSymbols::Read(path), nullptr);
  unlink(path);
  EXPECT_EQ(FunctionSymbols::Read("/proc/self"), nullptr);  // a directory
}

// The symbolizer reads a module's table once, however many of its addresses
// it names (libdw's own lookup walked the whole table for each: 9 ms per
// address in PyTorch's libtorch_cpu.so).
TEST(ElfSymbolsTest, TheSymbolizerReadsEachModulesTableOnce) {
  const uint64_t terminate =
      Address(reinterpret_cast<const void*>(&std::get_terminate));
  const uint64_t set_terminate =
      Address(reinterpret_cast<const void*>(&std::set_terminate));
  Symbolizer symbolizer;
  // This binary's table first (its frames), then libstdc++'s.
  symbolizer.Symbolize(
      Address(reinterpret_cast<const void*>(&gmt_elf_symbols_test_global)) + 1);
  const uint64_t before = FunctionSymbolTablesRead();
  EXPECT_EQ(symbolizer.Symbolize(terminate + 1).function,
            "std::get_terminate()");
  EXPECT_EQ(FunctionSymbolTablesRead(), before + 1);
  for (uint64_t offset = 2; offset < 10; ++offset) {
    symbolizer.Symbolize(terminate + offset);
    symbolizer.Symbolize(set_terminate + offset);
  }
  EXPECT_EQ(symbolizer.Symbolize(set_terminate + 1).function,
            "std::set_terminate(void (*)())");
  EXPECT_EQ(FunctionSymbolTablesRead(), before + 1);
}

}  // namespace
}  // namespace gmt
