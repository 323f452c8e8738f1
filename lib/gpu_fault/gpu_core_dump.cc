#include "lib/gpu_fault/gpu_core_dump.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/gpu_fault/elf_reader.h"

namespace gmt::gpu_fault {
namespace {

// ELF identity of a CUDA core dump.
constexpr uint16_t kElfTypeCore = 4;
constexpr uint16_t kMachineCuda = 190;
constexpr uint32_t kStringTableType = 3;

// Section types (SHT_LOUSER + n), cudacoredump.h's CudbgSectionHeaderTypes.
constexpr uint32_t kLoUser = 0x80000000u;
enum SectionType : uint32_t {
  kRegisters = kLoUser + 5,
  kRelocatedImage = kLoUser + 7,
  kDeviceTable = kLoUser + 9,
  kContextTable = kLoUser + 10,
  kSmTable = kLoUser + 11,
  kGridTable = kLoUser + 12,
  kCtaTable = kLoUser + 13,
  kWarpTable = kLoUser + 14,
  kLaneTable = kLoUser + 15,
  kModuleTable = kLoUser + 16,
  kParams = kLoUser + 18,
  kUniformRegisters = kLoUser + 19,
  kMetadata = kLoUser + 22,
};

// The smallest row each table has had since the first driver that wrote it:
// the fields this reader needs always lie inside. Later fields are read only
// when the dump's row size holds them.
constexpr uint64_t kDeviceRowMin = 72;
constexpr uint64_t kContextRowMin = 40;
constexpr uint64_t kModuleRowMin = 8;
constexpr uint64_t kGridRowMin = 96;
constexpr uint64_t kSmRowMin = 8;
constexpr uint64_t kCtaRowMin = 24;
constexpr uint64_t kWarpRowMin = 32;
constexpr uint64_t kLaneRowMin = 48;
constexpr uint64_t kMetadataRowMin = 24;

// One table section: its rows, each a bounded cursor (a field past the row's
// end reads as absent).
struct Table {
  const ElfSection* section = nullptr;
  absl::Span<const uint8_t> bytes;
  uint64_t row_size = 0;
  uint64_t rows = 0;

