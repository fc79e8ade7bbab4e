// Copyright 2026 The stubkit Authors.
//
// Runs protoc with protoc-gen-stubkit the way a user would and checks:
//   - the output for a few protos, run through clang-format 14 with the
//     repository's .clang-format, equals the checked-in golden files
//     (regenerate with scripts/regen-golden.sh after an intended change).
//     The generator prints plain templates; clang-format lays them out, as
//     scripts/regen-golden.sh does;
//   - protos the generator cannot handle fail the run with a message that
//     names the file, the service and the method.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct RunResult {
  int exit_code;
  std::string output;  // stdout and stderr
};

RunResult RunCommand(const std::string& command) {
  RunResult result{-1, ""};
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return result;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) {
    result.output.append(buffer.data(), n);
  }
  int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "<missing: " + path + ">";
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

// The protoc command that runs the plugin on `protos` (under protos/) into
// `out_dir`, with the plugin parameter `parameter` (empty: none).
std::string Protoc(const std::string& out_dir, const std::string& protos,
                   const std::string& parameter = "") {
  return std::string("cd ") + STUBKIT_SOURCE_DIR + "/protos && " +
         STUBKIT_PROTOC +
         " -Istubkit/testing/gen/third_party -Ithird_party/googleapis -I. " +
         "--plugin=protoc-gen-stubkit=" + STUBKIT_PLUGIN +
         " --stubkit_out=" + (parameter.empty() ? "" : parameter + ":") +
         out_dir + " " + protos;
}

// The clang-format the goldens are formatted with: the one CMake found
// (STUBKIT_CLANG_FORMAT), else the CLANG_FORMAT environment variable, else
// clang-format-14 or clang-format on the PATH (the Bazel test); "" when
// there is none.
std::string FindClangFormat() {
  if (std::string(STUBKIT_CLANG_FORMAT) != "") return STUBKIT_CLANG_FORMAT;
  const char* env = std::getenv("CLANG_FORMAT");
  if (env != nullptr && *env != '\0') return env;
  for (const char* name : {"clang-format-14", "clang-format"}) {
    RunResult found =
        RunCommand(std::string("command -v ") + name + " >/dev/null");
    if (found.exit_code == 0) return name;
  }
  return "";
}

// Formats the file `path` in place as the goldens are formatted: `name`
// tells clang-format the language. Returns clang-format's complaint, or ""
// on success.
std::string FormatInPlace(const std::string& clang_format,
                          const std::string& name, const std::string& path) {
  RunResult run = RunCommand(
      clang_format + " --style=file:" + STUBKIT_SOURCE_DIR + "/.clang-format" +
      " --assume-filename=" + name + " < " + path + " > " + path +
      ".formatted && mv " + path + ".formatted " + path);
  return run.exit_code == 0 ? "" : clang_format + " failed: " + run.output;
}

std::string MakeTempDir() {
  char pattern[] = "/tmp/stubkit_golden_XXXXXX";
  const char* dir = mkdtemp(pattern);
  return dir != nullptr ? dir : "";
}

// Where two texts first differ, for a readable failure.
std::string FirstDifference(const std::string& want, const std::string& got) {
  std::istringstream a(want), b(got);
  std::string la, lb;
  for (int line = 1;; ++line) {
    bool more_a = static_cast<bool>(std::getline(a, la));
    bool more_b = static_cast<bool>(std::getline(b, lb));
    if (!more_a && !more_b) return "identical";
    if (!more_a || !more_b || la != lb) {
      return "line " + std::to_string(line) +
             ":\n  golden: " + (more_a ? la : "<end>") +
             "\n  actual: " + (more_b ? lb : "<end>");
    }
  }
}

