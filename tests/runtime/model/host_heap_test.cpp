// The heap keeps freed memory, so a batch's activations are not page-faulted in again
// on every forward pass (model/host_heap.hpp).
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "model/host_heap.hpp"

namespace mgpr::runtime {
namespace {

long minor_faults() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

// Faults taken to allocate, fill and free `bytes`, as a forward pass does its activations.
long faults_to_use(std::size_t bytes) {
  const long before = minor_faults();
  void* block = std::malloc(bytes);
  if (block == nullptr) return -1;
  std::memset(block, 1, bytes);
  asm volatile("" : : "r"(block) : "memory");  // the compiler may not drop the fill
  std::free(block);
  return minor_faults() - before;
}

// 64 MiB: past the largest block glibc ever serves from its heap by default (32 MiB).
constexpr std::size_t kActivations = std::size_t{64} << 20;

TEST(HostHeap, AFreedBlockIsReusedWithoutFaultingItInAgain) {
  ::unsetenv("GLIBC_TUNABLES");
  ASSERT_TRUE(keep_freed_memory_in_heap());
  const long pages = static_cast<long>(kActivations / static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)));
  const long first = faults_to_use(kActivations);
  const long again = faults_to_use(kActivations);
  EXPECT_GE(first, pages / 2) << "the first use must bring the pages in";
  EXPECT_LT(again, pages / 20) << "the second use faulted " << again << " of " << pages << " pages in again";
}

TEST(HostHeap, TheUsersOwnMallocTunablesAreLeftAlone) {
  ::setenv("GLIBC_TUNABLES", "glibc.malloc.arena_max=2", 1);
  EXPECT_FALSE(keep_freed_memory_in_heap());
  ::unsetenv("GLIBC_TUNABLES");
}

}  // namespace
}  // namespace mgpr::runtime
