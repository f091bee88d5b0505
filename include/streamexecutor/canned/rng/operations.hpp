// The canned RNG operations as Stream<B> sees them: Stream::ThenSetRngSeed,
// ThenPopulateRandUniform and ThenPopulateRandGaussian call these Canned*
// functions by argument-dependent lookup. Arguments and the seed are checked
// the same way on every backend; the executor's plugin is Philox (kernels the
// backend's Adapter<B> gives: canned/rng/host.hpp, opencl.hpp, cuda.hpp) or
// the backend's vendor generator (VendorAdapter: cuRAND on CUDA). A backend
// without an adapter gets UNAVAILABLE (canned/detail/adapter.hpp).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>
#include <type_traits>

#include "streamexecutor/canned/rng/common.hpp"
#include "streamexecutor/canned/rng/philox.hpp"
#include "streamexecutor/core/executor.hpp"
#include "streamexecutor/core/plugin.hpp"
#include "streamexecutor/core/stream.hpp"

namespace streamexecutor {
namespace rng_detail {

// The Philox plugin's state on one executor: the generator and the four
// kernels, each loaded on its first use (a device without doubles can still
// draw floats).
template <Backend B>
class PhiloxState {
 public:
  explicit PhiloxState(StreamExecutor<B>* executor)
      : executor_(executor),
        uniform_f32_(executor),
        uniform_f64_(executor),
        gaussian_f32_(executor),
        gaussian_f64_(executor) {}

  Generator& generator() { return generator_; }

  template <typename T>
  StatusOr<const UniformKernel<T>*> Uniform() {
    if constexpr (sizeof(T) == 4) {
      return Load(PhiloxKernel::kUniformF32, uniform_f32_);
    } else {
      return Load(PhiloxKernel::kUniformF64, uniform_f64_);
    }
  }
  template <typename T>
  StatusOr<const GaussianKernel<T>*> Gaussian() {
    if constexpr (sizeof(T) == 4) {
      return Load(PhiloxKernel::kGaussianF32, gaussian_f32_);
    } else {
      return Load(PhiloxKernel::kGaussianF64, gaussian_f64_);
    }
  }

 private:
  template <typename Kernel>
  StatusOr<const Kernel*> Load(PhiloxKernel which, Kernel& kernel) {
    const auto index = static_cast<std::size_t>(which);
    std::lock_guard<std::mutex> lock(mutex_);
    if (!loaded_[index]) {
      StatusOr<MultiKernelLoaderSpec> spec = Adapter<B>::PhiloxSpec(which);
      if (!spec.ok()) return spec.status();
      STREAMEXECUTOR_RETURN_IF_ERROR(executor_->GetKernel(spec.value(), &kernel));
      loaded_[index] = true;
    }
    return &kernel;
  }

