// The Vulkan backend's load-time reading of SPIR-V: validation, the entry
// point, and the matching of a TypedKernel's parameters with the shader's
// storage buffers, push constants and specialization-constant-sized shared
// arrays. Needs no device: the shaders under shaders/reflection are compiled
// by glslc at build time into SE_VULKAN_REFLECTION_SHADERS.
#include <array>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "streamexecutor/vulkan/reflection.hpp"

#ifndef SE_VULKAN_REFLECTION_SHADERS
#error "SE_VULKAN_REFLECTION_SHADERS must be the path prefix of the compiled shaders (a folder with a trailing slash)"
#endif

namespace se = streamexecutor;
namespace vk = streamexecutor::vulkan_detail;

namespace {

constexpr std::string_view kLabel = "vulkan:0 (test device)";

std::vector<std::uint32_t> LoadShader(const std::string& name) {
  const std::string path = std::string(SE_VULKAN_REFLECTION_SHADERS) + name + ".spv";
  std::ifstream file(path, std::ios::binary);
  INFO("reading " << path);
  REQUIRE(file.good());
  const std::vector<char> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  REQUIRE(bytes.size() % 4 == 0);
  std::vector<std::uint32_t> words(bytes.size() / 4);
  std::memcpy(words.data(), bytes.data(), bytes.size());
  return words;
}

template <typename... Params>
se::Status Check(const std::vector<std::uint32_t>& words, vk::ShaderLayout& layout, std::string_view kernel = "main") {
  return vk::CheckSignature(words, kernel, kLabel, se::detail::kParamInfos<Params...>, layout);
}

template <typename... Params>
se::Status Check(const std::string& shader) {
  vk::ShaderLayout layout;
  return Check<Params...>(LoadShader(shader), layout);
}

bool Contains(const se::Status& status, std::string_view text) {
  return status.message().find(text) != std::string::npos;
}

// Every mismatch names the kernel, the device and the parameter with its
// declared type.
void RequireMismatch(const se::Status& status, std::string_view parameter, std::string_view declared,
                     std::string_view shader_side) {
  INFO(status.ToString());
  REQUIRE(status.code() == se::ErrorCode::kInvalidArgument);
  REQUIRE(Contains(status, "kernel 'main'"));
  REQUIRE(Contains(status, kLabel));
  REQUIRE(Contains(status, parameter));
  REQUIRE(Contains(status, declared));
  REQUIRE(Contains(status, shader_side));
}

struct Pair {
  float a, b;
};
struct Particle {
  std::array<float, 3> position;
  float mass;
};

}  // namespace

TEST_CASE("A matching saxpy gets bindings and push-constant offsets", "[vulkan][reflection]") {
  vk::ShaderLayout layout;
  const se::Status status =
      Check<float, se::DeviceMemory<float>*, se::DeviceMemory<float>*, std::uint32_t>(LoadShader("saxpy"), layout);
  INFO(status.ToString());
  REQUIRE(status.ok());
  REQUIRE(layout.entry_point == "main");
  REQUIRE(layout.buffer_count == 2);
  REQUIRE(layout.push_constant_bytes == 8);
  REQUIRE(layout.local_size == std::array<std::uint32_t, 3>{64, 1, 1});
  REQUIRE(layout.local_size_specialized == std::array<bool, 3>{false, false, false});
  REQUIRE(layout.static_shared_bytes == 0);
  REQUIRE(layout.params.size() == 4);
  REQUIRE(layout.params[0].kind == se::KernelParamKind::kScalar);
  REQUIRE(layout.params[0].offset == 0);
  REQUIRE(layout.params[0].size == 4);
  REQUIRE(layout.params[1].kind == se::KernelParamKind::kDevicePointer);
  REQUIRE(layout.params[1].binding == 0);
  REQUIRE(layout.params[1].size == 4);
  REQUIRE(layout.params[2].binding == 1);
  REQUIRE(layout.params[3].kind == se::KernelParamKind::kScalar);
  REQUIRE(layout.params[3].offset == 4);
  REQUIRE(layout.params[3].size == 4);
}

