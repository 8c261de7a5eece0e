// The main of a fuzz target outside libFuzzer: runs the target's
// LLVMFuzzerTestOneInput over inputs read from files, in any build (gcc, the
// sanitizer builds, the release build), and times each one. ctest replays the seed
// corpora and the kept regression inputs this way on every build, whether or not
// clang is installed; scripts/decode-times runs it over a campaign's corpora with a
// budget in milliseconds per kilobyte.
//
// Usage: <target>_replay [--grow] [--budget-ms-per-kb B] PATH...
//   PATH       a file, or a directory whose files are all inputs
//   --grow     also run larger inputs made from each one (the input repeated to
//              64 KiB, the input followed by 64 KiB of pseudo-random bytes) and
//              eight pseudo-random inputs of 64 KiB
//   --budget-ms-per-kb B
//              exit 1 if an input takes longer than B ms per KiB (an input under
//              1 KiB counts as 1 KiB); each input's time is the fastest of three runs
// A target that finds a broken promise aborts, which fails the replay.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

constexpr size_t kGrownSize = 64 * 1024;  // scripts/fuzz's -max_len
constexpr int kRunsPerInput = 3;

struct Input {
  std::string name;
  std::string bytes;
};

struct Options {
  bool grow = false;
  double budget_ms_per_kb = 0;  // 0: report only
  std::vector<std::string> paths;
};

bool ReadFile(const std::filesystem::path& path, std::vector<Input>& out) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return false;
  out.push_back({path.string(), std::string(std::istreambuf_iterator<char>(file), {})});
  return true;
}

// Every regular file of `path` (sorted, for a stable order), or `path` itself.
bool ReadInputs(const std::string& path, std::vector<Input>& out) {
  std::error_code error;
  if (!std::filesystem::is_directory(path, error)) return ReadFile(path, out);
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(path, error)) {
    if (entry.is_regular_file()) files.push_back(entry.path());
  }
  if (error) return false;
  std::sort(files.begin(), files.end());
  return std::all_of(files.begin(), files.end(),
                     [&](const auto& file) { return ReadFile(file, out); });
}

std::string RandomBytes(std::mt19937_64& random, size_t size) {
  std::string bytes(size, '\0');
  for (char& c : bytes) c = static_cast<char>(random() & 0xFF);
  return bytes;
}

// Larger inputs made from the ones read: where a decoder's cost grows faster than
// its input, these find it.
std::vector<Input> Grow(const std::vector<Input>& inputs) {
  std::mt19937_64 random(20261124);
  std::vector<Input> grown;
  for (const Input& input : inputs) {
    if (!input.bytes.empty() && input.bytes.size() < kGrownSize) {
      std::string repeated;
      while (repeated.size() + input.bytes.size() <= kGrownSize) repeated += input.bytes;
      grown.push_back({input.name + " (repeated)", std::move(repeated)});
    }
    grown.push_back(
        {input.name + " (+random tail)",
         input.bytes + RandomBytes(random, kGrownSize - std::min(kGrownSize, input.bytes.size()))});
  }
  for (int i = 0; i < 8; ++i) {
    grown.push_back({"random-" + std::to_string(i), RandomBytes(random, kGrownSize)});
  }
  return grown;
}

double RunMs(const std::string& bytes) {
  const auto start = std::chrono::steady_clock::now();
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

bool ParseOptions(int argc, char** argv, Options& options) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--grow") {
      options.grow = true;
    } else if (arg == "--budget-ms-per-kb" && i + 1 < argc) {
      options.budget_ms_per_kb = std::strtod(argv[++i], nullptr);
      if (!(options.budget_ms_per_kb > 0)) return false;
    } else if (arg.starts_with("--")) {
      return false;
    } else {
      options.paths.push_back(arg);
    }
  }
  return !options.paths.empty();
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (!ParseOptions(argc, argv, options)) {
    std::fprintf(stderr, "usage: %s [--grow] [--budget-ms-per-kb B] PATH...\n", argv[0]);
    return 2;
  }
  std::vector<Input> inputs;
  for (const std::string& path : options.paths) {
    if (!ReadInputs(path, inputs)) {
      std::fprintf(stderr, "replay: cannot read %s\n", path.c_str());
      return 2;
    }
  }
  if (options.grow) {
    std::vector<Input> grown = Grow(inputs);
    std::move(grown.begin(), grown.end(), std::back_inserter(inputs));
  }
  double worst_ms_per_kb = 0;
  double total_ms = 0;
  size_t total_bytes = 0;
  const Input* worst = nullptr;
  for (const Input& input : inputs) {
    double ms = RunMs(input.bytes);
    for (int run = 1; run < kRunsPerInput; ++run) ms = std::min(ms, RunMs(input.bytes));
    const double kb = std::max<double>(1.0, static_cast<double>(input.bytes.size()) / 1024.0);
    total_ms += ms;
    total_bytes += input.bytes.size();
    if (worst == nullptr || ms / kb > worst_ms_per_kb) {
      worst_ms_per_kb = ms / kb;
      worst = &input;
    }
  }
  std::printf("replay: %zu inputs, %.1f MiB in %.1f ms; slowest %.4f ms/KiB (%s, %zu bytes)\n",
              inputs.size(), static_cast<double>(total_bytes) / (1024.0 * 1024.0), total_ms,
              worst_ms_per_kb, worst != nullptr ? worst->name.c_str() : "none",
              worst != nullptr ? worst->bytes.size() : size_t{0});
  if (options.budget_ms_per_kb > 0 && worst_ms_per_kb > options.budget_ms_per_kb) {
    std::fprintf(stderr, "replay: over the budget of %.3f ms/KiB\n", options.budget_ms_per_kb);
    return 1;
  }
  return 0;
}
