// Canned BLAS operations (docs/blas.md): Stream::ThenBlasAxpy, ThenBlasDot,
// ThenBlasGemv, ThenBlasGemm and ThenBlasGemmBatched over float and double,
// column-major, on every backend this build enabled:
//   host:   OpenBLAS (cblas)                 plugin se::host::kOpenBlasPlugin
//   opencl: CLBlast                          plugin se::opencl::kClBlastPlugin
//   cuda:   cuBLAS, loaded at run time       plugin se::cuda::kCuBlasPlugin
// It includes <streamexecutor/streamexecutor.hpp> (every enabled backend); link against
// streamexecutor_blas_dep (Meson), which carries the libraries and the
// STREAMEXECUTOR_BLAS_WITH_* defines. A library the build did not find leaves
// its backend's operations compiling and reporting UNAVAILABLE with the
// package to install.
#pragma once

#include "streamexecutor/streamexecutor.hpp"

#include "streamexecutor/canned/blas/common.hpp"
#include "streamexecutor/canned/blas/operations.hpp"

#if defined(STREAMEXECUTOR_WITH_HOST)
#include "streamexecutor/canned/blas/host.hpp"
#endif
#if defined(STREAMEXECUTOR_WITH_OPENCL)
#include "streamexecutor/canned/blas/opencl.hpp"
#endif
#if defined(STREAMEXECUTOR_WITH_CUDA)
#include "streamexecutor/canned/blas/cuda.hpp"
#endif