TEST_CASE("ReflectShader reads the interface without parameters", "[vulkan][reflection]") {
  vk::ShaderLayout layout;
  layout.params.resize(3);
  const se::Status status = vk::ReflectShader(LoadShader("saxpy"), "main", kLabel, layout);
  INFO(status.ToString());
  REQUIRE(status.ok());
  REQUIRE(layout.params.empty());
  REQUIRE(layout.buffer_count == 2);
  REQUIRE(layout.push_constant_bytes == 8);
  REQUIRE(layout.local_size == std::array<std::uint32_t, 3>{64, 1, 1});

  const se::Status gap = vk::ReflectShader(LoadShader("gap_binding"), "main", kLabel, layout);
  INFO(gap.ToString());
  REQUIRE(gap.code() == se::ErrorCode::kInvalidArgument);
  REQUIRE(Contains(gap, "no binding 1"));
}

TEST_CASE("The local size comes from specialization constants where the shader says so", "[vulkan][reflection]") {
  vk::ShaderLayout layout;
  SECTION("local_size_x_id and friends") {
    const se::Status status = Check<se::DeviceMemory<std::uint32_t>*>(LoadShader("spec_local_size"), layout);
    INFO(status.ToString());
    REQUIRE(status.ok());
  }
  SECTION("LocalSizeId in SPIR-V 1.6") {
    const se::Status status = Check<se::DeviceMemory<std::uint32_t>*>(LoadShader("local_size_id_spirv16"), layout);
    INFO(status.ToString());
    REQUIRE(status.ok());
  }
  REQUIRE(layout.local_size_specialized == std::array<bool, 3>{true, true, true});
  REQUIRE(layout.local_size_constant_id == std::array<std::uint32_t, 3>{3, 4, 7});
  // glslang gives the workgroup-size constants a default of 1.
  REQUIRE(layout.local_size == std::array<std::uint32_t, 3>{1, 1, 1});
}

TEST_CASE("A literal dimension next to a specialized one", "[vulkan][reflection]") {
  vk::ShaderLayout layout;
  const se::Status status = Check<se::DeviceMemory<std::uint32_t>*>(LoadShader("mixed_local_size"), layout);
  INFO(status.ToString());
  REQUIRE(status.ok());
  REQUIRE(layout.local_size_specialized == std::array<bool, 3>{false, true, false});
  REQUIRE(layout.local_size_constant_id[1] == 1);
  REQUIRE(layout.local_size == std::array<std::uint32_t, 3>{8, 1, 1});
}

TEST_CASE("Shared arrays sized by specialization constants, in constant-id order", "[vulkan][reflection]") {
  vk::ShaderLayout layout;
  const auto words = LoadShader("shared");
  const se::Status status =
      Check<se::DeviceMemory<float>*, se::SharedDeviceMemory<float>, se::SharedDeviceMemory<int>>(words, layout);
  INFO(status.ToString());
  REQUIRE(status.ok());
  REQUIRE(layout.local_size == std::array<std::uint32_t, 3>{16, 4, 2});
  REQUIRE(layout.params[1].kind == se::KernelParamKind::kSharedMemory);
  REQUIRE(layout.params[1].constant_id == 2);  // tile
  REQUIRE(layout.params[1].size == 4);
  REQUIRE(layout.params[2].constant_id == 5);     // scratch
  REQUIRE(layout.static_shared_bytes == 8 * 16);  // vec4 fixed_part[8]

  RequireMismatch(
      Check<se::DeviceMemory<float>*, se::SharedDeviceMemory<int>, se::SharedDeviceMemory<int>>(words, layout),
      "parameter 2", "streamexecutor::SharedDeviceMemory<int>", "shared array 'tile' (sized by constant_id 2)");
  const se::Status unmatched = Check<se::DeviceMemory<float>*, se::SharedDeviceMemory<float>>(words, layout);
  INFO(unmatched.ToString());
  REQUIRE(unmatched.code() == se::ErrorCode::kInvalidArgument);
  REQUIRE(Contains(unmatched, "shared array 'scratch' is sized by specialization constant 5 but has no parameter"));
}

