// A stand-in for libFuzzer's main, so every fuzz target also builds with
// g++ and runs in ctest (label `fuzz`): each file of the seed corpus, then
// mutations of them (byte flips, inserts, deletes, splices) from a printed
// seed until LOAM_FUZZ_SECONDS (default 5) pass. A crash or a failed check
// aborts, as under libFuzzer, after writing the input that did it to
// LOAM_FUZZ_ARTIFACT (default ./<target>-crash-input) to keep as a regression
// input. Checksums are not compared (as in a fuzzing build), so mutations
// reach the decoding behind them. scripts/fuzz builds the same targets with
// clang's libFuzzer for coverage-guided runs.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "common/hash.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::string Slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The input being run, written out by OnFatal (only async-signal-safe calls).
const std::string* current = nullptr;
std::string artifact;

void OnFatal(int sig) {
  if (current != nullptr) {
    const int fd = ::open(artifact.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      for (size_t done = 0; done < current->size();) {
        const ssize_t n = ::write(fd, current->data() + done, current->size() - done);
        if (n <= 0) break;
        done += static_cast<size_t>(n);
      }
      ::close(fd);
      static constexpr char kSaid[] = "fuzz: the failing input is in ";
      (void)!::write(2, kSaid, sizeof(kSaid) - 1);
      (void)!::write(2, artifact.data(), artifact.size());
      (void)!::write(2, "\n", 1);
    }
  }
  std::raise(sig);  // SA_RESETHAND restored the default action
}

// Keeps the failing input on an abort (a failed check, an uncaught throw, a
// sanitizer report with abort_on_error) and, outside sanitizer builds (whose
// own handlers report these), on a fault; on an alternate stack, so a
// stack overflow is kept too.
void KeepFailingInputs() {
  static std::vector<char> stack(1 << 16);
  stack_t alt{};
  alt.ss_sp = stack.data();
  alt.ss_size = stack.size();
  ::sigaltstack(&alt, nullptr);
  struct sigaction sa {};
  sa.sa_handler = OnFatal;
  sa.sa_flags = SA_RESETHAND | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGABRT, &sa, nullptr);
#ifndef LOAM_SANITIZER_BUILD
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL}) ::sigaction(sig, &sa, nullptr);
#endif
}

void RunOne(const std::string& input) {
  current = &input;
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
  current = nullptr;
}

std::string Mutate(const std::vector<std::string>& corpus, std::mt19937_64& rng) {
  std::string s = corpus[rng() % corpus.size()];
  const int edits = 1 + static_cast<int>(rng() % 8);
  for (int e = 0; e < edits; ++e) {
    const size_t at = s.empty() ? 0 : rng() % (s.size() + 1);
    switch (rng() % 5) {
      case 0:  // flip a byte
        if (!s.empty()) s[at % s.size()] = static_cast<char>(rng());
        break;
      case 1: {  // insert a byte, often a structural one (NUL included)
        static constexpr char kBytes[] = "{}[]\",:\\\n\r\0 0-e.u";
        s.insert(at, 1, kBytes[rng() % (sizeof(kBytes) - 1)]);
        break;
      }
      case 2:  // delete a run
        if (!s.empty()) s.erase(at % s.size(), 1 + rng() % 8);
        break;
      case 3: {  // splice in a piece of another input
        const std::string& other = corpus[rng() % corpus.size()];
        if (!other.empty()) {
          const size_t from = rng() % other.size();
          s.insert(at, other.substr(from, 1 + rng() % 32));
        }
        break;
      }
      case 4:  // repeat a run (deep nesting, long fields)
        if (!s.empty()) {
          const size_t from = at % s.size();
          const std::string piece = s.substr(from, 1 + rng() % 4);
          for (int k = 0, n = static_cast<int>(rng() % 64); k < n; ++k) s.insert(from, piece);
        }
        break;
    }
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  loam::SkipChecksumsForFuzzing();
  // One file per target, so targets replayed side by side keep their own.
  const char* a = std::getenv("LOAM_FUZZ_ARTIFACT");
  artifact = a != nullptr ? a : std::filesystem::path(argv[0]).filename().string() + "-crash-input";
  KeepFailingInputs();
  std::vector<std::string> corpus;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path p(argv[i]);
    if (std::filesystem::is_directory(p)) {
      for (const auto& e : std::filesystem::directory_iterator(p))
        corpus.push_back(Slurp(e.path()));
    } else {
      corpus.push_back(Slurp(p));
    }
  }
  if (corpus.empty()) corpus.push_back("");
  for (const std::string& c : corpus) RunOne(c);
  const char* secs = std::getenv("LOAM_FUZZ_SECONDS");
  const double budget = secs != nullptr ? std::atof(secs) : 5.0;
  const char* seed_env = std::getenv("LOAM_FUZZ_SEED");
  const uint64_t seed =
      seed_env != nullptr ? std::strtoull(seed_env, nullptr, 10) : std::random_device{}();
  std::printf("fuzz: %zu seeds, then mutations for %.0f s, LOAM_FUZZ_SEED=%llu\n", corpus.size(),
              budget, static_cast<unsigned long long>(seed));
  std::fflush(stdout);
  std::mt19937_64 rng(seed);
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(budget);
  uint64_t runs = 0;
  while (std::chrono::steady_clock::now() < end) {
    RunOne(Mutate(corpus, rng));
    ++runs;
  }
  std::printf("fuzz: %llu mutated inputs, no failure\n", static_cast<unsigned long long>(runs));
  return 0;
}
