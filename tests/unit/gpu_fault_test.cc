// lib/gpu_fault: the GPU core dump reader against dumps captured on an H200
// (tests/fixtures/cudacore/, each beside cuda-gdb's own reading of it), its
// refusal of truncated and damaged dumps, and the pieces of the explanation:
// line tables, SASS memory operands, nvdisasm's text, where an address lies.
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "lib/gpu_fault/address_place.h"
#include "lib/gpu_fault/elf_reader.h"
#include "lib/gpu_fault/fault_explanation.h"
#include "lib/gpu_fault/fault_text.h"
#include "lib/gpu_fault/gpu_core_dump.h"
#include "lib/gpu_fault/gpu_exception.h"
#include "lib/gpu_fault/line_table.h"
#include "lib/gpu_fault/nvdisasm.h"
#include "lib/gpu_fault/sass_operand.h"

namespace gmt::gpu_fault {
namespace {

// GMT_CUDACORE_FIXTURES in the environment wins over the source tree's
// folder (a test binary shipped to another machine).
std::string FixturePath(const std::string& name) {
  const char* dir = std::getenv("GMT_CUDACORE_FIXTURES");
  return std::string(dir != nullptr ? dir : GMT_CUDACORE_FIXTURES) + "/" +
         name + ".cudacore";
}

std::vector<uint8_t> ReadFixture(const std::string& name) {
  std::ifstream in(FixturePath(name), std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

ExplainOptions NoDisassembly() {
  ExplainOptions options;
  options.disassemble = false;
  return options;
}

GpuFaultExplanation Explain(const std::string& name, bool disassemble) {
  absl::StatusOr<GpuCoreDump> dump = ReadGpuCoreDumpFile(FixturePath(name));
  EXPECT_TRUE(dump.ok()) << dump.status();
  ExplainOptions options;
  options.disassemble = disassemble;
  return ExplainGpuFaults(*dump, options);
}

// What cuda-gdb reads from each dump (the *.cudagdb.txt beside it): the
// focus warp's exception, kernel, block, thread, errorPC offset and line.
struct Expected {
  const char* fixture;
  GpuException exception;
  const char* kernel;
  const char* symbol;
  Dim3 block;
  Dim3 thread;
  uint32_t sm;
  uint64_t error_pc;
  uint64_t pc_offset;
  const char* file;
  uint32_t line;
  bool inferred;
};

const Expected kExpected[] = {
    {"wild_write",
     GpuException::kWarpInvalidAddressSpace,
     "scatter(float*, int const*, int)",
     "_Z7scatterPfPKii",
     {2, 0, 0},
     {160, 0, 0},
     124,
     0x7fd94f7a00f0,
     240,
     "wild_write.cu",
     5,
     false},
    {"misaligned",
     GpuException::kWarpMisalignedAddress,
     "store_pairs(char*, int)",
     "_Z11store_pairsPci",
     {0, 0, 0},
     {0, 0, 0},
     124,
     0x7fae637a00e0,
     224,
     "misaligned.cu",
     7,
     false},
    // cuda-gdb 13.0 crashes on this one (no warp carries the errorPC: only
    // the SMs do); the source and the SM table say block 8, line 11.
    {"null_member",
     GpuException::kWarpIllegalAddress,
     "scale_kernel(Params)",
     "_Z12scale_kernel6Params",
     {8, 0, 0},
     {0, 0, 0},
     0,
     0x7f0cbb7a0100,
     256,
     "null_member.cu",
     11,
     true},
    {"triton_oob",
     GpuException::kWarpIllegalAddress,
     "copy_kernel",
     "copy_kernel",
     {8, 0, 0},
     {0, 0, 0},
     0,
     0x7f5bab7a12b0,
     944,
     "triton_oob.py",
     8,
     false},
};

class CapturedDumpTest : public testing::TestWithParam<Expected> {};

TEST_P(CapturedDumpTest, FocusWarpIsWhatCudaGdbReads) {
  const Expected& want = GetParam();
  const GpuFaultExplanation e = Explain(want.fixture, /*disassemble=*/false);
  ASSERT_FALSE(e.warps.empty());
  const WarpFault& f = e.warps.front();
  EXPECT_EQ(f.exception, static_cast<uint32_t>(want.exception));
  EXPECT_EQ(f.kernel, want.kernel);
  EXPECT_EQ(f.kernel_symbol, want.symbol);
  EXPECT_EQ(f.block_idx, want.block);
  ASSERT_FALSE(f.lanes.empty());
  EXPECT_EQ(f.lanes.front().thread_idx, want.thread);
  EXPECT_EQ(f.sm, want.sm);
  ASSERT_TRUE(f.error_pc.has_value());
  EXPECT_EQ(*f.error_pc, want.error_pc);
  ASSERT_TRUE(f.pc_offset.has_value());
  EXPECT_EQ(*f.pc_offset, want.pc_offset);
  ASSERT_TRUE(f.source.has_value());
  EXPECT_EQ(f.source->file, want.file);
  EXPECT_EQ(f.source->line, want.line);
  EXPECT_EQ(f.inferred_from_sm, want.inferred);
  EXPECT_EQ(e.device_name, "NVIDIA H200");
  ASSERT_TRUE(e.metadata.has_value());
  EXPECT_EQ(e.metadata->driver_major, 580u);
  EXPECT_EQ(e.metadata->cuda_major, 13u);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CapturedDumpTest,
                         testing::ValuesIn(kExpected),
                         [](const testing::TestParamInfo<Expected>& info) {
                           return std::string(info.param.fixture);
                         });

TEST(GpuCoreDumpTest, WildWriteHasTheWholeWarpAndItsRegisters) {
  absl::StatusOr<GpuCoreDump> dump =
      ReadGpuCoreDumpFile(FixturePath("wild_write"));
  ASSERT_TRUE(dump.ok()) << dump.status();
  ASSERT_EQ(dump->grids().size(), 1u);
  EXPECT_EQ(dump->grids()[0].grid_dim, (Dim3{4, 1, 1}));
  EXPECT_EQ(dump->grids()[0].block_dim, (Dim3{256, 1, 1}));
  // The launch's parameters: out, idx, n.
  ASSERT_EQ(dump->grids()[0].params.size(), 20u);
  const ByteCursor params(dump->grids()[0].params);
  EXPECT_EQ(*params.U64(0), 0x7fd947e00000u);
  EXPECT_EQ(*params.U64(8), 0x7fd947e01000u);
  EXPECT_EQ(*params.U32(16), 1024u);
  const GpuFaultExplanation e = Explain("wild_write", false);
  ASSERT_EQ(e.warps.size(), 1u);
  EXPECT_EQ(e.warps[0].warp_id, 5u);
  EXPECT_EQ(e.warps[0].lanes.size(), 32u);
  EXPECT_EQ(e.warps[0].lanes.back().thread_idx, (Dim3{191, 0, 0}));
  // cuda-gdb's `info registers` of the focus lane: R4=0x47e00000 R5=0x7fda.
  for (const DumpWarp& w : dump->warps()) {
    if (w.sm != 124 || w.warp_id != 5) continue;
    ASSERT_GE(w.lanes[0].registers.size(), 6u);
    EXPECT_EQ(w.lanes[0].registers[4], 0x47e00000u);
    EXPECT_EQ(w.lanes[0].registers[5], 0x7fdau);
  }
}

TEST(GpuCoreDumpTest, NullMemberFaultsAreInferredFromTheSmTable) {
  const GpuFaultExplanation e = Explain("null_member", false);
  // 16 SMs each record the exception; every resident warp stood just past
  // the faulting store.
  EXPECT_EQ(e.warps.size(), 112u);
  EXPECT_TRUE(e.sm_only.empty());
  for (const WarpFault& f : e.warps) EXPECT_TRUE(f.inferred_from_sm);
}

// The null_member dump with each SM's errorPC moved 64 bytes back, where no
// warp stands: as when the faulting warps exited before the dump was taken.
// The SMs' records alone must still name the kernel and the line.
TEST(GpuCoreDumpTest, SmRecordsWithoutWarpsStillNameTheKernelAndLine) {
  std::vector<uint8_t> bytes = ReadFixture("null_member");
  ASSERT_FALSE(bytes.empty());
  constexpr uint64_t kErrorPc = 0x7f0cbb7a0100;
  constexpr uint64_t kMovedPc = kErrorPc - 64;
  int moved = 0;
  for (size_t i = 0; i + 8 <= bytes.size(); ++i) {
    uint64_t v = 0;
    std::memcpy(&v, &bytes[i], 8);
    if (v != kErrorPc) continue;
    std::memcpy(&bytes[i], &kMovedPc, 8);
    ++moved;
  }
  ASSERT_GT(moved, 0);
  absl::StatusOr<GpuCoreDump> dump = ReadGpuCoreDump(std::move(bytes));
  ASSERT_TRUE(dump.ok()) << dump.status();
  const GpuFaultExplanation e = ExplainGpuFaults(*dump, NoDisassembly());
  EXPECT_TRUE(e.warps.empty());
  ASSERT_EQ(e.sm_only.size(), 16u);
  for (const SmOnlyFault& s : e.sm_only) {
    EXPECT_EQ(s.exception,
              static_cast<uint32_t>(GpuException::kWarpIllegalAddress));
    EXPECT_EQ(s.kernel, "scale_kernel(Params)");
    EXPECT_EQ(s.kernel_symbol, "_Z12scale_kernel6Params");
    ASSERT_TRUE(s.pc_offset.has_value());
    EXPECT_EQ(*s.pc_offset, 256u - 64u);
    ASSERT_TRUE(s.source.has_value());
    EXPECT_EQ(s.source->file, "null_member.cu");
  }
  EXPECT_EQ(e.device_name, "NVIDIA H200");
  const std::string text = RenderGpuFaultText(e, FaultTextOptions{});
  EXPECT_TRUE(
      absl::StrContains(text, absl::StrFormat("Warp Illegal Address: ")))
      << text;
  EXPECT_TRUE(absl::StrContains(
      text, absl::StrFormat("in scale_kernel(Params) at "
                            "_Z12scale_kernel6Params+0xc0 (PC 0x%x) (",
                            kMovedPc)))
      << text;
  EXPECT_TRUE(absl::StrContains(text, "null_member.cu:")) << text;
  // Sixteen SMs, one fault: said once.
  EXPECT_TRUE(absl::StrContains(text,
                                " and 12 more of device 0; no warp left "
                                "to show (they exited)"))
      << text;
  EXPECT_EQ(text.find("Warp Illegal Address:"),
            text.rfind("Warp Illegal Address:"))
      << text;
}

TEST(GpuCoreDumpTest, TritonDumpFindsTheKernelAmongElevenModules) {
  absl::StatusOr<GpuCoreDump> dump =
      ReadGpuCoreDumpFile(FixturePath("triton_oob"));
  ASSERT_TRUE(dump.ok()) << dump.status();
  EXPECT_EQ(dump->modules().size(), 11u);
  const GpuFaultExplanation e = Explain("triton_oob", false);
  // Two exception kinds on different SMs: illegal address and invalid
  // address space, one kernel.
  bool illegal = false, invalid_space = false;
  for (const WarpFault& f : e.warps) {
    EXPECT_EQ(f.kernel, "copy_kernel");
    illegal |= f.exception == 14;
    invalid_space |= f.exception == 7;
  }
  EXPECT_TRUE(illegal);
  EXPECT_TRUE(invalid_space);
}

// ---- the derived address (needs nvdisasm from the CUDA toolkit) ----------

struct ExpectedAddress {
  const char* fixture;
  const char* instruction;
  uint64_t address;
};

const ExpectedAddress kAddresses[] = {
    // R4:R5 of the focus lane: 4 GiB past `out` (idx = 2^30 floats).
    {"wild_write", "STG.E desc[UR4][R4.64], R7", 0x7fda47e00000},
    // base + 4: the 8-byte store is 4 bytes off.
    {"misaligned", "STG.E.64 desc[UR4][R4.64], R2", 0x7fae5be00004},
    // p.out == nullptr, block 8 thread 0: i = 2048, 4 bytes each.
    {"null_member", "STG.E desc[UR4][R4.64], R7", 0x2000},
    // dst + offs * 2^18 * 4 with offs = 8192: the int index wrapped to
    // -2^31, 8 GiB before dst.
    {"triton_oob", "STG.E desc[UR6][R20.64], R4", 0x7f59a3e09e00},
};

class DerivedAddressTest : public testing::TestWithParam<ExpectedAddress> {};

TEST_P(DerivedAddressTest, AddressFromInstructionAndRegisters) {
  if (!FindNvdisasm("")) GTEST_SKIP() << "nvdisasm not found";
  const ExpectedAddress& want = GetParam();
  const GpuFaultExplanation e = Explain(want.fixture, /*disassemble=*/true);
  ASSERT_FALSE(e.warps.empty());
  const WarpFault& f = e.warps.front();
  EXPECT_EQ(f.instruction, want.instruction);
  ASSERT_TRUE(f.address.has_value()) << f.address_not_derived;
  EXPECT_EQ(*f.address, want.address);
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, DerivedAddressTest, testing::ValuesIn(kAddresses),
    [](const testing::TestParamInfo<ExpectedAddress>& info) {
      return std::string(info.param.fixture);
    });

TEST(DerivedAddressTest, WithoutNvdisasmTheReportSaysWhy) {
  absl::StatusOr<GpuCoreDump> dump =
      ReadGpuCoreDumpFile(FixturePath("wild_write"));
  ASSERT_TRUE(dump.ok());
  ExplainOptions options;
  options.nvdisasm = "/nonexistent/nvdisasm";
  const GpuFaultExplanation e = ExplainGpuFaults(*dump, options);
  ASSERT_FALSE(e.warps.empty());
  EXPECT_FALSE(e.warps[0].address.has_value());
  EXPECT_EQ(e.warps[0].address_not_derived,
            "nvdisasm not executable at /nonexistent/nvdisasm");
  const std::string text = RenderGpuFaultText(e, {});
  EXPECT_TRUE(
      absl::StrContains(text,
                        "address not derived: nvdisasm not executable at "
                        "/nonexistent/nvdisasm"))
      << text;
}

TEST(FaultTextTest, WildWriteReadsAsTheIssueAsks) {
  absl::StatusOr<GpuCoreDump> dump =
      ReadGpuCoreDumpFile(FixturePath("wild_write"));
  ASSERT_TRUE(dump.ok());
  GpuFaultExplanation e = ExplainGpuFaults(*dump, NoDisassembly());
  // As if decoded: the renderer is tested apart from nvdisasm.
  e.warps[0].instruction = "STG.E desc[UR4][R4.64], R7";
  e.warps[0].address = 0x7fda47e00000;
  e.warps[0].lanes[0].address = 0x7fda47e00000;
  AllocationRecord out;
  out.address = 0x7fd947e00000;
  out.bytes = 4096;
  out.api = Api::kCudaMalloc;
  out.stack = 7;
  AllocationRecord idx = out;
  idx.address = 0x7fd947e01000;
  idx.stack = 8;
  const std::vector<AllocationRecord> blocks = {out, idx};
  FaultTextOptions options;
  options.blocks = blocks;
  options.have_blocks = true;
  options.arguments = {{0, "out", 0x7fd947e00000}, {1, "idx", 0x7fd947e01000}};
  options.site = [](StackId id) {
    return id == 7 ? std::string("main (wild_write.cu:10)") : std::string();
  };
  const std::string text = RenderGpuFaultText(e, options);
  EXPECT_TRUE(absl::StrContains(text, "Warp Invalid Address Space")) << text;
  EXPECT_TRUE(absl::StrContains(
      text,
      "in scatter(float*, int const*, int) at _Z7scatterPfPKii+0xf0 (PC "
      "0x7fd94f7a00f0) (/work/scratch/diag2/wild_write.cu:5)"))
      << text;
  EXPECT_TRUE(absl::StrContains(
      text,
      "block (2,0,0), threads (160,0,0)..(191,0,0), 32 threads of grid "
      "(4,1,1) x block (256,1,1) (device 0, SM 124, warp 5)"))
      << text;
  EXPECT_TRUE(absl::StrContains(
      text,
      "address 0x7fda47e00000 (thread (160,0,0)): 4.0 GiB past the end of the "
      "4.0 KiB block at 0x7fd947e00000 (cudaMalloc), passed as argument 0 "
      "(`out`), allocated at main (wild_write.cu:10); or 4.0 GiB past the end "
      "of the 4.0 KiB block at 0x7fd947e01000 (cudaMalloc), passed as "
      "argument 1 (`idx`) (the address alone does not tell which)"))
      << text;
  // With `idx` freed, `out` alone is near.
  options.blocks = absl::MakeConstSpan(blocks).first(1);
  EXPECT_TRUE(absl::StrContains(
      RenderGpuFaultText(e, options),
      "4.0 GiB past the end of the 4.0 KiB block at 0x7fd947e00000 "
      "(cudaMalloc), passed as argument 0 (`out`), allocated at main "
      "(wild_write.cu:10)\n"));
}

// ---- truncated and damaged dumps: a clear error, never a crash -----------

TEST(DamagedDumpTest, TruncatedAnywhereIsAnError) {
  for (const char* name : {"wild_write", "misaligned", "null_member"}) {
    const std::vector<uint8_t> whole = ReadFixture(name);
    ASSERT_FALSE(whole.empty());
    // Every 97th length, and every length near the header and the end.
    for (size_t length = 0; length < whole.size();
         length += (length < 256 || length + 4096 > whole.size()) ? 1 : 97) {
      absl::StatusOr<GpuCoreDump> dump = ReadGpuCoreDump(
          std::vector<uint8_t>(whole.begin(), whole.begin() + length));
      ASSERT_FALSE(dump.ok()) << name << " cut to " << length << " bytes";
      ASSERT_FALSE(dump.status().message().empty());
    }
  }
}

TEST(DamagedDumpTest, TruncatedDumpNamesTheProblem) {
  std::vector<uint8_t> whole = ReadFixture("wild_write");
  whole.resize(whole.size() - 1000);
  absl::StatusOr<GpuCoreDump> dump = ReadGpuCoreDump(whole);
  ASSERT_FALSE(dump.ok());
  EXPECT_TRUE(absl::StrContains(dump.status().message(), "truncated"))
      << dump.status();
  whole.resize(10);
  EXPECT_TRUE(absl::StrContains(ReadGpuCoreDump(whole).status().message(),
                                "shorter than an ELF header"));
}

TEST(DamagedDumpTest, NotACudaDumpIsRefused) {
  std::vector<uint8_t> bytes = ReadFixture("wild_write");
  bytes[18] = 62;  // EM_X86_64: a host core file
  absl::StatusOr<GpuCoreDump> dump = ReadGpuCoreDump(bytes);
  ASSERT_FALSE(dump.ok());
  EXPECT_TRUE(
      absl::StrContains(dump.status().message(), "not a CUDA GPU core dump"));
}

// Flipped bytes anywhere (headers, tables, registers, module images): the
// reader and the explanation either work or say why, and never read out of
// bounds (run under the sanitizer build to see that too).
TEST(DamagedDumpTest, FlippedBytesNeverCrash) {
  for (const char* name : {"wild_write", "misaligned", "null_member"}) {
    const std::vector<uint8_t> whole = ReadFixture(name);
    std::mt19937_64 random(42);
    int refused = 0;
    for (int round = 0; round < 300; ++round) {
      std::vector<uint8_t> bytes = whole;
      // Some rounds hit the section headers (the end of the file), where a
      // flip changes the structure rather than a value.
      const bool headers = round % 2 == 0;
      for (int flips = 0; flips < 4; ++flips) {
        size_t at = random() % bytes.size();
        if (headers) at = bytes.size() - 1 - random() % 60000 % bytes.size();
        bytes[at] ^= static_cast<uint8_t>(1u << (random() % 8));
      }
      absl::StatusOr<GpuCoreDump> dump = ReadGpuCoreDump(std::move(bytes));
      if (!dump.ok()) {
        ++refused;
        EXPECT_FALSE(dump.status().message().empty());
        continue;
      }
      const GpuFaultExplanation e = ExplainGpuFaults(*dump, NoDisassembly());
      (void)RenderGpuFaultText(e, {});
    }
    EXPECT_GT(refused, 0) << name;
  }
}

// ---- the pieces -----------------------------------------------------------

TEST(GpuExceptionTest, NamesAsCudaGdbPrintsThem) {
  EXPECT_STREQ(GpuExceptionName(14), "Warp Illegal Address");
  EXPECT_STREQ(GpuExceptionName(6), "Warp Misaligned Address");
  EXPECT_STREQ(GpuExceptionName(7), "Warp Invalid Address Space");
  EXPECT_STREQ(GpuExceptionName(5), "Warp Out-of-range Address");
  EXPECT_STREQ(GpuExceptionName(4), "Warp Illegal Instruction");
  EXPECT_STREQ(GpuExceptionName(0xffffffffu), "Unknown Exception");
  EXPECT_TRUE(absl::StrContains(GpuExceptionName(99), "unknown"));
  EXPECT_TRUE(GpuExceptionIsAboutAnAddress(14));
  EXPECT_FALSE(GpuExceptionIsAboutAnAddress(4));
}

TEST(SassOperandTest, ReadsGlobalOperands) {
  absl::StatusOr<MemoryOperand> op =
      ParseMemoryOperand("STG.E desc[UR4][R4.64+0x10], R7 ;");
  ASSERT_TRUE(op.ok()) << op.status();
  EXPECT_EQ(op->base.index, 4u);
  EXPECT_TRUE(op->base.wide);
  EXPECT_FALSE(op->base.uniform);
  EXPECT_EQ(op->immediate, 0x10);
  const std::vector<uint32_t> regs = {0, 0, 0, 0, 0x1000, 0x7f00};
  EXPECT_EQ(*EvaluateAddress(*op, regs, {}), 0x7f0000001010u);

  op = ParseMemoryOperand("@!P0 LDG.E.64 R2, desc[UR6][R2.64+-0x8]");
  ASSERT_TRUE(op.ok()) << op.status();
  EXPECT_EQ(op->immediate, -8);
  op = ParseMemoryOperand("LDG.E R0, desc[UR6][R2.64-0x8]");
  ASSERT_TRUE(op.ok()) << op.status();
  EXPECT_EQ(op->immediate, -8);

  op = ParseMemoryOperand("LDG.E R0, desc[UR8][UR4.64+0x20]");
  ASSERT_TRUE(op.ok()) << op.status();
  EXPECT_TRUE(op->base.uniform);
  const std::vector<uint32_t> uniform = {0, 0, 0, 0, 0x100, 0x1};
  EXPECT_EQ(*EvaluateAddress(*op, {}, uniform), 0x100000120u);

  op = ParseMemoryOperand("LDG.E R0, desc[UR8][R2.64+UR4]");
  ASSERT_TRUE(op.ok()) << op.status();
  ASSERT_TRUE(op->offset_register.has_value());
  EXPECT_EQ(*EvaluateAddress(*op, {0, 0, 0x10, 0}, uniform), 0x110u);

  op = ParseMemoryOperand("LDGSTS.E [R5+0x100], desc[UR4][R2.64]");
  ASSERT_TRUE(op.ok()) << op.status();
  EXPECT_EQ(op->base.index, 2u);
}

TEST(SassOperandTest, RefusesWhatIsNotAGlobalAddress) {
  EXPECT_TRUE(absl::StrContains(
      ParseMemoryOperand("STS [R3+0x10], R2").status().message(),
      "shared or local"));
  EXPECT_TRUE(absl::StrContains(
      ParseMemoryOperand("ST.E [R3+0x10], R2").status().message(),
      "32-bit base"));
  EXPECT_FALSE(ParseMemoryOperand("EXIT").ok());
  EXPECT_FALSE(ParseMemoryOperand("STG.E desc[UR4][R4.64+R2+R3], R7").ok());
  // A register the dump does not hold.
  absl::StatusOr<MemoryOperand> op =
      ParseMemoryOperand("STG.E desc[UR4][R40.64], R7");
  ASSERT_TRUE(op.ok());
  EXPECT_TRUE(
      absl::StrContains(EvaluateAddress(*op, {1, 2, 3}, {}).status().message(),
                        "R40.64 is not in the dump"));
}

TEST(NvdisasmTest, ParsesItsText) {
  const auto parsed = ParseDisassembly(
      "_Z7scatterPfPKii:\n"
      "        /*7fd94f7a00e0*/                   IMAD.WIDE R4, R3, 0x4, R4 ;\n"
      "        /*7fd94f7a00f0*/                   STG.E desc[UR4][R4.64], R7 "
      ";   /* 0x0000000704007986 */\n"
      "        /*0070*/               @P0 EXIT ;\n"
      ".L_x_0:\n");
  ASSERT_EQ(parsed.size(), 3u);
  EXPECT_EQ(parsed.at(0x7fd94f7a00f0), "STG.E desc[UR4][R4.64], R7");
  EXPECT_EQ(parsed.at(0x70), "@P0 EXIT");
  EXPECT_FALSE(FindNvdisasm("/nonexistent/nvdisasm").has_value());
}

// A stand-in nvdisasm (a shell script that prints one instruction and its
// arguments), and a pthread_atfork handler that notes when it runs: the crash
// report's writer runs nvdisasm in a one-thread copy of the crashed process,
// where the program's fork handlers must not run (numpy's OpenBLAS waited
// there for its thread pool, which the copy does not have).
std::atomic<int> g_fork_handlers_ran{0};

TEST(NvdisasmTest, RunsWithoutTheProgramsForkHandlers) {
  static const bool registered = [] {
    pthread_atfork([] { g_fork_handlers_ran.fetch_add(1); }, nullptr, nullptr);
    return true;
  }();
  ASSERT_TRUE(registered);
  char dir[] = "/tmp/gmt_nvdisasm_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string script = std::string(dir) + "/nvdisasm";
  {
    std::ofstream f(script);
    f << "#!/bin/sh\n"
         "echo \"        /*0070*/  STG.E desc[UR4][R4.64], R7 ;\"\n"
         "echo \"args: $*\" >&2\n";
  }
  ASSERT_EQ(chmod(script.c_str(), 0755), 0);
  const std::vector<uint8_t> image = {0x7f, 'E', 'L', 'F'};
  g_fork_handlers_ran = 0;
  const auto parsed = DisassembleFunction(script, image, 3);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->size(), 1u);
  EXPECT_EQ(parsed->at(0x70), "STG.E desc[UR4][R4.64], R7");
  EXPECT_EQ(g_fork_handlers_ran.load(), 0);
  // A program that cannot be run is an error, not a crash.
  const auto missing =
      DisassembleFunction(std::string(dir) + "/none", image, 3);
  EXPECT_FALSE(missing.ok());
  std::remove(script.c_str());
  rmdir(dir);
}

// A DWARF 2 line program as nvcc writes it: set_address, special opcodes,
// advance_pc, end_sequence.
std::vector<uint8_t> LineProgram() {
  std::vector<uint8_t> header = {
      2,    0,                             // version
      0,    0,   0,   0,                   // header_length, patched below
      1,                                   // minimum_instruction_length
      1,                                   // default_is_stmt
      0xfb,                                // line_base -5
      14,                                  // line_range
      10,                                  // opcode_base
      0,    1,   1,   1,   1, 0, 0, 0, 1,  // standard_opcode_lengths
      '/',  's', 'r', 'c', 0, 0,           // include_directories
      'k',  '.', 'c', 'u', 0, 1, 0, 0, 0,  // file_names
  };
  header[2] = static_cast<uint8_t>(header.size() - 6);
  const std::vector<uint8_t> program = {
      0, 9,    2, 0x00, 0x10, 0, 0, 0, 0, 0, 0,  // set_address 0x1000
      3, 2,                                      // advance_line +2 -> 3
      1,                                         // copy: 0x1000 line 3
      2, 0x40,                                   // advance_pc 64
      3, 4,                                      // -> line 7
      1,                                         // copy: 0x1040 line 7
      2, 0x20,                                   // advance_pc 32
      0, 1,    1,                                // end_sequence at 0x1060
  };
  std::vector<uint8_t> unit;
  const uint32_t length = static_cast<uint32_t>(header.size() + program.size());
  for (int i = 0; i < 4; ++i) unit.push_back((length >> (8 * i)) & 0xff);
  unit.insert(unit.end(), header.begin(), header.end());
  unit.insert(unit.end(), program.begin(), program.end());
  return unit;
}

TEST(LineTableTest, LooksUpTheRowThatCoversAnAddress) {
  const std::vector<uint8_t> lines = LineProgram();
  auto at = [&](uint64_t pc) { return *LookUpSourceLine(lines, pc); };
  ASSERT_TRUE(at(0x1000).has_value());
  EXPECT_EQ(at(0x1000)->line, 3u);
  EXPECT_EQ(at(0x103f)->line, 3u);
  EXPECT_EQ(at(0x1040)->line, 7u);
  EXPECT_EQ(at(0x1040)->Path(), "/src/k.cu");
  EXPECT_FALSE(at(0x1060).has_value());  // past the end of the sequence
  EXPECT_FALSE(at(0xfff).has_value());
}

TEST(LineTableTest, DamagedProgramIsAnErrorAtEveryLength) {
  const std::vector<uint8_t> lines = LineProgram();
  for (size_t cut = 1; cut < lines.size(); ++cut) {
    std::vector<uint8_t> shorter(lines.begin(), lines.begin() + cut);
    EXPECT_FALSE(LookUpSourceLine(shorter, 0x1040).ok()) << cut;
  }
}

TEST(AddressPlaceTest, SaysWhereAnAddressLies) {
  AllocationRecord guarded;
  guarded.address = 0x10000200;
  guarded.bytes = 4096;
  guarded.raw_address = 0x10000000;
  guarded.raw_bytes = 4096 + 1024;
  guarded.api = Api::kCudaMalloc;
  const std::vector<AllocationRecord> blocks = {guarded};
  using Kind = AddressPlace::Kind;
  EXPECT_EQ(LocateAddress(0x10000210, blocks).kind, Kind::kInside);
  EXPECT_EQ(LocateAddress(0x10000210, blocks).distance, 16u);
  EXPECT_EQ(LocateAddress(0x10000100, blocks).kind, Kind::kFrontRedzone);
  EXPECT_EQ(LocateAddress(0x10001200, blocks).kind, Kind::kRearRedzone);
  EXPECT_EQ(LocateAddress(0x10000200 + 4096 + (1ull << 32), blocks).kind,
            Kind::kPastEnd);
  EXPECT_EQ(LocateAddress(0x0fff0000, blocks).kind, Kind::kBeforeStart);
  EXPECT_EQ(LocateAddress(0x2000, blocks).kind, Kind::kNullPointer);
  EXPECT_EQ(LocateAddress(0x7f0000000000, blocks).kind, Kind::kNotNear);
  EXPECT_EQ(DescribeAddressPlace(LocateAddress(0x7f0000000000, blocks), {}),
            "not in or near any tracked block");
  EXPECT_EQ(DescribeAddressPlace(LocateAddress(0x10000100, blocks), {}),
            "in the front redzone, 256 bytes before the start of the 4.0 KiB "
            "block at 0x10000200 (cudaMalloc)");
  EXPECT_EQ(DescribeAddressPlace(LocateAddress(0x2000, blocks), {}),
            "8.0 KiB past a null pointer (a pointer that was 0 plus an index)");
  // A block whose address is in the parameters, without argument names.
  const uint8_t params[16] = {0,    0,    0,    0,    0, 0, 0, 0,
                              0x00, 0x02, 0x00, 0x10, 0, 0, 0, 0};
  BlockNaming naming;
  naming.params = params;
  EXPECT_EQ(DescribeAddressPlace(LocateAddress(0x0fff0000, blocks), naming),
            "64.5 KiB before the start of the 4.0 KiB block at 0x10000200 "
            "(cudaMalloc), whose address is the kernel parameter at byte 8");
}

}  // namespace
}  // namespace gmt::gpu_fault
