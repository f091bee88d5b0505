// The counting driver double's "JIT": the .entry names and parameter layouts
// of a PTX text, which is all a driver needs to look a kernel up, answer
// cuFuncGetParamInfo and read a launch's argument bytes; and the resources each
// entry declares, which its cuFuncGetAttribute and occupancy calls answer from.
#pragma once

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace se_test {

// A kernel of a loaded module: its name and parameter layout from the PTX,
// and the resources its PTX declares (occupancy_double.inc answers from them).
struct Function {
  std::string name;
  std::vector<std::size_t> sizes, offsets;
  std::size_t max_threads = 0;   // .maxntid x, y, z: their product; 0 without one
  std::size_t shared_bytes = 0;  // .shared arrays declared in the body
  std::size_t local_bytes = 0;   // .local arrays declared in the body (the stack frame)
  std::size_t registers = 0;     // the body's .reg declarations, %r<N> counting N
  std::size_t const_bytes = 0;   // the module's .const arrays
  int ptx_version = 0;           // .version M.m as M * 10 + m
};
struct Module {
  std::vector<std::unique_ptr<Function>> functions;
};

namespace ptx_detail {

// Size and alignment of one ".param ..." declaration.
inline bool ParseParam(std::string_view text, std::size_t& size, std::size_t& align) {
  static constexpr struct {
    const char* type;
    std::size_t size;
  } kTypes[] = {{".u8", 1},  {".s8", 1},  {".b8", 1},  {".u16", 2}, {".s16", 2}, {".b16", 2}, {".f16", 2}, {".u32", 4},
                {".s32", 4}, {".b32", 4}, {".f32", 4}, {".u64", 8}, {".s64", 8}, {".b64", 8}, {".f64", 8}};
  std::size_t element = 0;
  for (const auto& type : kTypes) {
    const std::size_t at = text.find(type.type);
    if (at != std::string_view::npos) {
      const char after = at + std::strlen(type.type) < text.size() ? text[at + std::strlen(type.type)] : ' ';
      if (after == ' ' || after == '\t' || after == '\n') {
        element = type.size;
        break;
      }
    }
  }
  if (element == 0) return false;
  size = element;
  align = element;
  if (const std::size_t open = text.find('['); open != std::string_view::npos) {
    size = element * static_cast<std::size_t>(std::strtoul(std::string(text.substr(open + 1)).c_str(), nullptr, 10));
  }
  if (const std::size_t at = text.find(".align"); at != std::string_view::npos) {
    align = static_cast<std::size_t>(std::strtoul(std::string(text.substr(at + 6)).c_str(), nullptr, 10));
  }
  return size != 0 && align != 0;
}

// The sum of the sizes of the `directive` array declarations in `text`
// (".shared .align 4 .b8 tile[1024];").
inline std::size_t DeclaredBytes(std::string_view text, std::string_view directive) {
  std::size_t total = 0;
  for (std::size_t at = text.find(directive); at != std::string_view::npos; at = text.find(directive, at + 1)) {
    // A declaration's directive stands alone; "st.shared.f32" is an instruction.
    const char before = at == 0 ? ' ' : text[at - 1];
    const char after = at + directive.size() < text.size() ? text[at + directive.size()] : ';';
    if (!std::isspace(static_cast<unsigned char>(before)) || !std::isspace(static_cast<unsigned char>(after))) continue;
    const std::size_t end = text.find(';', at);
    std::size_t size = 0, align = 0;
    if (ParseParam(text.substr(at, end == std::string_view::npos ? text.npos : end - at), size, align)) total += size;
  }
  return total;
}

// The registers of the body's ".reg .type %name<N>;" declarations (1 without <N>).
inline std::size_t DeclaredRegisters(std::string_view body) {
  std::size_t total = 0;
  for (std::size_t at = body.find(".reg"); at != std::string_view::npos; at = body.find(".reg", at + 4)) {
    const std::size_t end = body.find(';', at);
    const std::string_view one = body.substr(at, end == std::string_view::npos ? body.npos : end - at);
    const std::size_t open = one.find('<');
    total += open == std::string_view::npos ? 1 : std::strtoul(std::string(one.substr(open + 1)).c_str(), nullptr, 10);
  }
  return total;
}

// The product of ".maxntid x, y, z" (missing dimensions are 1); 0 without one.
inline std::size_t MaxThreads(std::string_view directives) {
  const std::size_t at = directives.find(".maxntid");
  if (at == std::string_view::npos) return 0;
  const std::string rest(directives.substr(at + 8));
  std::size_t product = 1;
  const char* p = rest.c_str();
  for (int i = 0; i < 3; ++i) {
    char* end = nullptr;
    const unsigned long value = std::strtoul(p, &end, 10);
    if (end == p) break;
    product *= value;
    p = end;
    while (*p == ' ' || *p == ',' || *p == '\t') ++p;
  }
  return product;
}

// The body of the entry whose parameter list closes at `close`, from its '{'
// to the matching '}'; `directives` gets what lies between (.maxntid ...).
inline std::string_view Body(std::string_view ptx, std::size_t close, std::string_view& directives) {
  const std::size_t open = ptx.find('{', close);
  if (open == std::string_view::npos) return {};
  directives = ptx.substr(close, open - close);
  int depth = 0;
  for (std::size_t i = open; i < ptx.size(); ++i) {
    if (ptx[i] == '{') ++depth;
    if (ptx[i] == '}' && --depth == 0) return ptx.substr(open, i - open + 1);
  }
  return ptx.substr(open);
}

}  // namespace ptx_detail

// Every ".entry NAME(params)" of a PTX text; false if one cannot be parsed.

inline bool ParseEntries(std::string_view ptx, Module& module) {
  for (std::size_t at = ptx.find(".entry"); at != std::string_view::npos; at = ptx.find(".entry", at + 6)) {
    const std::size_t open = ptx.find('(', at);
    const std::size_t close = ptx.find(')', open);
    if (open == std::string_view::npos || close == std::string_view::npos) return false;
    auto function = std::make_unique<Function>();
    std::string_view name = ptx.substr(at + 6, open - at - 6);
    while (!name.empty() && std::isspace(static_cast<unsigned char>(name.front()))) name.remove_prefix(1);
    while (!name.empty() && std::isspace(static_cast<unsigned char>(name.back()))) name.remove_suffix(1);
    function->name = std::string(name);
    std::string_view params = ptx.substr(open + 1, close - open - 1);
    std::size_t offset = 0;
    while (params.find(".param") != std::string_view::npos) {
      const std::size_t start = params.find(".param");
      const std::size_t comma = params.find(',', start);
      const std::string_view one = params.substr(start, comma == std::string_view::npos ? params.npos : comma - start);
      std::size_t size = 0, align = 0;
      if (!ptx_detail::ParseParam(one, size, align)) return false;
      offset = (offset + align - 1) / align * align;
      function->sizes.push_back(size);
      function->offsets.push_back(offset);
      offset += size;
      if (comma == std::string_view::npos) break;
      params.remove_prefix(comma + 1);
    }
    std::string_view directives;
    const std::string_view body = ptx_detail::Body(ptx, close, directives);
    function->max_threads = ptx_detail::MaxThreads(directives);
    function->shared_bytes = ptx_detail::DeclaredBytes(body, ".shared");
    function->local_bytes = ptx_detail::DeclaredBytes(body, ".local");
    function->registers = ptx_detail::DeclaredRegisters(body);
    module.functions.push_back(std::move(function));
  }
  // Module-wide: constant memory and the PTX version.
  const std::size_t const_bytes = ptx_detail::DeclaredBytes(ptx, ".const");
  int ptx_version = 0;
  if (const std::size_t at = ptx.find(".version"); at != std::string_view::npos) {
    const std::string text(ptx.substr(at + 8, 16));
    char* end = nullptr;
    const long major = std::strtol(text.c_str(), &end, 10);
    const long minor = *end == '.' ? std::strtol(end + 1, nullptr, 10) : 0;
    ptx_version = static_cast<int>(major * 10 + minor);
  }
  for (const auto& function : module.functions) {
    function->const_bytes = const_bytes;
    function->ptx_version = ptx_version;
  }
  return !module.functions.empty();
}

}  // namespace se_test
