#include "tools/hvdcrun/local_job.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tools/hvdcrun/job_env.h"
#include "tools/hvdcrun/tagged_output.h"

namespace hvdc::hvdcrun {

using common::make_error;
using common::strfmt;

namespace {

using Clock = std::chrono::steady_clock;

// Long enough for a rank to flush and exit after SIGTERM, short enough that every rank is gone
// within 5 s of a Ctrl-C.
constexpr std::chrono::milliseconds kGrace(3000);
// After the last rank exits, how long output may still arrive from processes it left behind
// holding its pipes open; they are not waited for beyond that.
constexpr std::chrono::milliseconds kDrain(1000);

// How often to look for processes left in the ranks' groups while stopping.
constexpr int kGroupPollMs = 50;

constexpr const char* kMasterAddr = "127.0.0.1";

// Signals reach the supervision loop through a self-pipe: the handler only writes the signal
// number, the loop does the work.
int g_signal_write_fd = -1;

void on_signal(int signo) {
  const int saved = errno;
  const unsigned char byte = static_cast<unsigned char>(signo);
  if (write(g_signal_write_fd, &byte, 1) < 0) {
    // The pipe is full of unread signals; this one adds nothing.
  }
  errno = saved;
}

const char* signal_name(int signo) {
  switch (signo) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
    default:
      return "a signal";
  }
}

std::string ranks_text(int n) {
  return strfmt("%d running rank%s", n, n == 1 ? "" : "s");
}

// In the forked child: its own process group (so hvdcrun decides who gets a terminal's Ctrl-C),
// the pipes as stdout and stderr, default signal handling, then the program.
[[noreturn]] void exec_rank(pid_t parent, int stdin_fd, int out_fd, int err_fd, char** argv,
                            char** envp) {
  setpgid(0, 0);
  // A SIGKILLed hvdcrun cannot stop its ranks, so the kernel does. If hvdcrun died before this
  // took effect the child has been reparented already: give up rather than run unsupervised.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(128 + SIGKILL);
  if (stdin_fd >= 0) dup2(stdin_fd, STDIN_FILENO);
  dup2(out_fd, STDOUT_FILENO);
  dup2(err_fd, STDERR_FILENO);
  // hvdcrun's handlers must not run here, and an ignored signal would stay ignored across exec
  // (hvdcrun ignores SIGPIPE). Signals are blocked until this is done.
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGPIPE}) signal(sig, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  execvpe(argv[0], argv, envp);
  const int err = errno;
  dprintf(STDERR_FILENO, "hvdcrun: cannot run '%s': %s\n", argv[0], std::strerror(err));
  _exit(err == ENOENT ? 127 : 126);
}

struct Rank {
  pid_t pid = -1;  // also the id of the rank's process group
  bool running = false;
  bool group_gone = false;  // no process is left in the rank's group
  int fds[2] = {-1, -1};    // read ends of stdout and stderr
  std::unique_ptr<TaggedStream> streams[2];
};

class LocalJob {
 public:
  explicit LocalJob(const Options& options) : options_(options), ranks_(options.np) {}
  ~LocalJob();
  int run();

 private:
  Status prepare();
  Status spawn(int rank);
  void supervise();
  bool finished(Clock::time_point now);
  int poll_timeout_ms(Clock::time_point now) const;
  void read_output(int rank, int which);
  void reap();
  void forget_empty_groups();
  bool wait_writable(int fd);
  void on_exit(int rank, int status);
  void handle_signals();
  void check_deadlines(Clock::time_point now);
  void stop_all(int signo, const std::string& why);
  void signal_groups(int signo);
  int live_groups();
  bool any_output_open() const;
  int exit_status() const;

  const Options& options_;
  std::vector<Rank> ranks_;
  EnvMap base_env_;
  int signal_pipe_[2] = {-1, -1};
  int null_fd_ = -1;
  int running_ = 0;
  int first_failure_ = 0;    // exit status of the first rank that failed
  int received_signal_ = 0;  // the first SIGINT / SIGTERM / SIGHUP sent to hvdcrun
  bool timed_out_ = false;
  bool stopping_ = false;
  bool internal_error_ = false;
  bool output_dropped_ = false;  // the job was stopped and its output is not being read
  std::optional<Clock::time_point> deadline_;     // --timeout
  std::optional<Clock::time_point> kill_at_;      // SIGKILL for ranks still running
  std::optional<Clock::time_point> drain_until_;  // set when the last rank has exited
};

LocalJob::~LocalJob() {
  for (Rank& r : ranks_) {
    for (int& fd : r.fds) {
      if (fd >= 0) close(fd);
    }
  }
  for (int fd : {signal_pipe_[0], signal_pipe_[1], null_fd_}) {
    if (fd >= 0) close(fd);
  }
}

