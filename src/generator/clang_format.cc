// Copyright 2026 The stubkit Authors.

#include "src/generator/clang_format.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

extern char** environ;

namespace stubkit {
namespace generator {
namespace {

// A file under $TMPDIR (or /tmp), removed with the object.
class TempFile {
 public:
  TempFile() {
    const char* dir = std::getenv("TMPDIR");
    path_ = absl::StrCat(dir != nullptr && *dir != '\0' ? dir : "/tmp",
                         "/stubkit_clang_format_XXXXXX");
    const int fd = mkstemp(path_.data());
    if (fd < 0) {
      path_.clear();
    } else {
      close(fd);
    }
  }
  ~TempFile() {
    if (!path_.empty()) unlink(path_.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  // "" when it could not be made.
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

bool WriteAll(const std::string& path, const std::string& contents) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << contents;
  return static_cast<bool>(out.flush());
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

}  // namespace

bool ClangFormat(const std::string& binary, const std::string& name,
                 const std::string& input, std::string* output,
                 std::string* error) {
  const std::string what = absl::StrCat("clang_format=", binary, ": ");
  TempFile in, out, err;
  if (in.path().empty() || out.path().empty() || err.path().empty() ||
      !WriteAll(in.path(), input)) {
    *error = absl::StrCat(what, "cannot write a temporary file to format ",
                          name, ": ", std::strerror(errno));
    return false;
  }
  std::vector<char> cwd(4096);
  if (getcwd(cwd.data(), cwd.size()) == nullptr) {
    *error = absl::StrCat(
        what, "cannot read the working directory: ", std::strerror(errno));
    return false;
  }
  // clang-format reads the file from stdin, so that the language and the
  // .clang-format follow --assume-filename; no shell, so the path is used
  // as it is.
  std::vector<std::string> args = {
      binary, "--style=file", "--fallback-style=Google",
      absl::StrCat("--assume-filename=", cwd.data(), "/", name)};
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, in.path().c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out.path().c_str(),
                                   O_WRONLY | O_TRUNC, 0);
  posix_spawn_file_actions_addopen(&actions, 2, err.path().c_str(),
                                   O_WRONLY | O_TRUNC, 0);
  pid_t pid;
  const int spawned = posix_spawnp(&pid, binary.c_str(), &actions, nullptr,
                                   argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    *error = absl::StrCat(what, "cannot run it: ", std::strerror(spawned));
    return false;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      *error = absl::StrCat(what, "cannot wait for it: ", std::strerror(errno));
      return false;
    }
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    const std::string said(
        absl::StripTrailingAsciiWhitespace(ReadAll(err.path())));
    *error = absl::StrCat(
        what, "failed on ", name,
        WIFEXITED(status)
            ? absl::StrCat(" (exit code ", WEXITSTATUS(status), ")")
            : std::string(" (killed by a signal)"),
        said.empty() ? "" : ": ", said);
    return false;
  }
  *output = ReadAll(out.path());
  return true;
}

}  // namespace generator
}  // namespace stubkit