TEST(GoldenTest, OutputMatchesCheckedInFiles) {
  const std::string clang_format = FindClangFormat();
  ASSERT_FALSE(clang_format.empty())
      << "clang-format 14 was not found (neither clang-format-14 nor "
         "clang-format); the goldens are the plugin's output formatted with "
         "it. scripts/install-deps.sh installs it.";
  std::string version = RunCommand(clang_format + " --version").output;
  if (version.find("version 14.") == std::string::npos) {
    version +=
        "(the goldens are clang-format 14's: another version may lay "
        "them out differently)";
  }
  const std::string out = MakeTempDir();
  ASSERT_FALSE(out.empty());
  RunResult run = RunCommand(Protoc(out,
                                    "stubkit/testing/streams.proto "
                                    "stubkit/testing/gen/googleapi.proto "
                                    "stubkit/testing/gen/lro.proto "
                                    "stubkit/testing/gen/no_package.proto "
                                    "stubkit/testing/gen/pagination.proto "
                                    "stubkit/testing/gen/routing.proto"));
  ASSERT_EQ(run.exit_code, 0) << run.output;

  const std::vector<std::string> stems = {
      "stubkit/testing/streams", "stubkit/testing/gen/googleapi",
      "stubkit/testing/gen/lro", "stubkit/testing/gen/no_package",
      "stubkit/testing/gen/pagination", "stubkit/testing/gen/routing"};
  int compared = 0;
  for (const std::string& stem : stems) {
    for (const char* suffix :
         {".stubkit.h", ".stubkit.cc", ".stubkit_mock.h"}) {
      const std::string name = stem + suffix;
      const std::string golden = ReadFile(std::string(STUBKIT_SOURCE_DIR) +
                                          "/tests/generator/golden/" + name);
      const std::string path = out + "/" + name;
      const std::string problem = FormatInPlace(clang_format, name, path);
      EXPECT_EQ(problem, "");
      const std::string actual = ReadFile(path);
      EXPECT_EQ(golden, actual)
          << name << " differs from its golden file at "
          << FirstDifference(golden, actual) << "\nformatted with "
          << clang_format << ": " << version
          << "\nIf the change is intended, run scripts/regen-golden.sh.";
      ++compared;
    }
  }
  EXPECT_EQ(compared, 18);
  RunCommand("rm -rf " + out);
}

struct BadProto {
  const char* file;
  const char* method;  // empty when the error is about the service
  const char* reason;
};

class FailingProtoTest : public ::testing::TestWithParam<BadProto> {};

TEST_P(FailingProtoTest, ProtocFailsNamingFileServiceAndMethod) {
  const BadProto& bad = GetParam();
  const std::string out = MakeTempDir();
  ASSERT_FALSE(out.empty());
  RunResult run = RunCommand(Protoc(out, bad.file));
  EXPECT_NE(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find(bad.file), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("service stubkit.testing.gen.bad.Bad"),
            std::string::npos)
      << run.output;
  if (*bad.method != '\0') {
    EXPECT_NE(run.output.find(std::string("method ") + bad.method),
              std::string::npos)
        << run.output;
  }
  EXPECT_NE(run.output.find(bad.reason), std::string::npos) << run.output;
  // Nothing half-written is left behind for the build to pick up.
  RunResult listing = RunCommand("find " + out + " -type f");
  EXPECT_EQ(listing.output, "");
  RunCommand("rm -rf " + out);
}