TEST_CASE("A SharedDeviceMemory parameter needs a spec-constant-sized array", "[vulkan][reflection]") {
  const se::Status status = Check<se::DeviceMemory<float>*, se::SharedDeviceMemory<float>>("shared_fixed");
  RequireMismatch(status, "parameter 2", "streamexecutor::SharedDeviceMemory<float>",
                  "0 shared array(s) sized by a specialization constant");
  REQUIRE(Contains(status, "fixed-size shared variables: tile"));
}

TEST_CASE("Buffer element types must match the declared ones", "[vulkan][reflection]") {
  SECTION("wrong element type") {
    const se::Status status = Check<float, se::DeviceMemory<int>*, se::DeviceMemory<float>*, std::uint32_t>("saxpy");
    RequireMismatch(status, "parameter 2", "streamexecutor::DeviceMemory<int>*",
                    "binding 0 of set 0 ('X') is a storage buffer of float (stride 4)");
    REQUIRE(Contains(status, "declare it as streamexecutor::DeviceMemory<float>*"));
  }
  SECTION("wrong signedness") {
    const se::Status status =
        Check<se::DeviceMemory<std::uint32_t>*, se::DeviceMemory<int>*, std::uint32_t>("uint_buffers");
    RequireMismatch(status, "parameter 2", "streamexecutor::DeviceMemory<int>*", "storage buffer of uint (stride 4)");
    REQUIRE(Contains(status, "int is a 4-byte signed integer, SPIR-V uint a 4-byte unsigned integer"));
    REQUIRE(Contains(status, "std::uint32_t"));
  }
  SECTION("wrong width") {
    const se::Status status = Check<float, se::DeviceMemory<double>*, se::DeviceMemory<float>*, std::uint32_t>("saxpy");
    RequireMismatch(status, "parameter 2", "streamexecutor::DeviceMemory<double>*", "float (stride 4)");
  }
  SECTION("wrong stride for a user type") {
    const se::Status status = Check<float, se::DeviceMemory<float>*, se::DeviceMemory<Pair>*, std::uint32_t>("saxpy");
    RequireMismatch(status, "parameter 3", "Pair>*",
                    "binding 1 of set 0 ('Y') is a storage buffer of float (stride 4)");
    REQUIRE(Contains(status, "8 bytes, the buffer's elements are 4 bytes apart"));
  }
  SECTION("bool elements") {
    const se::Status status =
        Check<se::DeviceMemory<bool>*, se::DeviceMemory<std::uint32_t>*, std::uint32_t>("uint_buffers");
    RequireMismatch(status, "parameter 1", "streamexecutor::DeviceMemory<bool>*", "use std::uint32_t");
  }
}

TEST_CASE("Vectors and structs in buffers match C++ types of their stride", "[vulkan][reflection]") {
  using Float4 = std::array<float, 4>;
  using Float3 = std::array<float, 3>;
  vk::ShaderLayout layout;
  const auto words = LoadShader("vec4_buffer");
  const se::Status status =
      Check<se::DeviceMemory<Float4>*, se::DeviceMemory<Particle>*, se::DeviceMemory<Float4>*>(words, layout);
  INFO(status.ToString());
  REQUIRE(status.ok());
  REQUIRE(layout.params[2].size == 16);

  RequireMismatch(
      Check<se::DeviceMemory<Float4>*, se::DeviceMemory<Particle>*, se::DeviceMemory<Float3>*>(words, layout),
      "parameter 3", "DeviceMemory<std::array<float, 3>", "storage buffer of vec3 (stride 16)");
  REQUIRE(
      Contains(Check<se::DeviceMemory<Float4>*, se::DeviceMemory<Particle>*, se::DeviceMemory<Float3>*>(words, layout),
               "declare it as streamexecutor::DeviceMemory<T>* with sizeof(T) == 16"));
  RequireMismatch(
      Check<se::DeviceMemory<float>*, se::DeviceMemory<Particle>*, se::DeviceMemory<Float4>*>(words, layout),
      "parameter 1", "streamexecutor::DeviceMemory<float>*", "storage buffer of vec4 (stride 16)");
  RequireMismatch(Check<se::DeviceMemory<Float4>*, se::DeviceMemory<Pair>*, se::DeviceMemory<Float4>*>(words, layout),
                  "parameter 2", "Pair>*", "storage buffer of struct Particle (stride 16)");
}

