// A recording NVTX tool, for trace_nvtx_double_test.cpp: what Nsight Systems
// is to NVTX, without a GPU. NVTX 3 (header-only, in the program) loads the
// library named by NVTX_INJECTION64_PATH on its first call and hands it its
// export table; through the table's callback modules the tool puts its own
// functions into the program's NVTX function slots. These record each call
// as one line of text, which the test reads with se_nvtx_injection_calls().
#define NVTX_NO_IMPL  // the types only: this is the tool, not a program using NVTX
#include <nvtx3/nvToolsExt.h>

#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>

namespace {

std::mutex g_mutex;
std::string g_calls;  // one line per call
std::string g_copy;   // what se_nvtx_injection_calls last returned

void Note(const std::string& line) {
  const std::lock_guard lock(g_mutex);
  g_calls += line;
  g_calls += '\n';
}

std::string Text(const char* text) { return text != nullptr ? text : "(null)"; }

// A domain is the address of its name, kept for the process's life.
struct Domain {
  std::string name;
};
std::string DomainName(nvtxDomainHandle_t domain) {
  return domain != nullptr ? reinterpret_cast<const Domain*>(domain)->name : "(default)";
}
std::string Message(const nvtxEventAttributes_t* attributes) {
  if (attributes == nullptr) return "(no attributes)";
  if (attributes->messageType != NVTX_MESSAGE_TYPE_ASCII) return "(not ASCII)";
  return Text(attributes->message.ascii);
}

int NVTX_API RangePushA(const char* message) {
  Note("push (default) " + Text(message));
  return 0;
}
int NVTX_API RangePop() {
  Note("pop (default)");
  return 0;
}
nvtxDomainHandle_t NVTX_API DomainCreateA(const char* name) {
  Note("domain " + Text(name));
  return reinterpret_cast<nvtxDomainHandle_t>(new Domain{Text(name)});
}
void NVTX_API DomainDestroy(nvtxDomainHandle_t domain) { delete reinterpret_cast<Domain*>(domain); }
int NVTX_API DomainRangePushEx(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* attributes) {
  Note("push " + DomainName(domain) + " " + Message(attributes));
  return 0;
}
int NVTX_API DomainRangePop(nvtxDomainHandle_t domain) {
  Note("pop " + DomainName(domain));
  return 0;
}
void NVTX_API NameCuStreamA(nvtx_CUstream stream, const char* name) {
  char address[32];
  std::snprintf(address, sizeof(address), "%p", stream);
  Note(std::string("name stream ") + address + " " + Text(name));
}

// Puts `function` into slot `id` of one module's table; false if the program's
// NVTX has no such module or slot.
bool Install(const NvtxExportTableCallbacks& callbacks, NvtxCallbackModule module, unsigned id,
             NvtxFunctionPointer function) {
  NvtxFunctionTable table = nullptr;
  unsigned size = 0;
  if (callbacks.GetModuleFunctionTable(module, &table, &size) == 0 || table == nullptr || id > size) return false;
  if (table[id] == nullptr) return false;
  *table[id] = function;
  return true;
}

template <typename F>
NvtxFunctionPointer Slot(F function) {
  return reinterpret_cast<NvtxFunctionPointer>(function);
}

}  // namespace

extern "C" {

// NVTX's entry point into a tool: nonzero when attached.
__attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table) {
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr || callbacks->struct_size < sizeof(NvtxExportTableCallbacks)) return 0;
  const bool installed =
      Install(*callbacks, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePushA, Slot(&RangePushA)) &&
      Install(*callbacks, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePop, Slot(&RangePop)) &&
      Install(*callbacks, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainCreateA, Slot(&DomainCreateA)) &&
      Install(*callbacks, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainDestroy, Slot(&DomainDestroy)) &&
      Install(*callbacks, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangePushEx, Slot(&DomainRangePushEx)) &&
      Install(*callbacks, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangePop, Slot(&DomainRangePop)) &&
      Install(*callbacks, NVTX_CB_MODULE_CUDA, NVTX_CBID_CUDA_NameCuStreamA, Slot(&NameCuStreamA));
  if (installed) Note("attached");
  return installed ? 1 : 0;
}

// The calls recorded since the last se_nvtx_injection_clear, one a line;
// valid until the next call of either.
__attribute__((visibility("default"))) const char* se_nvtx_injection_calls() {
  const std::lock_guard lock(g_mutex);
  g_copy = g_calls;
  return g_copy.c_str();
}
__attribute__((visibility("default"))) void se_nvtx_injection_clear() {
  const std::lock_guard lock(g_mutex);
  g_calls.clear();
}

}  // extern "C"