  StreamExecutor<B>* executor_;
  Generator generator_;
  std::mutex mutex_;
  std::array<bool, kPhiloxKernelCount> loaded_{};
  UniformKernel<float> uniform_f32_;
  UniformKernel<double> uniform_f64_;
  GaussianKernel<float> gaussian_f32_;
  GaussianKernel<double> gaussian_f64_;
};

template <Backend B>
StatusOr<PhiloxState<B>*> GetPhiloxState(StreamExecutor<B>* executor) {
  return executor->template GetOrCreateExtension<PhiloxState<B>>(
      [executor]() -> StatusOr<std::unique_ptr<PhiloxState<B>>> { return std::make_unique<PhiloxState<B>>(executor); });
}

// The executor's vendor generator (cuRAND on CUDA), made on its first use.
template <Backend B>
  requires VendorAdapter<Adapter<B>>
StatusOr<typename Adapter<B>::VendorState*> GetVendorState(StreamExecutor<B>* executor, std::string_view caller) {
  using State = typename Adapter<B>::VendorState;
  return executor->template GetOrCreateExtension<State>([&] { return State::Make(executor, caller); });
}

// Philox, or the backend's vendor generator (VendorAdapter).
enum class Engine : unsigned char { kPhilox, kVendor };

// The executor's RNG plugin, fixed from its first RNG call on.
template <Backend B>
StatusOr<Engine> ChooseEngine(StreamExecutor<B>* executor, std::string_view caller) {
  const RngPluginId plugin = executor->template UsePlugin<PluginKind::kRng>();
  if (plugin.is_default() || plugin.name == "philox") return Engine::kPhilox;
  if constexpr (VendorAdapter<Adapter<B>>) {
    if (plugin == Adapter<B>::kVendorPlugin) return Engine::kVendor;
  }
  return MakeError(ErrorCode::kUnimplemented, "{} on {}: no RNG plugin '{}' on the {} platform", caller,
                   executor->DeviceLabel(), plugin.name, plugin.backend);
}

// Reseeds the executor's engine; B has an adapter.
template <Backend B>
Status Reseed(StreamExecutor<B>* executor, std::string_view caller, const Seed& seed) {
  StatusOr<Engine> engine = ChooseEngine(executor, caller);
  if (!engine.ok()) return engine.status();
  if constexpr (VendorAdapter<Adapter<B>>) {
    if (engine.value() == Engine::kVendor) {
      StatusOr<typename Adapter<B>::VendorState*> state = GetVendorState(executor, caller);
      if (!state.ok()) return state.status();
      return state.value()->Reseed(seed, executor->DeviceLabel());
    }
  }
  StatusOr<PhiloxState<B>*> state = GetPhiloxState(executor);
  if (!state.ok()) return state.status();
  state.value()->generator().Reseed(seed);
  return Status();
}

template <Backend B>
Status SetSeed(StreamExecutor<B>* executor, const std::uint8_t* seed, std::uint64_t seed_bytes) {
  constexpr std::string_view caller = "ThenSetRngSeed";
  StatusOr<Seed> parsed = ParseSeed(caller, executor->DeviceLabel(), seed, seed_bytes);
  if (!parsed.ok()) return parsed.status();
  if constexpr (canned_detail::Adapted<Adapter<B>>) {
    return Reseed(executor, caller, parsed.value());
  } else {
    return Adapter<B>::Unavailable(caller, executor->DeviceLabel());
  }
}

template <Backend B, typename T>
Status EnqueuePhilox(Stream<B>& stream, std::string_view caller, Distribution distribution, T mean, T stddev,
                     DeviceMemory<T>* values, std::uint64_t count) {
  StreamExecutor<B>* executor = stream.parent();
  StatusOr<PhiloxState<B>*> state = GetPhiloxState(executor);
  if (!state.ok()) return state.status();
  const std::uint64_t blocks = (count + kValuesPerBlock<T> - 1) / kValuesPerBlock<T>;
  const ThreadDim threads(kThreadsPerBlock);
  const BlockDim grid((blocks + kThreadsPerBlock - 1) / kThreadsPerBlock);
  if (distribution == Distribution::kUniform) {
    StatusOr<const UniformKernel<T>*> kernel = state.value()->template Uniform<T>();
    if (!kernel.ok()) return kernel.status();
    StatusOr<Reservation> at = state.value()->generator().Reserve(caller, executor->DeviceLabel(), blocks);
    if (!at.ok()) return at.status();
    stream.ThenLaunch(threads, grid, *kernel.value(), at.value().seed.key, at.value().seed.stream,
                      at.value().first_block, count, values);
  } else {
    StatusOr<const GaussianKernel<T>*> kernel = state.value()->template Gaussian<T>();
    if (!kernel.ok()) return kernel.status();
    StatusOr<Reservation> at = state.value()->generator().Reserve(caller, executor->DeviceLabel(), blocks);
    if (!at.ok()) return at.status();
    stream.ThenLaunch(threads, grid, *kernel.value(), at.value().seed.key, at.value().seed.stream,
                      at.value().first_block, count, mean, stddev, values);
  }
  return Status();  // a failed launch has already failed the stream
}

// Fills `values` (checked) from the executor's engine; B has an adapter.
template <Backend B, typename T>
Status Generate(Stream<B>& stream, std::string_view caller, Distribution distribution, T mean, T stddev,
                DeviceMemory<T>* values) {
  StreamExecutor<B>* executor = stream.parent();
  StatusOr<Engine> engine = ChooseEngine(executor, caller);
  if (!engine.ok()) return engine.status();
  const std::uint64_t count = values->ElementCount();
  if constexpr (VendorAdapter<Adapter<B>>) {
    if (engine.value() == Engine::kVendor) {
      StatusOr<typename Adapter<B>::VendorState*> state = GetVendorState(executor, caller);
      if (!state.ok()) return state.status();
      if (count == 0) return Status();
      return state.value()->template Generate<T>(stream, caller, *values, count, distribution, mean, stddev);
    }
  }
  if (count == 0) return Status();
  return EnqueuePhilox(stream, caller, distribution, mean, stddev, values, count);
}

template <Backend B, typename T>
Stream<B>& Populate(Stream<B>& stream, std::string_view caller, Distribution distribution, T mean, T stddev,
                    DeviceMemory<T>* values) {
  if (!stream.ReadyForCanned(caller)) return stream;
  StreamExecutor<B>* executor = stream.parent();
  const std::string& device = executor->DeviceLabel();
  if (values == nullptr) {
    return stream.CheckCanned(
        MakeError(ErrorCode::kInvalidArgument, "{} on {}: the output DeviceMemory pointer is null", caller, device));
  }
  if (distribution == Distribution::kGaussian && !(stddev >= T(0))) {
    return stream.CheckCanned(MakeError(ErrorCode::kInvalidArgument,
                                        "{} on {}: the standard deviation is {}; it must be zero or more", caller,
                                        device, stddev));
  }
  if (Status s = executor->CheckDeviceRange(caller, "output", *values, values->size()); !s.ok()) {
    return stream.CheckCanned(std::move(s));
  }
  if constexpr (canned_detail::Adapted<Adapter<B>>) {
    return stream.CheckCanned(Generate(stream, caller, distribution, mean, stddev, values));
  } else {
    return stream.CheckCanned(Adapter<B>::Unavailable(caller, device));
  }
}

}  // namespace rng_detail

// Seeds the executor's generator (all its streams) and restarts its counter.
// The seed is 8 to 16 bytes (canned/rng/state.hpp says what each byte does).
template <Backend B>
Stream<B>& CannedSetRngSeed(Stream<B>& stream, const std::uint8_t* seed, std::uint64_t seed_bytes) {
  if (!stream.ReadyForCanned("ThenSetRngSeed")) return stream;
  // The seed is the executor's, set now: a recording could not replay it.
  if (stream.capturing()) return stream.CheckCanned(stream.NotCapturable("ThenSetRngSeed"));
  return stream.CheckCanned(rng_detail::SetSeed(stream.parent(), seed, seed_bytes));
}

// Fills `values` with uniform numbers in (0, 1].
template <Backend B, rng_detail::RngValue T>
Stream<B>& CannedPopulateRandUniform(Stream<B>& stream, DeviceMemory<T>* values) {
  return rng_detail::Populate(stream, "ThenPopulateRandUniform", rng_detail::Distribution::kUniform, T(0), T(1),
                              values);
}

// Fills `values` with normal numbers of the given mean and standard deviation.
template <Backend B, rng_detail::RngValue T>
Stream<B>& CannedPopulateRandGaussian(Stream<B>& stream, std::type_identity_t<T> mean, std::type_identity_t<T> stddev,
                                      DeviceMemory<T>* values) {
  return rng_detail::Populate(stream, "ThenPopulateRandGaussian", rng_detail::Distribution::kGaussian, mean, stddev,
                              values);
}

}  // namespace streamexecutor