TEST_CASE("Bindings must be 0, 1, 2, ... of set 0, one per DeviceMemory parameter", "[vulkan][reflection]") {
  SECTION("missing binding") {
    RequireMismatch(Check<se::DeviceMemory<float>*, se::DeviceMemory<float>*>("gap_binding"), "parameter 2",
                    "streamexecutor::DeviceMemory<float>*", "no binding 1 in set 0");
  }
  SECTION("extra binding") {
    const se::Status status = Check<float, se::DeviceMemory<float>*, std::uint32_t>("saxpy");
    INFO(status.ToString());
    REQUIRE(status.code() == se::ErrorCode::kInvalidArgument);
    REQUIRE(Contains(status, "kernel 'main'"));
    REQUIRE(Contains(status, "binding 1 of set 0 ('Y'), a storage buffer of float (stride 4), has no parameter"));
    REQUIRE(Contains(status, "declares 1 DeviceMemory parameter(s)"));
  }
  SECTION("descriptor set 1") {
    const se::Status status = Check<se::DeviceMemory<float>*, se::DeviceMemory<float>*>("set1");
    INFO(status.ToString());
    REQUIRE(status.code() == se::ErrorCode::kInvalidArgument);
    REQUIRE(Contains(status, "binding 0 of set 1 ('B')"));
    REQUIRE(Contains(status, "descriptor set 0 only"));
  }
  SECTION("a uniform buffer") {
    using Float4 = std::array<float, 4>;
    RequireMismatch(Check<se::DeviceMemory<Float4>*, se::DeviceMemory<Float4>*>("uniform_buffer"), "parameter 1",
                    "DeviceMemory<std::array<float, 4>", "is a uniform buffer");
  }
  SECTION("a block of two members") {
    RequireMismatch(Check<se::DeviceMemory<float>*>("two_member_block"), "parameter 1",
                    "streamexecutor::DeviceMemory<float>*", "block has 2 members");
  }
}

TEST_CASE("Scalars are the push-constant members, in order", "[vulkan][reflection]") {
  SECTION("wrong type") {
    const se::Status status = Check<int, se::DeviceMemory<float>*, se::DeviceMemory<float>*, std::uint32_t>("saxpy");
    RequireMismatch(status, "parameter 1", "the TypedKernel declares int", "push constant 1 of the shader is float a");
    REQUIRE(Contains(status, "declare it as float"));
  }
  SECTION("wrong signedness") {
    RequireMismatch(Check<float, se::DeviceMemory<float>*, se::DeviceMemory<float>*, int>("saxpy"), "parameter 4",
                    "declares int", "push constant 2 of the shader is uint n (offset 4, 4 bytes)");
  }
  SECTION("bool") {
    RequireMismatch(Check<se::DeviceMemory<std::uint32_t>*, se::DeviceMemory<std::uint32_t>*, bool>("uint_buffers"),
                    "parameter 3", "declares bool", "use std::uint32_t");
  }
  SECTION("too few scalars") {
    const se::Status status = Check<float, se::DeviceMemory<float>*, se::DeviceMemory<float>*>("saxpy");
    INFO(status.ToString());
    REQUIRE(status.code() == se::ErrorCode::kInvalidArgument);
    REQUIRE(Contains(status, "push constant 2 of the shader, uint n (offset 4, 4 bytes), has no parameter"));
  }
  SECTION("too many scalars") {
    RequireMismatch(
        Check<float, se::DeviceMemory<float>*, se::DeviceMemory<float>*, std::uint32_t, std::uint32_t>("saxpy"),
        "parameter 5", "declares unsigned int", "the shader has 2 push constant(s)");
  }
  SECTION("over 128 bytes") {
    const se::Status status = Check<std::array<float, 40>, se::DeviceMemory<float>*>("big_push");
    INFO(status.ToString());
    REQUIRE(status.code() == se::ErrorCode::kInvalidArgument);
    REQUIRE(Contains(status, "push constants over 128 bytes"));
    REQUIRE(Contains(status, "160 bytes"));
  }
}

