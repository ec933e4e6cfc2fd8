# LibTorch's headers are most of what a runtime unit costs to compile: 24-28 CPU-seconds
# for a unit that includes <torch/script.h> at -O2 -g, 6-9 s when that header is
# precompiled, and the precompiled header 43 s once (GCC 12 on a 2-vCPU AMD EPYC Zen 4,
# 2026-11-29). So the header is precompiled once for the
# static libraries (-fPIC) and once for the executables (-fPIE), and every target whose
# units include LibTorch reuses one of the two. A unit whose flags do not fit a
# precompiled header (GCC checks) reads the headers as text: slower, never different.
option(MGPR_TORCH_PCH "Precompile LibTorch's headers once and reuse them in the targets that include them" ON)

if(MGPR_TORCH_PCH AND TARGET mgpr_torch AND NOT CMAKE_DISABLE_PRECOMPILE_HEADERS)
  set(_pch_source ${CMAKE_CURRENT_LIST_DIR}/torch_pch.cpp)
  # The flags every consumer has: LibTorch's (and its fmt choice), fmt's, the warnings.
  add_library(mgpr_torch_pch_library OBJECT ${_pch_source})
  add_library(mgpr_torch_pch_program OBJECT ${_pch_source})
  # An executable's units are compiled as position-independent executables.
  set_target_properties(mgpr_torch_pch_program PROPERTIES POSITION_INDEPENDENT_CODE OFF)
  target_compile_options(mgpr_torch_pch_program PRIVATE -fPIE)
  foreach(_owner mgpr_torch_pch_library mgpr_torch_pch_program)
    target_link_libraries(${_owner} PRIVATE mgpr_torch fmt::fmt mgpr_warnings)
    target_precompile_headers(${_owner} PRIVATE <torch/script.h>)
  endforeach()
  unset(_pch_source)
endif()

# Makes `target` reuse the precompiled LibTorch headers (a no-op when they are off).
function(mgpr_use_torch_pch target)
  if(NOT TARGET mgpr_torch_pch_library)
    return()
  endif()
  get_target_property(_type ${target} TYPE)
  if(_type STREQUAL "EXECUTABLE")
    target_precompile_headers(${target} REUSE_FROM mgpr_torch_pch_program)
  else()
    target_precompile_headers(${target} REUSE_FROM mgpr_torch_pch_library)
  endif()
endfunction()
