# Warnings on for our own targets only: third-party headers come in as SYSTEM.
add_library(mgpr_warnings INTERFACE)
target_compile_options(mgpr_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wconversion -Wno-sign-conversion>
  $<$<COMPILE_LANGUAGE:C>:-Wall -Wextra>)
