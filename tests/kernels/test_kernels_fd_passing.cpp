// The descriptor passer the GPU team uses to share its multicast object (kernels/team/fd_passing.h): plain POSIX,
// so it runs everywhere. A descriptor sent by one process is usable in another (fork), an all-gather among threads
// delivers every rank's descriptor to every other rank, and a wrong token or a silent peer ends in a clear
// KernelError within the timeout instead of a hang.
#include <gtest/gtest.h>

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "kernels/kernel_types.h"
#include "kernels/team/fd_passing.h"

namespace arfit::kernels {
namespace {

using std::chrono::milliseconds;

// An anonymous memory file holding `text`.
OwnedFd memfd_with(const std::string& text) {
  OwnedFd fd(::memfd_create("arfit-fd-test", MFD_CLOEXEC));
  EXPECT_GE(fd.get(), 0);
  EXPECT_EQ(::pwrite(fd.get(), text.data(), text.size(), 0), static_cast<ssize_t>(text.size()));
  return fd;
}

std::string read_all(int fd, std::size_t bytes) {
  std::string text(bytes, '\0');
  const ssize_t got = ::pread(fd, text.data(), bytes, 0);
  text.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
  return text;
}

// The message a thrown KernelError carries (empty when nothing was thrown).
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const KernelError& e) {
    EXPECT_EQ(e.parameter(), KernelParam::Device);
    return e.what();
  }
  return "";
}

TEST(FdPassing, AnotherProcessReadsWhatTheSenderWrote) {
  const std::uint64_t token = draw_fd_passing_token();
  const std::string text = "staging of rank 0, " + std::to_string(token);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // rank 1: receives rank 0's descriptor and checks its contents; the exit code says how it went
    int code = 3;
    try {
      FdPasser passer(token, 1);
      const OwnedFd fd = passer.receive(0, 7, milliseconds(10000));
      code = read_all(fd.get(), text.size()) == text ? 0 : 1;
    } catch (...) {
      code = 2;
    }
    ::_exit(code);
  }
  // The child may bind after this send starts: send retries until then.
  FdPasser passer(token, 0);
  const OwnedFd fd = memfd_with(text);
  EXPECT_EQ(error_of([&] { passer.send(1, fd.get(), 7, milliseconds(10000)); }), "");
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: the child read other bytes; 2: its receive threw";
}

TEST(FdPassing, AllGatherDeliversEveryRanksDescriptorToEveryRank) {
  // 8 ranks (kMaxRanks) x two descriptors each: 14 datagrams per receiver, more than a socket queues by default
  // (net.unix.max_dgram_qlen = 10), so senders must drain their own queue while they retry.
  constexpr int kRanks = 8;
  const std::uint64_t token = draw_fd_passing_token();
  std::vector<std::vector<std::string>> seen(kRanks, std::vector<std::string>(kRanks));
  std::vector<std::string> errors(kRanks);
  std::vector<std::thread> ranks;
  for (int r = 0; r < kRanks; ++r) {
    ranks.emplace_back([&, r] {
      errors[r] = error_of([&] {
        FdPasser passer(token, r);
        const OwnedFd mine = memfd_with("rank " + std::to_string(r));
        // A second exchange with another tag in flight at the same time: receive() keeps what it is not asked for.
        const OwnedFd other = memfd_with("tag 2 of rank " + std::to_string(r));
        for (int k = 1; k < kRanks; ++k) passer.send((r + k) % kRanks, other.get(), 2, milliseconds(10000));
        const std::vector<OwnedFd> all = all_gather_fds(passer, kRanks, mine.get(), 1, milliseconds(10000));
        for (int p = 0; p < kRanks; ++p) {
          if (p == r) {
            seen[r][p] = all[p].get() < 0 ? "empty" : "not empty";
          } else {
            seen[r][p] = read_all(all[p].get(), 16) + " | " + read_all(passer.receive(p, 2, milliseconds(10000)).get(), 32);
          }
        }
      });
    });
  }
  for (std::thread& t : ranks) t.join();
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(errors[r], "") << "rank " << r;
    for (int p = 0; p < kRanks; ++p) {
      const std::string expected =
          p == r ? "empty" : "rank " + std::to_string(p) + " | tag 2 of rank " + std::to_string(p);
      EXPECT_EQ(seen[r][p], expected) << "rank " << r << " from rank " << p;
    }
  }
}

TEST(FdPassing, APeerWithAnotherTokenIsAClearErrorNotAHang) {
  const std::uint64_t token = draw_fd_passing_token();
  FdPasser receiver(token, 1);
  FdPasser sender(token + 1, 0);  // its rank 1 is a socket nobody bound
  const OwnedFd fd = memfd_with("x");
  const auto start = std::chrono::steady_clock::now();
  const std::string sent = error_of([&] { sender.send(1, fd.get(), 1, milliseconds(200)); });
  EXPECT_NE(sent.find("fd passing: rank 0 could not reach rank 1's socket '@" + fd_socket_name(token + 1, 1) +
                      "' within 200 ms"),
            std::string::npos)
      << sent;
  EXPECT_NE(sent.find("another token"), std::string::npos) << sent;
  const std::string received = error_of([&] { receiver.receive(0, 1, milliseconds(200)); });
  EXPECT_NE(received.find("fd passing: rank 1 received no descriptor (tag 1) from rank 0 within 200 ms"),
            std::string::npos)
      << received;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(FdPassing, TwoPassersCannotShareARanksName) {
  const std::uint64_t token = draw_fd_passing_token();
  FdPasser first(token, 3);
  const std::string error = error_of([&] { FdPasser second(token, 3); });
  EXPECT_NE(error.find("rank 3 cannot bind its socket '@" + fd_socket_name(token, 3) + "'"), std::string::npos)
      << error;
}

TEST(FdPassing, TokensDiffer) {
  EXPECT_NE(draw_fd_passing_token(), draw_fd_passing_token());
  EXPECT_NE(fd_socket_name(1, 0), fd_socket_name(2, 0));
  EXPECT_NE(fd_socket_name(1, 0), fd_socket_name(1, 1));
}

}  // namespace
}  // namespace arfit::kernels
