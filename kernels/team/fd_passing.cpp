#include "kernels/team/fd_passing.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>

#include "kernels/kernel_types.h"

namespace arfit::kernels {

namespace {

using Clock = std::chrono::steady_clock;

// The datagram's payload: which team, who sent it, what it is.
struct FdMessage {
  std::uint64_t token;
  std::int32_t sender;
  std::uint32_t tag;
};
static_assert(sizeof(FdMessage) == 16);

[[noreturn]] void fail(const std::string& what) {
  throw KernelError("fd passing: " + what, KernelParam::Device);
}

std::string errno_text(int error) { return std::strerror(error); }

// The abstract address of a name: sun_path starts with NUL, the length covers exactly the name (no terminator).
socklen_t abstract_address(const std::string& name, sockaddr_un* address) {
  *address = sockaddr_un{};
  address->sun_family = AF_UNIX;
  if (name.size() + 1 > sizeof(address->sun_path)) fail("socket name '" + name + "' is too long");
  std::memcpy(address->sun_path + 1, name.data(), name.size());
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
}

// Time left until `deadline`, at least zero, in whole milliseconds for poll().
int millis_until(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left > 0 ? static_cast<int>(left) : 0;
}

}  // namespace

OwnedFd::~OwnedFd() {
  if (fd_ >= 0) ::close(fd_);
}

OwnedFd& OwnedFd::operator=(OwnedFd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.release();
  }
  return *this;
}

std::uint64_t draw_fd_passing_token() {
  std::random_device device;
  const std::uint64_t high = device(), low = device();
  // The pid and the clock as well: a random_device that is a fixed-seed generator still gives distinct tokens.
  return ((high << 32) | low) ^ (static_cast<std::uint64_t>(::getpid()) << 17) ^
         static_cast<std::uint64_t>(Clock::now().time_since_epoch().count());
}

std::string fd_socket_name(std::uint64_t token, int rank) {
  char name[64];
  std::snprintf(name, sizeof(name), "arfit-fd-%016llx-%d", static_cast<unsigned long long>(token), rank);
  return name;
}

FdPasser::FdPasser(std::uint64_t token, int rank) : token_(token), rank_(rank) {
  socket_ = OwnedFd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (socket_.get() < 0) fail("socket(AF_UNIX, SOCK_DGRAM): " + errno_text(errno));
  sockaddr_un address;
  const std::string name = fd_socket_name(token, rank);
  const socklen_t length = abstract_address(name, &address);
  if (::bind(socket_.get(), reinterpret_cast<const sockaddr*>(&address), length) != 0) {
    fail("rank " + std::to_string(rank) + " cannot bind its socket '@" + name + "': " + errno_text(errno));
  }
}

FdPasser::~FdPasser() = default;  // the socket closes; queued descriptors close with their OwnedFd

void FdPasser::send(int peer, int fd, std::uint32_t tag, std::chrono::milliseconds timeout) {
  sockaddr_un address;
  const std::string name = fd_socket_name(token_, peer);
  const socklen_t length = abstract_address(name, &address);
  FdMessage payload{token_, rank_, tag};
  iovec data{&payload, sizeof(payload)};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr message{};
  message.msg_name = &address;
  message.msg_namelen = length;
  message.msg_iov = &data;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof(control);
  cmsghdr* header = CMSG_FIRSTHDR(&message);
  header->cmsg_level = SOL_SOCKET;
  header->cmsg_type = SCM_RIGHTS;
  header->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(header), &fd, sizeof(int));

  const Clock::time_point deadline = Clock::now() + timeout;
  for (;;) {
    if (::sendmsg(socket_.get(), &message, MSG_DONTWAIT | MSG_NOSIGNAL) == static_cast<ssize_t>(sizeof(payload))) return;
    const int error = errno;
    // ECONNREFUSED/ENOENT: nobody has bound the name yet; EAGAIN: the peer's queue is full. Both may clear.
    if (error != ECONNREFUSED && error != ENOENT && error != EAGAIN && error != EWOULDBLOCK && error != EINTR) {
      fail("rank " + std::to_string(rank_) + " cannot send to rank " + std::to_string(peer) + ": " + errno_text(error));
    }
    if (Clock::now() >= deadline) {
      const bool full = error == EAGAIN || error == EWOULDBLOCK;
      fail("rank " + std::to_string(rank_) + " could not reach rank " + std::to_string(peer) + "'s socket '@" + name +
           "' within " + std::to_string(timeout.count()) + " ms (" + errno_text(error) + "): " +
           (full ? "its queue stayed full, the peer stopped receiving"
                 : "the peer failed before binding it, or was given another token"));
    }
    // A peer that is itself blocked sending to us must not wait for us: drain our queue while we retry.
    receive_one(std::chrono::milliseconds(1));
  }
}

