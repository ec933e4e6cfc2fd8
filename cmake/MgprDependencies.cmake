# Finds every third-party dependency once, so the folders below only link targets.
#
# Header-only fallbacks: the GPU machine has no Debian packages, so the header-only
# libraries (TOML++, nlohmann-json, CLI11, fmt) can be carried there as plain header
# folders and named with MGPR_EXTRA_INCLUDE_DIR.
set(MGPR_EXTRA_INCLUDE_DIR "" CACHE PATH "Extra folder searched for header-only dependencies")

function(mgpr_header_only_target target header)
  find_path(_dir ${header} HINTS ${MGPR_EXTRA_INCLUDE_DIR})
  if(NOT _dir)
    message(FATAL_ERROR "mgpr: ${header} not found: install the Debian -dev package "
                        "(scripts/install-deps) or set MGPR_EXTRA_INCLUDE_DIR")
  endif()
  add_library(${target} INTERFACE IMPORTED GLOBAL)
  target_include_directories(${target} SYSTEM INTERFACE ${_dir})
  target_compile_definitions(${target} INTERFACE ${ARGN})
  unset(_dir CACHE)
endfunction()

find_package(tomlplusplus CONFIG QUIET)
if(NOT TARGET tomlplusplus::tomlplusplus)
  mgpr_header_only_target(tomlplusplus::tomlplusplus toml++/toml.h TOML_HEADER_ONLY=1)
endif()

find_package(nlohmann_json CONFIG QUIET)
if(NOT TARGET nlohmann_json::nlohmann_json)
  mgpr_header_only_target(nlohmann_json::nlohmann_json nlohmann/json.hpp)
endif()

find_package(CLI11 CONFIG QUIET)
if(NOT TARGET CLI11::CLI11)
  mgpr_header_only_target(CLI11::CLI11 CLI/CLI.hpp)
endif()

find_package(fmt CONFIG QUIET)
if(NOT TARGET fmt::fmt)
  mgpr_header_only_target(fmt::fmt fmt/format.h FMT_HEADER_ONLY=1)
endif()

find_package(Threads REQUIRED)

if(MGPR_WITH_SLURM)
  # The plugin resolves Slurm's symbols from the process that loads it (slurmstepd,
  # srun, sbatch), so only the headers are needed, as in NVIDIA/pyxis.
  find_path(SLURM_INCLUDE_DIR slurm/spank.h)
  if(NOT SLURM_INCLUDE_DIR)
    message(FATAL_ERROR "mgpr: slurm/spank.h not found: install libslurm-dev "
                        "(scripts/install-deps) or configure with -DMGPR_WITH_SLURM=OFF")
  endif()
endif()

# A PyTorch wheel's LibTorch used on the CPU only: its CMake files look for a CUDA
# toolkit (the wheel is a CUDA build), which a CPU machine lacks, so the CPU libraries
# are named directly (scripts/fetch-libtorch unpacks one and prints this folder).
set(MGPR_LIBTORCH_CPU_DIR "" CACHE PATH "A PyTorch wheel's torch/ folder, used for the CPU only without its CMake files")

