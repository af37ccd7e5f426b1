// The main() of a generated program that `einc run --target=cuda` (and
// cuda-emulated) builds: tensors in raw files, one call, results written
// row-major, and with --time the median of CUDA-event-timed calls.
#ifndef EIN_CUDA_MAIN_H
#define EIN_CUDA_MAIN_H

#include <string>
#include <vector>

/// A uniform call of one generated entry point: per tensor (inputs, then
/// outputs) its data, sizes and strides.
typedef int (*EinEntryCall)(void *const *data, const int64_t *const *sizes,
                            const int64_t *const *strides, cudaStream_t stream);

struct EinMainSpec {
  const char *name;
  int inputs, outputs;
  const int *ranks;        // per tensor
  const int *elementBytes; // per tensor
  EinEntryCall call;
};

/// argv: [--time] then per input `FILE RANK-SIZES... RANK-STRIDES...` (the
/// file holds the input's buffer as is, the strides index it; `-` is an
/// input of zeros, for timing), per output
/// `FILE RANK-SIZES...` (written row-major). Exit 0, 1 on a bad command
/// line or file, 3 when the entry point returns an EIN_ERR_* code (5 for
/// EIN_ERR_INDEX: an id of a take out of range), 4 when
/// there is no device.
inline int ein_main(int argc, char **argv, const EinMainSpec &spec) {
  int arg = 1;
  bool time = argc > 1 && std::strcmp(argv[1], "--time") == 0;
  if (time)
    ++arg;
#ifdef __CUDACC__
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "no CUDA device\n");
    return 4;
  }