TEST_CASE("An unknown entry point lists the compute entry points there are", "[vulkan][reflection]") {
  vk::ShaderLayout layout;
  const se::Status status = Check<float, se::DeviceMemory<float>*, se::DeviceMemory<float>*, std::uint32_t>(
      LoadShader("saxpy"), layout, "saxpy");
  INFO(status.ToString());
  REQUIRE(status.code() == se::ErrorCode::kNotFound);
  REQUIRE(Contains(status, kLabel));
  REQUIRE(Contains(status, "no compute entry point 'saxpy'"));
  REQUIRE(Contains(status, "'main'"));
}

TEST_CASE("Modules that are not valid SPIR-V are refused with the reason", "[vulkan][reflection]") {
  vk::ShaderLayout layout;
  auto check = [&](const std::vector<std::uint32_t>& words) {
    return Check<float, se::DeviceMemory<float>*, se::DeviceMemory<float>*, std::uint32_t>(words, layout);
  };
  SECTION("empty") {
    const se::Status status = check({});
    INFO(status.ToString());
    REQUIRE(status.code() == se::ErrorCode::kInvalidArgument);
    REQUIRE(Contains(status, "kernel 'main' on vulkan:0 (test device) is 0 word(s) long"));
  }
  SECTION("garbage") {
    const se::Status status = check({1, 2, 3, 4, 5, 6, 7, 8});
    INFO(status.ToString());
    REQUIRE(status.code() == se::ErrorCode::kInvalidArgument);
    REQUIRE(Contains(status, "does not start with the SPIR-V magic number"));
  }
  SECTION("byte-swapped") {
    std::vector<std::uint32_t> words = LoadShader("saxpy");
    for (std::uint32_t& w : words) w = (w >> 24) | ((w >> 8) & 0xff00) | ((w << 8) & 0xff0000) | (w << 24);
    const se::Status status = check(words);
    INFO(status.ToString());
    REQUIRE(status.code() == se::ErrorCode::kInvalidArgument);
    REQUIRE(Contains(status, "other byte order"));
  }
  SECTION("garbage after a valid header") {
    std::vector<std::uint32_t> words = LoadShader("saxpy");
    words.resize(5);
    words.insert(words.end(), {0xdeadbeef, 0x12345678, 0xffffffff});
    const se::Status status = check(words);
    INFO(status.ToString());
    REQUIRE(status.code() == se::ErrorCode::kInvalidArgument);
    REQUIRE(Contains(status, "SPIR-V module for kernel 'main' on vulkan:0 (test device) fails validation: "));
  }
  SECTION("truncated") {
    std::vector<std::uint32_t> words = LoadShader("saxpy");
    words.resize(words.size() / 2);
    const se::Status status = check(words);
    INFO(status.ToString());
    REQUIRE(status.code() == se::ErrorCode::kInvalidArgument);
    REQUIRE(Contains(status, "fails validation: "));
  }
}

TEST_CASE("Any single corrupted word gives a status, never a crash", "[vulkan][reflection]") {
  const std::vector<std::uint32_t> original = LoadShader("shared");
  vk::ShaderLayout layout;
  int refused = 0;
  for (std::size_t i = 0; i < original.size(); ++i) {
    for (std::uint32_t replacement : {0u, 1u, 0xffffffffu, original[i] ^ 0x00010000u}) {
      std::vector<std::uint32_t> words = original;
      words[i] = replacement;
      const se::Status status =
          Check<se::DeviceMemory<float>*, se::SharedDeviceMemory<float>, se::SharedDeviceMemory<int>>(words, layout);
      if (!status.ok()) {
        ++refused;
        REQUIRE(!status.message().empty());
      }
    }
  }
  REQUIRE(refused > 0);
}