if(MGPR_WITH_TORCH AND MGPR_LIBTORCH_CPU_DIR)
  set(_lib "${MGPR_LIBTORCH_CPU_DIR}/lib")
  foreach(_file libtorch_cpu.so libc10.so include/torch/script.h)
    if(NOT EXISTS "${MGPR_LIBTORCH_CPU_DIR}/${_file}" AND NOT EXISTS "${_lib}/${_file}")
      message(FATAL_ERROR "mgpr: MGPR_LIBTORCH_CPU_DIR=${MGPR_LIBTORCH_CPU_DIR} has no ${_file}: "
                          "give the torch/ folder of an unpacked PyTorch wheel (scripts/fetch-libtorch)")
    endif()
  endforeach()
  file(STRINGS "${MGPR_LIBTORCH_CPU_DIR}/include/torch/csrc/api/include/torch/version.h" _version
       REGEX "#define TORCH_VERSION_(MAJOR|MINOR|PATCH) ")
  string(REGEX REPLACE "[^;]*_MAJOR ([0-9]+);[^;]*_MINOR ([0-9]+);[^;]*_PATCH ([0-9]+)" "\\1.\\2.\\3"
         Torch_VERSION "${_version}")
  message(STATUS "mgpr: LibTorch ${Torch_VERSION} (CPU only, from ${MGPR_LIBTORCH_CPU_DIR})")
  add_library(mgpr_torch INTERFACE)
  target_include_directories(mgpr_torch SYSTEM INTERFACE "${MGPR_LIBTORCH_CPU_DIR}/include"
                                                         "${MGPR_LIBTORCH_CPU_DIR}/include/torch/csrc/api/include")
  # The wheels since 2.7 are built with the C++11 string ABI, as Debian's GCC is.
  target_compile_definitions(mgpr_torch INTERFACE _GLIBCXX_USE_CXX11_ABI=1)
  # libtorch_cpu.so needs CUDA's runtime and profiler libraries even when no GPU is
  # used; the wheels that carry them are unpacked beside it (MGPR_LIBTORCH_CPU_DIR/../nvidia).
  file(GLOB _cuda_dirs LIST_DIRECTORIES true "${MGPR_LIBTORCH_CPU_DIR}/../nvidia/*/lib")
  string(REPLACE ";" ":" _rpath_link "${_lib};${_cuda_dirs}")
  target_link_libraries(mgpr_torch INTERFACE "${_lib}/libtorch_cpu.so" "${_lib}/libc10.so"
                                             "-Wl,-rpath-link,${_rpath_link}" "-Wl,-rpath,${_rpath_link}")
  set(TORCH_INCLUDE_DIRS "${MGPR_LIBTORCH_CPU_DIR}/include")
  unset(_lib)
  unset(_cuda_dirs)
  unset(_rpath_link)
  unset(_version)
elseif(MGPR_WITH_TORCH)
  find_package(Torch REQUIRED)
  message(STATUS "mgpr: LibTorch ${Torch_VERSION}")
  # Everything that links LibTorch links this instead of ${TORCH_LIBRARIES}.
  add_library(mgpr_torch INTERFACE)
  target_link_libraries(mgpr_torch INTERFACE ${TORCH_LIBRARIES})
endif()

if(MGPR_WITH_TORCH)
  # The PyTorch wheel carries fmt headers of its own (a newer major version than
  # Debian's) in the include folder LibTorch puts before /usr/include, so code that
  # sees LibTorch would compile against them and then link Debian's libfmt. Such code
  # uses the wheel's fmt header-only; Debian's LibTorch ships no fmt.
  foreach(_dir IN LISTS TORCH_INCLUDE_DIRS)
    if(EXISTS "${_dir}/fmt/format-inl.h")
      target_compile_definitions(mgpr_torch INTERFACE FMT_HEADER_ONLY=1)
      message(STATUS "mgpr: using the fmt headers LibTorch ships (${_dir}), header-only")
      break()
    endif()
  endforeach()
endif()

if(MGPR_WITH_TORCH AND MGPR_WITH_GDAL)
  find_package(GDAL CONFIG REQUIRED)
elseif(MGPR_WITH_GDAL)
  # Without the runtime, the torch-free tile I/O library still reads rasters when GDAL
  # is there (and serves fake data only when it is not).
  find_package(GDAL CONFIG QUIET)
endif()
if(TARGET GDAL::GDAL)
  # GDAL's own SQLite: the GeoPackage writer writes the spatial index's tables itself
  # (runtime/writers/gpkg_rtree.hpp) through the connection GDAL opened.
  find_package(SQLite3 REQUIRED)
endif()

