// Reads conversion requests on stdin and prints the CUDA runtime's answers
// (in emulation), for test/Target/CUDA/conversions.test to compare with
// numpy and with test/run/fp8_reference.py. One request per line:
//   F <f32 bits hex>  -> f16 bf16 e4m3 e5m2 bits of its conversion
//   D <f64 bits hex>  -> the same, from f64 (one rounding)
//   H|B|E|M <bits>    -> the f32 bits of an f16/bf16/e4m3/e5m2 value
#include "CUDARuntimeTestUtil.h"

#include <cinttypes>
#include <cstdio>

template <typename Src> void narrowAll(Src x) {
  std::printf("%04x %04x %02x %02x\n", ein_cvt<ein_f16_t>(x).bits,
              ein_cvt<ein_bf16_t>(x).bits, ein_cvt<ein_f8e4m3_t>(x).bits,
              ein_cvt<ein_f8e5m2_t>(x).bits);
}

int main() {
  char kind;
  unsigned long long bits;
  while (std::scanf(" %c %llx", &kind, &bits) == 2) {
    switch (kind) {
    case 'F': {
      float x;
      uint32_t b = uint32_t(bits);
      memcpy(&x, &b, 4);
      narrowAll(x);
      break;
    }
    case 'D': {
      double x;
      memcpy(&x, &bits, 8);
      narrowAll(x);
      break;
    }
    default: {
      float f = kind == 'H'   ? ein_to_f32(ein_f16_t{uint16_t(bits)})
                : kind == 'B' ? ein_to_f32(ein_bf16_t{uint16_t(bits)})
                : kind == 'E' ? ein_to_f32(ein_f8e4m3_t{uint8_t(bits)})
                              : ein_to_f32(ein_f8e5m2_t{uint8_t(bits)});
      std::printf("%08x\n", ein_float_bits(f));
    }
    }
  }
  return 0;
}
