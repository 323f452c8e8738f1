#include "lib/memtest/cuda_device.h"

#include <cuda.h>

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "kernels/memtest_kernels_image.h"
#include "lib/platform/tool_driver.h"

namespace gmt::memtest {
namespace {

class CudaMemtestDevice : public MemtestDevice {
 public:
  ~CudaMemtestDevice() override {
    if (context_ == nullptr) return;
    d_->ctx_set_current(context_);
    if (logs_ != 0) d_->mem_free(logs_);
    if (stream_ != nullptr) d_->stream_destroy(stream_);
    if (library_ != nullptr) d_->library_unload(library_);
    d_->primary_ctx_release(device_);
  }

  absl::Status Open(int index) {
    absl::StatusOr<const ToolDriver*> driver = OpenToolDriver();
    if (!driver.ok()) return driver.status();
    d_ = *driver;
    index_ = index;
    CUresult r = d_->init(0);
    if (r != CUDA_SUCCESS) return Error("cuInit", r);
    int count = 0;
    r = d_->device_get_count(&count);
    if (r != CUDA_SUCCESS) return Error("cuDeviceGetCount", r);
    if (index < 0 || index >= count) {
      return absl::NotFoundError(absl::StrCat("no CUDA device ", index, " (",
                                              count, " device(s) present)"));
    }
    if ((r = d_->device_get(&device_, index)) != CUDA_SUCCESS) {
      return Error("cuDeviceGet", r);
    }
    char name[256] = "";
    d_->device_get_name(name, sizeof(name), device_);
    name_ = name;
    char bus[64] = "";
    if (d_->device_get_pci_bus_id(bus, sizeof(bus), device_) == CUDA_SUCCESS) {
      pci_bus_id_ = bus;
    }
    int sms = 0;
    d_->device_get_attribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                             device_);
    // 4 resident blocks of 256 threads per SM (the kernels' launch bounds).
    grid_ = sms > 0 ? static_cast<unsigned>(sms) * 4 : 512;
    if ((r = d_->primary_ctx_retain(&context_, device_)) != CUDA_SUCCESS) {
      context_ = nullptr;
      return Error("cuDevicePrimaryCtxRetain", r);
    }
    if ((r = d_->ctx_set_current(context_)) != CUDA_SUCCESS) {
      return Error("cuCtxSetCurrent", r);
    }
    // A blocking stream: the synchronous 8-byte copies of the second read and
    // of the repairs go to the legacy default stream, and a pageable
    // cuMemcpyHtoD may return before its DMA finished; a blocking stream's
    // next kernel waits for it.
    if ((r = d_->stream_create(&stream_, CU_STREAM_DEFAULT)) != CUDA_SUCCESS) {
      return Error("cuStreamCreate", r);
    }
    r = d_->library_load_data(&library_, gmt_memtest_kernels_fatbin, nullptr,
                              nullptr, 0, nullptr, nullptr, 0);
    if (r != CUDA_SUCCESS) {
      return Error("cuLibraryLoadData (memtest kernels)", r);
    }
    if ((r = d_->library_get_kernel(&write_, library_, "gmt_memtest_write")) !=
            CUDA_SUCCESS ||
        (r = d_->library_get_kernel(&verify_, library_,
                                    "gmt_memtest_verify")) != CUDA_SUCCESS ||
        (r = d_->library_get_kernel(&flip_, library_, "gmt_memtest_flip")) !=
            CUDA_SUCCESS) {
      return Error("cuLibraryGetKernel", r);
    }
    return absl::OkStatus();
  }

  int Index() const override { return index_; }
  std::string Name() const override { return name_; }
  std::string PciBusId() const override { return pci_bus_id_; }

  absl::Status MemInfo(uint64_t* free_bytes, uint64_t* total_bytes) override {
    size_t f = 0, t = 0;
    const CUresult r = d_->mem_get_info(&f, &t);
    if (r != CUDA_SUCCESS) return Error("cuMemGetInfo", r);
    *free_bytes = f;
    *total_bytes = t;
    return absl::OkStatus();
  }

  absl::Status Allocate(uint64_t bytes, uint64_t* address) override {
    CUdeviceptr p = 0;
    const CUresult r = d_->mem_alloc(&p, bytes);
    if (r != CUDA_SUCCESS) return Error("cuMemAlloc", r);
    *address = p;
    return absl::OkStatus();
  }

  void Free(uint64_t address) override { d_->mem_free(address); }

