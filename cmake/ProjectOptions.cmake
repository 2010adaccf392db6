# Compiler settings shared by every project target: warnings, sanitizers, ccache.

find_program(GPURENT_CCACHE ccache)
if(GPURENT_CCACHE)
  # Precompiled headers change mtimes and defines between runs; ccache must be told
  # that is fine, or every PCH user misses the cache. BASEDIR turns the checkout's absolute
  # paths on command lines into relative ones and NOHASHDIR leaves the working folder out
  # of the key (debug paths are made relative below), so a clone at another path hits too.
  set(CMAKE_CXX_COMPILER_LAUNCHER
      ${CMAKE_COMMAND} -E env
      "CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime"
      "CCACHE_BASEDIR=${PROJECT_SOURCE_DIR}" CCACHE_NOHASHDIR=true
      ${GPURENT_CCACHE})
endif()

if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  set(CMAKE_BUILD_TYPE RelWithDebInfo CACHE STRING "Build type" FORCE)
endif()

add_library(gpurent_options INTERFACE)
target_compile_options(gpurent_options INTERFACE -Wall -Wextra -Werror -Wno-missing-field-initializers
  # Paths in debug info, assertions and sanitizer reports relative to the checkout, so an
  # object is the same whichever folder it was built in.
  "-ffile-prefix-map=${PROJECT_SOURCE_DIR}/=")
# GCC 12 at -O3 reports std::string copies of a concatenation as writing past the maximum
# object size, overlapping or out of bounds (-Wstringop-overflow, -Wrestrict, -Warray-bounds
# "pointer overflow between offset … and size [-…]"; GCC bugs 105329 and 105651):
# false positives inside libstdc++ that moved from file to file as the code changed and
# broke the Release build (`make run`) each time. Off for GCC before 13, where they are fixed.
# GCC's garbage collector runs from a heap of ~128 MiB on, again and again in a large file
# of templates; from 1 GiB on it rarely runs at all. The objects are the same, the CPU less
# (two runs each: an API batch 18.8 s → 16.5 s, an end-to-end test batch 22.2 s → 16.6 s,
# agent/channel.cpp 24.4 s → 22.5 s) for a fifth more memory (agent_listener.cpp 2.3 → 2.8 GiB).
target_compile_options(gpurent_options INTERFACE
  "$<$<CXX_COMPILER_ID:GNU>:--param=ggc-min-expand=400;--param=ggc-min-heapsize=1048576>")
set(_gcc12 "$<AND:$<CXX_COMPILER_ID:GNU>,$<VERSION_LESS:$<CXX_COMPILER_VERSION>,13>>")
target_compile_options(gpurent_options INTERFACE
  "$<${_gcc12}:-Wno-stringop-overflow;-Wno-restrict>"
  # Only optimised builds see the -Warray-bounds one; the test build keeps the warning.
  "$<$<AND:${_gcc12},$<NOT:$<CONFIG:Debug>>>:-Wno-array-bounds>")
target_compile_definitions(gpurent_options INTERFACE
  BOOST_ASIO_NO_DEPRECATED
  GPURENT_VERSION="${PROJECT_VERSION}")
target_include_directories(gpurent_options INTERFACE ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}/generated)

# mold links the large debug binaries of the test build in a fraction of ld's time.
find_program(GPURENT_MOLD mold)
if(GPURENT_MOLD)
  target_link_options(gpurent_options INTERFACE -fuse-ld=mold)
endif()

