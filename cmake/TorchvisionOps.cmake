# torchvision's operators (nms, roi_align, ...) built against mgpr's own LibTorch, for
# detectors scripted with torchvision: a model names the library in model_libraries, and
# it must be built for the LibTorch that loads it. Debian's python3-torchvision ships one
# for Debian's LibTorch only; for PyTorch 2.x's (scripts/fetch-libtorch unpacks the sources
# beside it) runtime/model/torchvision_ops/ builds build/lib/libmgpr_torchvision_ops.so:
# the CPU kernels always, and with a CUDA LibTorch (the wheel's, scripts/build-for-gpu)
# the CUDA kernels and their CUDA autocast rules too, so detectors run on a GPU.
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
  set(MGPR_TORCHVISION_CUDA OFF)
  if(TARGET c10_cuda)
    file(GLOB _cuda_sources "${MGPR_TORCHVISION_SOURCE_DIR}/torchvision/csrc/ops/cuda/*.cu"
         "${MGPR_TORCHVISION_SOURCE_DIR}/torchvision/csrc/ops/autocast/*.cpp")
    if(NOT _cuda_sources)
      message(FATAL_ERROR "mgpr: MGPR_TORCHVISION_SOURCE_DIR=${MGPR_TORCHVISION_SOURCE_DIR} has no CUDA kernels "
                          "(torchvision/csrc/ops/cuda/*.cu), which a CUDA LibTorch's detectors need: unpack it "
                          "again with scripts/fetch-libtorch (remove its torchvision-ops folder first)")
    endif()
    list(APPEND MGPR_TORCHVISION_OPS_SOURCES ${_cuda_sources})
    set(MGPR_TORCHVISION_CUDA ON)
    unset(_cuda_sources)
  endif()
  # The library itself is defined with the model stage (runtime/model/torchvision_ops/).
  set(MGPR_TORCHVISION_OPS "${PROJECT_BINARY_DIR}/lib/libmgpr_torchvision_ops.so")
  message(STATUS "mgpr: torchvision's operators from ${MGPR_TORCHVISION_SOURCE_DIR} (CUDA kernels: ${MGPR_TORCHVISION_CUDA})")
endif()
