// The canned operations as members of Stream<B>, so that the seed's fluent
// chains read as they do there (stream.ThenBlasGemm(...).ThenFft(...)). Each
// is defined by its library's header (<streamexecutor/blas.hpp>, fft.hpp,
// rng.hpp, dnn.hpp) as a function Canned<Name>(Stream&, ...) in namespace
// streamexecutor, found by argument-dependent lookup when the call is
// compiled; without that header the call does not compile. The core stays
// free of every numeric library. The collectives (<streamexecutor/collectives.hpp>)
// are Collective<Name> functions in the same way.
#pragma once

#include <utility>

namespace streamexecutor::detail {

// A base of Stream<B> (CRTP): `Stream` is the derived class.
template <typename Stream>
class CannedMembers {
 public:
  template <typename... Args>
  Stream& ThenBlasAxpy(Args&&... args) {
    return CannedBlasAxpy(Self(), std::forward<Args>(args)...);
  }
  template <typename... Args>
  Stream& ThenBlasDot(Args&&... args) {
    return CannedBlasDot(Self(), std::forward<Args>(args)...);
  }
  template <typename... Args>
  Stream& ThenBlasGemv(Args&&... args) {
    return CannedBlasGemv(Self(), std::forward<Args>(args)...);
  }
  template <typename... Args>
  Stream& ThenBlasGemm(Args&&... args) {
    return CannedBlasGemm(Self(), std::forward<Args>(args)...);
  }
  template <typename... Args>
  Stream& ThenBlasGemmBatched(Args&&... args) {
    return CannedBlasGemmBatched(Self(), std::forward<Args>(args)...);
  }
  template <typename... Args>
  Stream& ThenFft(Args&&... args) {
    return CannedFft(Self(), std::forward<Args>(args)...);
  }
  template <typename... Args>
  Stream& ThenSetRngSeed(Args&&... args) {
    return CannedSetRngSeed(Self(), std::forward<Args>(args)...);
  }
  template <typename... Args>
  Stream& ThenPopulateRandUniform(Args&&... args) {
    return CannedPopulateRandUniform(Self(), std::forward<Args>(args)...);
  }
  template <typename... Args>
  Stream& ThenPopulateRandGaussian(Args&&... args) {
    return CannedPopulateRandGaussian(Self(), std::forward<Args>(args)...);
  }
  template <typename... Args>
  Stream& ThenConvolve(Args&&... args) {
    return CannedConvolve(Self(), std::forward<Args>(args)...);
  }
  template <typename... Args>
  Stream& ThenPoolForward(Args&&... args) {
    return CannedPoolForward(Self(), std::forward<Args>(args)...);
  }
  template <typename... Args>
  Stream& ThenActivate(Args&&... args) {
    return CannedActivate(Self(), std::forward<Args>(args)...);
  }
  template <typename... Args>
  Stream& ThenSoftmax(Args&&... args) {
    return CannedSoftmax(Self(), std::forward<Args>(args)...);
  }
  template <typename... Args>
  Stream& ThenMatMul(Args&&... args) {
    return CannedMatMul(Self(), std::forward<Args>(args)...);
  }

  // <streamexecutor/collectives.hpp>: stream-ordered communication between
  // the ranks of a Communicator.
  template <typename... Args>
  Stream& ThenAllReduce(Args&&... args) {
    return CollectiveAllReduce(Self(), std::forward<Args>(args)...);
  }
  template <typename... Args>
  Stream& ThenBroadcast(Args&&... args) {
    return CollectiveBroadcast(Self(), std::forward<Args>(args)...);
  }
  template <typename... Args>
  Stream& ThenReduce(Args&&... args) {
    return CollectiveReduce(Self(), std::forward<Args>(args)...);
  }
  template <typename... Args>
  Stream& ThenAllGather(Args&&... args) {
    return CollectiveAllGather(Self(), std::forward<Args>(args)...);
  }
  template <typename... Args>
  Stream& ThenReduceScatter(Args&&... args) {
    return CollectiveReduceScatter(Self(), std::forward<Args>(args)...);
  }
  template <typename... Args>
  Stream& ThenSend(Args&&... args) {
    return CollectiveSend(Self(), std::forward<Args>(args)...);
  }
  template <typename... Args>
  Stream& ThenRecv(Args&&... args) {
    return CollectiveRecv(Self(), std::forward<Args>(args)...);
  }

 private:
  Stream& Self() { return static_cast<Stream&>(*this); }
};

}  // namespace streamexecutor::detail