#endif
  const int n = spec.inputs + spec.outputs;
  std::vector<std::vector<int64_t>> sizes(n), strides(n);
  std::vector<std::string> files(n);
  std::vector<size_t> bytes(n);
  std::vector<void *> device(n, nullptr);
  std::vector<std::vector<char>> host(n);
  auto number = [&](int64_t *v) {
    if (arg >= argc)
      return false;
    char *end = nullptr;
    *v = std::strtoll(argv[arg++], &end, 10);
    return end && *end == 0;
  };
  for (int t = 0; t < n; ++t) {
    if (arg >= argc) {
      std::fprintf(stderr, "%s: missing arguments for tensor %d\n", argv[0], t);
      return 1;
    }
    files[t] = argv[arg++];
    const int rank = spec.ranks[t];
    sizes[t].resize(rank > 0 ? rank : 1);
    strides[t].resize(rank > 0 ? rank : 1);
    for (int d = 0; d < rank; ++d)
      if (!number(&sizes[t][d])) {
        std::fprintf(stderr, "%s: bad size of tensor %d\n", argv[0], t);
        return 1;
      }
    int64_t count = 1;
    for (int d = rank - 1; d >= 0; --d) {
      strides[t][d] = count;
      count *= sizes[t][d];
    }
    if (t < spec.inputs) {
      for (int d = 0; d < rank; ++d)
        if (!number(&strides[t][d])) {
          std::fprintf(stderr, "%s: bad stride of tensor %d\n", argv[0], t);
          return 1;
        }
      if (files[t] == "-") { // zeros, as large as the strides reach
        int64_t span = 1;
        for (int d = 0; d < rank; ++d)
          span += sizes[t][d] > 0 ? (sizes[t][d] - 1) * strides[t][d] : 0;
        for (int d = 0; d < rank; ++d)
          span = sizes[t][d] == 0 ? 0 : span;
        bytes[t] = size_t(span) * size_t(spec.elementBytes[t]);
        EIN_CUDA_CHECK(cudaMalloc(&device[t], bytes[t] ? bytes[t] : 1));
        EIN_CUDA_CHECK(cudaMemset(device[t], 0, bytes[t]));
        continue;
      }
      FILE *f = std::fopen(files[t].c_str(), "rb");
      if (!f) {
        std::fprintf(stderr, "%s: cannot open %s\n", argv[0], files[t].c_str());
        return 1;
      }
      char buffer[1 << 16];
      size_t got;
      while ((got = std::fread(buffer, 1, sizeof buffer, f)) > 0)
        host[t].insert(host[t].end(), buffer, buffer + got);
      std::fclose(f);
      bytes[t] = host[t].size();
    } else {
      bytes[t] = size_t(count) * size_t(spec.elementBytes[t]);
      host[t].resize(bytes[t]);
    }
    EIN_CUDA_CHECK(cudaMalloc(&device[t], bytes[t] ? bytes[t] : 1));
    if (t < spec.inputs && bytes[t])
      EIN_CUDA_CHECK(cudaMemcpy(device[t], host[t].data(), bytes[t],
                                cudaMemcpyHostToDevice));
    if (t >= spec.inputs && bytes[t]) // a result never read before written
      EIN_CUDA_CHECK(cudaMemset(device[t], 0xA5, bytes[t]));
  }
  std::vector<const int64_t *> sizeP(n), strideP(n);
  for (int t = 0; t < n; ++t) {
    sizeP[t] = sizes[t].data();
    strideP[t] = strides[t].data();
  }
  cudaStream_t stream = nullptr;
  int rc = spec.call(device.data(), sizeP.data(), strideP.data(), stream);
  EIN_CUDA_CHECK(cudaStreamSynchronize(stream));
  EIN_CUDA_CHECK(cudaGetLastError());
  if (rc == 6) { // EIN_ERR_INDEX (defined later, with the module): an id
                 // of a take out of range
    std::fprintf(stderr, "ein_%s returned %d (EIN_ERR_INDEX)\n", spec.name, rc);
    return 5;
  }
  if (rc != 0) {
    std::fprintf(stderr, "ein_%s returned %d\n", spec.name, rc);
    return 3;
  }
  // Timed calls replay the function as a CUDA Graph (ein_cuda_graph.cuh):
  // the first of them runs directly, the second is captured.
  // EIN_GRAPH_REPEAT=N makes N such calls before the results are written
  // (3: direct, captured, replayed), so that a run checks the graph's
  // results (scripts/gpu-check.sh, the emulated corpus): the results are
  // poisoned again before the last call, whose writes are the ones kept.
  EinGraphCache graphs;
  std::vector<int64_t> ranks(n);
  for (int t = 0; t < n; ++t)
    ranks[t] = spec.ranks[t];
  const std::string key = ein_graph_key(size_t(n), device.data(), ranks.data(),
                                        sizeP.data(), strideP.data());
  auto call = [&](cudaStream_t s) {
    return spec.call(device.data(), sizeP.data(), strideP.data(), s);
  };
  const char *repeat = std::getenv("EIN_GRAPH_REPEAT");
  for (long i = repeat ? std::strtol(repeat, nullptr, 10) : 0; i > 0; --i) {
    if (i == 1)
      for (int t = spec.inputs; t < n; ++t)
        if (bytes[t])
          EIN_CUDA_CHECK(cudaMemset(device[t], 0xA5, bytes[t]));
    rc = ein_graph_call(graphs, key, stream, call);
    EIN_CUDA_CHECK(cudaStreamSynchronize(stream));
    if (rc != 0) {
      std::fprintf(stderr, "ein_%s returned %d in a repeated call\n",
                   spec.name, rc);
      return rc == 6 ? 5 : 3;
    }
  }
  if (repeat)
    std::printf("ein-graph-launches: %zu\n", graphs.launches);
  if (time) {
#ifdef __CUDACC__
    cudaEvent_t start, stop;
    EIN_CUDA_CHECK(cudaEventCreate(&start));
    EIN_CUDA_CHECK(cudaEventCreate(&stop));
    std::vector<float> ms;
    float total = 0;
    while (ms.size() < 1000 && (total < 200 || ms.size() < 5)) {
      EIN_CUDA_CHECK(cudaEventRecord(start, stream));
      if ((rc = ein_graph_call(graphs, key, stream, call)) != 0) {
        std::fprintf(stderr, "ein_%s returned %d in a timed call\n",
                     spec.name, rc);
        return 3;
      }
      EIN_CUDA_CHECK(cudaEventRecord(stop, stream));
      EIN_CUDA_CHECK(cudaEventSynchronize(stop));
      float t = 0;
      EIN_CUDA_CHECK(cudaEventElapsedTime(&t, start, stop));
      ms.push_back(t);
      total += t;
    }
    std::sort(ms.begin(), ms.end());
    std::printf("ein-time-ms: %.9g %zu\n", double(ms[ms.size() / 2]),
                ms.size());
    cudaDeviceProp prop;
    int device = 0;
    if (cudaGetDevice(&device) == cudaSuccess &&
        cudaGetDeviceProperties(&prop, device) == cudaSuccess)
      std::printf("ein-device: %s\n", prop.name);
#else
    // Nothing is timed, but the calls a timing makes run: directly, captured
    // and launched, launched again. The results written are the last one's.
    for (int i = 0; i < 3; ++i)
      if ((rc = ein_graph_call(graphs, key, stream, call)) != 0) {
        std::fprintf(stderr, "ein_%s returned %d in a timed call\n",
                     spec.name, rc);
        return 3;
      }
    std::printf("ein-time-ms: emulated (%zu graph launches)\n",
                graphs.launches);
#endif
  }
  for (int t = spec.inputs; t < n; ++t) {
    if (bytes[t])
      EIN_CUDA_CHECK(cudaMemcpy(host[t].data(), device[t], bytes[t],
                                cudaMemcpyDeviceToHost));
    FILE *f = std::fopen(files[t].c_str(), "wb");
    if (!f || std::fwrite(host[t].data(), 1, bytes[t], f) != bytes[t]) {
      std::fprintf(stderr, "%s: cannot write %s\n", argv[0], files[t].c_str());
      if (f)
        std::fclose(f);
      return 1;
    }
    std::fclose(f);
  }
  for (int t = 0; t < n; ++t)
    EIN_CUDA_CHECK(cudaFree(device[t]));
  return 0;
}

#endif // EIN_CUDA_MAIN_H
