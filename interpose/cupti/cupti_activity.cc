// CUPTI memory activity records (see cupti_activity.h).
#include "interpose/cupti/cupti_activity.h"

#include <cstdlib>
#include <mutex>
#include <vector>

#include "absl/strings/str_cat.h"
#include "lib/core/driver_callback.h"
#include "lib/engine/engine.h"

namespace gmt {
namespace {

constexpr size_t kBufferBytes = size_t{256} << 10;
constexpr size_t kBufferAlign = 8;  // CUPTI's ACTIVITY_RECORD_ALIGNMENT
// Past this many queued records, CUPTI's thread hands them to the engine
// itself (no flush, no CUDA call): the queue stays small in a long run.
constexpr size_t kIngestAt = size_t{1} << 16;
// Records kept between drains at most; beyond, counted and dropped.
constexpr size_t kMaxQueued = size_t{1} << 18;

class CuptiMemoryActivity : public MemoryActivitySource {
 public:
  explicit CuptiMemoryActivity(const CuptiLibrary& cupti) : cupti_(cupti) {}

  void Drain(bool flush, std::vector<MemoryActivity>* out) override {
    // A forced flush hands over buffers CUPTI has not filled yet; it runs
    // BufferCompleted on this thread. Never from inside a callback: the
    // driver's call is in progress there.
    if (flush && !InDriverCallback()) {
      cupti_.activity_flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    }
    std::lock_guard<std::mutex> lock(mu_);
    out->insert(out->end(), queue_.begin(), queue_.end());
    queue_.clear();
  }

  void Stop() override { cupti_.activity_disable(CUPTI_ACTIVITY_KIND_MEMORY2); }

  void Add(const MemoryActivity& a) {
    std::lock_guard<std::mutex> lock(mu_);
    if (queue_.size() >= kMaxQueued) {
      ++dropped_;
      return;
    }
    queue_.push_back(a);
  }

  size_t Queued() {
    std::lock_guard<std::mutex> lock(mu_);
    return queue_.size();
  }

  const CuptiLibrary& cupti() const { return cupti_; }

 private:
  const CuptiLibrary& cupti_;
  std::mutex mu_;
  std::vector<MemoryActivity> queue_;  // guarded by mu_
  uint64_t dropped_ = 0;               // guarded by mu_
};

CuptiMemoryActivity* g_source = nullptr;  // set once, then leaked

void CUPTIAPI BufferRequested(uint8_t** buffer, size_t* size,
                              size_t* max_records) {
  *buffer =
      static_cast<uint8_t*>(std::aligned_alloc(kBufferAlign, kBufferBytes));
  *size = *buffer != nullptr ? kBufferBytes : 0;
  *max_records = 0;  // as many as fit
}

bool Decode(const CUpti_Activity* record, MemoryActivity* out) {
  if (record->kind != CUPTI_ACTIVITY_KIND_MEMORY2) return false;
  const auto* m = reinterpret_cast<const CUpti_ActivityMemory4*>(record);
  switch (m->memoryOperationType) {
    case CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION:
      out->op = MemoryActivity::Op::kAlloc;
      break;
    case CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE:
      out->op = MemoryActivity::Op::kRelease;
      break;
    default:
      return false;
  }
  switch (m->memoryKind) {
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE:
      out->kind = MemoryKind::kDevice;
      break;
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED:
      out->kind = MemoryKind::kManaged;
      break;
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED:
      out->kind = MemoryKind::kPinnedHost;
      break;
    default:
      return false;  // arrays, static (module) memory, pageable, unknown
  }
  out->address = m->address;
  out->bytes = m->bytes;
  out->device = static_cast<int32_t>(m->deviceId);
  out->async = m->isAsync != 0;
  const auto pool = m->memoryPoolConfig.memoryPoolType;
  out->pool = pool == CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL ||
              pool == CUPTI_ACTIVITY_MEMORY_POOL_TYPE_IMPORTED;
  out->timestamp = m->timestamp;
  out->correlation = m->correlationId;
  out->pc = m->PC;
  return true;
}

void CUPTIAPI BufferCompleted(CUcontext /*context*/, uint32_t /*stream*/,
                              uint8_t* buffer, size_t /*size*/, size_t valid) {
  if (buffer == nullptr) return;
  if (g_source != nullptr && valid > 0) {
    CUpti_Activity* record = nullptr;
    while (g_source->cupti().activity_get_next_record(buffer, valid, &record) ==
           CUPTI_SUCCESS) {
      MemoryActivity a;
      if (Decode(record, &a)) g_source->Add(a);
    }
  }
  std::free(buffer);
  // Called with no lock of ours held; the engine drains without a flush.
  if (g_source != nullptr && g_source->Queued() >= kIngestAt) {
    if (Engine* engine = Engine::IfCreated()) {
      engine->ReconcileActivity(/*flush=*/false);
    }
  }
}

}  // namespace

bool StartMemoryActivity(const CuptiLibrary& cupti, std::string* why) {
  if (!cupti.HasActivity()) {
    *why = "this libcupti lacks the activity API";
    return false;
  }
  if (g_source != nullptr) return true;
  CUptiResult r =
      cupti.activity_register_callbacks(&BufferRequested, &BufferCompleted);
  if (r != CUPTI_SUCCESS) {
    *why =
        absl::StrCat("cuptiActivityRegisterCallbacks: ", cupti.ResultName(r));
    return false;
  }
  g_source = new CuptiMemoryActivity(cupti);
  r = cupti.activity_enable(CUPTI_ACTIVITY_KIND_MEMORY2);
  if (r != CUPTI_SUCCESS) {
    *why = absl::StrCat("cuptiActivityEnable(MEMORY2): ", cupti.ResultName(r));
    return false;  // the source stays unset: nothing will come
  }
  SetMemoryActivitySource(g_source);
  return true;
}

}  // namespace gmt
