// Stream-ordered collectives between ranks (docs/collectives.md):
//
//   se::Communicator<se::host> comm = se::MpiCommunicator(executor, MPI_COMM_WORLD);  // or a LoopbackGroup's
//   stream.Init()
//       .ThenLaunch(threads, blocks, gradient_kernel, gradient.ptr())
//       .ThenAllReduce(comm, gradient.cref(), &sum, se::ReduceOp::kSum)
//       .ThenLaunch(threads, blocks, apply_kernel, sum.cref(), weights.ptr());
//
// All-reduce, broadcast, reduce, all-gather, reduce-scatter, send and
// receive of DeviceMemory<T> (the element types MPI and NCCL share), in the
// stream's order and with its sticky errors. Transports: a loopback group of
// N ranks in one process (loopback.hpp), MPI between processes and machines
// (mpi.hpp: included when <mpi.h> is on the include path, as the Meson and
// pkg-config dependency streamexecutor-collectives puts it), and NCCL on
// CUDA streams (cuda.hpp: included with the CUDA backend where <nccl.h> is,
// the library itself loaded at run time; nccl_mpi.hpp bootstraps it over
// MPI). se::MakeCommunicator(executor, MPI_COMM_WORLD) picks NCCL where every
// rank can use it, MPI otherwise.
#pragma once

#include "streamexecutor/streamexecutor.hpp"

#include "streamexecutor/collectives/common.hpp"
#include "streamexecutor/collectives/communicator.hpp"
#include "streamexecutor/collectives/loopback.hpp"
#include "streamexecutor/collectives/operations.hpp"

#if defined(STREAMEXECUTOR_COLLECTIVES_WITH_MPI) || __has_include(<mpi.h>)
#include "streamexecutor/collectives/mpi.hpp"
#endif

#if defined(STREAMEXECUTOR_WITH_CUDA) && __has_include(<nccl.h>)
#include "streamexecutor/collectives/cuda.hpp"
#if defined(STREAMEXECUTOR_COLLECTIVES_WITH_MPI) || __has_include(<mpi.h>)
#include "streamexecutor/collectives/nccl_mpi.hpp"
#endif
#endif
