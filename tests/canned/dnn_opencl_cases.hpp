// dnn_test.cpp's OpenCL cases (CLBlast): convolution and matmul against the
// reference in float and double, agreement with the host's oneDNN, stream
// order, and the operations no OpenCL library offers. Included once, at the
// end of dnn_test.cpp, where the OpenCL backend is built.
#pragma once

#if defined(STREAMEXECUTOR_DNN_WITH_CLBLAST)

TEST_CASE("OpenCL convolutions match the reference (CLBlast Convgemm)", "[dnn][opencl]") {
  CheckConvolutions<se::opencl, float>(1e-5);
  // PoCL's CPU device has doubles; a device without them is UNIMPLEMENTED.
  CheckConvolutions<se::opencl, double>(1e-12);
}

TEST_CASE("OpenCL matmul matches the reference (CLBlast Gemm)", "[dnn][opencl]") {
  CheckMatMul<se::opencl, float>(1e-5);
  CheckMatMul<se::opencl, double>(1e-12);
}

TEST_CASE("OpenCL and host convolutions agree, on slices of larger buffers", "[dnn][opencl]") {
  auto* device = Executor<se::opencl>();
  auto* host = Executor<se::host>();
  const ConvCase c = ConvCases()[1];
  const std::vector<float> input = dnn_ref::RandomValues<float>(c.input.ElementCount() + 5, 300);
  const std::vector<float> filter = dnn_ref::RandomValues<float>(c.filter.ElementCount() + 3, 301);
  // Views at element offsets: CLBlast takes them as buffer offsets.
  auto run = [&]<typename B>(se::StreamExecutor<B>* executor) {
    auto x = Upload<B>(executor, input);
    auto w = Upload<B>(executor, filter);
    auto y = executor->template AllocateOwnedArray<float>(static_cast<std::uint64_t>(c.output.ElementCount()) + 2);
    se::DeviceMemory<float> y_view = y.cref().GetSlice(2, static_cast<std::uint64_t>(c.output.ElementCount()));
    const se::Status status = RunOn<B, float>(executor, [&](se::Stream<B>& s) {
      s.ThenConvolve(c.input, x.cref().GetSlice(5, static_cast<std::uint64_t>(c.input.ElementCount())), c.filter,
                     w.cref().GetSlice(3, static_cast<std::uint64_t>(c.filter.ElementCount())), c.convolution, c.output,
                     &y_view);
    });
    REQUIRE(status.ok());
    std::vector<float> all = Download<B>(executor, y);
    return std::vector<float>(all.begin() + 2, all.end());
  };
  const std::vector<float> from_device = run(device);
  const std::vector<float> from_host = run(host);
  const std::vector<float> expected =
      dnn_ref::Convolve(c.input, std::vector<float>(input.begin() + 5, input.end()), c.filter,
                        std::vector<float>(filter.begin() + 3, filter.end()), c.convolution, c.output);
  CHECK(dnn_ref::MaxRelativeError(expected, from_device) < 1e-5);
  CHECK(dnn_ref::MaxRelativeError(from_host, from_device) < 1e-5);
}

TEST_CASE("OpenCL DNN calls run in stream order behind a host callback", "[dnn][opencl]") {
  auto* executor = Executor<se::opencl>();
  const dnn::BatchDescriptor in(3, 4, 1, 1), out(3, 2, 1, 1);
  const std::vector<float> input = dnn_ref::RandomValues<float>(12, 400);
  const std::vector<float> weights = dnn_ref::RandomValues<float>(8, 401);
  auto x = executor->AllocateOwnedArray<float>(12);
  auto w = Upload<se::opencl>(executor, weights);
  auto y = executor->AllocateOwnedArray<float>(6);
  std::vector<float> output(6);
  bool ran = false;
  se::Stream<se::opencl> stream(executor);
  // The matmul is held behind the pending callback and enqueued after it.
  stream.Init()
      .ThenMemcpyH2D<float>(input, x.ptr())
      .ThenDoHostCallback([&] { ran = true; })
      .ThenMatMul(x.cref(), w.cref(), in, out, y.ptr())
      .ThenMemcpyD2H<float>(y.cref(), output);
  REQUIRE(stream.BlockHostUntilDone().ok());
  CHECK(ran);
  CHECK(dnn_ref::MaxRelativeError(dnn_ref::MatMul(input, weights, 3, 2, 4), output) < 1e-5);
}

#endif  // STREAMEXECUTOR_DNN_WITH_CLBLAST

TEST_CASE("OpenCL pooling, activation and softmax are UNIMPLEMENTED, naming why", "[dnn][opencl][errors]") {
  auto* executor = Executor<se::opencl>();
  const dnn::BatchDescriptor d(1, 1, 4, 4);
  auto x = executor->AllocateOwnedArray<float>(16);
  auto y = executor->AllocateOwnedArray<float>(16);
#if defined(STREAMEXECUTOR_DNN_WITH_CLBLAST)
  const std::string why = "no OpenCL DNN library offers";
#else
  const std::string why = "needs CLBlast, which this program was built without";
#endif

  se::Stream<se::opencl> activate(executor);
  activate.Init().ThenActivate(dnn::ActivationMode::kSigmoid, d, x.cref(), y.ptr());
  CHECK(activate.status().code() != se::ErrorCode::kOk);
  CHECK(Mentions(activate.status(), why));

  se::Stream<se::opencl> softmax(executor);
  softmax.Init().ThenSoftmax(d, x.cref(), y.ptr());
  CHECK(Mentions(softmax.status(), why));

  dnn::PoolingDescriptor pooling;
  pooling.set_window_height(2).set_window_width(2).set_vertical_stride(2).set_horizontal_stride(2);
  se::Stream<se::opencl> pool(executor);
  pool.Init().ThenPoolForward(pooling, d, x.cref(), dnn::BatchDescriptor(1, 1, 2, 2), y.ptr());
  CHECK(Mentions(pool.status(), why));
#if defined(STREAMEXECUTOR_DNN_WITH_CLBLAST)
  CHECK(pool.status().code() == se::ErrorCode::kUnimplemented);
  CHECK(Mentions(pool.status(), "ThenPoolForward on opencl:0: no OpenCL DNN library offers pooling on this device"));
#endif
}