  absl::Status ResetLogs(size_t slots) override {
    if (slots > log_slots_) {
      if (logs_ != 0) d_->mem_free(logs_);
      logs_ = 0;
      log_slots_ = 0;
      const CUresult r = d_->mem_alloc(&logs_, slots * sizeof(GmtMemtestLog));
      if (r != CUDA_SUCCESS) return Error("cuMemAlloc (mismatch logs)", r);
      log_slots_ = slots;
    }
    // Only the counters need zeroing; zero everything, it is small.
    const CUresult r =
        d_->memset_d8_async(logs_, 0, slots * sizeof(GmtMemtestLog), stream_);
    return r == CUDA_SUCCESS ? absl::OkStatus() : Error("cuMemsetD8Async", r);
  }

  absl::Status ReadLogs(size_t slots,
                        std::vector<GmtMemtestLog>* logs) override {
    logs->assign(slots, GmtMemtestLog{});
    if (slots > log_slots_) return absl::InvalidArgumentError("log slot");
    const CUresult r =
        d_->memcpy_dtoh(logs->data(), logs_, slots * sizeof(GmtMemtestLog));
    return r == CUDA_SUCCESS ? absl::OkStatus()
                             : Error("cuMemcpyDtoH (logs)", r);
  }

  absl::Status Write(const GmtMemtestPattern& p, uint64_t base,
                     uint64_t vectors, uint64_t first_index) override {
    GmtMemtestPattern pattern = p;
    void* args[] = {&pattern, &base, &vectors, &first_index};
    return Launch(write_, grid_, args, "gmt_memtest_write");
  }

  absl::Status Verify(const GmtMemtestPattern& expect,
                      const GmtMemtestPattern& next, uint32_t flags,
                      uint64_t base, uint64_t vectors, uint64_t first_index,
                      size_t slot) override {
    if (slot >= log_slots_) return absl::InvalidArgumentError("log slot");
    GmtMemtestPattern e = expect, n = next;
    uint64_t f = flags;
    CUdeviceptr log = logs_ + slot * sizeof(GmtMemtestLog);
    void* args[] = {&e, &n, &f, &base, &vectors, &first_index, &log};
    return Launch(verify_, grid_, args, "gmt_memtest_verify");
  }

  absl::Status Flip(uint64_t address, uint64_t mask) override {
    void* args[] = {&address, &mask};
    return Launch(flip_, 1, args, "gmt_memtest_flip");
  }

  absl::Status Copy(uint64_t dst, uint64_t src, uint64_t bytes) override {
    const CUresult r = d_->memcpy_dtod_async(dst, src, bytes, stream_);
    return r == CUDA_SUCCESS ? absl::OkStatus() : Error("cuMemcpyDtoDAsync", r);
  }

  absl::Status Synchronize() override {
    const CUresult r = d_->stream_synchronize(stream_);
    return r == CUDA_SUCCESS ? absl::OkStatus()
                             : Error("cuStreamSynchronize", r);
  }

  absl::Status ReadWord(uint64_t address, uint64_t* value) override {
    const CUresult r = d_->memcpy_dtoh(value, address, sizeof(*value));
    return r == CUDA_SUCCESS ? absl::OkStatus() : Error("cuMemcpyDtoH", r);
  }

  absl::Status WriteWord(uint64_t address, uint64_t value) override {
    const CUresult r = d_->memcpy_htod(address, &value, sizeof(value));
    return r == CUDA_SUCCESS ? absl::OkStatus() : Error("cuMemcpyHtoD", r);
  }

 private:
  absl::Status Error(absl::string_view what, CUresult r) const {
    return absl::InternalError(absl::StrCat(what, ": ", ToolResultName(*d_, r),
                                            " (", static_cast<int>(r), ")"));
  }

  absl::Status Launch(CUkernel kernel, unsigned grid, void** args,
                      absl::string_view name) {
    // A CUkernel is a valid CUfunction for cuLaunchKernel (CUDA >= 12.0).
    const CUresult r =
        d_->launch_kernel(reinterpret_cast<CUfunction>(kernel), grid, 1, 1, 256,
                          1, 1, 0, stream_, args, nullptr);
    return r == CUDA_SUCCESS ? absl::OkStatus()
                             : Error(absl::StrCat("cuLaunchKernel ", name), r);
  }

  const ToolDriver* d_ = nullptr;  // lives until exit
  int index_ = 0;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  CUstream stream_ = nullptr;
  CUlibrary library_ = nullptr;
  CUkernel write_ = nullptr, verify_ = nullptr, flip_ = nullptr;
  unsigned grid_ = 512;
  std::string name_, pci_bus_id_;
  CUdeviceptr logs_ = 0;
  size_t log_slots_ = 0;
};

}  // namespace

absl::StatusOr<std::unique_ptr<MemtestDevice>> OpenCudaMemtestDevice(
    int index) {
  auto device = std::make_unique<CudaMemtestDevice>();
  absl::Status s = device->Open(index);
  if (!s.ok()) return s;
  return std::unique_ptr<MemtestDevice>(std::move(device));
}

}  // namespace gmt::memtest
