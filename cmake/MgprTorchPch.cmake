# LibTorch's headers are most of what a runtime unit costs to compile: 24-28 CPU-seconds
# for a unit that includes <torch/script.h> at -O2 -g, 6-9 s when that header is
# precompiled, and the precompiled header 43 s once (GCC 12 on a 2-vCPU AMD EPYC Zen 4,
# 2026-11-29). So the header is precompiled once, and every target whose units include
# LibTorch reuses it. A unit whose flags do not fit a
# precompiled header (GCC checks) reads the headers as text: slower, never different.
option(MGPR_TORCH_PCH "Precompile LibTorch's headers once and reuse them in the targets that include them" ON)

if(MGPR_TORCH_PCH AND TARGET mgpr_torch AND NOT CMAKE_DISABLE_PRECOMPILE_HEADERS)
  # The flags every consumer has: LibTorch's (and its fmt choice), fmt's, the warnings.
  # One header for all: a library's units are compiled -fPIC, and so are an executable's
  # that reuse it (GCC refuses a header made -fPIC in a -fPIE unit; a -fPIC unit links
  # into a position-independent executable as well), which saves a second 35 s header.
  add_library(mgpr_torch_pch OBJECT ${CMAKE_CURRENT_LIST_DIR}/torch_pch.cpp)
  target_link_libraries(mgpr_torch_pch PRIVATE mgpr_torch fmt::fmt mgpr_warnings)
  target_precompile_headers(mgpr_torch_pch PRIVATE <torch/script.h>)
endif()

# Makes `target` reuse the precompiled LibTorch headers (a no-op when they are off).
function(mgpr_use_torch_pch target)
  if(NOT TARGET mgpr_torch_pch)
    return()
  endif()
  target_precompile_headers(${target} REUSE_FROM mgpr_torch_pch)
  get_target_property(_type ${target} TYPE)
  if(_type STREQUAL "EXECUTABLE")
    # After CMake's -fPIE, so it wins.
    target_compile_options(${target} PRIVATE -fPIC)
  endif()
endfunction()
