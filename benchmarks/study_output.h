// Copyright 2026 The stubkit Authors.
//
// Where the study programs (retry_storm, overload_study, three_tier_study)
// write their per-second CSV and their summary table, shared so that each
// program keeps only what it measures.
//
//   std::string out = bench::DefaultOutDir();   // --out overrides it
//   std::string csv_path;
//   FILE* csv = bench::OpenCsv(out, "storm.csv", &csv_path);
//   if (csv == nullptr) return 1;
//   ...
//   return bench::FinishStudy(table, out, "storm_summary.md", csv_path, sane);

#ifndef STUBKIT_BENCHMARKS_STUDY_OUTPUT_H_
#define STUBKIT_BENCHMARKS_STUDY_OUTPUT_H_

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

namespace stubkit {
namespace bench {

// The output directory when no --out is given: Bazel tests' scratch
// directory ($TEST_TMPDIR) when set, else the working directory.
inline std::string DefaultOutDir() {
  const char* test_tmpdir = std::getenv("TEST_TMPDIR");
  return test_tmpdir != nullptr ? test_tmpdir : ".";
}

// Creates `dir` if needed and opens `dir`/`name` for writing, setting
// `*path`. Null, after saying why on stderr, when either fails.
inline FILE* OpenCsv(const std::string& dir, const std::string& name,
                     std::string* path) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) {
    std::fprintf(stderr, "%s: %s\n", dir.c_str(), error.message().c_str());
    return nullptr;
  }
  *path = dir + "/" + name;
  FILE* file = std::fopen(path->c_str(), "w");
  if (file == nullptr) std::perror(path->c_str());
  return file;
}

// Prints `table`, writes it to `dir`/`md_name` too, says what was written,
// and returns the program's exit code: 0 when the figures are sane.
inline int FinishStudy(const std::string& table, const std::string& dir,
                       const std::string& md_name, const std::string& csv_path,
                       bool sane) {
  std::fputs(table.c_str(), stdout);
  const std::string md_path = dir + "/" + md_name;
  if (FILE* md = std::fopen(md_path.c_str(), "w")) {
    std::fputs(table.c_str(), md);
    std::fclose(md);
  }
  std::printf("\nwrote %s and %s\n", csv_path.c_str(), md_path.c_str());
  if (!sane) std::fprintf(stderr, "insane figures\n");
  return sane ? 0 : 1;
}

}  // namespace bench
}  // namespace stubkit

#endif  // STUBKIT_BENCHMARKS_STUDY_OUTPUT_H_