bool FdPasser::receive_one(std::chrono::milliseconds wait) {
  pollfd ready{socket_.get(), POLLIN, 0};
  const int polled = ::poll(&ready, 1, static_cast<int>(wait.count()));
  if (polled < 0 && errno != EINTR) fail("poll on rank " + std::to_string(rank_) + "'s socket: " + errno_text(errno));
  if (polled <= 0) return false;
  FdMessage payload{};
  iovec data{&payload, sizeof(payload)};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr message{};
  message.msg_iov = &data;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof(control);
  // MSG_CMSG_CLOEXEC: a descriptor received here is not inherited by programs this process might exec.
  const ssize_t got = ::recvmsg(socket_.get(), &message, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  if (got < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return false;
    fail("recvmsg on rank " + std::to_string(rank_) + "'s socket: " + errno_text(errno));
  }
  OwnedFd fd;
  for (cmsghdr* h = CMSG_FIRSTHDR(&message); h; h = CMSG_NXTHDR(&message, h)) {
    if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS && h->cmsg_len == CMSG_LEN(sizeof(int))) {
      int received = -1;
      std::memcpy(&received, CMSG_DATA(h), sizeof(int));
      fd = OwnedFd(received);
    }
  }
  // Anything else on this name (a truncated or foreign datagram, a stale token) is dropped, its descriptor closed.
  if (got != static_cast<ssize_t>(sizeof(payload)) || (message.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0 ||
      payload.token != token_ || fd.get() < 0) {
    return true;
  }
  pending_.push_back(Received{payload.sender, payload.tag, std::move(fd)});
  return true;
}

OwnedFd FdPasser::receive(int sender, std::uint32_t tag, std::chrono::milliseconds timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  for (;;) {
    for (auto it = pending_.begin(); it != pending_.end(); ++it) {
      if (it->sender == sender && it->tag == tag) {
        OwnedFd fd = std::move(it->fd);
        pending_.erase(it);
        return fd;
      }
    }
    const int left = millis_until(deadline);
    if (left == 0) {
      fail("rank " + std::to_string(rank_) + " received no descriptor (tag " + std::to_string(tag) + ") from rank " +
           std::to_string(sender) + " within " + std::to_string(timeout.count()) +
           " ms: the peer failed, or was given another token");
    }
    receive_one(std::chrono::milliseconds(left));
  }
}

std::vector<OwnedFd> all_gather_fds(FdPasser& passer, int nranks, int mine, std::uint32_t tag,
                                    std::chrono::milliseconds timeout) {
  for (int k = 1; k < nranks; ++k) passer.send((passer.rank() + k) % nranks, mine, tag, timeout);
  std::vector<OwnedFd> all(static_cast<std::size_t>(nranks));
  for (int r = 0; r < nranks; ++r) {
    if (r != passer.rank()) all[static_cast<std::size_t>(r)] = passer.receive(r, tag, timeout);
  }
  return all;
}

}  // namespace arfit::kernels
