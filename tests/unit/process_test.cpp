// Starting programs without a shell: what the launcher, the local launcher and the
// tests all use.
#include "mgpr/process.hpp"

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <system_error>

#include "mgpr/exit_codes.hpp"
#include "support/temp_dir.hpp"

namespace {

std::string read_file(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(Process, RunCommandKeepsBothOutputsAndTheExitCode) {
  const auto result = mgpr::run_command({"sh", "-c", "echo out; echo err >&2; exit 3"});
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_EQ(result.out, "out\n");
  EXPECT_EQ(result.err, "err\n");
}

TEST(Process, AValueIsNeverReparsedByAShell) {
  const auto result = mgpr::run_command({"echo", "$HOME; touch pwned"});
  EXPECT_EQ(result.out, "$HOME; touch pwned\n");
}

TEST(Process, AMissingProgramIsNotFoundAndNamed) {
  const auto result = mgpr::run_command({"/nonexistent/mgpr-no-such-program"});
  EXPECT_EQ(result.exit_code, mgpr::kExitCommandNotFound);
  EXPECT_NE(result.err.find("/nonexistent/mgpr-no-such-program: command not found"), std::string::npos);
  mgpr::SpawnRequest request;
  request.argv = {"/nonexistent/mgpr-no-such-program"};
  try {
    mgpr::spawn_process(request);
    ADD_FAILURE() << "spawned a program that does not exist";
  } catch (const std::system_error& error) {
    EXPECT_NE(std::string(error.what()).find("cannot start /nonexistent/mgpr-no-such-program"), std::string::npos)
        << error.what();
  }
}

TEST(Process, AChildGetsExactlyTheEnvironmentAndFilesAsked) {
  const mgpr::test::TempDir dir("mgpr-process-");
  mgpr::SpawnRequest request;
  request.argv = {"/bin/sh", "-c", "echo \"$ONLY,$HOME\"; echo to-err >&2; exit 5"};
  request.environment = std::vector<std::string>{"ONLY=yes"};
  request.stdout_file = dir.path() / "out";
  request.stderr_file = dir.path() / "err";
  const pid_t pid = mgpr::spawn_process(request);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_EQ(mgpr::exit_status_code(status), 5);
  EXPECT_EQ(read_file(dir.path() / "out"), "yes,\n");
  EXPECT_EQ(read_file(dir.path() / "err"), "to-err\n");
}

TEST(Process, AFreePortIsOneNobodyHolds) {
  const int port = mgpr::free_tcp_port("a test");
  ASSERT_GT(port, 0);
  ASSERT_LT(port, 65536);
  // Nobody holds it: this process can listen on it right away.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0) << std::strerror(errno);
  ::close(fd);
}

}  // namespace
