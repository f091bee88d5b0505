// Canned fast Fourier transforms (the seed's FFT operations):
//
//   auto plan = se::fft::Create2dPlan(executor, 64, 128, se::fft::Type::kC2CForward).ValueOrDie();
//   stream.Init().ThenFft(&plan, input, output.ptr());   // DeviceMemory<std::complex<float>>
//
// over FFTW3 (host, se::host::kFftw3Plugin), clFFT (OpenCL,
// se::opencl::kClFftPlugin), cuFFT loaded at run time (CUDA,
// se::cuda::kCuFftPlugin) and VkFFT (Vulkan, plugin "vkfft"), each its
// backend's default. A plan holds the
// library's plan and belongs to one executor; it must outlive the work
// enqueued with it, as buffers must. docs/fft.md has the conventions. This
// header includes the core, the front end (canned/fft/operations.hpp) and the
// adapters of the backends this build enabled.
#pragma once

#include "streamexecutor/streamexecutor.hpp"

#include "streamexecutor/canned/fft/common.hpp"
#include "streamexecutor/canned/fft/operations.hpp"

#if defined(STREAMEXECUTOR_WITH_HOST)
#include "streamexecutor/canned/fft/host.hpp"
#endif
#if defined(STREAMEXECUTOR_WITH_OPENCL)
#include "streamexecutor/canned/fft/opencl.hpp"
#endif
#if defined(STREAMEXECUTOR_WITH_CUDA)
#include "streamexecutor/canned/fft/cuda.hpp"
#endif
#if defined(STREAMEXECUTOR_WITH_VULKAN)
#include "streamexecutor/canned/fft/vulkan.hpp"
#endif
