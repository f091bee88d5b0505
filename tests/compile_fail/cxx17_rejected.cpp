// expect: streamexecutor needs C++20 or later
// Compiled with -std=c++17 (tests/meson.build): one clear line instead of
// pages of errors about concepts.
#include <streamexecutor/host.hpp>