  ByteCursor Row(uint64_t row) const {
    return ByteCursor(bytes.subspan(row * row_size, row_size));
  }
};

absl::Status Damaged(const ElfSection& s, absl::string_view what) {
  return absl::DataLossError(absl::StrFormat(
      "GPU core dump section %d (%s): %s", s.index, s.name, what));
}

absl::StatusOr<Table> OpenTable(const ElfReader& elf, const ElfSection& s,
                                uint64_t min_row) {
  absl::StatusOr<absl::Span<const uint8_t>> bytes = elf.SectionBytes(s);
  if (!bytes.ok()) return bytes.status();
  if (s.entry_size < min_row) {
    return Damaged(s, absl::StrFormat("row size %d is below the %d bytes every "
                                      "driver writes",
                                      s.entry_size, min_row));
  }
  if (s.size % s.entry_size != 0) {
    return Damaged(s,
                   absl::StrFormat("size %d is not a whole number of %d-byte "
                                   "rows",
                                   s.size, s.entry_size));
  }
  return Table{&s, *bytes, s.entry_size, s.size / s.entry_size};
}

// 32-bit words (registers): a partial last word is damage.
absl::StatusOr<std::vector<uint32_t>> ReadWords(const ElfReader& elf,
                                                const ElfSection& s) {
  absl::StatusOr<absl::Span<const uint8_t>> bytes = elf.SectionBytes(s);
  if (!bytes.ok()) return bytes.status();
  if (bytes->size() % 4 != 0) {
    return Damaged(s, "size is not a whole number of 32-bit registers");
  }
  std::vector<uint32_t> words(bytes->size() / 4);
  const ByteCursor in(*bytes);
  for (size_t i = 0; i < words.size(); ++i) words[i] = *in.U32(i * 4);
  return words;
}

Dim3 ReadDim3(const ByteCursor& row, uint64_t at) {
  return Dim3{row.U32(at).value_or(0), row.U32(at + 4).value_or(0),
              row.U32(at + 8).value_or(0)};
}

}  // namespace

const DumpGrid* GpuCoreDump::FindGrid(uint32_t device, uint64_t grid_id) const {
  for (const DumpGrid& g : grids_) {
    if (g.device == device && g.grid_id == grid_id) return &g;
  }
  return nullptr;
}

const DumpModule* GpuCoreDump::FindModule(uint32_t device,
                                          uint64_t handle) const {
  for (const DumpModule& m : modules_) {
    if (m.device == device && m.handle == handle) return &m;
  }
  return nullptr;
}

const DumpDevice* GpuCoreDump::FindDevice(uint32_t device) const {
  for (const DumpDevice& d : devices_) {
    if (d.index == device) return &d;
  }
  return nullptr;
}

absl::StatusOr<GpuCoreDump> ReadGpuCoreDump(std::vector<uint8_t> bytes) {
  GpuCoreDump dump;
  dump.bytes_ = std::move(bytes);
  absl::StatusOr<ElfReader> opened = ElfReader::Open(dump.bytes_);
  if (!opened.ok()) return opened.status();
  const ElfReader& elf = *opened;
  if (elf.identity().type != kElfTypeCore ||
      elf.identity().machine != kMachineCuda) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "not a CUDA GPU core dump (ELF type %d, machine %d; a GPU core dump "
        "is a core file, type 4, for machine 190, EM_CUDA)",
        elf.identity().type, elf.identity().machine));
  }
  const std::vector<ElfSection>& sections = elf.sections();

  // The string table the device names point into: a STRTAB that is not the
  // section name table (that one is named ".shstrtab").
  std::optional<ByteCursor> strings;
  for (const ElfSection& s : sections) {
    if (s.type == kStringTableType && s.name != ".shstrtab") {
      absl::StatusOr<absl::Span<const uint8_t>> b = elf.SectionBytes(s);
      if (!b.ok()) return b.status();
      strings.emplace(*b);
      break;
    }
  }
  auto string_at = [&](std::optional<uint64_t> offset) -> std::string {
    if (!strings || !offset) return "";
    return std::string(strings->CString(*offset).value_or(""));
  };

  // Opened tables by section index, so that a child finds its parent's rows.
  absl::flat_hash_map<uint32_t, Table> tables;
  auto open_table = [&](const ElfSection& s, uint64_t min_row) -> absl::Status {
    absl::StatusOr<Table> t = OpenTable(elf, s, min_row);
    if (!t.ok()) return t.status();
    tables[s.index] = *t;
    return absl::OkStatus();
  };
  // The parent table of `s` (by sh_link), which must be of `parent_type`,
  // and the row sh_info names in it.
  auto parent_row = [&](const ElfSection& s, uint32_t parent_type,
                        const Table** parent) -> absl::Status {
    auto it = tables.find(s.link);
    if (s.link >= sections.size() || it == tables.end() ||
        sections[s.link].type != parent_type) {
      return Damaged(s, absl::StrFormat("its parent (sh_link %d) is not the "
                                        "table it should be",
                                        s.link));
    }
    if (s.info >= it->second.rows) {
      return Damaged(s, absl::StrFormat("names row %d of a %d-row table",
                                        s.info, it->second.rows));
    }
    *parent = &it->second;
    return absl::OkStatus();
  };

  // Parents come before children in the tree; one pass per level keeps the
  // reader independent of the order the driver wrote sections in.
  const ElfSection* device_table = nullptr;
  for (const ElfSection& s : sections) {
    if (s.type != kDeviceTable) continue;
    if (device_table != nullptr) {
      return Damaged(s, "a second device table");
    }
    device_table = &s;
    if (absl::Status st = open_table(s, kDeviceRowMin); !st.ok()) return st;
    const Table& t = tables[s.index];
    for (uint64_t r = 0; r < t.rows; ++r) {
      const ByteCursor row = t.Row(r);
      DumpDevice d;
      d.index = static_cast<uint32_t>(r);
      d.name = string_at(row.U64(0));
      d.sm_type = string_at(row.U64(16));
      d.num_sms = *row.U32(36);
      d.sm_major = *row.U32(56);
      d.sm_minor = *row.U32(60);
      d.instruction_size = *row.U32(64);
      dump.devices_.push_back(std::move(d));
    }
  }
  if (device_table == nullptr) {
    return absl::DataLossError(
        "the GPU core dump has no device table (.cudbg.devtbl): truncated, or "
        "not written by the CUDA driver");
  }

  // Level 1: contexts, grids, SMs (children of the device table).
  struct SmRow {
    uint32_t device;
    uint32_t sm_id;
  };
  absl::flat_hash_map<uint32_t, std::vector<SmRow>> sm_rows;  // by section
  for (const ElfSection& s : sections) {
    const Table* devices = nullptr;
    if (s.type == kContextTable) {
      if (absl::Status st = parent_row(s, kDeviceTable, &devices); !st.ok()) {
        return st;
      }
      if (absl::Status st = open_table(s, kContextRowMin); !st.ok()) return st;
    } else if (s.type == kGridTable) {
      if (absl::Status st = parent_row(s, kDeviceTable, &devices); !st.ok()) {
        return st;
      }
      if (absl::Status st = open_table(s, kGridRowMin); !st.ok()) return st;
      const Table& t = tables[s.index];
      for (uint64_t r = 0; r < t.rows; ++r) {
        const ByteCursor row = t.Row(r);
        DumpGrid g;
        g.device = s.info;
        g.row = static_cast<uint32_t>(r);
        g.grid_id = *row.U64(0);
        g.context_id = *row.U64(8);
        g.function_entry = *row.U64(24);
        g.module_handle = *row.U64(32);
        g.grid_dim = ReadDim3(row, 72);
        g.block_dim = ReadDim3(row, 84);
        dump.grids_.push_back(g);
      }
    } else if (s.type == kSmTable) {
      if (absl::Status st = parent_row(s, kDeviceTable, &devices); !st.ok()) {
        return st;
      }
      if (absl::Status st = open_table(s, kSmRowMin); !st.ok()) return st;
      const Table& t = tables[s.index];
      std::vector<SmRow>& rows = sm_rows[s.index];
      for (uint64_t r = 0; r < t.rows; ++r) {
        const ByteCursor row = t.Row(r);
        rows.push_back(SmRow{s.info, *row.U32(0)});
        // Since r555: the SM's own exception record.
        const uint32_t exception = row.U32(8).value_or(0);
        if (exception == 0) continue;
        DumpSmException e{s.info, *row.U32(0), exception, std::nullopt};
        if (row.U32(12).value_or(0) != 0) e.error_pc = row.U64(16);
        dump.sm_exceptions_.push_back(e);
      }
    } else if (s.type == kMetadata) {
      // One row; the driver leaves sh_entsize 0 here, so the section's size
      // is what says whether the fields are there.
      absl::StatusOr<absl::Span<const uint8_t>> b = elf.SectionBytes(s);
      if (!b.ok()) return b.status();
      const ByteCursor row(*b);
      if (b->size() >= kMetadataRowMin) {
        dump.metadata_ =
            DumpMetadata{*row.U32(8), *row.U32(12), *row.U32(16), *row.U32(20)};
      }
    }
  }

  // Level 2: modules (of a context), params (of a grid), blocks (of an SM).
  struct CtaRow {
    uint32_t device;
    uint32_t sm_id;
    uint64_t grid_id;
    Dim3 block_idx;
  };
  absl::flat_hash_map<uint32_t, std::vector<CtaRow>> cta_rows;
  for (const ElfSection& s : sections) {
    const Table* parent = nullptr;
    if (s.type == kModuleTable) {
      if (absl::Status st = parent_row(s, kContextTable, &parent); !st.ok()) {
        return st;
      }
      if (absl::Status st = open_table(s, kModuleRowMin); !st.ok()) return st;
    } else if (s.type == kParams) {
      if (absl::Status st = parent_row(s, kGridTable, &parent); !st.ok()) {
        return st;
      }
      absl::StatusOr<absl::Span<const uint8_t>> b = elf.SectionBytes(s);
      if (!b.ok()) return b.status();
      const uint32_t device = sections[s.link].info;
      for (DumpGrid& g : dump.grids_) {
        if (g.device == device && g.row == s.info) g.params = *b;
      }
    } else if (s.type == kCtaTable) {
      if (absl::Status st = parent_row(s, kSmTable, &parent); !st.ok()) {
        return st;
      }
      if (absl::Status st = open_table(s, kCtaRowMin); !st.ok()) return st;
      const SmRow sm = sm_rows[s.link][s.info];
      const Table& t = tables[s.index];
      std::vector<CtaRow>& rows = cta_rows[s.index];
      for (uint64_t r = 0; r < t.rows; ++r) {
        const ByteCursor row = t.Row(r);
        rows.push_back(
            CtaRow{sm.device, sm.sm_id, *row.U64(0), ReadDim3(row, 8)});
      }
    }
  }

  // Level 3: module images, warps (of a block).
  // Warp table section + row -> index into dump.warps_.
  absl::flat_hash_map<uint32_t, std::vector<size_t>> warp_index;
  for (const ElfSection& s : sections) {
    const Table* parent = nullptr;
    if (s.type == kRelocatedImage) {
      if (absl::Status st = parent_row(s, kModuleTable, &parent); !st.ok()) {
        return st;
      }
      absl::StatusOr<absl::Span<const uint8_t>> b = elf.SectionBytes(s);
      if (!b.ok()) return b.status();
      const ElfSection& contexts = sections[s.link];
      DumpModule m;
      m.context = contexts.info;
      m.device = sections[contexts.link].info;
      m.row = s.info;
      m.handle = *parent->Row(s.info).U64(0);
      m.image = *b;
      dump.modules_.push_back(m);
    } else if (s.type == kWarpTable) {
      if (absl::Status st = parent_row(s, kCtaTable, &parent); !st.ok()) {
        return st;
      }
      if (absl::Status st = open_table(s, kWarpRowMin); !st.ok()) return st;
      const CtaRow cta = cta_rows[s.link][s.info];
      const Table& t = tables[s.index];
      std::vector<size_t>& index = warp_index[s.index];
      for (uint64_t r = 0; r < t.rows; ++r) {
        const ByteCursor row = t.Row(r);
        DumpWarp w;
        w.device = cta.device;
        w.sm = cta.sm_id;
        w.grid_id = cta.grid_id;
        w.block_idx = cta.block_idx;
        w.error_pc = *row.U64(0);
        w.warp_id = *row.U32(8);
        w.valid_lanes = *row.U32(12);
        w.active_lanes = *row.U32(16);
        w.error_pc_valid = *row.U32(24) != 0;
        index.push_back(dump.warps_.size());
        dump.warps_.push_back(std::move(w));
      }
    }
  }

  // Level 4: a warp's uniform registers and lanes.
  // Lane table section -> its warp.
  absl::flat_hash_map<uint32_t, size_t> lane_tables;
  for (const ElfSection& s : sections) {
    if (s.type != kUniformRegisters && s.type != kLaneTable) continue;
    const Table* parent = nullptr;
    if (absl::Status st = parent_row(s, kWarpTable, &parent); !st.ok()) {
      return st;
    }
    DumpWarp& warp = dump.warps_[warp_index[s.link][s.info]];
    if (s.type == kUniformRegisters) {
      absl::StatusOr<std::vector<uint32_t>> words = ReadWords(elf, s);
      if (!words.ok()) return words.status();
      warp.uniform_registers = *std::move(words);
      continue;
    }
    if (absl::Status st = open_table(s, kLaneRowMin); !st.ok()) return st;
    if (!warp.lanes.empty())
      return Damaged(s, "a second lane table for a warp");
    const Table& t = tables[s.index];
    lane_tables[s.index] = warp_index[s.link][s.info];
    for (uint64_t r = 0; r < t.rows; ++r) {
      const ByteCursor row = t.Row(r);
      DumpLane lane;
      lane.pc = *row.U64(0);
      lane.lane = *row.U32(16);
      lane.thread_idx = ReadDim3(row, 20);
      lane.exception = *row.U32(32);
      warp.lanes.push_back(std::move(lane));
    }
  }

  // Level 5: a lane's registers.
  for (const ElfSection& s : sections) {
    if (s.type != kRegisters) continue;
    const Table* parent = nullptr;
    if (absl::Status st = parent_row(s, kLaneTable, &parent); !st.ok()) {
      return st;
    }
    DumpWarp& warp = dump.warps_[lane_tables[s.link]];
    absl::StatusOr<std::vector<uint32_t>> words = ReadWords(elf, s);
    if (!words.ok()) return words.status();
    warp.lanes[s.info].registers = *std::move(words);
  }
  return dump;
}

absl::StatusOr<GpuCoreDump> ReadGpuCoreDumpFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::NotFoundError(
        absl::StrFormat("cannot open %s: %s", path, std::strerror(errno)));
  }
  std::vector<uint8_t> bytes;
  struct stat st;
  if (fstat(fd, &st) == 0 && st.st_size > 0) bytes.reserve(st.st_size);
  uint8_t buffer[1 << 16];
  while (true) {
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      close(fd);
      return absl::DataLossError(
          absl::StrFormat("cannot read %s: %s", path, std::strerror(err)));
    }
    if (n == 0) break;
    bytes.insert(bytes.end(), buffer, buffer + n);
  }
  close(fd);
  absl::StatusOr<GpuCoreDump> dump = ReadGpuCoreDump(std::move(bytes));
  if (!dump.ok()) {
    return absl::Status(dump.status().code(),
                        absl::StrCat(path, ": ", dump.status().message()));
  }
  return dump;
}

}  // namespace gmt::gpu_fault