INSTANTIATE_TEST_SUITE_P(
    Bad, FailingProtoTest,
    ::testing::Values(
        BadProto{"stubkit/testing/gen/bad/keyword_method.proto", "delete",
                 "is a C++ keyword"},
        BadProto{"stubkit/testing/gen/bad/grpc_member.proto", "Stub",
                 "collides with a member grpc_cpp_plugin generates"},
        BadProto{"stubkit/testing/gen/bad/generated_clash.proto", "",
                 "clashes with message stubkit.testing.gen.bad.BadClient"},
        BadProto{"stubkit/testing/gen/bad/resume_clash.proto",
                 "TailResumeOption", "collides with a name stubkit generates"},
        // Generated names of two methods meet in BadClient.
        BadProto{"stubkit/testing/gen/bad/async_clash.proto", "AsyncFoo",
                 "both as rpc AsyncFoo and as the asynchronous variant of rpc "
                 "Foo, with the same parameters"},
        BadProto{"stubkit/testing/gen/bad/async_stream_clash.proto", "AsyncFoo",
                 "both as rpc AsyncFoo and as the asynchronous variant of rpc "
                 "Foo, with the same parameters"},
        BadProto{"stubkit/testing/gen/bad/async_resume_clash.proto",
                 "TailResumeOption",
                 "'AsyncTailResumeOption' in BadClient both as the "
                 "asynchronous variant of rpc TailResumeOption and as the "
                 "resume option of rpc AsyncTail"},
        // Members of grpc_cpp_plugin's classes.
        BadProto{"stubkit/testing/gen/bad/experimental_async.proto",
                 "experimental_async",
                 "collides with a member grpc_cpp_plugin generates"},
        BadProto{"stubkit/testing/gen/bad/grpc_raw_clash.proto", "TailRaw",
                 "grpc_cpp_plugin generates members named AsyncTailRaw and "
                 "PrepareAsyncTailRaw"},
        BadProto{"stubkit/testing/gen/bad/grpc_rpcmethod_clash.proto",
                 "rpcmethod_Get_",
                 "collides with a member grpc_cpp_plugin generates for rpc "
                 "Get"},
        // Long-running operations.
        BadProto{"stubkit/testing/gen/bad/lro_await_clash.proto", "AwaitFoo",
                 "'AsyncAwaitFoo' in BadClient both as the asynchronous "
                 "variant of rpc AwaitFoo and as the awaiter of rpc Foo, with "
                 "the same parameters"},
        BadProto{"stubkit/testing/gen/bad/mock_namespace_clash.proto", "",
                 "namespace 'stubkit_mocks', which clashes with message "
                 "stubkit.testing.gen.bad.stubkit_mocks"},
        // API conventions (pagination.h, routing.h).
        BadProto{"stubkit/testing/gen/bad/range_clash.proto", "ListRange",
                 "stubkit generates 'ListRange' in BadClient for the "
                 "paginated rpc List"},
        BadProto{"stubkit/testing/gen/bad/routing_field.proto", "Get",
                 "its google.api.routing parameter names field 'id', which "
                 "is not a singular string field"},
        BadProto{"stubkit/testing/gen/bad/routing_template.proto", "Get",
                 "must have exactly one named variable"},
        BadProto{"stubkit/testing/gen/bad/http_field.proto", "Get",
                 "its google.api.http path names 'parent', which is not a "
                 "singular field"}));

// A proto without services (messages other protos import) generates files
// that give its messages and nothing of gRPC or stubkit: a program that
// includes them pays for no runtime it cannot call.
TEST(PluginTest, AFileWithoutServicesIncludesOnlyItsMessages) {
  const std::string out = MakeTempDir();
  RunResult run =
      RunCommand(Protoc(out, "stubkit/testing/gen/common/shared.proto"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const std::string stem = out + "/stubkit/testing/gen/common/shared";
  const std::string header = ReadFile(stem + ".stubkit.h");
  const std::string source = ReadFile(stem + ".stubkit.cc");
  // One include each: the messages, and the source's own header.
  auto includes = [](const std::string& text) {
    std::vector<std::string> found;
    for (size_t at = text.find("#include"); at != std::string::npos;
         at = text.find("#include", at + 1)) {
      found.push_back(text.substr(at, text.find('\n', at) - at));
    }
    return found;
  };
  EXPECT_THAT(includes(header),
              ::testing::ElementsAre(
                  "#include \"stubkit/testing/gen/common/shared.pb.h\""))
      << header;
  EXPECT_THAT(includes(source),
              ::testing::ElementsAre(
                  "#include \"stubkit/testing/gen/common/shared.stubkit.h\""))
      << source;
  RunCommand("rm -rf " + out);
}

TEST(PluginTest, RejectsUnknownParameter) {
  const std::string out = MakeTempDir();
  RunResult run =
      RunCommand(Protoc(out, "stubkit/testing/echo.proto", "bogus=1"));
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.output.find("unknown option 'bogus=1'"), std::string::npos)
      << run.output;
  RunCommand("rm -rf " + out);
}

// The plugin takes no parameters at all: formatting is the user's step, as
// it is for the goldens above. The parameter it once took is an error now,
// not silently ignored.
TEST(PluginTest, RejectsTheRemovedClangFormatParameter) {
  const std::string out = MakeTempDir();
  RunResult run = RunCommand(Protoc(out, "stubkit/testing/echo.proto",
                                    "clang_format=clang-format-14"));
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.output.find("unknown option 'clang_format=clang-format-14'; "
                            "it takes no options (to format the output, run "
                            "clang-format over it)"),
            std::string::npos)
      << run.output;
  EXPECT_EQ(RunCommand("find " + out + " -type f").output, "");
  RunCommand("rm -rf " + out);
}

}  // namespace