# Arrow C++ and Parquet for the GeoParquet writer (output_format=parquet), from the
# pyarrow wheel (scripts/fetch-arrow): optional, and only beside GDAL, which gives the
# CRS as PROJJSON. Without it, output_format=parquet is refused before any tile.
set(MGPR_ARROW_DIR "" CACHE PATH "A pyarrow wheel's pyarrow/ folder (scripts/fetch-arrow): Arrow C++ and Parquet")
set(MGPR_HAVE_ARROW OFF)
if(MGPR_ARROW_DIR AND TARGET GDAL::GDAL)
  file(GLOB _arrow_lib "${MGPR_ARROW_DIR}/libarrow.so.[0-9]*")
  file(GLOB _parquet_lib "${MGPR_ARROW_DIR}/libparquet.so.[0-9]*")
  list(FILTER _arrow_lib EXCLUDE REGEX "\\.so\\.[0-9]+\\.")
  list(FILTER _parquet_lib EXCLUDE REGEX "\\.so\\.[0-9]+\\.")
  if(NOT _arrow_lib OR NOT _parquet_lib OR NOT EXISTS "${MGPR_ARROW_DIR}/include/parquet/arrow/writer.h")
    message(FATAL_ERROR "mgpr: MGPR_ARROW_DIR=${MGPR_ARROW_DIR} has no libarrow.so.N, libparquet.so.N or "
                        "include/parquet/arrow/writer.h: give the pyarrow/ folder scripts/fetch-arrow prints")
  endif()
  add_library(mgpr_arrow INTERFACE)
  target_include_directories(mgpr_arrow SYSTEM INTERFACE "${MGPR_ARROW_DIR}/include")
  target_link_libraries(mgpr_arrow INTERFACE ${_parquet_lib} ${_arrow_lib})
  target_link_options(mgpr_arrow INTERFACE "LINKER:-rpath,${MGPR_ARROW_DIR}")
  set(MGPR_HAVE_ARROW ON)
  message(STATUS "mgpr: Arrow C++ and Parquet from ${MGPR_ARROW_DIR} (${_parquet_lib})")
endif()

set(MGPR_HAVE_NCCL OFF)
# A CPU-only LibTorch (MGPR_LIBTORCH_CPU_DIR) has no CUDA side for NCCL to work with.
if(MGPR_WITH_TORCH AND MGPR_WITH_NCCL AND NOT MGPR_LIBTORCH_CPU_DIR)
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND)
    find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
    find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
    if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
      # The backend keeps its deadlines with NCCL's non-blocking communicator
      # (ncclCommInitRankConfig with blocking = 0) and ncclCommFinalize, both from 2.14.
      # An older NCCL leaves the backend out rather than failing the configure: without it
      # GPU runs gather through Gloo on the CPU with the same results, and a cluster whose
      # CUDA ships an old NCCL still gets a working build.
      file(STRINGS "${NCCL_INCLUDE_DIR}/nccl.h" _nccl_version_lines REGEX "^#define NCCL_(MAJOR|MINOR)[ \t]+[0-9]+")
      set(_nccl_major "")
      set(_nccl_minor "")
      foreach(_line IN LISTS _nccl_version_lines)
        if(_line MATCHES "^#define NCCL_MAJOR[ \t]+([0-9]+)")
          set(_nccl_major "${CMAKE_MATCH_1}")
        elseif(_line MATCHES "^#define NCCL_MINOR[ \t]+([0-9]+)")
          set(_nccl_minor "${CMAKE_MATCH_1}")
        endif()
      endforeach()
      if(_nccl_major STREQUAL "" OR _nccl_minor STREQUAL "")
        message(STATUS "mgpr: no NCCL backend: ${NCCL_INCLUDE_DIR}/nccl.h has no NCCL_MAJOR/NCCL_MINOR to check "
                       "for 2.14 or newer; GPU runs gather through Gloo")
      elseif(_nccl_major LESS 2 OR (_nccl_major EQUAL 2 AND _nccl_minor LESS 14))
        message(STATUS "mgpr: no NCCL backend: NCCL ${_nccl_major}.${_nccl_minor} (${NCCL_INCLUDE_DIR}) is older "
                       "than 2.14, which its non-blocking communicator and ncclCommFinalize need; GPU runs gather "
                       "through Gloo. Point NCCL_INCLUDE_DIR and NCCL_LIBRARY at a newer NCCL to build it")
      else()
        set(MGPR_HAVE_NCCL ON)
      endif()
    endif()
  endif()
endif()

# GoogleTest from its sources where asked (scripts/build-for-gpu: the GPU machine's test
# programs must not need a libgtest.so it lacks); else Debian's.
set(MGPR_GTEST_SOURCE_DIR "" CACHE PATH "GoogleTest sources to build with the tests instead of an installed GoogleTest")
if(MGPR_BUILD_TESTS AND MGPR_GTEST_SOURCE_DIR)
  set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
  add_subdirectory(${MGPR_GTEST_SOURCE_DIR} ${CMAKE_BINARY_DIR}/googletest EXCLUDE_FROM_ALL)
  foreach(_target gtest gtest_main gmock)
    if(NOT TARGET GTest::${_target})
      add_library(GTest::${_target} ALIAS ${_target})
    endif()
  endforeach()
elseif(MGPR_BUILD_TESTS)
  find_package(GTest CONFIG REQUIRED)
endif()
