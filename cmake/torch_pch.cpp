// The unit that builds the precompiled LibTorch headers (cmake/MgprTorchPch.cmake); it
// holds nothing of its own.
