// Copyright 2026 The stubkit Authors.
//
// A main() for fuzz targets built without libFuzzer (the normal and the
// ASan+UBSan builds): runs LLVMFuzzerTestOneInput over every file named on
// the command line, or every file in a named directory. ctest uses it to
// replay the checked-in seed corpus and the regression inputs, so a crash
// once found stays fixed in every build.
//
//   build/tests/fuzz/pushback_fuzzer tests/fuzz/corpus/pushback

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

int RunFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "replay: cannot read %s\n", path.c_str());
    return 1;
  }
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()),
                         bytes.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int files = 0;
  int errors = 0;
  for (int i = 1; i < argc; ++i) {
    std::filesystem::path arg(argv[i]);
    if (std::filesystem::is_directory(arg)) {
      std::vector<std::filesystem::path> paths;
      for (const auto& entry : std::filesystem::directory_iterator(arg)) {
        if (entry.is_regular_file()) paths.push_back(entry.path());
      }
      std::sort(paths.begin(), paths.end());
      for (const auto& path : paths) {
        errors += RunFile(path);
        ++files;
      }
    } else {
      errors += RunFile(arg);
      ++files;
    }
  }
  // Also the empty input, which every target must survive.
  LLVMFuzzerTestOneInput(nullptr, 0);
  std::printf("replay: %d inputs ran, %d unreadable\n", files, errors);
  return errors == 0 && files > 0 ? 0 : 1;
}
