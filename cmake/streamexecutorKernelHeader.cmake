# streamexecutor_kernel_header(): typed kernel headers from OpenCL C, CUDA and
# GLSL compute shader kernel files, over tools/se_kernel_header.py (see
# docs/generator.md).
#
#   streamexecutor_kernel_header(saxpy.gpu.h SOURCES saxpy.cl saxpy.cu saxpy.comp [NAMESPACE ns] [OPTIONS ...])
#   target_sources(app PRIVATE ${CMAKE_CURRENT_BINARY_DIR}/saxpy.gpu.h)
#   target_include_directories(app PRIVATE ${CMAKE_CURRENT_BINARY_DIR})
#
# The header is written to the current binary directory (a relative OUTPUT)
# and regenerated when a kernel file or a header it includes changes. .cu
# files need nvcc (CUDAToolkit's, or the first on PATH); .comp files need
# glslangValidator (FindVulkan's, or the first on PATH); .cl and .cu files
# need a Python with libclang's bindings (python3-clang), which
# STREAMEXECUTOR_KERNEL_HEADER_PYTHON can name.
#
# streamexecutor_add_spirv(): GLSL compute shaders to SPIR-V files for
# AddSpirvOnDisk, each entry point named as in a header (the file's name, or
# its `// se:kernel NAME` line):
#
#   streamexecutor_add_spirv(app_shaders SOURCES saxpy.comp [OUTPUT_DIRECTORY dir] [OPTIONS ...])
#   add_dependencies(app app_shaders)   # builds ${CMAKE_CURRENT_BINARY_DIR}/saxpy.spv
#
# The custom target's STREAMEXECUTOR_SPIRV_FILES property lists the files.
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
  # GLSL alone needs no libclang: any Python 3 runs the script.
  if(ARGN STREQUAL "glsl")
    find_program(_se_plain_python NAMES python3 REQUIRED)
    set(${out} "${_se_plain_python}" PARENT_SCOPE)
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

function(_streamexecutor_glslang out)
  if(Vulkan_GLSLANG_VALIDATOR_EXECUTABLE)
    set(${out} "${Vulkan_GLSLANG_VALIDATOR_EXECUTABLE}" PARENT_SCOPE)
  else()
    find_program(_se_glslang glslangValidator REQUIRED)
    set(${out} "${_se_glslang}" PARENT_SCOPE)
  endif()
endfunction()

function(streamexecutor_kernel_header output)
  cmake_parse_arguments(PARSE_ARGV 1 SE "" "NAMESPACE" "SOURCES;OPTIONS")
  if(NOT SE_SOURCES)
    message(FATAL_ERROR "streamexecutor_kernel_header(${output}): SOURCES is empty")
  endif()
  if(NOT STREAMEXECUTOR_KERNEL_HEADER_SCRIPT)
    message(FATAL_ERROR "streamexecutor_kernel_header: se_kernel_header.py not found near ${CMAKE_CURRENT_FUNCTION_LIST_DIR}")
  endif()
  set(needs_clang FALSE)
  foreach(source IN LISTS SE_SOURCES)
    if(NOT source MATCHES "\\.comp$")
      set(needs_clang TRUE)
    endif()
  endforeach()
  if(needs_clang)
    _streamexecutor_kernel_header_python(python)
  else()
    _streamexecutor_kernel_header_python(python glsl)
  endif()
  get_filename_component(output "${output}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")
  set(sources)
  set(command "${python}" "${STREAMEXECUTOR_KERNEL_HEADER_SCRIPT}")
  set(glslang)
  foreach(source IN LISTS SE_SOURCES)
    get_filename_component(source "${source}" ABSOLUTE)
    list(APPEND sources "${source}")
    if(source MATCHES "\\.comp$" AND NOT glslang)
      _streamexecutor_glslang(glslang)
      list(APPEND command --glslang "${glslang}")
    endif()
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

function(streamexecutor_add_spirv target)
  cmake_parse_arguments(PARSE_ARGV 1 SE "" "OUTPUT_DIRECTORY" "SOURCES;OPTIONS")
  if(NOT SE_SOURCES)
    message(FATAL_ERROR "streamexecutor_add_spirv(${target}): SOURCES is empty")
  endif()
  if(NOT STREAMEXECUTOR_KERNEL_HEADER_SCRIPT)
    message(FATAL_ERROR "streamexecutor_add_spirv: se_kernel_header.py not found near ${CMAKE_CURRENT_FUNCTION_LIST_DIR}")
  endif()
  _streamexecutor_kernel_header_python(python glsl)
  _streamexecutor_glslang(glslang)
  if(NOT SE_OUTPUT_DIRECTORY)
    set(SE_OUTPUT_DIRECTORY "${CMAKE_CURRENT_BINARY_DIR}")
  endif()
  get_filename_component(directory "${SE_OUTPUT_DIRECTORY}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")
  set(outputs)
  foreach(source IN LISTS SE_SOURCES)
    get_filename_component(source "${source}" ABSOLUTE)
    if(NOT source MATCHES "\\.comp$")
      message(FATAL_ERROR "streamexecutor_add_spirv(${target}): ${source} is not a .comp file")
    endif()
    get_filename_component(stem "${source}" NAME_WE)
    set(output "${directory}/${stem}.spv")
    set(command "${python}" "${STREAMEXECUTOR_KERNEL_HEADER_SCRIPT}" --spirv "${source}" -o "${output}"
      --glslang "${glslang}" ${SE_OPTIONS})
    set(depfile_args)
    if(CMAKE_GENERATOR MATCHES "Ninja" OR CMAKE_VERSION VERSION_GREATER_EQUAL 3.20)
      list(APPEND command --depfile "${output}.d")
      set(depfile_args DEPFILE "${output}.d")
    endif()
    add_custom_command(OUTPUT "${output}" COMMAND ${command}
      DEPENDS "${source}" "${STREAMEXECUTOR_KERNEL_HEADER_SCRIPT}" ${depfile_args}
      COMMENT "Compiling ${source} to SPIR-V" VERBATIM)
    list(APPEND outputs "${output}")
  endforeach()
  add_custom_target(${target} ALL DEPENDS ${outputs})
  set_target_properties(${target} PROPERTIES STREAMEXECUTOR_SPIRV_FILES "${outputs}")
endfunction()
