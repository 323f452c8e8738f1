// PickleWriter: writes Python pickle protocol 2, the subset needed to hand
// plain data (dicts, lists, strings, ints, bools, None, 2-tuples) to Python
// tools such as torch.cuda._memory_viz. Opcodes are documented in CPython's
// Lib/pickletools.py.
//
// Containers are written as "open, items, close"; strings and any container
// may be memoized and referenced again, so a stack shared by many events is
// written once:
//
//   PickleWriter w;
//   w.BeginDict();
//   w.Key("size"); w.Int(4096);
//   w.EndDict();
//   std::string bytes = w.Finish();
//
// Not thread-safe.
#ifndef GMT_LIB_REPORT_PICKLE_WRITER_H_
#define GMT_LIB_REPORT_PICKLE_WRITER_H_

#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"

namespace gmt {

class PickleWriter {
 public:
  PickleWriter();

  // A str; repeated identical strings are written once (memo). Invalid UTF-8
  // is replaced by '?', so Python always decodes it.
  void String(absl::string_view text);
  // A dict key: the same as String.
  void Key(absl::string_view text) { String(text); }
  void Int(int64_t value);
  void UInt(uint64_t value);
  void Bool(bool value);
  void None();

  void BeginDict();
  void EndDict();
  void BeginList();
  void EndList();
  // A 2-tuple of what the two next calls write; then EndTuple2().
  void EndTuple2();

  // Memo: Remember() stores what was just written (a whole value) under a new
  // id; Recall(id) writes a reference to it.
  uint32_t Remember();
  void Recall(uint32_t id);

  // The complete pickle (adds STOP). The writer is spent afterwards.
  std::string Finish();

 private:
  void Put(uint8_t opcode) { out_.push_back(static_cast<char>(opcode)); }
  void PutLe(uint64_t value, int bytes);

  std::string out_;
  uint32_t next_memo_ = 0;
  absl::flat_hash_map<std::string, uint32_t> strings_;
};

}  // namespace gmt

#endif  // GMT_LIB_REPORT_PICKLE_WRITER_H_
