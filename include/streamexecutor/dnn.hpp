// Canned DNN operations (the seed's Stream::ThenConvolve, ThenPoolForward,
// ThenActivate, ThenSoftmax, ThenMatMul):
//
//   se::dnn::BatchDescriptor input(/*count=*/1, /*feature_map_count=*/3, /*height=*/32, /*width=*/32);
//   se::dnn::FilterDescriptor filter(/*output maps=*/8, /*input maps=*/3, 3, 3);
//   se::dnn::ConvolutionDescriptor convolution;
//   convolution.set_zero_padding_height(1).set_zero_padding_width(1);
//   se::dnn::BatchDescriptor output(1, 8, 32, 32);
//   stream.ThenConvolve(input, x, filter, w, convolution, output, &y.ref());
//
// Libraries: oneDNN on host, CLBlast on OpenCL (convolution and matmul only),
// cuDNN loaded at run time on CUDA. The front end (canned/dnn/operations.hpp)
// checks every shape and buffer the same way on every backend; docs/dnn.md
// has the rules. This header includes the core, the front end and the
// adapters of the backends this build enabled; on a backend without one
// every operation is UNAVAILABLE, naming the backend.
#pragma once

#include "streamexecutor/streamexecutor.hpp"

#include "streamexecutor/canned/dnn/common.hpp"
#include "streamexecutor/canned/dnn/operations.hpp"

#if defined(STREAMEXECUTOR_WITH_HOST)
#include "streamexecutor/canned/dnn/host.hpp"
#endif
#if defined(STREAMEXECUTOR_WITH_OPENCL)
#include "streamexecutor/canned/dnn/opencl.hpp"
#endif
#if defined(STREAMEXECUTOR_WITH_CUDA)
#include "streamexecutor/canned/dnn/cuda.hpp"
#endif
