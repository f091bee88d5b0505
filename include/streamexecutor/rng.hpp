// Canned random number generation (the seed's RNG operations):
//
//   se::PluginConfig plugin_config;
//   plugin_config.SetRng(se::opencl::kPhiloxPlugin);  // or host::, vulkan::, cuda::kPhiloxPlugin, cuda::kCuRandPlugin
//   auto* executor = platform->ExecutorForDeviceWithPluginConfig(0, plugin_config).ValueOrDie();
//   stream.Init().ThenSetRngSeed(seed, sizeof(seed)).ThenPopulateRandUniform(memory.ptr());
//
// The Philox plugins (the default on every backend) give the same numbers
// for the same seed on host, OpenCL, CUDA and Vulkan: Random123's Philox4x32-10, with
// the counter layout and conversions of canned/rng/philox.hpp. The seed and
// the counter belong to the executor (canned/rng/state.hpp). docs/rng.md has
// the rules, errors and numbers.
#pragma once

#if !__has_include(<Random123/philox.h>)
#error "<streamexecutor/rng.hpp> needs Random123's headers (Debian: apt-get install librandom123-dev)"
#endif

#include "streamexecutor/streamexecutor.hpp"

#include "streamexecutor/canned/rng/common.hpp"
#include "streamexecutor/canned/rng/operations.hpp"

#if defined(STREAMEXECUTOR_WITH_HOST)
#include "streamexecutor/canned/rng/host.hpp"
#endif
#if defined(STREAMEXECUTOR_WITH_OPENCL)
#include "streamexecutor/canned/rng/opencl.hpp"
#endif
#if defined(STREAMEXECUTOR_WITH_CUDA)
#include "streamexecutor/canned/rng/cuda.hpp"
#endif
#if defined(STREAMEXECUTOR_WITH_VULKAN)
#include "streamexecutor/canned/rng/vulkan.hpp"
#endif
