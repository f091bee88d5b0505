// se::Half: a 16-bit IEEE 754 binary16 value, as storage. It is what a
// DeviceMemory<Half> holds for the half-precision gemm (docs/blas.md): two
// bytes, trivially copyable, the same bits as CUDA's __half and OpenCL's
// cl_half. It does no arithmetic of its own: convert to float, compute,
// convert back.
//
// float -> Half rounds to nearest, ties to even, as IEEE 754 and every GPU's
// conversion do: values from 65520 up become infinity, values below the
// smallest subnormal (2^-24) round to zero or to 2^-24, NaN stays NaN (its
// quiet bit set, the top payload bits kept) and the sign of zero is kept.
// Half -> float is exact (every half is a float), subnormals included.
#pragma once

#include <bit>
#include <cstdint>
#include <type_traits>

namespace streamexecutor {

class Half {
 public:
  // +0.
  constexpr Half() = default;

  // Rounds to the nearest half, ties to even (explicit: it loses precision).
  constexpr explicit Half(float value) : bits_(FromFloat(value)) {}

  // Exact; implicit, since every half is a float.
  constexpr operator float() const { return ToFloat(bits_); }

  static constexpr Half FromBits(std::uint16_t bits) {
    Half half;
    half.bits_ = bits;
    return half;
  }
  constexpr std::uint16_t bits() const { return bits_; }

  constexpr bool IsNaN() const { return (bits_ & 0x7C00u) == 0x7C00u && (bits_ & 0x03FFu) != 0; }

 private:
  static constexpr std::uint16_t FromFloat(float value) {
    const std::uint32_t f = std::bit_cast<std::uint32_t>(value);
    const auto sign = static_cast<std::uint16_t>((f >> 16) & 0x8000u);
    const std::uint32_t magnitude = f & 0x7FFFFFFFu;
    const std::uint32_t exponent = magnitude >> 23;  // biased by 127
    const std::uint32_t fraction = magnitude & 0x7FFFFFu;
    if (exponent == 0xFF) {  // infinity, or NaN: quiet, the top 9 payload bits kept
      if (fraction == 0) return static_cast<std::uint16_t>(sign | 0x7C00u);
      return static_cast<std::uint16_t>(sign | 0x7E00u | (fraction >> 13));
    }
    // 65520 = 65504 (the largest half) + half its spacing: a tie that rounds
    // to the even neighbour, which is 2^16, so infinity.
    if (magnitude >= 0x477FF000u) return static_cast<std::uint16_t>(sign | 0x7C00u);
    if (magnitude < 0x38800000u) {  // below 2^-14: a subnormal half, or zero
      // value = significand * 2^(exponent - 150); in units of 2^-24 that is
      // significand >> (126 - exponent), rounded. Float subnormals (exponent 0)
      // are below 2^-126, far under half of 2^-24: they give zero.
      if (exponent < 102) return sign;  // below 2^-25: rounds to zero (no tie possible)
      const std::uint32_t significand = fraction | 0x800000u;
      const std::uint32_t shift = 126 - exponent;  // 14 .. 24
      return static_cast<std::uint16_t>(sign | RoundShift(significand, shift));
    }
    // A normal half: rebias the exponent (127 -> 15), keep the top 10
    // fraction bits and round on the 13 dropped. A carry out of the fraction
    // moves to the next exponent, as it should.
    const std::uint32_t kept = ((exponent - 112) << 10) | (fraction >> 13);
    const std::uint32_t dropped = fraction & 0x1FFFu;
    const std::uint32_t rounded = kept + ((dropped > 0x1000u || (dropped == 0x1000u && (kept & 1u) != 0)) ? 1u : 0u);
    return static_cast<std::uint16_t>(sign | rounded);
  }

  // value >> shift, rounded to nearest, ties to even.
  static constexpr std::uint32_t RoundShift(std::uint32_t value, std::uint32_t shift) {
    const std::uint32_t kept = value >> shift;
    const std::uint32_t dropped = value & ((1u << shift) - 1u);
    const std::uint32_t halfway = 1u << (shift - 1);
    return kept + ((dropped > halfway || (dropped == halfway && (kept & 1u) != 0)) ? 1u : 0u);
  }

  static constexpr float ToFloat(std::uint16_t h) {
    const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
    const std::uint32_t exponent = (h >> 10) & 0x1Fu;
    const std::uint32_t fraction = h & 0x3FFu;
    if (exponent == 0x1F) {  // infinity or NaN, payload kept
      return std::bit_cast<float>(sign | 0x7F800000u | (fraction << 13));
    }
    if (exponent == 0) {
      if (fraction == 0) return std::bit_cast<float>(sign);
      // fraction * 2^-24: normalise so that the leading 1 is bit 10.
      std::uint32_t f = fraction;
      std::uint32_t e = 113;  // the float exponent of 2^-14, lowered per shift
      while ((f & 0x400u) == 0) {
        f <<= 1;
        --e;
      }
      return std::bit_cast<float>(sign | (e << 23) | ((f & 0x3FFu) << 13));
    }
    return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (fraction << 13));
  }

  std::uint16_t bits_ = 0;
};

static_assert(sizeof(Half) == 2 && alignof(Half) == 2);
static_assert(std::is_trivially_copyable_v<Half> && std::is_standard_layout_v<Half>);

}  // namespace streamexecutor