# Test code (the harness and the test files, not the product code they link) is built with
# AddressSanitizer alone: UBSan's checks made a test file take 1.6x as long to compile
# (money_test 6.2 s → 4.0 s, inventory_e2etest 18.4 s → 11.5 s of CPU), while the product's
# libraries and binaries, which the tests run, keep both. A target says it is test code
# with the GPURENT_TEST_CODE property (cmake/Testing.cmake); the expression is evaluated
# for each target that uses gpurent_options.
if(GPURENT_SANITIZE)
  set(_product "$<NOT:$<BOOL:$<TARGET_PROPERTY:GPURENT_TEST_CODE>>>")
  target_compile_options(gpurent_options INTERFACE
    -fsanitize=address -fno-omit-frame-pointer
    "$<${_product}:-fsanitize=undefined;-fno-sanitize-recover=undefined>")
  # -no-pie: a position-independent sanitizer build spent ~150 ms of every process start
  # applying 37,000 relocations (page faults on a 190 MB binary); the suite starts servers,
  # agents and CLIs by the hundred.
  target_link_options(gpurent_options INTERFACE -fsanitize=address,undefined -no-pie)
  # -O1: the suite is bound by the CPU its servers and clients burn, and sanitized code at
  # -O0 burns twice as much: OutsideInE2E's 10,125 requests took 32.8 s of CPU (test and
  # server) at -O0 and 14.8 s at -O1 (docs/TESTING.md, "What makes it fast"). Stack traces
  # stay usable at -O1 with frame pointers kept. GCC 12 at -O1 with AddressSanitizer warns
  # maybe-uninitialized inside std::regex and std::function, wrongly; the Release build, which
  # warns at -O3 without sanitizers, keeps that warning.
  target_compile_options(gpurent_options INTERFACE
    "$<$<CONFIG:Debug>:-O1;-Wno-maybe-uninitialized>")
  # LeakSanitizer's suppressions, compiled once and the object linked into every target: as
  # an interface source it was compiled 27 times, ~0.9 s each with the precompiled header.
  # Not linked to gpurent_options, whose sources it is.
  add_library(gpurent_lsan_suppressions OBJECT ${PROJECT_SOURCE_DIR}/cmake/lsan_suppressions.cpp)
  target_compile_options(gpurent_lsan_suppressions PRIVATE "-ffile-prefix-map=${PROJECT_SOURCE_DIR}/=")
  target_sources(gpurent_options INTERFACE $<TARGET_OBJECTS:gpurent_lsan_suppressions>)
endif()

# The few translation units that hold Boost.Beast and Asio (the HTTP server, the agent
# listener, the agent's channel, the fleet simulator's) are built with AddressSanitizer alone
# as well: UBSan's checks over Beast's templates doubled their compile time
# (agent_listener.cpp 103 s → 50 s of CPU), and what they add is I/O glue around the
# library, while the parsing and rules behind them (agent_proto, the handlers) keep both.
# The top-level CMakeLists.txt names them once every directory is known: a source's
# properties belong to the directory whose target compiles it.
# They stay out of the modules' batches (gpurent_batch_sources below): each is one of the
# longest compilations on its own, and their compile options differ from the batch's.
function(gpurent_io_sources)
  foreach(_source IN LISTS ARGN)
    get_filename_component(_dir ${PROJECT_SOURCE_DIR}/${_source} DIRECTORY)
    set_source_files_properties(${PROJECT_SOURCE_DIR}/${_source} DIRECTORY ${_dir}
      PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
    if(GPURENT_SANITIZE)
      set_source_files_properties(${PROJECT_SOURCE_DIR}/${_source} DIRECTORY ${_dir}
        PROPERTIES COMPILE_OPTIONS "-fno-sanitize=undefined")
    endif()
  endforeach()
endfunction()

# gpurent_batch_sources(<target> <files per batch>)
#
# Compiles a module library's sources in batches of that many files, each batch one
# translation unit, as the test files are (cmake/Testing.cmake): the stores and handlers
# repeat the same pqxx and nlohmann::json instantiations, and each file loads
# the precompiled header (~1 s of CPU) before it compiles a line of its own. Names a source
# keeps to itself (an anonymous namespace, a static function) must therefore be unique in its
# library: `kInsertSite`, not `kInsert` in two files.
function(gpurent_batch_sources target size)
  set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE ${size})
endfunction()

# Build identity for /metrics' build_info: the commit when built from a checkout.
execute_process(COMMAND git rev-parse --short=12 HEAD
  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
  OUTPUT_VARIABLE GPURENT_GIT_COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE
  ERROR_QUIET RESULT_VARIABLE _git_rc)
if(NOT _git_rc EQUAL 0 OR GPURENT_GIT_COMMIT STREQUAL "")
  set(GPURENT_GIT_COMMIT "unknown")
endif()
# One small generated file holds it, so a new commit recompiles that file alone (a define
# would change the command line, and miss ccache, for every file that sees it).
file(CONFIGURE OUTPUT ${PROJECT_BINARY_DIR}/generated/build_info.cpp CONTENT
"// Generated by cmake/ProjectOptions.cmake; do not edit.
#include \"core/build_info.h\"

namespace gpurent {

const char* build_commit() { return \"@GPURENT_GIT_COMMIT@\"; }

}  // namespace gpurent
" @ONLY)
