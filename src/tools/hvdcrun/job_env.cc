#include "tools/hvdcrun/job_env.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

extern char** environ;

namespace hvdc::hvdcrun {

using common::make_error;

const char* const kPerRankVariables[4] = {"HVDC_RANK", "HVDC_SIZE", "HVDC_LOCAL_RANK",
                                          "HVDC_LOCAL_SIZE"};

namespace {

Status read_random(void* buf, size_t bytes) {
  const int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return make_error(HVD_ERR_SYSTEM, "cannot open /dev/urandom: %s", std::strerror(errno));
  size_t done = 0;
  while (done < bytes) {
    const ssize_t n = read(fd, static_cast<char*>(buf) + done, bytes - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      close(fd);
      return make_error(HVD_ERR_SYSTEM, "cannot read /dev/urandom: %s", std::strerror(err));
    }
    done += static_cast<size_t>(n);
  }
  close(fd);
  return Status::ok();
}

std::string short_name(const std::string& host) {
  return host.substr(0, host.find('.'));
}

}  // namespace

Status generate_secret(std::string* hex) {
  unsigned char bytes[32];
  HVDC_RETURN_IF_ERROR(read_random(bytes, sizeof(bytes)));
  static const char kDigits[] = "0123456789abcdef";
  hex->clear();
  for (unsigned char b : bytes) {
    hex->push_back(kDigits[b >> 4]);
    hex->push_back(kDigits[b & 15]);
  }
  return Status::ok();
}

Status pick_free_port(const char* addr, int* port) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = 0;
  if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
    return make_error(HVD_ERR_INVALID_ARGUMENT, "'%s' is not an IPv4 address", addr);
  }
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return make_error(HVD_ERR_SYSTEM, "socket: %s", std::strerror(errno));
  socklen_t len = sizeof(sa);
  if (bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) {
    const int err = errno;
    close(fd);
    return make_error(HVD_ERR_SYSTEM, "cannot find a free TCP port on %s: %s", addr,
                      std::strerror(err));
  }
  close(fd);
  *port = ntohs(sa.sin_port);
  return Status::ok();
}

Status pick_random_port(int lo, int hi, int* port) {
  uint32_t r = 0;
  HVDC_RETURN_IF_ERROR(read_random(&r, sizeof(r)));
  *port = lo + static_cast<int>(r % static_cast<uint32_t>(hi - lo));
  return Status::ok();
}

bool valid_env_name(const std::string& name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  for (char c : name) {
    const bool ok =
        (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

EnvMap current_environment() {
  EnvMap env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const char* eq = std::strchr(*entry, '=');
    if (eq == nullptr) continue;
    env.emplace(std::string(*entry, eq - *entry), std::string(eq + 1));
  }
  return env;
}

std::vector<std::string> environment_entries(const EnvMap& env) {
  std::vector<std::string> entries;
  entries.reserve(env.size());
  for (const auto& [name, value] : env) entries.push_back(name + "=" + value);
  return entries;
}

std::vector<char*> c_string_array(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const std::string& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// Only the first host matters, so each bracket contributes its first number (kept as written:
// "[07-09]" gives "07", the zero padding is part of the name).
std::string first_host_of_nodelist(const std::string& nodelist) {
  std::string host;
  for (size_t i = 0; i < nodelist.size() && nodelist[i] != ',';) {
    if (nodelist[i] != '[') {
      host.push_back(nodelist[i++]);
      continue;
    }
    const size_t close = nodelist.find(']', i);
    if (close == std::string::npos) return "";
    const std::string inner = nodelist.substr(i + 1, close - i - 1);
    const std::string first = inner.substr(0, inner.find_first_of(",-"));
    if (first.empty()) return "";
    host += first;
    i = close + 1;
  }
  return host;
}

bool is_this_host(const std::string& host) {
  char name[256] = {0};
  if (host.empty() || gethostname(name, sizeof(name) - 1) != 0) return false;
  return host == name || short_name(host) == short_name(name);
}

}  // namespace hvdc::hvdcrun