Status LocalJob::prepare() {
  if (pipe2(signal_pipe_, O_CLOEXEC | O_NONBLOCK) != 0) {
    return make_error(HVD_ERR_SYSTEM, "pipe: %s", std::strerror(errno));
  }
  g_signal_write_fd = signal_pipe_[1];
  struct sigaction sa = {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  // Without SA_RESTART a stop signal interrupts a write() blocked on a full stdout, so that
  // it is acted on (see wait_writable) even when nobody reads hvdcrun's output.
  sa.sa_flags = 0;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
  sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  sigaction(SIGCHLD, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a closed stdout must not kill hvdcrun before it stops the ranks
  // Orphans of the ranks become hvdcrun's children: reaped here, so a stopped group empties
  // instead of keeping zombies where no init reaps them (containers).
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  null_fd_ = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd_ < 0) return make_error(HVD_ERR_SYSTEM, "/dev/null: %s", std::strerror(errno));

  std::string secret;
  int port = 0;
  HVDC_RETURN_IF_ERROR(generate_secret(&secret));
  HVDC_RETURN_IF_ERROR(pick_free_port(kMasterAddr, &port));
  base_env_ = current_environment();
  for (const std::string& item : options_.exports) {
    const size_t eq = item.find('=');
    // A bare NAME is inherited anyway; only NAME=value changes anything here.
    if (eq != std::string::npos) base_env_[item.substr(0, eq)] = item.substr(eq + 1);
  }
  // Set last, so that -x cannot break the job's own contract.
  base_env_["HVDC_SIZE"] = base_env_["HVDC_LOCAL_SIZE"] = std::to_string(options_.np);
  base_env_["HVDC_MASTER_ADDR"] = kMasterAddr;
  base_env_["HVDC_MASTER_PORT"] = std::to_string(port);
  base_env_["HVDC_SECRET"] = secret;
  base_env_["HVDC_BOOTSTRAP"] = "store";
  // Rank 0's store would listen only on that interface's address, where the other ranks,
  // told 127.0.0.1, cannot reach it.
  base_env_.erase("HVDC_IFACE");
  return Status::ok();
}

Status LocalJob::spawn(int rank) {
  EnvMap env = base_env_;
  env["HVDC_RANK"] = env["HVDC_LOCAL_RANK"] = std::to_string(rank);
  const std::vector<std::string> entries = environment_entries(env);
  std::vector<char*> envp = c_string_array(entries);
  std::vector<char*> argv = c_string_array(options_.command);
  int out[2] = {-1, -1};
  int err[2] = {-1, -1};
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    const int e = errno;
    for (int fd : {out[0], out[1]}) {
      if (fd >= 0) close(fd);
    }
    return make_error(HVD_ERR_SYSTEM, "rank %d: pipe: %s", rank, std::strerror(e));
  }
  // A terminal stays with hvdcrun: a rank in another process group that reads it would stop.
  const int stdin_fd = (rank == 0 && !isatty(STDIN_FILENO)) ? -1 : null_fd_;
  // Signals stay blocked across fork until the child has reset its handlers: hvdcrun's handler
  // running in the child would report the child's signal as hvdcrun's own.
  sigset_t all;
  sigset_t previous;
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, &previous);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) exec_rank(parent, stdin_fd, out[1], err[1], argv.data(), envp.data());
  const int fork_errno = errno;
  sigprocmask(SIG_SETMASK, &previous, nullptr);
  close(out[1]);
  close(err[1]);
  if (pid < 0) {
    close(out[0]);
    close(err[0]);
    return make_error(HVD_ERR_SYSTEM, "rank %d: fork: %s", rank, std::strerror(fork_errno));
  }
  setpgid(pid, pid);  // the child does it too; whichever runs first, the group exists now
  Rank& r = ranks_[rank];
  r.pid = pid;
  r.running = true;
  ++running_;
  for (int which = 0; which < 2; ++which) {
    r.fds[which] = which == 0 ? out[0] : err[0];
    fcntl(r.fds[which], F_SETFL, fcntl(r.fds[which], F_GETFL) | O_NONBLOCK);
    r.streams[which] = std::make_unique<TaggedStream>(which == 0 ? STDOUT_FILENO : STDERR_FILENO,
                                                      TaggedStream::prefix_for(rank, which == 1),
                                                      [this](int fd) { return wait_writable(fd); });
  }
  if (options_.verbose) std::fprintf(stderr, "hvdcrun: rank %d is pid %d\n", rank, pid);
  return Status::ok();
}

