// A fuzz driver for g++ builds: replays a target's corpus, then feeds it mutations of the
// corpus for a time budget. Targets define LLVMFuzzerTestOneInput, so the same file also
// links against libFuzzer under clang (-fsanitize=fuzzer) for open-ended runs.
//
//   <target> [--seconds N] [--seed S] CORPUS_DIR...
//
// A crash, a sanitizer report or a failed invariant (the target calls abort()) ends the
// run with the input that caused it written to ./crash-<target>-<seed>-<n>.
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

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

using Bytes = std::string;

std::vector<Bytes> read_corpus(const std::vector<std::string>& dirs) {
  std::vector<Bytes> out;
  for (const auto& dir : dirs) {
    for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
      if (!entry.is_regular_file()) continue;
      std::ifstream in(entry.path(), std::ios::binary);
      out.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
  }
  if (out.empty()) out.emplace_back();
  return out;
}

// One random edit: what coverage-guided fuzzers start from, without the guidance.
Bytes mutate(const Bytes& input, const std::vector<Bytes>& corpus, std::mt19937_64& rng) {
  Bytes b = input;
  auto pick = [&](std::size_t n) { return n == 0 ? 0 : std::size_t(rng() % n); };
  // The first row serves the agent-side parsers, the rest the HTTP edge's: JSON, escapes,
  // times, addresses and the bytes UTF-8 checks trip on.
  static const char* kTokens[] = {
      "\t",   " ",   "\n",      "\r\n",   "\x1b[4m",  "X",           "NV18",     "SYS", "GPU0",
      "NIC0", "=",   "/",       "+",      "\0",       "\xff",        "ssh-rsa ", "{",   "}",
      "[",    "]",   "\"",      ",",      ":",        "\\u0000",     "1e400",    "-0",  "%",
      "%00",  "%25", "%C3",     "%E2%82", "&",        ".",           "T",        "Z",   "+00:00",
      "60",   "::",  "::ffff:", "/32",    "\xc0\x80", "\xed\xa0\x80"};
  int edits = 1 + static_cast<int>(rng() % 4);
  for (int e = 0; e < edits; ++e) {
    switch (rng() % 7) {
      case 0:  // flip a bit
        if (!b.empty()) b[pick(b.size())] ^= static_cast<char>(1u << (rng() % 8));
        break;
      case 1:  // set a byte
        if (!b.empty()) b[pick(b.size())] = static_cast<char>(rng());
        break;
      case 2:  // delete a run
        if (!b.empty()) {
          std::size_t at = pick(b.size());
          b.erase(at, 1 + pick(std::min<std::size_t>(64, b.size() - at)));
        }
        break;
      case 3: {  // insert a token
        std::string t = kTokens[pick(std::size(kTokens))];
        if (t.empty()) t.push_back('\0');
        b.insert(pick(b.size() + 1), t);
        break;
      }
      case 4: {  // duplicate a run
        if (b.empty()) break;
        std::size_t at = pick(b.size());
        std::size_t len = 1 + pick(std::min<std::size_t>(256, b.size() - at));
        b.insert(pick(b.size() + 1), b.substr(at, len));
        break;
      }
      case 5: {  // splice with another input
        const Bytes& other = corpus[pick(corpus.size())];
        b = b.substr(0, pick(b.size() + 1)) + other.substr(pick(other.size() + 1));
        break;
      }
      case 6:  // truncate
        b.resize(pick(b.size() + 1));
        break;
    }
  }
  return b;
}

void run_one(const Bytes& input, const std::string& target, std::uint64_t seed, long n) {
  // Written before the call and removed after it: if the target dies, the input is kept.
  std::string path = "crash-" + target + "-" + std::to_string(seed) + "-" + std::to_string(n);
  { std::ofstream(path, std::ios::binary) << input; }
  LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(input.data()), input.size());
  std::filesystem::remove(path);
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 5;
  std::uint64_t seed = 1;
  std::vector<std::string> dirs;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--seconds" && i + 1 < argc) {
      seconds = std::atof(argv[++i]);
    } else if (a == "--seed" && i + 1 < argc) {
      seed = std::strtoull(argv[++i], nullptr, 10);
    } else {
      dirs.push_back(a);
    }
  }
  if (dirs.empty()) {
    std::fprintf(stderr, "usage: %s [--seconds N] [--seed S] CORPUS_DIR...\n", argv[0]);
    return 2;
  }
  std::string target = std::filesystem::path(argv[0]).filename().string();
  auto corpus = read_corpus(dirs);
  long n = 0;
  for (const auto& input : corpus) run_one(input, target, seed, n++);
  std::mt19937_64 rng(seed);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    run_one(mutate(corpus[rng() % corpus.size()], corpus, rng), target, seed, n++);
  }
  std::printf("%s: %zu corpus inputs, %ld runs, seed %llu, no failure\n", target.c_str(),
              corpus.size(), n, static_cast<unsigned long long>(seed));
  return 0;
}
