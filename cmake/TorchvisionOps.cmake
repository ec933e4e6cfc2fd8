# torchvision's CPU operators (nms, roi_align, ...) built against mgpr's own LibTorch, for
# detectors scripted with torchvision: a model names the library in model_libraries, and
# it must be built for the LibTorch that loads it. Debian's python3-torchvision ships one
# for Debian's LibTorch only; for PyTorch 2.x's (scripts/fetch-libtorch unpacks the sources
# beside it) runtime/model/torchvision_ops/ builds build/lib/libmgpr_torchvision_ops.so.
# This file only finds the sources and names the library: the tests use it whichever one
# mgpr is built with (MGPR_TORCHVISION_OPS, empty when there is none).
set(MGPR_TORCHVISION_SOURCE_DIR "" CACHE PATH "torchvision's sources (its torchvision/csrc/ops) to build its CPU operators from")
set(MGPR_TORCHVISION_OPS "")
if(MGPR_WITH_TORCH AND MGPR_TORCHVISION_SOURCE_DIR)
  set(MGPR_TORCHVISION_OPS_SOURCES "${MGPR_TORCHVISION_SOURCE_DIR}/torchvision/csrc/ops")
  file(GLOB MGPR_TORCHVISION_OPS_SOURCES "${MGPR_TORCHVISION_OPS_SOURCES}/*.cpp" "${MGPR_TORCHVISION_OPS_SOURCES}/cpu/*.cpp"
       "${MGPR_TORCHVISION_OPS_SOURCES}/autograd/*.cpp")
  if(NOT MGPR_TORCHVISION_OPS_SOURCES)
    message(FATAL_ERROR "mgpr: MGPR_TORCHVISION_SOURCE_DIR=${MGPR_TORCHVISION_SOURCE_DIR} has no "
                        "torchvision/csrc/ops/*.cpp: give the folder scripts/fetch-libtorch unpacks")
  endif()
  # The library itself is defined with the model stage (runtime/model/torchvision_ops/).
  set(MGPR_TORCHVISION_OPS "${PROJECT_BINARY_DIR}/lib/libmgpr_torchvision_ops.so")
  message(STATUS "mgpr: torchvision's CPU operators from ${MGPR_TORCHVISION_SOURCE_DIR}")
endif()