int LocalJob::run() {
  Status st = prepare();
  if (!st.is_ok()) {
    std::fprintf(stderr, "hvdcrun: %s\n", st.message().c_str());
    return 1;
  }
  if (options_.timeout_s > 0) deadline_ = Clock::now() + std::chrono::seconds(options_.timeout_s);
  for (int rank = 0; rank < options_.np; ++rank) {
    st = spawn(rank);
    if (!st.is_ok()) {
      internal_error_ = true;
      stop_all(SIGTERM, st.message() + "; stopping the ranks already started");
      break;
    }
  }
  supervise();
  for (Rank& r : ranks_) {
    for (auto& stream : r.streams) {
      if (stream) stream->finish();
    }
  }
  return exit_status();
}

void LocalJob::supervise() {
  std::vector<pollfd> fds;
  std::vector<std::pair<int, int>> owners;  // (rank, stdout 0 / stderr 1) of fds[1..]
  for (;;) {
    reap();
    const Clock::time_point now = Clock::now();
    check_deadlines(now);
    if (finished(now)) return;
    fds.assign(1, pollfd{signal_pipe_[0], POLLIN, 0});
    owners.clear();
    for (int rank = 0; rank < options_.np; ++rank) {
      for (int which = 0; which < 2; ++which) {
        if (ranks_[rank].fds[which] < 0) continue;
        fds.push_back(pollfd{ranks_[rank].fds[which], POLLIN, 0});
        owners.emplace_back(rank, which);
      }
    }
    if (poll(fds.data(), fds.size(), poll_timeout_ms(now)) < 0) continue;  // EINTR
    if (fds[0].revents != 0) handle_signals();
    for (size_t k = 1; k < fds.size(); ++k) {
      if (fds[k].revents != 0) read_output(owners[k - 1].first, owners[k - 1].second);
    }
  }
}

bool LocalJob::any_output_open() const {
  for (const Rank& r : ranks_) {
    if (r.fds[0] >= 0 || r.fds[1] >= 0) return true;
  }
  return false;
}

bool LocalJob::finished(Clock::time_point now) {
  if (running_ > 0) return false;
  // While stopping, what the ranks started gets the grace period too, then SIGKILL.
  if (stopping_ && kill_at_ && live_groups() > 0) return false;
  if (!drain_until_) drain_until_ = now + kDrain;
  return !any_output_open() || now >= *drain_until_;
}

int LocalJob::poll_timeout_ms(Clock::time_point now) const {
  std::optional<Clock::time_point> next;
  for (const auto& t : {kill_at_, timed_out_ ? std::nullopt : deadline_, drain_until_}) {
    if (t && (!next || *t < *next)) next = t;
  }
  if (!next) return -1;
  auto ms = std::chrono::ceil<std::chrono::milliseconds>(*next - now).count();
  // Processes left in a group need not be hvdcrun's children (a subreaper between them and
  // hvdcrun adopts them), so no SIGCHLD may say they are gone: look again soon.
  if (running_ == 0 && stopping_ && kill_at_ && ms > kGroupPollMs) ms = kGroupPollMs;
  return ms < 0 ? 0 : static_cast<int>(ms);
}

void LocalJob::read_output(int rank, int which) {
  Rank& r = ranks_[rank];
  char buf[65536];
  const ssize_t n = read(r.fds[which], buf, sizeof(buf));
  if (n > 0) {
    r.streams[which]->feed(buf, static_cast<size_t>(n));
  } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
    r.streams[which]->finish();
    close(r.fds[which]);
    r.fds[which] = -1;
  }
}

void LocalJob::reap() {
  int status = 0;
  pid_t pid;
  bool reaped = false;
  while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
    reaped = true;
    for (int rank = 0; rank < options_.np; ++rank) {
      if (ranks_[rank].pid == pid && ranks_[rank].running) {
        ranks_[rank].running = false;
        --running_;
        on_exit(rank, status);
      }
    }
  }
  if (reaped) forget_empty_groups();
}

// Once a rank's group is empty and its leader reaped, the id may belong to a stranger's new
// group at any time: note it as gone now, so that no later signal can reach that group.
void LocalJob::forget_empty_groups() {
  for (Rank& r : ranks_) {
    if (r.pid <= 0 || r.running || r.group_gone) continue;
    if (kill(-r.pid, 0) != 0 && errno == ESRCH) r.group_gone = true;
  }
}

