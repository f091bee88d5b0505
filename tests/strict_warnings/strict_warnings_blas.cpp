// The canned BLAS headers under the consumers' strict flags (check.py):
// every operation instantiated in float and double on every enabled backend,
// so that the templates' bodies and each library's header are compiled.
#include <streamexecutor/blas.hpp>

#include <cstdint>
#include <vector>

#if defined(SE_CUBLAS_ENTRY_POINTS) || defined(SE_CUBLAS_DECLARE) || defined(SE_CUBLAS_RESOLVE)
#error "an internal X-macro of the BLAS headers is still defined"
#endif

namespace se = streamexecutor;

namespace {

template <typename B, typename T>
se::Status Exercise(se::StreamExecutor<B>* executor) {
  using se::blas::Transpose;
  se::ScopedDeviceMemory<T> a = executor->template AllocateOwnedArray<T>(64);
  se::ScopedDeviceMemory<T> b = executor->template AllocateOwnedArray<T>(64);
  se::ScopedDeviceMemory<T> c = executor->template AllocateOwnedArray<T>(64);
  std::vector<se::DeviceMemory<T>*> as{a.ptr()}, bs{b.ptr()}, cs{c.ptr()};
  se::Stream<B> stream(executor);
  return stream.Init()
      .ThenBlasAxpy(8, T(2), a.cref(), 1, b.ptr(), 1)
      .ThenBlasDot(8, a.cref(), 1, b.cref(), 1, c.ptr())
      .ThenBlasGemv(Transpose::kTranspose, 4, 4, T(1), a.cref(), 4, b.cref(), 1, T(0), c.ptr(), 1)
      .ThenBlasGemm(Transpose::kNoTranspose, Transpose::kTranspose, 4, 4, 4, T(1), a.cref(), 4, b.cref(), 4, T(0),
                    c.ptr(), 4)
      .ThenBlasGemmBatched(Transpose::kNoTranspose, Transpose::kNoTranspose, 4, 4, 4, T(1), as, 4, bs, 4, T(0), cs, 4,
                           1)
      .BlockHostUntilDone();
}

// Half: devices without fp16 (PoCL) answer UNIMPLEMENTED, which is fine here.
template <typename B>
se::Status ExerciseHalf(se::StreamExecutor<B>* executor) {
  using se::blas::Transpose;
  se::ScopedDeviceMemory<se::Half> a = executor->template AllocateOwnedArray<se::Half>(64);
  se::ScopedDeviceMemory<se::Half> b = executor->template AllocateOwnedArray<se::Half>(64);
  se::ScopedDeviceMemory<se::Half> c = executor->template AllocateOwnedArray<se::Half>(64);
  se::ScopedDeviceMemory<se::Half> d = executor->template AllocateOwnedArray<se::Half>(64);
  std::vector<se::DeviceMemory<se::Half>*> as{a.ptr(), b.ptr()}, bs{b.ptr(), a.ptr()}, cs{c.ptr(), d.ptr()};
  const se::Half h(0.5f);
  const float back = h;
  se::Stream<B> stream(executor);
  return stream.Init()
      .ThenBlasGemm(Transpose::kNoTranspose, Transpose::kTranspose, 4, 4, 4, back, a.cref(), 4, b.cref(), 4, 0.0f,
                    c.ptr(), 4)
      .ThenBlasGemmBatched(Transpose::kNoTranspose, Transpose::kNoTranspose, 4, 4, 4, 1.0f, as, 4, bs, 4, 0.0f, cs, 4,
                           2)
      .BlockHostUntilDone();
}

template <typename B>
int ExerciseBackend() {
  se::StatusOr<se::StreamExecutor<B>*> executor = se::Platform<B>::Get().ExecutorForDevice(0);
  if (!executor.ok()) return 1;
  const se::Status half = ExerciseHalf<B>(executor.value());
  const bool ok = Exercise<B, float>(executor.value()).ok() && Exercise<B, double>(executor.value()).ok() &&
                  (half.ok() || half.code() == se::ErrorCode::kUnimplemented);
  return ok ? 0 : 1;
}

}  // namespace

int StrictWarningsBlasEntry() {
  int result = 0;
  // Every enabled backend, se::host_serial (no adapter: UNAVAILABLE) included.
  se::EnabledBackends::ForEach([&result]<typename B>() { result += ExerciseBackend<B>(); });
  return result;
}
