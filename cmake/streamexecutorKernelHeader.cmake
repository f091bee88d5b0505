# streamexecutor_kernel_header(): typed kernel headers from OpenCL C and CUDA
# kernel files, over tools/se_kernel_header.py (see docs/generator.md).
#
#   streamexecutor_kernel_header(saxpy.gpu.h SOURCES saxpy.cl saxpy.cu [NAMESPACE ns] [OPTIONS ...])
#   target_sources(app PRIVATE ${CMAKE_CURRENT_BINARY_DIR}/saxpy.gpu.h)
#   target_include_directories(app PRIVATE ${CMAKE_CURRENT_BINARY_DIR})
#
# The header is written to the current binary directory (a relative OUTPUT)
# and regenerated when a kernel file or a header it includes changes. .cu
# files need nvcc (CUDAToolkit's, or the first on PATH); the script needs a
# Python with libclang's bindings (python3-clang), which
# STREAMEXECUTOR_KERNEL_HEADER_PYTHON can name.
include_guard(GLOBAL)

# Installed: share/cmake/streamexecutor/ beside share/streamexecutor/; in the
# source tree (add_subdirectory): cmake/ beside tools/.
find_file(STREAMEXECUTOR_KERNEL_HEADER_SCRIPT se_kernel_header.py
  PATHS "${CMAKE_CURRENT_LIST_DIR}/../../streamexecutor" "${CMAKE_CURRENT_LIST_DIR}/../tools" NO_DEFAULT_PATH)

function(_streamexecutor_kernel_header_python out)
  if(STREAMEXECUTOR_KERNEL_HEADER_PYTHON)
    set(${out} "${STREAMEXECUTOR_KERNEL_HEADER_PYTHON}" PARENT_SCOPE)
    return()
  endif()
  # The first python3 on PATH (a virtualenv, pyenv) may lack the distribution's bindings.
  find_program(_se_pythons NAMES python3)
  foreach(candidate IN ITEMS "${_se_pythons}" /usr/bin/python3)
    if(candidate AND EXISTS "${candidate}")
      execute_process(COMMAND "${candidate}" -c "import clang.cindex" RESULT_VARIABLE missing OUTPUT_QUIET ERROR_QUIET)
      if(missing EQUAL 0)
        set(STREAMEXECUTOR_KERNEL_HEADER_PYTHON "${candidate}" CACHE FILEPATH "Python with python3-clang" FORCE)
        set(${out} "${candidate}" PARENT_SCOPE)
        return()
      endif()
    endif()
  endforeach()
  message(FATAL_ERROR "streamexecutor_kernel_header: no Python with libclang's bindings "
    "(Debian: apt-get install python3-clang; or set STREAMEXECUTOR_KERNEL_HEADER_PYTHON)")
endfunction()

function(streamexecutor_kernel_header output)
  cmake_parse_arguments(PARSE_ARGV 1 SE "" "NAMESPACE" "SOURCES;OPTIONS")
  if(NOT SE_SOURCES)
    message(FATAL_ERROR "streamexecutor_kernel_header(${output}): SOURCES is empty")
  endif()
  if(NOT STREAMEXECUTOR_KERNEL_HEADER_SCRIPT)
    message(FATAL_ERROR "streamexecutor_kernel_header: se_kernel_header.py not found near ${CMAKE_CURRENT_FUNCTION_LIST_DIR}")
  endif()
  _streamexecutor_kernel_header_python(python)
  get_filename_component(output "${output}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")
  set(sources)
  set(command "${python}" "${STREAMEXECUTOR_KERNEL_HEADER_SCRIPT}")
  foreach(source IN LISTS SE_SOURCES)
    get_filename_component(source "${source}" ABSOLUTE)
    list(APPEND sources "${source}")
    if(source MATCHES "\\.cu$" AND NOT _se_nvcc)
      if(CUDAToolkit_NVCC_EXECUTABLE)
        set(_se_nvcc "${CUDAToolkit_NVCC_EXECUTABLE}")
      else()
        find_program(_se_nvcc_found nvcc HINTS /usr/local/cuda/bin REQUIRED)
        set(_se_nvcc "${_se_nvcc_found}")
      endif()
      list(APPEND command --nvcc "${_se_nvcc}")
    endif()
  endforeach()
  list(APPEND command ${sources} -o "${output}")
  if(SE_NAMESPACE)
    list(APPEND command --namespace "${SE_NAMESPACE}")
  endif()
  list(APPEND command ${SE_OPTIONS})
  set(depfile_args)
  if(CMAKE_GENERATOR MATCHES "Ninja" OR CMAKE_VERSION VERSION_GREATER_EQUAL 3.20)
    list(APPEND command --depfile "${output}.d")
    set(depfile_args DEPFILE "${output}.d")
  endif()
  add_custom_command(OUTPUT "${output}" COMMAND ${command}
    DEPENDS ${sources} "${STREAMEXECUTOR_KERNEL_HEADER_SCRIPT}" ${depfile_args}
    COMMENT "Generating typed kernel header ${output}" VERBATIM)
endfunction()
