# Compiler settings shared by every project target: warnings, sanitizers, ccache.

find_program(GPURENT_CCACHE ccache)
if(GPURENT_CCACHE)
  # Precompiled headers change mtimes and defines between runs; ccache must be told
  # that is fine, or every PCH user misses the cache.
  set(CMAKE_CXX_COMPILER_LAUNCHER
      ${CMAKE_COMMAND} -E env
      "CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime"
      ${GPURENT_CCACHE})
endif()

if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  set(CMAKE_BUILD_TYPE RelWithDebInfo CACHE STRING "Build type" FORCE)
endif()

add_library(gpurent_options INTERFACE)
target_compile_options(gpurent_options INTERFACE -Wall -Wextra -Werror -Wno-missing-field-initializers)
target_compile_definitions(gpurent_options INTERFACE
  BOOST_ASIO_NO_DEPRECATED
  GPURENT_VERSION="${PROJECT_VERSION}")
target_include_directories(gpurent_options INTERFACE ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}/generated)

if(GPURENT_SANITIZE)
  target_compile_options(gpurent_options INTERFACE
    -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  target_link_options(gpurent_options INTERFACE -fsanitize=address,undefined)
  target_sources(gpurent_options INTERFACE ${PROJECT_SOURCE_DIR}/cmake/lsan_suppressions.cpp)
endif()

# Build identity for /metrics' build_info: the commit when built from a checkout.
execute_process(COMMAND git rev-parse --short=12 HEAD
  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
  OUTPUT_VARIABLE GPURENT_GIT_COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE
  ERROR_QUIET RESULT_VARIABLE _git_rc)
if(NOT _git_rc EQUAL 0 OR GPURENT_GIT_COMMIT STREQUAL "")
  set(GPURENT_GIT_COMMIT "unknown")
endif()
