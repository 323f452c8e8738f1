// NVTX's messages (event names, heap and region names) as text: ASCII,
// wide and registered strings (nvtxDomainRegisterString), shared by the NVTX
// injection's modules (nvtx_injection.cc, nvtx_mem_injection.cc).
#ifndef GMT_INTERPOSE_NVTX_NVTX_MESSAGES_H_
#define GMT_INTERPOSE_NVTX_NVTX_MESSAGES_H_

#ifndef NVTX_NO_IMPL
#define NVTX_NO_IMPL
#endif
#include <nvtx3/nvToolsExt.h>

#include <cstdint>
#include <string>

namespace gmt {

// NVTX's wide strings: ASCII is kept, anything else becomes '?' (names are
// for people reading a report; exact Unicode does not matter here).
std::string NarrowNvtxText(const wchar_t* text);

// A registered string: the handle we give back is a pointer to our own
// interned copy, so a later NVTX_MESSAGE_TYPE_REGISTERED message reads it
// directly. Never freed: NVTX handles live for the process.
nvtxStringHandle_t RegisterNvtxString(std::string text);

// The text of `value` of NVTX message type `type` (nvtxMessageType_t); "" for
// an unknown type or a null string.
std::string NvtxMessageText(uint32_t type, const nvtxMessageValue_t& value);

}  // namespace gmt

#endif  // GMT_INTERPOSE_NVTX_NVTX_MESSAGES_H_
