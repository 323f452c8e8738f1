// Typed values of the GMT_OPTIONS keys that take a word or a list of words
// (options.inc): check, cupti, cupti_kernels, cupti_activity, report,
// guard_skip, crash_signals.
//
// Each enum has one table of its spellings, OptionValues<Enum>::kNames. The
// parser, the text written back (help, the JSON report's guard.check, the fuzz
// harness's round trip) and the "expected ..." part of error messages all come
// from that table, so a value is spelled in one place and parsed once, when
// GMT_OPTIONS is; the code that uses an option reads the typed value.
//
//   CheckLevel level;
//   std::string why;
//   if (!ParseOptionValue("kernel", &level, &why)) LogError("%s", why);
//   OptionValueText(level);                      // "kernel"
//
//   ReportFormats formats;                       // a set of ReportFormat
//   ParseOptionValue("text,json", &formats, &why);
//   formats.Has(ReportFormat::kJson);            // true
#ifndef GMT_LIB_CORE_OPTION_VALUES_H_
#define GMT_LIB_CORE_OPTION_VALUES_H_

#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <string>

#include "absl/strings/string_view.h"

namespace gmt {

// check=: when guard zones are checked. Ordered: each level checks at least
// wherever the one before it does, so `level >= CheckLevel::kSync` reads as
// "checks at synchronizing calls".
enum class CheckLevel : uint8_t { kNone, kExit, kSync, kKernel };

// cupti=, cupti_kernels=, cupti_activity=.
enum class CuptiMode : uint8_t { kAuto, kOn, kOff };

// report=: one exit report format.
enum class ReportFormat : uint8_t { kText, kJson, kHtml, kTrace, kTorch };

// guard_skip=: a family of allocating APIs guarded (or not) alike. kNone is
// the family of memory that is never guarded (host, arrays, VMM); no option
// spells it.
enum class GuardFamily : uint8_t { kDevice, kPitched, kManaged, kAsync, kNone };

// crash_signals=: a fatal signal that writes the crash report.
enum class FatalSignal : uint8_t { kSegv, kBus, kAbrt, kFpe, kIll };

template <typename Enum>
struct OptionValueName {
  Enum value;
  absl::string_view name;
};

// Per enum: kNames, its spellings, in the order help and lists write them.
// For an enum that an option takes as a comma-separated list (OptionSet),
// also: kElement, what one element is called in error messages; kEmptyList,
// how the empty list is written; kSkipEmptyElements, whether "a,,b" is "a,b"
// (true) or an error.
template <typename Enum>
struct OptionValues;

template <>
struct OptionValues<CheckLevel> {
  static constexpr OptionValueName<CheckLevel> kNames[] = {
      {CheckLevel::kNone, "none"},
      {CheckLevel::kExit, "exit"},
      {CheckLevel::kSync, "sync"},
      {CheckLevel::kKernel, "kernel"},
  };
};

template <>
struct OptionValues<CuptiMode> {
  static constexpr OptionValueName<CuptiMode> kNames[] = {
      {CuptiMode::kAuto, "auto"},
      {CuptiMode::kOn, "on"},
      {CuptiMode::kOff, "off"},
  };
};

template <>
struct OptionValues<ReportFormat> {
  static constexpr OptionValueName<ReportFormat> kNames[] = {
      {ReportFormat::kText, "text"},   {ReportFormat::kJson, "json"},
      {ReportFormat::kHtml, "html"},   {ReportFormat::kTrace, "trace"},
      {ReportFormat::kTorch, "torch"},
  };
  static constexpr absl::string_view kElement = "format";
  // report= (empty) has always been refused: "none" says it on purpose.
  static constexpr absl::string_view kEmptyList = "none";
  static constexpr bool kSkipEmptyElements = false;
};

template <>
struct OptionValues<GuardFamily> {
  static constexpr OptionValueName<GuardFamily> kNames[] = {
      {GuardFamily::kDevice, "device"},
      {GuardFamily::kPitched, "pitched"},
      {GuardFamily::kManaged, "managed"},
      {GuardFamily::kAsync, "async"},
  };
  static constexpr absl::string_view kElement = "family";
  static constexpr absl::string_view kEmptyList = "";
  static constexpr bool kSkipEmptyElements = false;
};

template <>
struct OptionValues<FatalSignal> {
  static constexpr OptionValueName<FatalSignal> kNames[] = {
      {FatalSignal::kSegv, "SEGV"}, {FatalSignal::kBus, "BUS"},
      {FatalSignal::kAbrt, "ABRT"}, {FatalSignal::kFpe, "FPE"},
      {FatalSignal::kIll, "ILL"},
  };
  static constexpr absl::string_view kElement = "signal";
  static constexpr absl::string_view kEmptyList = "";
  static constexpr bool kSkipEmptyElements = true;
};

// A set of an enum's values, for the list options. Compared as a set: the
// order and repetitions of the text it was parsed from are not kept.
template <typename Enum>
class OptionSet {
 public:
  constexpr OptionSet() = default;
  constexpr OptionSet(std::initializer_list<Enum> values) {
    for (Enum v : values) Add(v);
  }
  // Every value the enum's table names.
  static constexpr OptionSet All() {
    OptionSet s;
    for (const OptionValueName<Enum>& n : OptionValues<Enum>::kNames) {
      s.Add(n.value);
    }
    return s;
  }

  constexpr bool Has(Enum v) const { return (bits_ & Bit(v)) != 0; }
  constexpr bool empty() const { return bits_ == 0; }
  constexpr void Add(Enum v) { bits_ |= Bit(v); }

  friend constexpr bool operator==(OptionSet, OptionSet) = default;

 private:
  static constexpr uint32_t Bit(Enum v) {
    return uint32_t{1} << static_cast<unsigned>(v);
  }
  static_assert(sizeof(Enum) == 1, "one bit per value of a small enum");

  uint32_t bits_ = 0;
};

using ReportFormats = OptionSet<ReportFormat>;
using GuardFamilies = OptionSet<GuardFamily>;
using FatalSignals = OptionSet<FatalSignal>;

// Parses `text`, spelled exactly as the table has it, into `*out` (an enum
// above, or an OptionSet of one: comma-separated). On failure `*out` is left
// as it was and `*why` says what was wrong, naming the bad element and what is
// accepted: "unknown value 'x' (expected none, exit, sync or kernel)".
template <typename T>
bool ParseOptionValue(absl::string_view text, T* out, std::string* why);

// `value` as ParseOptionValue takes it back; a set's members in table order.
// "" for a value no option spells (GuardFamily::kNone).
template <typename Enum>
absl::string_view OptionValueText(Enum value);
template <typename Enum>
std::string OptionValueText(OptionSet<Enum> values);

// What T accepts, for help and error messages: "none, exit, sync or kernel",
// "a comma-separated list of text, json, html, trace, torch; or none".
template <typename T>
std::string AcceptedOptionValues();

// Writes OptionValueText(value): for test failure messages.
template <typename Enum>
requires requires { OptionValues<Enum>::kNames; }
std::ostream& operator<<(std::ostream& os, Enum value);
template <typename Enum>
std::ostream& operator<<(std::ostream& os, OptionSet<Enum> values);

}  // namespace gmt

#endif  // GMT_LIB_CORE_OPTION_VALUES_H_
