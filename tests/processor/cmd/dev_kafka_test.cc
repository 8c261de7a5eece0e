// `oncecount dev-kafka` as a real process: bootstrap line, bootstrap file, a message
// through the cluster, and a clean exit on SIGTERM.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <vector>

#include "tests/processor/kafka/kafka_test_client.h"

extern char** environ;

namespace {

using namespace std::chrono_literals;

struct Child {
  pid_t pid = -1;
  int out = -1;
};

Child Spawn(const std::vector<std::string>& args) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return {};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  Child child;
  if (posix_spawn(&child.pid, argv[0], &actions, nullptr, argv.data(), environ) != 0)
    child.pid = -1;
  posix_spawn_file_actions_destroy(&actions);
  close(pipe_fds[1]);
  child.out = pipe_fds[0];
  return child;
}

// The first line of the child's stdout, or "" after `timeout`.
std::string FirstLine(int fd, std::chrono::milliseconds timeout) {
  std::string line;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    char c;
    if (read(fd, &c, 1) != 1) break;
    if (c == '\n') return line;
    line.push_back(c);
  }
  return "";
}

// The child's exit status, or -1 if it has not exited within `timeout`.
int WaitExit(pid_t pid, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : -2;
    usleep(20000);
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return -1;
}

TEST(DevKafka, PrintsItsBootstrapServersServesClientsAndStopsOnSigterm) {
  const std::string file =
      ::testing::TempDir() + "dev-kafka-bootstrap-" + std::to_string(getpid()) + ".txt";
  std::remove(file.c_str());
  Child child = Spawn({ONCECOUNT_BINARY, "dev-kafka", "--partitions", "2", "--topic", "clicks",
                       "--bootstrap-file", file});
  ASSERT_GT(child.pid, 0);
  const std::string bootstrap = FirstLine(child.out, 20s);
  ASSERT_EQ(bootstrap.rfind("127.0.0.1:", 0), 0u) << "first line: " << bootstrap;
  std::ifstream written(file);
  std::string from_file;
  std::getline(written, from_file);
  EXPECT_EQ(from_file, bootstrap);

  ASSERT_EQ(oncecount::kafka::testing::ProduceOne(bootstrap, "clicks", 1, "c/1", "v"), "");
  const auto message = oncecount::kafka::testing::ConsumeFirst(bootstrap, "clicks", 1, 15s);
  ASSERT_TRUE(message.has_value());
  EXPECT_EQ(message->value, "v");

  kill(child.pid, SIGTERM);
  EXPECT_EQ(WaitExit(child.pid, 20s), 0);
  close(child.out);
}

TEST(DevKafka, ExitsWithAUsageErrorOnBadOptions) {
  Child child = Spawn({ONCECOUNT_BINARY, "dev-kafka", "--brokers", "0"});
  ASSERT_GT(child.pid, 0);
  EXPECT_EQ(WaitExit(child.pid, 20s), 2);
  close(child.out);
}

}  // namespace
