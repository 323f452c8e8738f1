// cuFFT as a signal-processing application uses it: a batched 1-D complex
// transform of a non-power-of-two length with a work area the application
// allocates itself (cufftSetAutoAllocation(0), cufftMakePlan1d's work size,
// cufftSetWorkArea) on its own stream, forward and inverse, and a 2-D
// real-to-complex / complex-to-real pair. The round trips must give the
// input back (scaled by the length); a few spectrum values are printed
// rounded.
#include <cuda_runtime.h>
#include <cufft.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "corpus_check.h"

int main() {
  corpus::ProgramName() = "lib_cufft";
  CORPUS_CHECK(cudaSetDevice(0));
  cudaStream_t stream;
  CORPUS_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  // 1-D C2C, length 1000, batch 4.
  const int n = 1000, batch = 4;
  std::vector<cufftComplex> signal(n * batch);
  for (int b = 0; b < batch; ++b)
    for (int i = 0; i < n; ++i)
      signal[b * n + i] = make_cuComplex(
          std::cos(2 * 3.14159265f * (b + 1) * i / n) + 0.25f * b,
          std::sin(2 * 3.14159265f * 3 * i / n));
  cufftComplex* d_signal = nullptr;
  CORPUS_CHECK(cudaMalloc(&d_signal, signal.size() * sizeof(cufftComplex)));
  CORPUS_CHECK(cudaMemcpy(d_signal, signal.data(),
                          signal.size() * sizeof(cufftComplex),
                          cudaMemcpyHostToDevice));
  cufftHandle plan;
  CORPUS_CHECK(cufftCreate(&plan));
  CORPUS_CHECK(cufftSetAutoAllocation(plan, 0));
  size_t work_size = 0;
  corpus::Rc("cufftMakePlan1d C2C 1000 x 4",
             cufftMakePlan1d(plan, n, CUFFT_C2C, batch, &work_size));
  size_t estimated = 0;
  CORPUS_CHECK(cufftGetSize(plan, &estimated));
  std::printf("work area: %zu bytes (cufftGetSize agrees: %s)\n", work_size,
              estimated == work_size ? "yes" : "no");
  void* work = nullptr;
  CORPUS_CHECK(cudaMalloc(&work, work_size > 0 ? work_size : 1));
  corpus::Rc("cufftSetWorkArea", cufftSetWorkArea(plan, work));
  CORPUS_CHECK(cufftSetStream(plan, stream));
  corpus::Rc("cufftExecC2C forward",
             cufftExecC2C(plan, d_signal, d_signal, CUFFT_FORWARD));
  std::vector<cufftComplex> spectrum(n * batch);
  CORPUS_CHECK(cudaMemcpyAsync(spectrum.data(), d_signal,
                               spectrum.size() * sizeof(cufftComplex),
                               cudaMemcpyDeviceToHost, stream));
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  // Batch b has a cosine at bin b+1 (magnitude n/2 at bins b+1 and n-b-1),
  // a DC of 0.25*b*n and the sine at bin 3.
  for (int b = 0; b < batch; ++b) {
    const cufftComplex& dc = spectrum[b * n];
    const cufftComplex& peak = spectrum[b * n + b + 1];
    std::printf("batch %d: DC %.1f, |bin %d| %.1f\n", b,
                std::round(dc.x * 10) / 10 + 0.0, b + 1,
                std::round(std::hypot(peak.x, peak.y) * 10) / 10 + 0.0);
  }
  corpus::Rc("cufftExecC2C inverse",
             cufftExecC2C(plan, d_signal, d_signal, CUFFT_INVERSE));
  std::vector<cufftComplex> back(n * batch);
  CORPUS_CHECK(cudaMemcpyAsync(back.data(), d_signal,
                               back.size() * sizeof(cufftComplex),
                               cudaMemcpyDeviceToHost, stream));
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  float max_err = 0;
  for (size_t i = 0; i < back.size(); ++i) {
    max_err = std::fmax(max_err, std::fabs(back[i].x / n - signal[i].x));
    max_err = std::fmax(max_err, std::fabs(back[i].y / n - signal[i].y));
  }
  std::printf("1-D round trip within 1e-4: %s\n",
              max_err < 1e-4f ? "yes" : "no");
  corpus::Expect(max_err < 1e-4f, "1-D round trip error %g", max_err);

  // 2-D R2C / C2R, 64 x 48.
  const int nx = 64, ny = 48;
  std::vector<float> image(nx * ny);
  for (int i = 0; i < nx * ny; ++i)
    image[i] = static_cast<float>((i * 13) % 17);
  float* d_image = nullptr;
  cufftComplex* d_freq = nullptr;
  CORPUS_CHECK(cudaMalloc(&d_image, image.size() * sizeof(float)));
  CORPUS_CHECK(cudaMalloc(&d_freq, nx * (ny / 2 + 1) * sizeof(cufftComplex)));
  CORPUS_CHECK(cudaMemcpy(d_image, image.data(), image.size() * sizeof(float),
                          cudaMemcpyHostToDevice));
  cufftHandle r2c, c2r;
  corpus::Rc("cufftPlan2d R2C", cufftPlan2d(&r2c, nx, ny, CUFFT_R2C));
  corpus::Rc("cufftPlan2d C2R", cufftPlan2d(&c2r, nx, ny, CUFFT_C2R));
  CORPUS_CHECK(cufftSetStream(r2c, stream));
  CORPUS_CHECK(cufftSetStream(c2r, stream));
  corpus::Rc("cufftExecR2C", cufftExecR2C(r2c, d_image, d_freq));
  cufftComplex dc{};
  CORPUS_CHECK(
      cudaMemcpyAsync(&dc, d_freq, sizeof dc, cudaMemcpyDeviceToHost, stream));
  corpus::Rc("cufftExecC2R", cufftExecC2R(c2r, d_freq, d_image));
  std::vector<float> image_back(nx * ny);
  CORPUS_CHECK(cudaMemcpyAsync(image_back.data(), d_image,
                               image_back.size() * sizeof(float),
                               cudaMemcpyDeviceToHost, stream));
  CORPUS_CHECK(cudaStreamSynchronize(stream));
  double sum = 0;
  for (float v : image) sum += v;
  std::printf("2-D DC term %.1f (sum of the image %.1f)\n",
              std::round(dc.x * 10) / 10 + 0.0, sum);
  float err2 = 0;
  for (int i = 0; i < nx * ny; ++i)
    err2 = std::fmax(err2, std::fabs(image_back[i] / (nx * ny) - image[i]));
  std::printf("2-D round trip within 1e-4: %s\n", err2 < 1e-4f ? "yes" : "no");
  corpus::Expect(err2 < 1e-4f, "2-D round trip error %g", err2);

  CORPUS_CHECK(cufftDestroy(c2r));
  CORPUS_CHECK(cufftDestroy(r2c));
  CORPUS_CHECK(cufftDestroy(plan));
  CORPUS_CHECK(cudaFree(d_freq));
  CORPUS_CHECK(cudaFree(d_image));
  CORPUS_CHECK(cudaFree(work));
  CORPUS_CHECK(cudaFree(d_signal));
  CORPUS_CHECK(cudaStreamDestroy(stream));
  return corpus::Finish();
}
