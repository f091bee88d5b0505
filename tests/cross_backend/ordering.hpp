// Shared by the tests of waits across backends (tests/cross_backend/,
// tests/cuda/gpu_test.cpp, tests/cuda/cross_backend_double_test.cpp): a gate
// that holds a producer stream inside a host callback, and the ordering check
// built on it.
#pragma once

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>

#include <streamexecutor/streamexecutor.hpp>

namespace se_test {

namespace se = streamexecutor;

// A host callback that blocks its stream until the test opens it.
struct Gate {
  std::atomic<bool> open{false};
  void Wait() const {
    while (!open.load(std::memory_order_acquire)) open.wait(false, std::memory_order_acquire);
  }
  void Open() {
    open.store(true, std::memory_order_release);
    open.notify_all();
  }
};

// Long enough for a wrongly unordered consumer to have run.
inline void GiveTheConsumerTime() { std::this_thread::sleep_for(std::chrono::milliseconds(30)); }

// The consumer stream waits on the producer's event; the producer's gated
// callback writes the round into `shared`, and the consumer reads it after
// the wait. Before the gate opens, the consumer must not have run.
template <typename Producer, typename Consumer>
void CheckEventOrdering(se::StreamExecutor<Producer>* producer_executor,
                        se::StreamExecutor<Consumer>* consumer_executor, int rounds) {
  se::Stream producer(producer_executor);
  se::Stream consumer(consumer_executor);
  se::Event<Producer> event(producer_executor);
  REQUIRE(producer.Init().ok());
  REQUIRE(consumer.Init().ok());
  REQUIRE(event.Init());
  for (int round = 0; round < rounds; ++round) {
    Gate gate;
    int shared = -1;
    std::atomic<int> seen{-2};
    producer
        .ThenDoHostCallback([&] {
          gate.Wait();
          shared = round;
        })
        .ThenRecordEvent(&event);
    consumer.ThenWaitFor(&event).ThenDoHostCallback([&] { seen.store(shared, std::memory_order_release); });
    REQUIRE(consumer.ok());
    GiveTheConsumerTime();
    CHECK(seen.load(std::memory_order_acquire) == -2);  // still waiting
    gate.Open();
    REQUIRE(consumer.BlockHostUntilDone().ok());
    REQUIRE(producer.BlockHostUntilDone().ok());
    CHECK(seen.load() == round);
  }
}

}  // namespace se_test
