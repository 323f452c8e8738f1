#include "lib/report/pickle_writer.h"

#include "lib/report/report_viz_util.h"

namespace gmt {
namespace {

// Protocol 2 opcodes (CPython Lib/pickletools.py).
constexpr uint8_t kProto = 0x80;
constexpr uint8_t kStop = '.';
constexpr uint8_t kMark = '(';
constexpr uint8_t kEmptyDict = '}';
constexpr uint8_t kSetItems = 'u';
constexpr uint8_t kEmptyList = ']';
constexpr uint8_t kAppends = 'e';
constexpr uint8_t kTuple2 = 0x86;
constexpr uint8_t kBinUnicode = 'X';
constexpr uint8_t kBinInt = 'J';   // signed 4 bytes
constexpr uint8_t kBinInt1 = 'K';  // unsigned 1 byte
constexpr uint8_t kBinInt2 = 'M';  // unsigned 2 bytes
constexpr uint8_t kLong1 = 0x8a;   // n bytes, two's complement
constexpr uint8_t kNone = 'N';
constexpr uint8_t kNewTrue = 0x88;
constexpr uint8_t kNewFalse = 0x89;
constexpr uint8_t kLongBinPut = 'r';
constexpr uint8_t kLongBinGet = 'j';

}  // namespace

PickleWriter::PickleWriter() {
  Put(kProto);
  Put(2);
}

void PickleWriter::PutLe(uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) {
    out_.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
  }
}

void PickleWriter::String(absl::string_view text) {
  auto it = strings_.find(text);
  if (it != strings_.end()) {
    Recall(it->second);
    return;
  }
  const std::string valid = ValidUtf8(text);
  Put(kBinUnicode);
  PutLe(valid.size(), 4);
  out_.append(valid);
  strings_.emplace(std::string(text), Remember());
}

void PickleWriter::Int(int64_t value) {
  if (value >= 0 && value < 256) {
    Put(kBinInt1);
    PutLe(static_cast<uint64_t>(value), 1);
  } else if (value >= 0 && value < 65536) {
    Put(kBinInt2);
    PutLe(static_cast<uint64_t>(value), 2);
  } else if (value >= INT32_MIN && value <= INT32_MAX) {
    Put(kBinInt);
    PutLe(static_cast<uint32_t>(static_cast<int32_t>(value)), 4);
  } else {
    Put(kLong1);
    Put(8);
    PutLe(static_cast<uint64_t>(value), 8);
  }
}

void PickleWriter::UInt(uint64_t value) {
  if (value <= static_cast<uint64_t>(INT64_MAX)) {
    Int(static_cast<int64_t>(value));
    return;
  }
  // Needs a ninth byte so that the sign bit stays clear.
  Put(kLong1);
  Put(9);
  PutLe(value, 8);
  Put(0);
}

void PickleWriter::Bool(bool value) { Put(value ? kNewTrue : kNewFalse); }
void PickleWriter::None() { Put(kNone); }

void PickleWriter::BeginDict() {
  Put(kEmptyDict);
  Put(kMark);
}
void PickleWriter::EndDict() { Put(kSetItems); }
void PickleWriter::BeginList() {
  Put(kEmptyList);
  Put(kMark);
}
void PickleWriter::EndList() { Put(kAppends); }
void PickleWriter::EndTuple2() { Put(kTuple2); }

uint32_t PickleWriter::Remember() {
  Put(kLongBinPut);
  PutLe(next_memo_, 4);
  return next_memo_++;
}

void PickleWriter::Recall(uint32_t id) {
  Put(kLongBinGet);
  PutLe(id, 4);
}

std::string PickleWriter::Finish() {
  Put(kStop);
  return std::move(out_);
}

}  // namespace gmt
