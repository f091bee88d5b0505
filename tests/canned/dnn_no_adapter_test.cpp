// DNN on se::host_serial, which has no DNN adapter (tests/canned/no_adapter.hpp).
#include <streamexecutor/dnn.hpp>

#include "no_adapter.hpp"

namespace se = streamexecutor;
using no_adapter::Executor;

static_assert(!se::canned_detail::Adapted<se::dnn_detail::Adapter<se::host_serial>>);

TEST_CASE("DNN on a backend without an adapter is UNAVAILABLE naming the backend", "[dnn][host_serial]") {
  const se::dnn::BatchDescriptor dimensions(1, 1, 2, 2);
  se::ScopedDeviceMemory<float> x = Executor()->AllocateOwnedArray<float>(4);
  se::Stream<se::host_serial> stream(Executor());
  stream.Init().ThenActivate(se::dnn::ActivationMode::kRelu, dimensions, x.cref(), x.ptr());
  no_adapter::RequireNoLibrary(stream.status(), "ThenActivate", "DNN");
  se::Stream<se::host_serial> bad(Executor());
  bad.Init().ThenActivate(se::dnn::ActivationMode::kRelu, se::dnn::BatchDescriptor(1, 1, 4, 4), x.cref(), x.ptr());
  CHECK(bad.status().code() == se::ErrorCode::kOutOfRange);
}