// Called while stdout or stderr cannot take a rank's output (hvdcrun | less, with less idle):
// signals, deadlines and exited ranks are still dealt with while waiting for the reader. False
// (drop the rest) once the user stopped the job and every rank's process is gone.
bool LocalJob::wait_writable(int fd) {
  for (;;) {
    if (output_dropped_) return false;
    reap();
    const Clock::time_point now = Clock::now();
    check_deadlines(now);
    const bool stopped_by_user = received_signal_ != 0 || timed_out_;
    output_dropped_ = stopped_by_user && running_ == 0 && live_groups() == 0;
    if (output_dropped_) return false;
    pollfd fds[2] = {{signal_pipe_[0], POLLIN, 0}, {fd, POLLOUT, 0}};
    if (poll(fds, 2, poll_timeout_ms(now)) < 0) continue;  // EINTR
    if (fds[0].revents != 0) handle_signals();
    if (fds[1].revents != 0) return true;  // writable, or an error the write will report
  }
}

void LocalJob::on_exit(int rank, int status) {
  const bool exited = WIFEXITED(status);
  const int code = exited ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  // Once hvdcrun is stopping the job, later deaths are its own doing.
  if (code == 0 || stopping_) return;
  if (first_failure_ == 0) first_failure_ = code;
  std::string why =
      exited ? strfmt("rank %d (pid %d) exited with code %d", rank, ranks_[rank].pid, code)
             : strfmt("rank %d (pid %d) was killed by signal %d (%s)", rank, ranks_[rank].pid,
                      WTERMSIG(status), strsignal(WTERMSIG(status)));
  if (options_.keep_going) {
    // The survivors learn of it from hvdc (a typed error) and exit on their own.
    std::fprintf(stderr, "hvdcrun: %s; --keep-going: the others go on\n", why.c_str());
    return;
  }
  if (running_ > 0) why += strfmt("; stopping the other %s", ranks_text(running_).c_str());
  stop_all(SIGTERM, why);
}

void LocalJob::handle_signals() {
  unsigned char buf[64];
  ssize_t n;
  while ((n = read(signal_pipe_[0], buf, sizeof(buf))) > 0) {
    for (ssize_t k = 0; k < n; ++k) {
      const int signo = buf[k];
      if (signo == SIGCHLD) continue;  // the loop reaps on every turn
      if (received_signal_ != 0) {
        std::fprintf(stderr, "hvdcrun: got %s again; killing every rank\n", signal_name(signo));
        signal_groups(SIGKILL);
        continue;
      }
      received_signal_ = signo;
      stop_all(signo, strfmt("got %s; forwarding it to %s", signal_name(signo),
                             ranks_text(running_).c_str()));
    }
  }
}

void LocalJob::check_deadlines(Clock::time_point now) {
  if (deadline_ && !timed_out_ && running_ > 0 && now >= *deadline_) {
    timed_out_ = true;
    stop_all(SIGTERM, strfmt("--timeout %d s reached; stopping %s", options_.timeout_s,
                             ranks_text(running_).c_str()));
  }
  if (kill_at_ && now >= *kill_at_) {
    kill_at_.reset();
    const int live = live_groups();
    if (live > 0) {
      std::fprintf(stderr,
                   "hvdcrun: processes of %d rank%s still running %lld s after being told to "
                   "stop; sending SIGKILL\n",
                   live, live == 1 ? "" : "s", static_cast<long long>(kGrace.count() / 1000));
      signal_groups(SIGKILL);
    }
  }
}

void LocalJob::stop_all(int signo, const std::string& why) {
  std::fprintf(stderr, "hvdcrun: %s\n", why.c_str());
  signal_groups(signo);
  if (!stopping_) kill_at_ = Clock::now() + kGrace;
  stopping_ = true;
}

// The whole process group of each rank, so that what a rank started goes too, even after the
// rank itself has exited. A group id is not reused while the group has members.
void LocalJob::signal_groups(int signo) {
  for (Rank& r : ranks_) {
    if (r.pid <= 0 || r.group_gone) continue;
    if (kill(-r.pid, signo) != 0 && errno == ESRCH) r.group_gone = true;
  }
}

int LocalJob::live_groups() {
  int live = 0;
  for (Rank& r : ranks_) {
    if (r.pid <= 0 || r.group_gone) continue;
    if (kill(-r.pid, 0) == 0 || errno != ESRCH) {
      ++live;
    } else {
      r.group_gone = true;
    }
  }
  return live;
}

int LocalJob::exit_status() const {
  if (received_signal_ != 0) return 128 + received_signal_;
  if (timed_out_) return 124;
  if (first_failure_ != 0) return first_failure_;
  return internal_error_ ? 1 : 0;
}

}  // namespace

int run_local_job(const Options& options) {
  LocalJob job(options);
  return job.run();
}

}  // namespace hvdc::hvdcrun
