// The counting driver double's "JIT": the .entry names and parameter layouts
// of a PTX text, which is all a driver needs to look a kernel up, answer
// cuFuncGetParamInfo and read a launch's argument bytes.
#pragma once

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace se_test {

// A kernel of a loaded module: its name and parameter layout from the PTX.
struct Function {
  std::string name;
  std::vector<std::size_t> sizes, offsets;
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
  } kTypes[] = {{".u8", 1},  {".s8", 1},  {".b8", 1},  {".u16", 2}, {".s16", 2}, {".b16", 2}, {".f16", 2},
                {".u32", 4}, {".s32", 4}, {".b32", 4}, {".f32", 4}, {".u64", 8}, {".s64", 8}, {".b64", 8},
                {".f64", 8}};
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

// Every ".entry NAME(params)" of a PTX text; false if one cannot be parsed.
}  // namespace ptx_detail

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
    module.functions.push_back(std::move(function));
  }
  return !module.functions.empty();
}

}  // namespace se_test
