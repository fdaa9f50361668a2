// Passing POSIX file descriptors between the processes of a team (no CUDA here; tested on the CPU).
//
// A CUDA multicast object and the cuMemCreate allocations bound to it are exported as POSIX file descriptors
// (CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR). A descriptor is a per-process kernel object: its number means nothing
// in another process, so it cannot travel through MPI like a cudaIpcMemHandle_t. The kernel duplicates it into the
// receiver only when it is sent over a unix-domain socket as SCM_RIGHTS ancillary data. This is the same transport
// as NCCL's ncclIpcSocket (src/misc/ipcsocket.cc) and PyTorch's symmetric-memory IpcChannel: one datagram socket
// per rank, bound to a Linux abstract name (no file left behind) derived from a token the ranks agree first.
//
// Every message carries the token, the sender's rank and a tag, so a receiver can wait for one particular
// descriptor while others arrive in any order (they are kept until asked for). Every wait has a deadline: a peer
// that never binds (a wrong token) or never sends ends in a KernelError naming the ranks, never in a hang.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace arfit::kernels {

// A descriptor this process owns (closed on destruction); -1 when empty.
class OwnedFd {
 public:
  OwnedFd() = default;
  explicit OwnedFd(int fd) : fd_(fd) {}
  ~OwnedFd();
  OwnedFd(OwnedFd&& other) noexcept : fd_(other.release()) {}
  OwnedFd& operator=(OwnedFd&& other) noexcept;
  OwnedFd(const OwnedFd&) = delete;
  OwnedFd& operator=(const OwnedFd&) = delete;
  int get() const { return fd_; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_ = -1;
};

// A token for one team's sockets: random, so that two teams on one host (two jobs, or two teams of one job
// built one after the other) never reach each other's sockets. Rank 0 draws it and shares it (HandleExchange).
std::uint64_t draw_fd_passing_token();

// The abstract socket name of `rank` for `token` (without the leading NUL that makes it abstract).
std::string fd_socket_name(std::uint64_t token, int rank);

class FdPasser {
 public:
  // Binds this rank's socket. Throws KernelError (Device) when the name is taken or sockets are unavailable.
  FdPasser(std::uint64_t token, int rank);
  ~FdPasser();
  FdPasser(const FdPasser&) = delete;
  FdPasser& operator=(const FdPasser&) = delete;

  int rank() const { return rank_; }
  // Sends `fd` (the kernel duplicates it into the receiver; the caller keeps its own) with `tag` to the socket of
  // `peer` under the same token. The peer may bind later: retried until `timeout`, then KernelError naming both
  // ranks and the socket (a peer that never binds it: it failed, or it was given another token).
  void send(int peer, int fd, std::uint32_t tag, std::chrono::milliseconds timeout);
  // The descriptor `sender` sent with `tag` (messages for other senders or tags that arrive first are kept for a
  // later call). KernelError after `timeout` without it.
  OwnedFd receive(int sender, std::uint32_t tag, std::chrono::milliseconds timeout);

 private:
  struct Received {
    int sender;
    std::uint32_t tag;
    OwnedFd fd;
  };
  // Reads one message into pending_ if one arrives within `wait`; false otherwise.
  bool receive_one(std::chrono::milliseconds wait);

  std::uint64_t token_;
  int rank_;
  OwnedFd socket_;
  std::vector<Received> pending_;
};

// Every rank sends `mine` to every other rank (tag `tag`) and receives theirs: the result holds rank r's descriptor
// at index r, and an empty OwnedFd at this rank's index. All sends go first: a socket queues the datagrams until
// they are read (one per peer, within the kernel's queue length for the 8 ranks a team may have).
std::vector<OwnedFd> all_gather_fds(FdPasser& passer, int nranks, int mine, std::uint32_t tag,
                                    std::chrono::milliseconds timeout);

}  // namespace arfit::kernels
