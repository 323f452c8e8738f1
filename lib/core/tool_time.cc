#include "lib/core/tool_time.h"

#include <algorithm>
#include <atomic>

#include "absl/strings/str_format.h"

namespace gmt {
namespace {

std::atomic<int64_t> g_ns[static_cast<int>(ToolPhase::kCount)];

// Sums over the timed captures (thread-safe, relaxed: read once at exit).
std::atomic<int64_t> g_stack_samples{0};
std::atomic<int64_t> g_stack_native_ns{0};
std::atomic<int64_t> g_stack_python_ns{0};
std::atomic<int64_t> g_stack_depot_ns{0};

// Initial-exec, as t_intercept_depth (intercept_depth.h), which already puts
// the library's TLS block in static TLS: a plain load, no __tls_get_addr, on
// every capture.
thread_local uint32_t t_stack_captures
    __attribute__((tls_model("initial-exec"))) = 0;

constexpr int kCallKinds = static_cast<int>(ToolCall::kCount);
std::atomic<int64_t> g_call_samples[kCallKinds];
std::atomic<int64_t> g_call_ns[kCallKinds];
thread_local uint32_t t_calls[kCallKinds]
    __attribute__((tls_model("initial-exec"))) = {};

constexpr int kGpuWorkKinds = static_cast<int>(ToolGpuWork::kCount);
std::atomic<int64_t> g_gpu_work_ns[kCallKinds][kGpuWorkKinds];
thread_local int t_sampled_call __attribute__((tls_model("initial-exec"))) = -1;

// Program-stream fills of 1, 2, 3 and 4 or more zones.
constexpr int kFillBuckets = 4;
std::atomic<int64_t> g_program_fills[kFillBuckets];
std::atomic<int64_t> g_program_kernel_fills{0};
std::atomic<int64_t> g_program_fills_with_check{0};

double Ms(ToolPhase phase) {
  return static_cast<double>(ToolTimeNs(phase)) / 1e6;
}

}  // namespace

void AddToolTime(ToolPhase phase, int64_t ns) {
  if (ns > 0) {
    g_ns[static_cast<int>(phase)].fetch_add(ns, std::memory_order_relaxed);
  }
}

int64_t ToolTimeNs(ToolPhase phase) {
  return g_ns[static_cast<int>(phase)].load(std::memory_order_relaxed);
}

bool StackCaptureSampled() {
  return ++t_stack_captures % kStackSampleEvery == 0;
}

void AddStackCaptureSample(int64_t native_ns, int64_t python_ns,
                           int64_t depot_ns) {
  g_stack_samples.fetch_add(1, std::memory_order_relaxed);
  g_stack_native_ns.fetch_add(std::max<int64_t>(native_ns, 0),
                              std::memory_order_relaxed);
  g_stack_python_ns.fetch_add(std::max<int64_t>(python_ns, 0),
                              std::memory_order_relaxed);
  g_stack_depot_ns.fetch_add(std::max<int64_t>(depot_ns, 0),
                             std::memory_order_relaxed);
}

std::string StackCaptureText() {
  const int64_t samples = g_stack_samples.load(std::memory_order_relaxed);
  if (samples == 0) return "";
  const auto us = [samples](const std::atomic<int64_t>& ns) {
    return static_cast<double>(ns.load(std::memory_order_relaxed)) / 1e3 /
           static_cast<double>(samples);
  };
  return absl::StrFormat(
      "stack capture: ~%lld captures; per capture native %.2f us, Python "
      "%.2f us, depot %.2f us (1 in %u timed)",
      static_cast<long long>(samples * kStackSampleEvery),
      us(g_stack_native_ns), us(g_stack_python_ns), us(g_stack_depot_ns),
      kStackSampleEvery);
}

bool CallSampled(ToolCall kind) {
  return ++t_calls[static_cast<int>(kind)] % kCallSampleEvery == 0;
}

void AddCallSample(ToolCall kind, int64_t ns) {
  const int k = static_cast<int>(kind);
  g_call_samples[k].fetch_add(1, std::memory_order_relaxed);
  g_call_ns[k].fetch_add(std::max<int64_t>(ns, 0), std::memory_order_relaxed);
}

std::string ToolCallText() {
  static constexpr const char* kNames[kCallKinds] = {
      "allocation", "free", "launch", "synchronization"};
  std::string parts;
  for (int k = 0; k < kCallKinds; ++k) {
    const int64_t samples = g_call_samples[k].load(std::memory_order_relaxed);
    if (samples == 0) continue;
    const double us =
        static_cast<double>(g_call_ns[k].load(std::memory_order_relaxed)) /
        1e3 / static_cast<double>(samples);
    const int64_t calls = samples * kCallSampleEvery;
    absl::StrAppendFormat(&parts, "%s%s %.2f us x ~%lld = %.1f ms",
                          parts.empty() ? "" : ", ", kNames[k], us,
                          static_cast<long long>(calls),
                          us * static_cast<double>(calls) / 1e3);
  }
  if (parts.empty()) return "";
  return absl::StrFormat(
      "tool time per call: %s (the program's own CUDA calls excluded; 1 in %u "
      "timed)",
      parts, kCallSampleEvery);
}

int CurrentSampledCall() { return t_sampled_call; }

void SetCurrentSampledCall(int kind) { t_sampled_call = kind; }

void AddGpuWorkSample(int call_kind, ToolGpuWork work, int64_t ns) {
  if (call_kind < 0 || call_kind >= kCallKinds) return;
  g_gpu_work_ns[call_kind][static_cast<int>(work)].fetch_add(
      std::max<int64_t>(ns, 0), std::memory_order_relaxed);
}

std::string ToolGpuWorkText() {
  static constexpr const char* kCalls[kCallKinds] = {
      "allocation", "free", "launch", "synchronization"};
  static constexpr const char* kWork[kGpuWorkKinds] = {
      "fill", "order", "check", "poll", "release", "capture", "sync"};
  std::string text;
  for (int k = 0; k < kCallKinds; ++k) {
    const int64_t samples = g_call_samples[k].load(std::memory_order_relaxed);
    if (samples == 0) continue;
    std::string parts;
    for (int w = 0; w < kGpuWorkKinds; ++w) {
      const int64_t ns = g_gpu_work_ns[k][w].load(std::memory_order_relaxed);
      if (ns == 0) continue;
      absl::StrAppendFormat(
          &parts, " %s %.2f", kWork[w],
          static_cast<double>(ns) / 1e3 / static_cast<double>(samples));
    }
    if (parts.empty()) continue;
    absl::StrAppendFormat(&text, "%s%s%s", text.empty() ? "" : "; ", kCalls[k],
                          parts);
  }
  if (text.empty()) return "";
  return absl::StrFormat(
      "tool GPU calls, us per call: %s (in the timed calls above)", text);
}

void CountProgramStreamFill(uint64_t zones, bool kernel, bool with_check) {
  if (zones == 0) return;
  const uint64_t bucket =
      std::min<uint64_t>(zones, static_cast<uint64_t>(kFillBuckets)) - 1;
  g_program_fills[bucket].fetch_add(1, std::memory_order_relaxed);
  if (kernel) g_program_kernel_fills.fetch_add(1, std::memory_order_relaxed);
  if (with_check) {
    g_program_fills_with_check.fetch_add(1, std::memory_order_relaxed);
  }
}

std::string ProgramStreamFillText() {
  int64_t n[kFillBuckets];
  int64_t total = 0;
  for (int b = 0; b < kFillBuckets; ++b) {
    n[b] = g_program_fills[b].load(std::memory_order_relaxed);
    total += n[b];
  }
  if (total == 0) return "";
  return absl::StrFormat(
      "program-stream fills: %lld (zones 1: %lld, 2: %lld, 3: %lld, 4 or "
      "more: %lld; %lld by the fill kernel, %lld of them with a check)",
      static_cast<long long>(total), static_cast<long long>(n[0]),
      static_cast<long long>(n[1]), static_cast<long long>(n[2]),
      static_cast<long long>(n[3]),
      static_cast<long long>(
          g_program_kernel_fills.load(std::memory_order_relaxed)),
      static_cast<long long>(
          g_program_fills_with_check.load(std::memory_order_relaxed)));
}

std::string ToolTimeText() {
  const double engine = Ms(ToolPhase::kEngine);
  const double cupti = Ms(ToolPhase::kCupti);
  const double guard = Ms(ToolPhase::kGuardSetup);
  const double scan = Ms(ToolPhase::kExitScan);
  const double health = Ms(ToolPhase::kExitHealth);
  const double report = Ms(ToolPhase::kExitReport);
  // The report's time includes its wait for NVML.
  return absl::StrFormat(
      "start-up %.1f ms (engine %.1f, CUPTI %.1f, guard kernels %.1f), exit "
      "%.1f ms (reachability %.1f, report %.1f, of which waiting for NVML "
      "%.1f)",
      engine + cupti + guard, engine, cupti, guard, scan + report, scan, report,
      health);
}

}  // namespace gmt
