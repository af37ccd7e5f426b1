// Calls the CUDA entry point einc generated for ../attention.ein: attention
// scores of random bf16 q and k, checked against a loop in double on the
// host.
#include "attention.h"

#include <cmath>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <vector>

static uint16_t toBf16(float x) { // nearest even (no NaNs here)
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  return uint16_t((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16);
}
static float fromBf16(uint16_t b) {
  uint32_t bits = uint32_t(b) << 16;
  float x;
  std::memcpy(&x, &bits, 4);
  return x;
}
#define CHECK(x)                                                               \
  do {                                                                         \
    cudaError_t e = (x);                                                       \
    if (e != cudaSuccess) {                                                    \
      std::printf("%s: %s\n", #x, cudaGetErrorString(e));                      \
      return 1;                                                                \
    }                                                                          \
  } while (0)

int main() {
  const int64_t batch = 2, seq = 64, seq2 = 48, heads = 8, d = 16;
  const int64_t qSizes[] = {batch, seq, heads * d},
                qStrides[] = {seq * heads * d, heads * d, 1};
  const int64_t kSizes[] = {batch, seq2, heads * d},
                kStrides[] = {seq2 * heads * d, heads * d, 1};
  const int64_t sSizes[] = {batch, heads, seq, seq2},
                sStrides[] = {heads * seq * seq2, seq * seq2, seq2, 1};
  std::vector<uint16_t> q(batch * seq * heads * d), k(batch * seq2 * heads * d);
  srand(1);
  for (auto &x : q)
    x = toBf16(float(rand()) / RAND_MAX - 0.5f);
  for (auto &x : k)
    x = toBf16(float(rand()) / RAND_MAX - 0.5f);
  std::vector<float> s(batch * heads * seq * seq2);

  uint16_t *dq, *dk;
  float *ds;
  CHECK(cudaMalloc(&dq, q.size() * 2));
  CHECK(cudaMalloc(&dk, k.size() * 2));
  CHECK(cudaMalloc(&ds, s.size() * 4));
  CHECK(cudaMemcpy(dq, q.data(), q.size() * 2, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dk, k.data(), k.size() * 2, cudaMemcpyHostToDevice));
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));
  int rc = ein_scores(dq, 3, qSizes, qStrides, dk, 3, kSizes, kStrides, ds, 4,
                      sSizes, sStrides, stream);
  if (rc != EIN_OK) {
    std::printf("ein_scores returned %d\n", rc);
    return 1;
  }
  CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaMemcpy(s.data(), ds, s.size() * 4, cudaMemcpyDeviceToHost));

  double worst = 0;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < seq; ++i)
        for (int64_t j = 0; j < seq2; ++j) {
          double ref = 0;
          for (int64_t e = 0; e < d; ++e)
            ref += double(fromBf16(q[(b * seq + i) * heads * d + h * d + e])) *
                   fromBf16(k[(b * seq2 + j) * heads * d + h * d + e]);
          double got = s[((b * heads + h) * seq + i) * seq2 + j];
          worst = std::fmax(worst, std::fabs(got - ref));
        }
  std::printf("scores (%lld, %lld, %lld, %lld): max |error| %.3g\n",
              (long long)batch, (long long)heads, (long long)seq,
              (long long)seq2, worst);
  return worst < 1e-3 ? 0 : 1;
}
