// Two-process plumbing for the IPC programs of the corpus: a socket pair made
// before fork() (CUDA is initialised only after it, in each process), bytes
// and file descriptors (SCM_RIGHTS) sent over it, and the child's exit status
// collected. Both processes print to the same stdout; each flushes before it
// hands the turn to the other, so the lines come out in one order.
#ifndef GMT_TESTS_GPU_CORPUS_CORPUS_IPC_H_
#define GMT_TESTS_GPU_CORPUS_CORPUS_IPC_H_

#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace corpus {

struct Channel {
  int fd = -1;
};

// Forks; returns true in the child. `parent_end`/`child_end` get the socket.
inline bool ForkWithChannel(Channel* parent_end, Channel* child_end,
                            pid_t* child_pid) {
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) {
    std::perror("socketpair");
    std::exit(2);
  }
  std::fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) {
    std::perror("fork");
    std::exit(2);
  }
  if (pid == 0) {
    close(fds[0]);
    child_end->fd = fds[1];
    return true;
  }
  close(fds[1]);
  parent_end->fd = fds[0];
  *child_pid = pid;
  return false;
}

// Sends `len` bytes and, when `pass_fd` >= 0, that descriptor with them.
inline void Send(const Channel& ch, const void* data, size_t len,
                 int pass_fd = -1) {
  std::fflush(stdout);
  iovec iov{const_cast<void*>(data), len};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  if (pass_fd >= 0) {
    std::memset(control, 0, sizeof control);
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
  }
  if (sendmsg(ch.fd, &msg, 0) != static_cast<ssize_t>(len)) {
    std::perror("sendmsg");
    std::exit(2);
  }
}

// Receives exactly `len` bytes; returns the descriptor that came with them,
// or -1.
inline int Receive(const Channel& ch, void* data, size_t len) {
  iovec iov{data, len};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n = recvmsg(ch.fd, &msg, MSG_WAITALL);
  if (n != static_cast<ssize_t>(len)) {
    std::fprintf(stderr, "recvmsg: got %zd of %zu bytes\n", n, len);
    std::exit(2);
  }
  int fd = -1;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr;
       c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
      std::memcpy(&fd, CMSG_DATA(c), sizeof(int));
  }
  return fd;
}

// The child's exit code (128 + signal when it was killed).
inline int WaitChild(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return 255;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 255;
}

}  // namespace corpus

#endif  // GMT_TESTS_GPU_CORPUS_CORPUS_IPC_H_
