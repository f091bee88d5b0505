// Preprocessor helpers for the backend registry (<streamexecutor/streamexecutor.hpp>).
//
// STREAMEXECUTOR_DETAIL_IS_ON(flag) is 1 when `flag` is a macro defined as 1
// or as nothing (how -D and #define enable a backend) and 0 when it is not a
// macro at all, so that a list of backends can be filtered in one macro
// expansion instead of one #if block per use.
#pragma once

#define STREAMEXECUTOR_DETAIL_CAT(a, b) STREAMEXECUTOR_DETAIL_CAT_(a, b)
#define STREAMEXECUTOR_DETAIL_CAT_(a, b) a##b
#define STREAMEXECUTOR_DETAIL_CAT3(a, b, c) STREAMEXECUTOR_DETAIL_CAT3_(a, b, c)
#define STREAMEXECUTOR_DETAIL_CAT3_(a, b, c) a##b##c
#define STREAMEXECUTOR_DETAIL_SECOND(a, b, ...) b

// The probes end in '_' so that the empty flag's probe is not the prefix
// itself (a macro argument is expanded before it is pasted).
#define STREAMEXECUTOR_DETAIL_ON_1_ ~, 1
#define STREAMEXECUTOR_DETAIL_ON__ ~, 1
#define STREAMEXECUTOR_DETAIL_IS_ON_(probe) STREAMEXECUTOR_DETAIL_SECOND(probe, 0, ~)
#define STREAMEXECUTOR_DETAIL_IS_ON(flag) \
  STREAMEXECUTOR_DETAIL_IS_ON_(STREAMEXECUTOR_DETAIL_CAT3(STREAMEXECUTOR_DETAIL_ON_, flag, _))

// STREAMEXECUTOR_DETAIL_WHEN(flag)(tokens): the tokens when flag is on, nothing otherwise.
#define STREAMEXECUTOR_DETAIL_WHEN_0(...)
#define STREAMEXECUTOR_DETAIL_WHEN_1(...) __VA_ARGS__
#define STREAMEXECUTOR_DETAIL_WHEN(flag) \
  STREAMEXECUTOR_DETAIL_CAT(STREAMEXECUTOR_DETAIL_WHEN_, STREAMEXECUTOR_DETAIL_IS_ON(flag))
