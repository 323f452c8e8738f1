// Engine members for guard zones. (Placeholder bodies: the guard manager
// replaces them.)
#include "lib/engine.h"

namespace gmt {

std::optional<BlockView> Engine::FindBlock(uint64_t address) const {
  std::optional<AllocationRecord> r = pointers_.FindContaining(address);
  if (!r) return std::nullopt;
  BlockView v;
  v.user_address = v.raw_address = r->address;
  v.user_bytes = v.raw_bytes = r->bytes;
  v.api = r->api;
  v.kind = r->kind;
  v.device = r->device;
  v.context = r->context;
  return v;
}

AccessVerdict Engine::CheckAccess(absl::string_view, uint64_t, uint64_t) {
  return AccessVerdict::kForward;
}
uint32_t Engine::InternKernel(absl::string_view) { return 0; }
std::string Engine::KernelName(uint32_t) const { return ""; }
void Engine::BeforeLaunch(uint64_t, uint64_t) {}
void Engine::AfterLaunch(uint64_t, uint64_t, uint32_t) {}
void Engine::OnSynchronized(uint64_t) {}
void Engine::CheckAllZones(absl::string_view) {}
uint64_t Engine::PrepareIpcExport(uint64_t user_address) { return user_address; }
uint64_t Engine::IpcUserAddress(uint64_t, uint64_t raw_base) { return raw_base; }
void Engine::BeforeContextTeardown(int, uint64_t) {}

}  // namespace gmt
