# torchvision's CPU operators (nms, roi_align, ...) built against mgpr's own LibTorch, for
# detectors scripted with torchvision: a model names the library in model_libraries, and
# it must be built for the LibTorch that loads it. Debian's python3-torchvision ships one
# for Debian's LibTorch only; for PyTorch 2.x's (scripts/fetch-libtorch unpacks the sources
# beside it) this builds build/lib/libmgpr_torchvision_ops.so. The tests use it whichever
# one mgpr is built with (MGPR_TORCHVISION_OPS, empty when there is none).
set(MGPR_TORCHVISION_SOURCE_DIR "" CACHE PATH "torchvision's sources (its torchvision/csrc/ops) to build its CPU operators from")
set(MGPR_TORCHVISION_OPS "")
if(MGPR_WITH_TORCH AND MGPR_TORCHVISION_SOURCE_DIR)
  set(_ops "${MGPR_TORCHVISION_SOURCE_DIR}/torchvision/csrc/ops")
  file(GLOB _sources "${_ops}/*.cpp" "${_ops}/cpu/*.cpp" "${_ops}/autograd/*.cpp")
  if(NOT _sources)
    message(FATAL_ERROR "mgpr: MGPR_TORCHVISION_SOURCE_DIR=${MGPR_TORCHVISION_SOURCE_DIR} has no "
                        "torchvision/csrc/ops/*.cpp: give the folder scripts/fetch-libtorch unpacks")
  endif()
  # With mgpr's CPU autocast rules for nms and roi_align, which torchvision 0.14 lacks.
  add_library(mgpr_torchvision_ops SHARED ${_sources} "${PROJECT_SOURCE_DIR}/runtime/model/torchvision_ops/autocast_cpu.cpp")
  # Someone else's code: built as its authors build it, without mgpr's warnings.
  target_include_directories(mgpr_torchvision_ops PRIVATE "${MGPR_TORCHVISION_SOURCE_DIR}/torchvision/csrc")
  target_link_libraries(mgpr_torchvision_ops PRIVATE mgpr_torch)
  set_target_properties(mgpr_torchvision_ops PROPERTIES CXX_STANDARD 17
                                                        LIBRARY_OUTPUT_DIRECTORY "${PROJECT_BINARY_DIR}/lib")
  set(MGPR_TORCHVISION_OPS "${PROJECT_BINARY_DIR}/lib/libmgpr_torchvision_ops.so")
  message(STATUS "mgpr: torchvision's CPU operators from ${MGPR_TORCHVISION_SOURCE_DIR}")
  unset(_ops)
  unset(_sources)
endif()
