// The compiled part of separate compilation, as the Meson dependency
// streamexecutor_separate_dep and the CMake target streamexecutor::separate
// build it (docs/separate_compilation.md). A project on another build
// system compiles this one line in a unit of its own.
#include <streamexecutor/src.hpp>
