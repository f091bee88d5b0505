// The PTX parameter-list parser, the Itanium parameter decoder and the
// load-time signature check, on PTX that nvcc produced at build time from
// signature_kernels.cu and tests/generic/test_kernels.cu, and on hand-written
// malformed PTX. Needs no GPU and no driver.
#include <catch2/catch.hpp>

#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>

#include <streamexecutor/streamexecutor.hpp>

namespace se = streamexecutor;
namespace cd = streamexecutor::cuda_detail;

namespace sig {
struct Pair {
  double weight;
  int index;
};
struct Other {
  double weight;
  int index;
};
}  // namespace sig

namespace {

std::string ReadFile(const char* path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

const std::string& SignaturePtx() {
  static const std::string ptx = ReadFile(SE_SIGNATURE_KERNELS_PTX);
  return ptx;
}

template <typename... Params>
se::Status Check(std::string_view kernel) {
  return cd::CheckPtxSignature(SignaturePtx(), kernel, se::TypedKernel<Params...>::ParamInfos(), "cuda:0");
}

bool Mentions(const se::Status& status, std::string_view text) {
  return status.message().find(text) != std::string::npos;
}

template <typename T>
using Mem = se::DeviceMemory<T>*;

}  // namespace

TEST_CASE("the parser reads nvcc's parameter lists", "[ptx]") {
  auto entries = cd::ParsePtxEntries(SignaturePtx());
  REQUIRE(entries.ok());
  REQUIRE(entries.value().size() == 10);
  const cd::PtxEntry& scalars = entries.value()[0];
  CHECK(scalars.name == "c_scalars");
  REQUIRE(scalars.params.size() == 7);
  const std::uint64_t sizes[] = {1, 2, 4, 8, 4, 8, 8};
  for (std::size_t i = 0; i < 7; ++i) CHECK(scalars.params[i].size == sizes[i]);
  CHECK(scalars.params[4].type == ".f32");
  CHECK(scalars.params[5].type == ".f64");

  const cd::PtxEntry& pair = entries.value()[1];
  REQUIRE(pair.params.size() == 2);
  CHECK(pair.params[0].is_array);
  CHECK(pair.params[0].size == sizeof(sig::Pair));
  CHECK(pair.params[0].align == alignof(sig::Pair));

  CHECK(entries.value()[2].name == "c_no_params");
  CHECK(entries.value()[2].params.empty());
  CHECK(entries.value()[3].name == "_Z9cpp_saxpyfPKfPfj");
}

TEST_CASE("the generic suite's PTX matches its TypedKernels", "[ptx]") {
  const std::string ptx = ReadFile(SE_CUDA_TEST_KERNELS_PTX);
  using Saxpy = se::TypedKernel<float, Mem<float>, Mem<float>, std::uint32_t>;
  using Reverse = se::TypedKernel<Mem<int>, se::SharedDeviceMemory<int>, std::uint32_t>;
  CHECK(cd::CheckPtxSignature(ptx, "saxpy", Saxpy::ParamInfos(), "cuda:0").ok());
  CHECK(cd::CheckPtxSignature(ptx, "coordinates", se::TypedKernel<Mem<std::uint32_t>>::ParamInfos(), "cuda:0").ok());
  CHECK(cd::CheckPtxSignature(ptx, "reverse", Reverse::ParamInfos(), "cuda:0").ok());
  CHECK(cd::CheckPtxSignature(ptx, "add", se::TypedKernel<Mem<int>, int>::ParamInfos(), "cuda:0").ok());
}

TEST_CASE("extern C kernels: counts, sizes and pointer widths are checked", "[ptx]") {
  CHECK(Check<char, short, int, long long, float, double, Mem<float>>("c_scalars").ok());
  CHECK(Check<sig::Pair, Mem<double>>("c_struct").ok());
  CHECK(Check<>("c_no_params").ok());

  se::Status count = Check<char, short, int>("c_scalars");
  CHECK(count.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(count, "kernel 'c_scalars' takes 7 parameter(s)"));
  CHECK(Mentions(count, "the TypedKernel declares 3"));

  // int declared where the kernel takes a 2-byte short.
  se::Status size = Check<char, int, int, long long, float, double, Mem<float>>("c_scalars");
  CHECK(Mentions(size, "kernel 'c_scalars' parameter 1"));
  CHECK(Mentions(size, "declares int but the kernel takes .param .u16"));
  CHECK(Mentions(size, "sizes differ"));

  // float declared where the kernel takes a 4-byte int: same size, wrong kind.
  se::Status kind = Check<char, short, float, long long, float, double, Mem<float>>("c_scalars");
  CHECK(Mentions(kind, "parameter 2"));
  CHECK(Mentions(kind, "floating point declared, integer in the kernel"));

  // A pointer where the kernel takes a 4-byte scalar.
  se::Status pointer = Check<char, short, Mem<int>, long long, float, double, Mem<float>>("c_scalars");
  CHECK(Mentions(pointer, "parameter 2"));
  CHECK(Mentions(pointer, "DeviceMemory<int>*"));
  CHECK(Mentions(pointer, "64-bit device address"));

  se::Status structure = Check<double, Mem<double>>("c_struct");
  CHECK(Mentions(structure, "parameter 0"));
  CHECK(Mentions(structure, ".b8"));
}

TEST_CASE("C++ kernels: mangled names add the element types", "[ptx]") {
  using Saxpy = se::TypedKernel<float, Mem<float>, Mem<float>, std::uint32_t>;
  CHECK(cd::CheckPtxSignature(SignaturePtx(), "_Z9cpp_saxpyfPKfPfj", Saxpy::ParamInfos(), "cuda:0").ok());
  CHECK(Check<std::int64_t, sig::Pair, unsigned char, Mem<double>, Mem<double>, Mem<int>>(
            "_Z9cpp_mixedlN3sig4PairEhPKdPdPi")
            .ok());
  CHECK(Check<Mem<int>, Mem<int>, Mem<int>>("_Z8cpp_copyPKiS0_Pi").ok());

  // Same sizes, different element type: only the mangled name can tell.
  se::Status element = Check<float, Mem<int>, Mem<float>, std::uint32_t>("_Z9cpp_saxpyfPKfPfj");
  CHECK(element.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(element, "kernel '_Z9cpp_saxpyfPKfPfj' parameter 1"));
  CHECK(Mentions(element, "declares streamexecutor::DeviceMemory<int>*"));
  CHECK(Mentions(element, "const float*"));
  CHECK(Mentions(element, "element types differ"));

  // Signed vs unsigned of the same size.
  se::Status sign = Check<float, Mem<float>, Mem<float>, std::int32_t>("_Z9cpp_saxpyfPKfPfj");
  CHECK(Mentions(sign, "parameter 3"));
  CHECK(Mentions(sign, "unsigned int"));

  // A 64-bit integer where the kernel takes a pointer: PTX alone cannot see it.
  se::Status pointer = Check<std::int64_t, sig::Pair, unsigned char, std::int64_t, Mem<double>, Mem<int>>(
      "_Z9cpp_mixedlN3sig4PairEhPKdPdPi");
  CHECK(Mentions(pointer, "parameter 3"));
  CHECK(Mentions(pointer, "the kernel takes a pointer"));

  // A struct of the right size and alignment but the wrong name.
  se::Status other = Check<std::int64_t, sig::Other, unsigned char, Mem<double>, Mem<double>, Mem<int>>(
      "_Z9cpp_mixedlN3sig4PairEhPKdPdPi");
  CHECK(Mentions(other, "parameter 1"));
  CHECK(Mentions(other, "sig::Pair"));

  // The substituted third parameter (S0_ = const int*) is decoded too.
  se::Status substituted = Check<Mem<int>, Mem<float>, Mem<int>>("_Z8cpp_copyPKiS0_Pi");
  CHECK(Mentions(substituted, "parameter 1"));
  CHECK(Mentions(substituted, "const int*"));
}

TEST_CASE("C++ template kernels: element types and signedness are checked", "[ptx]") {
  CHECK(Check<Mem<float>, float, int>("_Z10tmpl_scaleIfEvPT_S0_i").ok());
  CHECK(Check<Mem<unsigned>, unsigned, int>("_Z10tmpl_scaleIjEvPT_S0_i").ok());
  CHECK(Check<Mem<double>, Mem<double>, unsigned>("_Z9tmpl_tileIdLi256EEvPKT_PS0_j").ok());
  CHECK(Check<sig::Pair, Mem<int>, Mem<int>>("_ZN3sig9tmpl_pairIiEEvNS_4PairEPKT_PS2_").ok());

  // const float* (T_ = float) against DeviceMemory<int>*: same size, other type.
  se::Status element = Check<Mem<int>, float, int>("_Z10tmpl_scaleIfEvPT_S0_i");
  CHECK(element.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(element, "parameter 0"));
  CHECK(Mentions(element, "float*"));
  CHECK(Mentions(element, "element types differ"));
  se::Status tile = Check<Mem<std::int64_t>, Mem<double>, unsigned>("_Z9tmpl_tileIdLi256EEvPKT_PS0_j");
  CHECK(Mentions(tile, "parameter 0"));
  CHECK(Mentions(tile, "const double*"));

  // int against unsigned, through the template argument and through a substitution of it.
  se::Status sign = Check<Mem<unsigned>, int, int>("_Z10tmpl_scaleIjEvPT_S0_i");
  CHECK(sign.code() == se::ErrorCode::kInvalidArgument);
  CHECK(Mentions(sign, "parameter 1"));
  CHECK(Mentions(sign, "unsigned int"));
  se::Status substituted = Check<sig::Pair, Mem<int>, Mem<unsigned>>("_ZN3sig9tmpl_pairIiEEvNS_4PairEPKT_PS2_");
  CHECK(Mentions(substituted, "parameter 2"));
  CHECK(Mentions(substituted, "int*"));
  se::Status other = Check<sig::Other, Mem<int>, Mem<int>>("_ZN3sig9tmpl_pairIiEEvNS_4PairEPKT_PS2_");
  CHECK(Mentions(other, "parameter 0"));
  CHECK(Mentions(other, "sig::Pair"));
}

TEST_CASE("an unknown kernel name lists the entries and hints at mangling", "[ptx]") {
  se::Status missing = Check<float>("cpp_saxpy");
  CHECK(missing.code() == se::ErrorCode::kNotFound);
  CHECK(Mentions(missing, "no kernel (.entry) named 'cpp_saxpy'"));
  CHECK(Mentions(missing, "use its mangled name '_Z9cpp_saxpyfPKfPfj'"));
  CHECK(Mentions(missing, "c_scalars"));
}

TEST_CASE("the Itanium decoder", "[ptx]") {
  auto saxpy = cd::DecodeMangledParams("_Z9cpp_saxpyfPKfPfj");
  REQUIRE(saxpy.has_value());
  REQUIRE(saxpy->size() == 4);
  CHECK((*saxpy)[0].spelling == "float");
  CHECK((*saxpy)[1].spelling == "const float*");
  CHECK((*saxpy)[1].pointer_depth == 1);
  CHECK((*saxpy)[2].spelling == "float*");
  CHECK((*saxpy)[3].spelling == "unsigned int");

  auto mixed = cd::DecodeMangledParams("_Z9cpp_mixedlN3sig4PairEhPKdPdPi");
  REQUIRE(mixed.has_value());
  REQUIRE(mixed->size() == 6);
  CHECK((*mixed)[1].class_name == "sig::Pair");
  CHECK((*mixed)[2].spelling == "unsigned char");

  auto nested = cd::DecodeMangledParams("_ZN2ns6kernelEPfS0_");
  REQUIRE(nested.has_value());
  REQUIRE(nested->size() == 2);
  CHECK((*nested)[1].spelling == "float*");

  CHECK(cd::DecodeMangledParams("_Z1fv").value().empty());
  CHECK(!cd::DecodeMangledParams("saxpy").has_value());
  // Function templates: T_ and T0_ stand for the template's arguments, which
  // are substitution candidates like any type (g++'s and nvcc's manglings).
  auto scale = cd::DecodeMangledParams("_Z10tmpl_scaleIjEvPT_S0_i");
  REQUIRE(scale.has_value());
  REQUIRE(scale->size() == 3);
  CHECK((*scale)[0].spelling == "unsigned int*");
  CHECK((*scale)[1].spelling == "unsigned int");
  CHECK((*scale)[2].spelling == "int");
  auto two = cd::DecodeMangledParams("_Z3twoI4PairN2ns3VecEEvPT_PKT0_S4_S5_");
  REQUIRE(two.has_value());
  REQUIRE(two->size() == 4);
  CHECK((*two)[1].spelling == "const ns::Vec*");
  CHECK((*two)[2].spelling == "Pair*");
  CHECK((*two)[3].class_name == "ns::Vec");
  auto boxed = cd::DecodeMangledParams("_Z5boxedIfEvPN2ns3BoxIT_EES2_");
  REQUIRE(boxed.has_value());
  CHECK((*boxed)[0].spelling == "ns::Box<float>*");
  CHECK((*boxed)[1].spelling == "float");
  auto nested_template = cd::DecodeMangledParams("_ZN2ns2nkINS_3VecEEEvPT_j");
  REQUIRE(nested_template.has_value());
  CHECK((*nested_template)[0].spelling == "ns::Vec*");
  CHECK(cd::DecodeMangledParams("_Z4flagILb1EEvPib").value().size() == 2);  // a literal argument
  CHECK(!cd::DecodeMangledParams("_Z4packIJiPfEEvDpT_").has_value());       // packs: not decoded
  CHECK(!cd::DecodeMangledParams("_Z1fIiEvT0_").has_value());               // no second template argument
  CHECK(!cd::DecodeMangledParams("_Z1fILi3EEvT_").has_value());             // T_ names a literal
  CHECK(!cd::DecodeMangledParams("_Z1fS9_").has_value());                   // substitution out of range
  CHECK(!cd::DecodeMangledParams("_Z99f").has_value());                     // length past the end
  CHECK(!cd::DecodeMangledParams("_Z").has_value());
  CHECK(cd::MangledBaseName("_Z9cpp_saxpyfPKfPfj") == "cpp_saxpy");
}

TEST_CASE("malformed PTX is an error, never a crash", "[ptx]") {
  struct Case {
    const char* ptx;
    const char* message;
  };
  const Case cases[] = {
      {".entry", "expected a kernel name after .entry"},
      {".entry 42(", "expected a kernel name"},
      {".entry k(", "expected .param for parameter 0"},
      {".entry k( .param", "expected a parameter type"},
      {".entry k( .param .u33 x )", "expected a PTX parameter type"},
      {".entry k( .param .u32 )", "expected a parameter name"},
      {".entry k( .param .u32 x", "expected ',' or ')' after parameter 0"},
      {".entry k( .param .u32 x; )", "expected ',' or ')'"},
      {".entry k( .param .align 3 .b8 x[4] )", "power-of-two alignment"},
      {".entry k( .param .align 8 .b8 x[] )", "an array length"},
      {".entry k( .param .align 8 .b8 x[99999999999999999999] )", "an array length"},
      {".entry k( .param .b8 x[4 )", "expected ']'"},
      {"/* never closed .entry k(", "unterminated /* comment"},
      {".file 1 \"unterminated\n.entry k()", "unterminated string literal"},
  };
  for (const Case& c : cases) {
    INFO(c.ptx);
    auto parsed = cd::ParsePtxEntries(c.ptx);
    REQUIRE(!parsed.ok());
    CHECK(parsed.status().code() == se::ErrorCode::kInvalidArgument);
    CHECK(Mentions(parsed.status(), c.message));
  }
  // Through the check, the parse error names the kernel being loaded.
  se::Status status = cd::CheckPtxSignature(".entry k( .param .u32", "k", se::TypedKernel<int>::ParamInfos(), "cuda:0");
  CHECK(Mentions(status, "cannot read the parameters of kernel 'k'"));

  // Comments and strings hide .entry; .ptr attributes are understood.
  auto tricky = cd::ParsePtxEntries(
      "// .entry commented(\n/* .entry also( */ .file 1 \".entry in a string\"\n"
      ".visible .entry real( .param .u64 .ptr .global .align 4 p, .param .f64 d ) { ret; }");
  REQUIRE(tricky.ok());
  REQUIRE(tricky.value().size() == 1);
  CHECK(tricky.value()[0].name == "real");
  REQUIRE(tricky.value()[0].params.size() == 2);
  CHECK(tricky.value()[0].params[0].is_ptr);
  CHECK(tricky.value()[0].params[0].align == 0);  // .align after .ptr is the pointee's
  CHECK(tricky.value()[0].params[1].size == 8);
  CHECK(cd::ParsePtxEntries("").value().empty());
}
